//! Seeds 002-004: `SETNX key <expiry>` with GETSET recovery of expired locks.

use std::sync::Arc;
use std::time::Duration;

use super::{Binding, ms_arg};
use crate::lock::run_in_background;
use crate::scripts::parse_integer;
use crate::{Attempt, Clock, KvBackend, LockAlgorithm, LockError, LockGuard, LockOptions};

/// The timestamp lock of the old Redis SETNX page (seeds 002, 003, 004), client-side:
///
/// 1. `SETNX key <now + ttl>` (Unix ms); 1 means acquired.
/// 2. Otherwise `GET key`: a stamp still in the future means held; a vanished key means
///    retry.
/// 3. An expired stamp: `GETSET key <now + ttl>`; we own the lock only if the old value was
///    still expired (or gone). Otherwise another client recovered it first.
///
/// Release deletes the key only if our own stamp has not passed (seed 004's IMPORTANT
/// NOTE); otherwise it touches nothing and reports `false`. The key never gets a TTL.
///
/// Remaining hazards, by design of the seeds:
/// - **Clock skew**: every client compares stamps against its own clock; a client whose
///   clock runs ahead takes over live locks.
/// - **GETSET clobbering**: a client that loses the GETSET race has still overwritten the
///   winner's stamp with its own, so the winner's lock may look expired earlier or later
///   than the winner thinks.
/// - **Unchecked release**: the time check in release and the DEL are two steps; a holder
///   paused between them can still delete a successor's lock.
/// - Values that are not stamps (another algorithm's lock) count as held, never stolen.
///
/// `extend` is [`LockError::Unsupported`]: without a script it cannot be made safe.
#[derive(Clone, Debug)]
pub struct LegacyLock<B> {
    binding: Binding<B>,
}

impl<B: KvBackend + Clone + 'static> LegacyLock<B> {
    /// A timestamp lock on `key` with default options.
    pub fn new(backend: B, key: impl Into<Vec<u8>>) -> Self {
        Self::with_options(backend, key, LockOptions::default())
    }

    /// A timestamp lock on `key` with `options`.
    pub fn with_options(backend: B, key: impl Into<Vec<u8>>, options: LockOptions) -> Self {
        Self {
            binding: Binding::new(backend, key, options),
        }
    }

    fn guard(&self, expires_at_ms: i64) -> LegacyGuard<B> {
        LegacyGuard {
            backend: self.binding.backend.clone(),
            key: self.binding.key.clone(),
            clock: self.binding.clock.clone(),
            expires_at_ms,
            armed: true,
        }
    }
}

impl<B: KvBackend + Clone + 'static> LockAlgorithm for LegacyLock<B> {
    type Guard = LegacyGuard<B>;

    fn name(&self) -> &'static str {
        "legacy"
    }
    binding_accessors!();

    async fn try_acquire(&self) -> Result<Attempt<LegacyGuard<B>>, LockError> {
        let Binding {
            backend,
            key,
            options,
            clock,
        } = &self.binding;
        let now = clock.now_ms();
        let expires_at = now.saturating_add(options.ttl_ms()?);
        let stamp = ms_arg(expires_at);
        if backend.setnx(key, &stamp).await? {
            return Ok(Attempt::Acquired(self.guard(expires_at)));
        }
        let Some(current) = backend.get(key).await? else {
            return Ok(Attempt::Contended);
        };
        let Some(current) = parse_integer(&current) else {
            return Ok(Attempt::Held { holder_ttl: None });
        };
        if current > now {
            let left = u64::try_from(current - now).unwrap_or(0);
            return Ok(Attempt::Held {
                holder_ttl: Some(Duration::from_millis(left)),
            });
        }
        let old = backend.getset(key, &stamp).await?;
        match old.as_deref().map(parse_integer) {
            None => Ok(Attempt::Acquired(self.guard(expires_at))),
            Some(Some(old)) if old <= now => Ok(Attempt::Acquired(self.guard(expires_at))),
            Some(_) => Ok(Attempt::Contended),
        }
    }
}

/// A held [`LegacyLock`].
#[derive(Debug)]
pub struct LegacyGuard<B: KvBackend + Clone + 'static> {
    backend: B,
    key: Arc<[u8]>,
    clock: Clock,
    expires_at_ms: i64,
    armed: bool,
}

impl<B: KvBackend + Clone + 'static> LegacyGuard<B> {
    /// The stamp we wrote: when our hold ends, in Unix ms on our clock.
    pub fn expires_at_ms(&self) -> i64 {
        self.expires_at_ms
    }
}

async fn checked_delete<B: KvBackend>(
    backend: &B,
    key: &[u8],
    clock: &Clock,
    expires_at_ms: i64,
) -> Result<bool, LockError> {
    if clock.now_ms() >= expires_at_ms {
        return Ok(false);
    }
    Ok(backend.del(&[key]).await? == 1)
}

impl<B: KvBackend + Clone + 'static> LockGuard for LegacyGuard<B> {
    fn key(&self) -> &[u8] {
        &self.key
    }

    async fn release(mut self) -> Result<bool, LockError> {
        let released =
            checked_delete(&self.backend, &self.key, &self.clock, self.expires_at_ms).await;
        self.armed = false;
        released
    }

    async fn extend(&mut self, _ttl: Duration) -> Result<bool, LockError> {
        Err(LockError::Unsupported {
            algorithm: "legacy",
            operation: "extend",
        })
    }
}

impl<B: KvBackend + Clone + 'static> Drop for LegacyGuard<B> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let backend = self.backend.clone();
        let key = self.key.clone();
        let clock = self.clock.clone();
        let expires_at_ms = self.expires_at_ms;
        run_in_background(async move {
            let _ = checked_delete(&backend, &key, &clock, expires_at_ms).await;
        });
    }
}
