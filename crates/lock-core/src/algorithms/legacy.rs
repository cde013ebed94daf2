//! Seeds 002-004: `SETNX key <expiry>` with GETSET recovery of expired locks.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::{Binding, Hold, ms_arg};
use crate::lock::{ReleaseError, Supports, run_in_background};
use crate::scripts::parse_integer;
use crate::{
    Attempt, Clock, KvBackend, LockAlgorithm, LockError, LockGuard, LockName, LockOptions,
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
    binding: Binding<B>,
}

impl<B: KvBackend + Clone + 'static> LegacyLock<B> {
    /// A timestamp lock named `name` with default options.
    pub fn new(backend: B, name: &LockName) -> Self {
        Self::with_options(backend, name, LockOptions::default())
            .expect("the default options are valid")
    }

    /// A timestamp lock named `name` with `options`; [`LockError::InvalidConfig`] if they
    /// are out of range or ask for [`Wait::Notify`](crate::Wait::Notify).
    pub fn with_options(
        backend: B,
        name: &LockName,
        options: LockOptions,
    ) -> Result<Self, LockError> {
        Ok(Self {
            binding: Binding::new(backend, name, options, "legacy", Supports::default())?,
        })
    }

    fn guard(&self, expires_at_ms: i64) -> LegacyGuard<B> {
        LegacyGuard {
            backend: self.binding.backend.clone(),
            key: self.binding.key.clone(),
            hold: Hold {
                clock: self.binding.clock.clone(),
                valid_until_ms: expires_at_ms,
            },
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
            ttl_ms,
            clock,
            ..
        } = &self.binding;
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
    backend: B,
    key: Arc<[u8]>,
    /// The stamp we wrote is `hold.valid_until_ms`.
    hold: Hold,
    armed: bool,
}

impl<B: KvBackend + Clone + 'static> LegacyGuard<B> {
    /// The stamp we wrote: when our hold ends, in Unix ms on our clock.
    pub fn expires_at_ms(&self) -> i64 {
        self.hold.valid_until_ms
    }
}

/// Deletes the key if it still holds our stamp and the stamp has not passed. Checking the
/// value matters when a release is retried (in the background, after an error): by then
/// the same client may hold the lock again under a newer stamp, and a bare `DEL` would
/// delete that hold while its holder works.
async fn checked_delete<B: KvBackend>(
    backend: &B,
    key: &[u8],
    clock: &Clock,
    expires_at_ms: i64,
) -> Result<bool, LockError> {
    if clock.now_ms() >= expires_at_ms {
        return Ok(false);
    }
    let ours = expires_at_ms.to_string();
    if backend.get(key).await?.as_deref() != Some(ours.as_bytes()) {
        return Ok(false);
    }
    Ok(backend.del(&[key]).await? == 1)
}

impl<B: KvBackend + Clone + 'static> fmt::Debug for LegacyGuard<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LegacyGuard")
            .field("key", &String::from_utf8_lossy(&self.key))
            .field("stamp", &self.hold.valid_until_ms)
            .field("armed", &self.armed)
            .finish()
    }
}

impl<B: KvBackend + Clone + 'static> LockGuard for LegacyGuard<B> {
    fn key(&self) -> &[u8] {
        &self.key
    }
    hold_accessors!();

    async fn release(self) -> Result<bool, ReleaseError<Self>> {
        let Hold {
            clock,
            valid_until_ms,
        } = &self.hold;
        let released = checked_delete(&self.backend, &self.key, clock, *valid_until_ms).await;
        ReleaseError::settle(released, self, |guard| guard.armed = false)
    }

    async fn extend(&mut self, _ttl: Duration) -> Result<bool, LockError> {
        Err(LockError::Unsupported {
            algorithm: "legacy",
            operation: "extend",
        })
    }

    fn abandon(mut self) {
        self.armed = false;
    }
}

impl<B: KvBackend + Clone + 'static> Drop for LegacyGuard<B> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let backend = self.backend.clone();
        let key = self.key.clone();
        let clock = self.hold.clock.clone();
        let expires_at_ms = self.hold.valid_until_ms;
        run_in_background(async move {
            let _ = checked_delete(&backend, &key, &clock, expires_at_ms).await;
        });
    }
}
