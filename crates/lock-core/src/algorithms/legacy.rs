//! Seeds 002-004: `SETNX key <expiry>` with GETSET recovery of expired locks.

use std::sync::Arc;
use std::time::Duration;

use super::held::{Held, Releaser};
use super::{Hold, bind, ms_arg};
use crate::lock::{ReleaseError, Supports};
use crate::scripts::parse_integer;
use crate::{
    Attempt, Clock, KvBackend, LockAlgorithm, LockBinding, LockError, LockGuard, LockName,
    LockOptions, NamedLock,
};

/// The timestamp lock of the old Redis SETNX page (seeds 002, 003, 004), client-side:
///
/// 1. `SETNX {name}:lock <now + ttl>` (Unix ms); 1 means acquired.
/// 2. Otherwise `GET`: a stamp still in the future means held; a vanished key means
///    retry.
/// 3. A passed stamp (`stamp <= now`, as the seeds say): `GETSET <now + ttl>`; we own the
///    lock only if the old value had passed too (or was gone). Otherwise another client
///    recovered it first.
///
/// Release deletes the key only if it still holds our stamp and the stamp has not passed
/// (seed 004's IMPORTANT NOTE, plus a `GET`: a release retried after an error must not
/// delete the same client's next hold); otherwise it touches nothing and reports
/// `false`. The key never gets a TTL.
///
/// Remaining hazards, by design of the seeds:
/// - **Clock skew**: every client compares stamps against its own clock; a client whose
///   clock runs ahead takes over live locks.
/// - **GETSET clobbering**: a client that loses the GETSET race has still overwritten the
///   winner's stamp with its own, so the winner's lock may look expired earlier or later
///   than the winner thinks.
/// - **Unchecked release**: the checks in release and the DEL are separate steps; a
///   holder paused between them can still delete a successor's lock, and two holds
///   stamped in the same millisecond look alike.
/// - Values that are not stamps (another algorithm's lock) count as held, never stolen.
///
/// `extend` is [`LockError::Unsupported`]: without a script it cannot be made safe.
///
/// # Invariants
///
/// On the seeds' own assumption that every client's clock agrees: at most one client
/// holds the lock, and a hold ends at its stamp, [`LockGuard::valid_until_ms`]. Others
/// may take the lock over at exactly the stamp's millisecond (`stamp <= now`), where a
/// key-TTL lock frees 1 ms after its TTL. A client whose clock runs ahead breaks
/// exclusion ([`Clock::skewed`] reproduces it). A retried acquire after a lost reply may
/// find its own stamp and wait for it: stamps are not unique to an acquisition.
#[derive(Clone, Debug)]
pub struct LegacyLock<B> {
    backend: B,
    binding: LockBinding,
}

impl<B: KvBackend + Clone + 'static> NamedLock<B> for LegacyLock<B> {
    fn with_options(backend: B, name: &LockName, options: LockOptions) -> Result<Self, LockError> {
        let binding = bind(&backend, name, options, "legacy", Supports::default())?;
        Ok(Self { backend, binding })
    }
}

impl<B: KvBackend + Clone + 'static> LegacyLock<B> {
    fn guard(&self, expires_at_ms: i64) -> LegacyGuard<B> {
        let releaser = CheckedDelete {
            backend: self.backend.clone(),
            key: self.binding.key.clone(),
        };
        let hold = Hold {
            clock: self.binding.clock.clone(),
            valid_until_ms: expires_at_ms,
        };
        LegacyGuard {
            held: Held::new(releaser, hold),
        }
    }
}

impl<B: KvBackend + Clone + 'static> LockAlgorithm for LegacyLock<B> {
    type Guard = LegacyGuard<B>;

    fn binding(&self) -> &LockBinding {
        &self.binding
    }

    async fn try_acquire(&self) -> Result<Attempt<LegacyGuard<B>>, LockError> {
        let LockBinding {
            key, ttl_ms, clock, ..
        } = &self.binding;
        let backend = &self.backend;
        let now = clock.now_ms();
        let expires_at = now.saturating_add(*ttl_ms);
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
pub struct LegacyGuard<B: KvBackend + Clone + 'static> {
    /// The stamp we wrote is the hold's validity.
    held: Held<CheckedDelete<B>>,
}

impl<B: KvBackend + Clone + 'static> LegacyGuard<B> {
    /// The stamp we wrote: when our hold ends, in Unix ms on our clock.
    pub fn expires_at_ms(&self) -> i64 {
        self.held.valid_until_ms()
    }
}

/// Deletes the key if it still holds our stamp and the stamp has not passed. Checking the
/// value matters when a release is retried (in the background, after an error): by then
/// the same client may hold the lock again under a newer stamp, and a bare `DEL` would
/// delete that hold while its holder works.
#[derive(Clone)]
struct CheckedDelete<B> {
    backend: B,
    key: Arc<[u8]>,
}

impl<B: KvBackend + Clone + 'static> Releaser for CheckedDelete<B> {
    fn key(&self) -> &[u8] {
        &self.key
    }

    async fn release(&mut self, hold: &Hold) -> Result<bool, LockError> {
        let Self { backend, key } = self;
        if hold.clock.now_ms() >= hold.valid_until_ms {
            return Ok(false);
        }
        let ours = hold.valid_until_ms.to_string();
        if backend.get(key).await?.as_deref() != Some(ours.as_bytes()) {
            return Ok(false);
        }
        Ok(backend.del(&[key]).await? == 1)
    }

    fn detach(&mut self) -> Self {
        self.clone()
    }
}

held_debug!(LegacyGuard);

impl<B: KvBackend + Clone + 'static> LockGuard for LegacyGuard<B> {
    held_guard!();

    async fn extend(&mut self, _ttl: Duration) -> Result<bool, LockError> {
        Err(LockError::Unsupported {
            algorithm: "legacy",
            operation: "extend",
        })
    }
}
