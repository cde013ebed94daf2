//! Seed 001: the timestamp lock's SETNX / GET / GETSET steps in one atomic script.

use std::sync::Arc;
use std::time::Duration;

use super::{Binding, int_reply, ms_arg, pair_reply};
use crate::lock::run_in_background;
use crate::scripts::{LEGACY_ACQUIRE, LEGACY_EXTEND, LEGACY_RELEASE};
use crate::{Attempt, Clock, KvBackend, LockAlgorithm, LockError, LockGuard, LockOptions, Value};

/// The scripted timestamp lock (seed 001): [`LEGACY_ACQUIRE`] answers 0 acquired,
/// 1 key vanished (retry now), 2 held (sleep), 3 lost the race (retry), and sets a safety
/// PEXPIRE of TTL + 1 s so a crashed holder's key eventually disappears.
///
/// Release is [`LEGACY_RELEASE`] (our stamp, not yet passed), extend [`LEGACY_EXTEND`].
/// Clock skew between clients remains a hazard, as for [`LegacyLock`](super::LegacyLock).
#[derive(Clone, Debug)]
pub struct ScriptedLock<B> {
    binding: Binding<B>,
}

impl<B: KvBackend + Clone + 'static> ScriptedLock<B> {
    /// A scripted timestamp lock on `key` with default options.
    pub fn new(backend: B, key: impl Into<Vec<u8>>) -> Self {
        Self::with_options(backend, key, LockOptions::default())
    }

    /// A scripted timestamp lock on `key` with `options`.
    pub fn with_options(backend: B, key: impl Into<Vec<u8>>, options: LockOptions) -> Self {
        Self {
            binding: Binding::new(backend, key, options),
        }
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
            options,
            clock,
        } = &self.binding;
        let ttl_ms = options.ttl_ms()?;
        let now = clock.now_ms();
        let stamp = now.saturating_add(ttl_ms);
        let reply = backend
            .eval(
                &LEGACY_ACQUIRE,
                &[&**key],
                &[&ms_arg(stamp), &ms_arg(ttl_ms), &ms_arg(now)],
            )
            .await?;
        match pair_reply(&LEGACY_ACQUIRE, reply)? {
            (0, _) => Ok(Attempt::Acquired(ScriptedGuard {
                backend: backend.clone(),
                key: key.clone(),
                clock: clock.clone(),
                stamp,
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
#[derive(Debug)]
pub struct ScriptedGuard<B: KvBackend + Clone + 'static> {
    backend: B,
    key: Arc<[u8]>,
    clock: Clock,
    stamp: i64,
    armed: bool,
}

impl<B: KvBackend + Clone + 'static> ScriptedGuard<B> {
    /// Our current stamp: when the hold ends, in Unix ms.
    pub fn expires_at_ms(&self) -> i64 {
        self.stamp
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

impl<B: KvBackend + Clone + 'static> LockGuard for ScriptedGuard<B> {
    fn key(&self) -> &[u8] {
        &self.key
    }

    async fn release(mut self) -> Result<bool, LockError> {
        let released = scripted_release(&self.backend, &self.key, &self.clock, self.stamp).await;
        self.armed = false;
        released
    }

    async fn extend(&mut self, ttl: Duration) -> Result<bool, LockError> {
        let ttl_ms = LockOptions::new().ttl(ttl).ttl_ms()?;
        let now = self.clock.now_ms();
        let stamp = now.saturating_add(ttl_ms);
        let reply = self
            .backend
            .eval(
                &LEGACY_EXTEND,
                &[&*self.key],
                &[
                    &ms_arg(self.stamp),
                    &ms_arg(stamp),
                    &ms_arg(ttl_ms),
                    &ms_arg(now),
                ],
            )
            .await?;
        let extended = int_reply(&LEGACY_EXTEND, reply)? == 1;
        if extended {
            self.stamp = stamp;
        }
        Ok(extended)
    }
}

impl<B: KvBackend + Clone + 'static> Drop for ScriptedGuard<B> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let backend = self.backend.clone();
        let key = self.key.clone();
        let clock = self.clock.clone();
        let stamp = self.stamp;
        run_in_background(async move {
            let _ = scripted_release(&backend, &key, &clock, stamp).await;
        });
    }
}
