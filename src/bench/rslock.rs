//! rslock's `LockManager` behind nxlock's [`LockAlgorithm`], so `nxlock bench --compare
//! rslock` runs it through the same client loop as nxlock's [`Redlock`](crate::Redlock).

use std::fmt;
use std::time::Duration;

use lock_core::{
    Attempt, Clock, Error, ErrorKind, LockAlgorithm, LockError, LockGuard, LockName, LockOptions,
    ReleaseError,
};
use rslock::LockManager;

/// One rslock lock manager over the given servers, used as rslock's users do: `acquire`
/// loops over `lock` with rslock's own retries (3 tries, 0-200 ms apart).
pub struct RslockLock {
    manager: LockManager,
    key: Vec<u8>,
    options: LockOptions,
    clock: Clock,
}

impl RslockLock {
    /// A lock named `name` over the servers at `urls`.
    pub fn new(urls: &[String], name: &LockName, options: LockOptions) -> Self {
        Self {
            manager: LockManager::new(urls.to_vec()),
            key: name.lock_key(),
            options,
            clock: Clock::system(),
        }
    }

    fn guard(&self, lock: rslock::Lock) -> RslockGuard {
        let validity = i64::try_from(lock.validity_time).unwrap_or(i64::MAX);
        RslockGuard {
            valid_until_ms: self.clock.now_ms().saturating_add(validity),
            manager: self.manager.clone(),
            lock,
            key: self.key.clone(),
            clock: self.clock.clone(),
        }
    }
}

fn backend_error(e: rslock::LockError) -> LockError {
    LockError::Backend(Error::new(ErrorKind::Connection, e.to_string()))
}

impl LockAlgorithm for RslockLock {
    type Guard = RslockGuard;

    fn name(&self) -> &'static str {
        "rslock"
    }
    fn key(&self) -> &[u8] {
        &self.key
    }
    fn options(&self) -> &LockOptions {
        &self.options
    }
    fn clock(&self) -> &Clock {
        &self.clock
    }

    async fn try_acquire(&self) -> Result<Attempt<RslockGuard>, LockError> {
        match self.manager.lock(&self.key, self.options.ttl).await {
            Ok(lock) => Ok(Attempt::Acquired(self.guard(lock))),
            Err(rslock::LockError::Unavailable | rslock::LockError::TtlExceeded) => {
                Ok(Attempt::Held { holder_ttl: None })
            }
            Err(e) => Err(backend_error(e)),
        }
    }

    async fn acquire(&self) -> Result<RslockGuard, LockError> {
        let lock = self.manager.acquire_no_guard(&self.key, self.options.ttl);
        Ok(self.guard(lock.await.map_err(backend_error)?))
    }
}

/// A held [`RslockLock`]. rslock's release is best effort and reports nothing, so
/// [`LockGuard::release`] answers `true`.
pub struct RslockGuard {
    manager: LockManager,
    lock: rslock::Lock,
    key: Vec<u8>,
    clock: Clock,
    valid_until_ms: i64,
}

impl LockGuard for RslockGuard {
    fn key(&self) -> &[u8] {
        &self.key
    }
    fn clock(&self) -> &Clock {
        &self.clock
    }
    fn valid_until_ms(&self) -> i64 {
        self.valid_until_ms
    }
    async fn release(self) -> Result<bool, ReleaseError<Self>> {
        self.manager.unlock(&self.lock).await;
        Ok(true)
    }
    async fn extend(&mut self, ttl: Duration) -> Result<bool, LockError> {
        match self.manager.extend(&self.lock, ttl).await {
            Ok(lock) => {
                self.valid_until_ms =
                    self.clock.now_ms() + i64::try_from(lock.validity_time).unwrap_or(i64::MAX);
                self.lock = lock;
                Ok(true)
            }
            Err(_) => Ok(false),
        }
    }
    fn abandon(self) {}
}

impl fmt::Debug for RslockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RslockGuard")
            .field("key", &String::from_utf8_lossy(&self.key))
            .field("valid_until_ms", &self.valid_until_ms)
            .finish()
    }
}
