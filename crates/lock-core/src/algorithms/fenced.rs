//! The token lock with fencing tokens: every acquisition gets a strictly larger number.

use std::time::Duration;

use super::token::TokenGuard;
use super::{Binding, ms_arg, pair_reply, refused};
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
#[derive(Clone, Debug)]
pub struct FencedLock<B> {
    binding: Binding<B>,
    fence_key: Vec<u8>,
}

impl<B: KvBackend + Clone + 'static> FencedLock<B> {
    /// A fenced lock named `name` (keys `{name}:lock` and `{name}:fence`), default options.
    pub fn new(backend: B, name: &LockName) -> Self {
        Self::with_options(backend, name, LockOptions::default())
    }

    /// A fenced lock named `name` with `options`.
    pub fn with_options(backend: B, name: &LockName, options: LockOptions) -> Self {
        Self {
            binding: Binding::new(backend, name.key("lock"), options),
            fence_key: name.key("fence"),
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
        let Binding {
            backend,
            key,
            options,
            ..
        } = &self.binding;
        let ttl_ms = options.ttl_ms()?;
        let token = TokenGuard::<B>::new_token();
        let reply = backend
            .eval(
                &FENCED_ACQUIRE,
                &[key, &self.fence_key],
                &[token.as_bytes(), &ms_arg(ttl_ms)],
            )
            .await?;
        match pair_reply(&FENCED_ACQUIRE, reply)? {
            (1, fence) => Ok(Attempt::Acquired(FencedGuard {
                inner: TokenGuard::held(backend.clone(), key.clone(), token),
                fence,
            })),
            (_, pttl) => Ok(refused(pttl)),
        }
    }
}

/// A held [`FencedLock`]: a token guard plus this acquisition's fencing token.
#[derive(Debug)]
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

impl<B: KvBackend + Clone + 'static> LockGuard for FencedGuard<B> {
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    async fn release(self) -> Result<bool, LockError> {
        self.inner.release().await
    }
    async fn extend(&mut self, ttl: Duration) -> Result<bool, LockError> {
        self.inner.extend(ttl).await
    }
}
