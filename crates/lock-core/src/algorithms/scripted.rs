//! Seed 001: the timestamp lock's SETNX / GET / GETSET steps in one atomic script.

use std::sync::Arc;
use std::time::Duration;

use super::held::{Held, Releaser};
use super::{Hold, bind, int_reply, ms_arg, pair_reply, safety_ttl_ms};
use crate::lock::{ReleaseError, Supports, ttl_ms};
use crate::scripts::{LEGACY_ACQUIRE, LEGACY_EXTEND, LEGACY_RELEASE};
use crate::{
    Attempt, Clock, KvBackend, LockAlgorithm, LockBinding, LockError, LockGuard, LockName,
    LockOptions, NamedLock, Value,
};

/// The scripted timestamp lock (seed 001): [`LEGACY_ACQUIRE`] answers 0 acquired,
/// 1 key vanished (retry now), 2 held (sleep), 3 lost the race (retry). The stamp is
/// written together with a safety TTL of TTL + 1 s, in one `SET`, so a crashed holder's
/// key disappears and a failed acquire leaves nothing behind.
///
/// Release is [`LEGACY_RELEASE`] (our stamp, not yet passed), extend [`LEGACY_EXTEND`].
///
/// # Invariants
///
/// Those of [`LegacyLock`](super::LegacyLock), with the steps atomic: at most one client
/// holds the lock while clocks agree; a hold ends at its stamp
/// ([`LockGuard::valid_until_ms`]); the key never outlives its stamp by more than the
/// 1 s safety margin, whatever fails. Clock skew between clients remains a hazard.
#[derive(Clone, Debug)]
pub struct ScriptedLock<B> {
    backend: B,
    binding: LockBinding,
}

impl<B: KvBackend + Clone + 'static> NamedLock<B> for ScriptedLock<B> {
    fn with_options(backend: B, name: &LockName, options: LockOptions) -> Result<Self, LockError> {
        let binding = bind(&backend, name, options, "scripted", Supports::default())?;
        Ok(Self { backend, binding })
    }
}

impl<B: KvBackend + Clone + 'static> LockAlgorithm for ScriptedLock<B> {
    type Guard = ScriptedGuard<B>;

    fn binding(&self) -> &LockBinding {
        &self.binding
    }

    async fn try_acquire(&self) -> Result<Attempt<ScriptedGuard<B>>, LockError> {
        let LockBinding {
            key, ttl_ms, clock, ..
        } = &self.binding;
        let backend = &self.backend;
        let now = clock.now_ms();
        let stamp = now.saturating_add(*ttl_ms);
        let safety = safety_ttl_ms(*ttl_ms);
        let reply = backend
            .eval(
                &LEGACY_ACQUIRE,
                &[&**key],
                &[&ms_arg(stamp), &ms_arg(safety), &ms_arg(now)],
            )
            .await?;
        match pair_reply(&LEGACY_ACQUIRE, reply)? {
            (0, _) => {
                let releaser = StampRelease {
                    backend: backend.clone(),
                    key: key.clone(),
                };
                let hold = Hold {
                    clock: clock.clone(),
                    valid_until_ms: stamp,
                };
                Ok(Attempt::Acquired(ScriptedGuard {
                    held: Held::new(releaser, hold),
                }))
            }
            (1 | 3, _) => Ok(Attempt::Contended),
            (2, left) => Ok(Attempt::Held {
                holder_ttl: u64::try_from(left)
                    .ok()
                    .filter(|&ms| ms > 0)
                    .map(Duration::from_millis),
            }),
            (code, left) => Err(super::unexpected(
                &LEGACY_ACQUIRE,
                &Value::Array(vec![Value::Int(code), Value::Int(left)]),
            )),
        }
    }
}

/// A held [`ScriptedLock`].
pub struct ScriptedGuard<B: KvBackend + Clone + 'static> {
    /// Our current stamp is the hold's validity.
    held: Held<StampRelease<B>>,
}

impl<B: KvBackend + Clone + 'static> ScriptedGuard<B> {
    /// Our current stamp: when the hold ends, in Unix ms.
    pub fn expires_at_ms(&self) -> i64 {
        self.held.valid_until_ms()
    }
}

/// [`LEGACY_RELEASE`]: deletes the key if it holds our stamp and the stamp has not passed.
#[derive(Clone)]
struct StampRelease<B> {
    backend: B,
    key: Arc<[u8]>,
}

impl<B: KvBackend + Clone + 'static> Releaser for StampRelease<B> {
    fn key(&self) -> &[u8] {
        &self.key
    }

    async fn release(&mut self, hold: &Hold) -> Result<bool, LockError> {
        let (stamp, now) = (ms_arg(hold.valid_until_ms), ms_arg(hold.clock.now_ms()));
        let reply = self
            .backend
            .eval(&LEGACY_RELEASE, &[&self.key], &[&stamp, &now])
            .await?;
        Ok(int_reply(&LEGACY_RELEASE, reply)? == 1)
    }

    fn detach(&mut self) -> Self {
        self.clone()
    }
}

held_debug!(ScriptedGuard);

impl<B: KvBackend + Clone + 'static> LockGuard for ScriptedGuard<B> {
    held_guard!();

    async fn extend(&mut self, ttl: Duration) -> Result<bool, LockError> {
        let ttl_ms = ttl_ms(ttl)?;
        let Held { releaser, hold, .. } = &mut self.held;
        let now = hold.clock.now_ms();
        let stamp = now.saturating_add(ttl_ms);
        let reply = releaser
            .backend
            .eval(
                &LEGACY_EXTEND,
                &[&*releaser.key],
                &[
                    &ms_arg(hold.valid_until_ms),
                    &ms_arg(stamp),
                    &ms_arg(safety_ttl_ms(ttl_ms)),
                    &ms_arg(now),
                ],
            )
            .await?;
        let extended = int_reply(&LEGACY_EXTEND, reply)? == 1;
        if extended {
            hold.valid_until_ms = stamp;
        }
        Ok(extended)
    }
}
