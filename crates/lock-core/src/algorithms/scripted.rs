//! Seed 001: the timestamp lock's SETNX / GET / GETSET steps in one atomic script.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::{Binding, Hold, int_reply, ms_arg, pair_reply, safety_ttl_ms};
use crate::lock::{ReleaseError, Supports, run_in_background, ttl_ms};
use crate::scripts::{LEGACY_ACQUIRE, LEGACY_EXTEND, LEGACY_RELEASE};
use crate::{
    Attempt, Clock, KvBackend, LockAlgorithm, LockError, LockGuard, LockName, LockOptions, Value,
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
    binding: Binding<B>,
}

impl<B: KvBackend + Clone + 'static> ScriptedLock<B> {
    /// A scripted timestamp lock named `name` with default options.
    pub fn new(backend: B, name: &LockName) -> Self {
        Self::with_options(backend, name, LockOptions::default())
            .expect("the default options are valid")
    }

    /// A scripted timestamp lock named `name` with `options`;
    /// [`LockError::InvalidConfig`] if they are out of range or ask for
    /// [`Wait::Notify`](crate::Wait::Notify).
    pub fn with_options(
        backend: B,
        name: &LockName,
        options: LockOptions,
    ) -> Result<Self, LockError> {
        Ok(Self {
            binding: Binding::new(backend, name, options, "scripted", Supports::default())?,
        })
    }
}

impl<B: KvBackend + Clone + 'static> LockAlgorithm for ScriptedLock<B> {
    type Guard = ScriptedGuard<B>;

    fn name(&self) -> &'static str {
        "scripted"
    }
    binding_accessors!();

    async fn try_acquire(&self) -> Result<Attempt<ScriptedGuard<B>>, LockError> {
        let Binding {
            backend,
            key,
            ttl_ms,
            clock,
            ..
        } = &self.binding;
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
            (0, _) => Ok(Attempt::Acquired(ScriptedGuard {
                backend: backend.clone(),
                key: key.clone(),
                hold: Hold {
                    clock: clock.clone(),
                    valid_until_ms: stamp,
                },
                armed: true,
            })),
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
    backend: B,
    key: Arc<[u8]>,
    /// Our current stamp is `hold.valid_until_ms`.
    hold: Hold,
    armed: bool,
}

impl<B: KvBackend + Clone + 'static> ScriptedGuard<B> {
    /// Our current stamp: when the hold ends, in Unix ms.
    pub fn expires_at_ms(&self) -> i64 {
        self.hold.valid_until_ms
    }
}

async fn scripted_release<B: KvBackend>(
    backend: &B,
    key: &[u8],
    clock: &Clock,
    stamp: i64,
) -> Result<bool, LockError> {
    let reply = backend
        .eval(
            &LEGACY_RELEASE,
            &[key],
            &[&ms_arg(stamp), &ms_arg(clock.now_ms())],
        )
        .await?;
    Ok(int_reply(&LEGACY_RELEASE, reply)? == 1)
}

impl<B: KvBackend + Clone + 'static> fmt::Debug for ScriptedGuard<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedGuard")
            .field("key", &String::from_utf8_lossy(&self.key))
            .field("stamp", &self.hold.valid_until_ms)
            .field("armed", &self.armed)
            .finish()
    }
}

impl<B: KvBackend + Clone + 'static> LockGuard for ScriptedGuard<B> {
    fn key(&self) -> &[u8] {
        &self.key
    }
    hold_accessors!();

    async fn release(self) -> Result<bool, ReleaseError<Self>> {
        let Hold {
            clock,
            valid_until_ms,
        } = &self.hold;
        let released = scripted_release(&self.backend, &self.key, clock, *valid_until_ms).await;
        ReleaseError::settle(released, self, |guard| guard.armed = false)
    }

    async fn extend(&mut self, ttl: Duration) -> Result<bool, LockError> {
        let ttl_ms = ttl_ms(ttl)?;
        let now = self.hold.clock.now_ms();
        let stamp = now.saturating_add(ttl_ms);
        let reply = self
            .backend
            .eval(
                &LEGACY_EXTEND,
                &[&*self.key],
                &[
                    &ms_arg(self.hold.valid_until_ms),
                    &ms_arg(stamp),
                    &ms_arg(safety_ttl_ms(ttl_ms)),
                    &ms_arg(now),
                ],
            )
            .await?;
        let extended = int_reply(&LEGACY_EXTEND, reply)? == 1;
        if extended {
            self.hold.valid_until_ms = stamp;
        }
        Ok(extended)
    }

    fn abandon(mut self) {
        self.armed = false;
    }
}

impl<B: KvBackend + Clone + 'static> Drop for ScriptedGuard<B> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let backend = self.backend.clone();
        let key = self.key.clone();
        let clock = self.hold.clock.clone();
        let stamp = self.hold.valid_until_ms;
        run_in_background(async move {
            let _ = scripted_release(&backend, &key, &clock, stamp).await;
        });
    }
}
