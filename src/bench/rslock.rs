//! rslock's `LockManager` behind nxlock's [`LockAlgorithm`], so `nxlock bench --compare
//! rslock` runs it through the same client loop as nxlock's locks: over the spawned
//! instances beside nxlock's [`Redlock`](crate::Redlock), or on one server beside the
//! fair lock.

use std::fmt;
use std::time::Duration;

use lock_core::{
    Attempt, Clock, LockAlgorithm, LockBinding, LockError, LockGuard, LockName, LockOptions,
    ReleaseError,
};
use rslock::LockManager;

use super::BenchError;
use super::locks::run_clients;
use super::report::{BenchReport, connection_error};
use super::workload::Workload;

/// One rslock lock manager over the given servers, used as rslock's users do: `acquire`
/// loops over `lock` with rslock's own retries (3 tries, 0-200 ms apart).
pub struct RslockLock {
    manager: LockManager,
    binding: LockBinding,
}

impl RslockLock {
    /// A lock named `name` over the servers at `urls`, with a lock manager of its own;
    /// [`LockError::InvalidConfig`] if the TTL is out of range.
    pub fn new(urls: &[String], name: &LockName, options: LockOptions) -> Result<Self, LockError> {
        Self::with_manager(LockManager::new(urls.to_vec()), name, options)
    }

    /// A lock named `name` through `manager` (and its connections);
    /// [`LockError::InvalidConfig`] if the TTL is out of range.
    pub fn with_manager(
        manager: LockManager,
        name: &LockName,
        options: LockOptions,
    ) -> Result<Self, LockError> {
        Ok(Self {
            manager,
            binding: LockBinding::new("rslock", name, options, Clock::system())?,
        })
    }

    fn guard(&self, lock: rslock::Lock) -> RslockGuard {
        let validity = i64::try_from(lock.validity_time).unwrap_or(i64::MAX);
        RslockGuard {
            valid_until_ms: self.clock().now_ms().saturating_add(validity),
            manager: self.manager.clone(),
            lock,
            key: self.key().to_vec(),
            clock: self.clock().clone(),
        }
    }
}

impl LockAlgorithm for RslockLock {
    type Guard = RslockGuard;

    fn binding(&self) -> &LockBinding {
        &self.binding
    }

    async fn try_acquire(&self) -> Result<Attempt<RslockGuard>, LockError> {
        match self.manager.lock(self.key(), self.options().ttl).await {
            Ok(lock) => Ok(Attempt::Acquired(self.guard(lock))),
            Err(rslock::LockError::Unavailable | rslock::LockError::TtlExceeded) => {
                Ok(Attempt::Held { holder_ttl: None })
            }
            Err(e) => Err(connection_error(e)),
        }
    }

    async fn acquire(&self) -> Result<RslockGuard, LockError> {
        let lock = self
            .manager
            .acquire_no_guard(self.key(), self.options().ttl);
        Ok(self.guard(lock.await.map_err(connection_error)?))
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
    reference_guard_accessors!();
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

/// One rslock `LockManager` per client, kept from one run to the next: rslock connects
/// lazily, so a manager made afresh for each run would pay its connections inside the
/// measured time, where nxlock's backends connected once, before any run.
pub struct RslockManagers {
    managers: Vec<LockManager>,
    next: std::sync::atomic::AtomicUsize,
}

impl RslockManagers {
    /// `clients` managers over the servers at `urls`.
    pub fn new(urls: &[String], clients: usize) -> Self {
        Self {
            managers: (0..clients.max(1))
                .map(|_| LockManager::new(urls.to_vec()))
                .collect(),
            next: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// A lock through the next manager, round robin: in each run, client `i` gets the
    /// same manager as in the one before.
    pub fn lock(&self, name: &LockName, options: LockOptions) -> Result<RslockLock, LockError> {
        let next = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let manager = self.managers[next % self.managers.len()].clone();
        RslockLock::with_manager(manager, name, options)
    }
}

/// rslock's `LockManager` on the one server at `url`, through the same client loop as
/// nxlock's runs (one manager per client, from `managers`, client `i` on key `i % keys`).
/// Its commands are the server's own count (`INFO stats`), so they include the two
/// `INFO` calls.
pub async fn run_rslock(
    url: &str,
    managers: &RslockManagers,
    workload: &Workload,
) -> Result<BenchReport, BenchError> {
    let failed = |e: redis::RedisError| BenchError::Reference(format!("{url}: {e}"));
    let client = redis::Client::open(url).map_err(failed)?;
    let mut info = client
        .get_multiplexed_async_connection()
        .await
        .map_err(failed)?;
    let before = commands_processed(&mut info).await.map_err(failed)?;
    let make = |name: &LockName, options: LockOptions| managers.lock(name, options);
    let mut report = run_clients(url, workload, || 0, make).await?;
    let after = commands_processed(&mut info).await.map_err(failed)?;
    report.algorithm = "rslock".into();
    // A server restarted meanwhile counts from zero again: report no commands then.
    Ok(report.with_commands(after.saturating_sub(before)))
}

/// The server's `total_commands_processed`.
async fn commands_processed(
    connection: &mut redis::aio::MultiplexedConnection,
) -> redis::RedisResult<u64> {
    let info: String = redis::cmd("INFO")
        .arg("stats")
        .query_async(connection)
        .await?;
    Ok(info
        .lines()
        .find_map(|line| line.strip_prefix("total_commands_processed:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0))
}
