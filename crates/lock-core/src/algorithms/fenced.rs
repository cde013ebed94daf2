//! The token lock with fencing tokens: every acquisition gets a strictly larger number.

use std::fmt;
use std::time::Duration;

use super::token::TokenGuard;
use super::{Binding, Hold, ms_arg, pair_reply, refused, replicated_enough, write};
use crate::lock::{ReleaseError, Supports, acquire_with_policy};
use crate::scripts::FENCED_ACQUIRE;
use crate::{
    Attempt, Clock, KvBackend, LockAlgorithm, LockError, LockGuard, LockName, LockOptions,
};

/// A [`TokenLock`](super::TokenLock) whose every acquisition also gets a fencing token:
/// a number from `INCR {name}:fence`, taken in the same atomic script as the
/// `SET {name}:lock token NX PX ttl` ([`FENCED_ACQUIRE`]).
///
/// A lock alone cannot stop a holder that paused past its TTL (a GC pause, a stalled VM)
/// from acting after another client took over. Pass [`FencedGuard::fence`] along with every
/// write to the protected resource and have the resource reject any fence lower than the
/// highest it has seen: the stale holder's write is then refused.
///
/// # Invariants
///
/// Those of [`TokenLock`](super::TokenLock), and: every acquisition's fence is strictly
/// greater than every earlier acquisition's on the same server (the counter has no TTL
/// and only grows). A retried acquire that finds its own token
/// takes a new fence: fences may skip numbers, never repeat.
#[derive(Clone, Debug)]
pub struct FencedLock<B> {
    binding: Binding<B>,
    fence_key: Vec<u8>,
}

impl<B: KvBackend + Clone + 'static> FencedLock<B> {
    /// A fenced lock named `name` (keys `{name}:lock` and `{name}:fence`), default options.
    pub fn new(backend: B, name: &LockName) -> Self {
        Self::with_options(backend, name, LockOptions::default())
            .expect("the default options are valid")
    }

    /// A fenced lock named `name` with `options`; [`LockError::InvalidConfig`] if they are
    /// out of range or ask for [`Wait::Notify`](crate::Wait::Notify).
    pub fn with_options(
        backend: B,
        name: &LockName,
        options: LockOptions,
    ) -> Result<Self, LockError> {
        Ok(Self {
            binding: Binding::new(
                backend,
                name,
                options,
                "fenced",
                Supports {
                    notify: false,
                    replication: true,
                },
            )?,
            fence_key: name.key("fence"),
        })
    }

    /// One attempt with `token`. The script recognises our own token, so a retry after a
    /// lost reply is safe without telling it so.
    async fn attempt(&self, token: &str) -> Result<Attempt<FencedGuard<B>>, LockError> {
        let Binding {
            backend,
            key,
            ttl_ms,
            clock,
            options,
            ..
        } = &self.binding;
        let started = clock.now_ms();
        let replication = options.replication.as_ref();
        let (reply, acknowledged) = write(
            backend,
            replication,
            &FENCED_ACQUIRE,
            &[key, &self.fence_key],
            &[token.as_bytes(), &ms_arg(*ttl_ms)],
        )
        .await?;
        match pair_reply(&FENCED_ACQUIRE, reply)? {
            (1, fence) => {
                let hold = Hold::new(clock.clone(), started, *ttl_ms);
                let inner = TokenGuard::held(backend.clone(), key.clone(), token.to_owned(), hold)
                    .replicated(options.replication);
                if let Err(not_replicated) = replicated_enough(key, replication, acknowledged) {
                    // Undone; the fence it took stays spent, which fencing allows.
                    let _ = inner.release().await;
                    return Err(not_replicated);
                }
                Ok(Attempt::Acquired(FencedGuard { inner, fence }))
            }
            (_, pttl) => Ok(refused(pttl)),
        }
    }
}

impl<B: KvBackend + Clone + 'static> LockAlgorithm for FencedLock<B> {
    type Guard = FencedGuard<B>;

    fn name(&self) -> &'static str {
        "fenced"
    }
    binding_accessors!();

    async fn try_acquire(&self) -> Result<Attempt<FencedGuard<B>>, LockError> {
        self.attempt(&TokenGuard::<B>::new_token()).await
    }

    async fn acquire(&self) -> Result<FencedGuard<B>, LockError> {
        let token = TokenGuard::<B>::new_token();
        acquire_with_policy(self, |_| self.attempt(&token)).await
    }
}

/// A held [`FencedLock`]: a token guard plus this acquisition's fencing token.
pub struct FencedGuard<B: KvBackend + Clone + 'static> {
    inner: TokenGuard<B>,
    fence: i64,
}

impl<B: KvBackend + Clone + 'static> FencedGuard<B> {
    /// The fencing token: strictly greater than every earlier acquisition's.
    pub fn fence(&self) -> i64 {
        self.fence
    }

    /// The random token this acquisition wrote.
    pub fn token(&self) -> &str {
        self.inner.token()
    }
}

impl<B: KvBackend + Clone + 'static> fmt::Debug for FencedGuard<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FencedGuard")
            .field("inner", &self.inner)
            .field("fence", &self.fence)
            .finish()
    }
}

impl<B: KvBackend + Clone + 'static> LockGuard for FencedGuard<B> {
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn clock(&self) -> &Clock {
        self.inner.clock()
    }
    fn valid_until_ms(&self) -> i64 {
        self.inner.valid_until_ms()
    }
    async fn release(self) -> Result<bool, ReleaseError<Self>> {
        let fence = self.fence;
        let released = self.inner.release().await;
        released.map_err(|e| e.map_guard(|inner| FencedGuard { inner, fence }))
    }
    async fn extend(&mut self, ttl: Duration) -> Result<bool, LockError> {
        self.inner.extend(ttl).await
    }
    fn abandon(self) {
        self.inner.abandon();
    }
}
