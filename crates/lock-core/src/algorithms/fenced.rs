//! The token lock with fencing tokens: every acquisition gets a strictly larger number.

use std::time::Duration;

use super::held::Held;
use super::token::TokenRelease;
use super::{Hold, bind, ms_arg, pair_reply, refused, replicated_enough, write};
use crate::lock::{ReleaseError, Supports, acquire_with_policy};
use crate::scripts::{COMPARE_AND_PEXPIRE, FENCED_ACQUIRE};
use crate::{
    Attempt, Clock, KvBackend, LockAlgorithm, LockBinding, LockError, LockGuard, LockName,
    LockOptions, NamedLock,
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
    backend: B,
    binding: LockBinding,
    fence_key: Vec<u8>,
}

impl<B: KvBackend + Clone + 'static> NamedLock<B> for FencedLock<B> {
    fn with_options(backend: B, name: &LockName, options: LockOptions) -> Result<Self, LockError> {
        let supports = Supports {
            notify: false,
            replication: true,
        };
        Ok(Self {
            binding: bind(&backend, name, options, "fenced", supports)?,
            backend,
            fence_key: name.key("fence"),
        })
    }
}

impl<B: KvBackend + Clone + 'static> FencedLock<B> {
    /// One attempt with `token`. The script recognises our own token, so a retry after a
    /// lost reply is safe without telling it so.
    async fn attempt(&self, token: &str) -> Result<Attempt<FencedGuard<B>>, LockError> {
        let LockBinding {
            key,
            ttl_ms,
            clock,
            options,
            ..
        } = &self.binding;
        let backend = &self.backend;
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
                let releaser = TokenRelease::new(backend.clone(), key.clone(), token.to_owned())
                    .replicated(options.replication);
                let guard = FencedGuard {
                    held: Held::new(releaser, hold),
                    fence,
                };
                if let Err(not_replicated) = replicated_enough(key, replication, acknowledged) {
                    // Undone; the fence it took stays spent, which fencing allows.
                    let _ = guard.release().await;
                    return Err(not_replicated);
                }
                Ok(Attempt::Acquired(guard))
            }
            (_, pttl) => Ok(refused(pttl)),
        }
    }
}

impl<B: KvBackend + Clone + 'static> LockAlgorithm for FencedLock<B> {
    type Guard = FencedGuard<B>;

    fn binding(&self) -> &LockBinding {
        &self.binding
    }

    async fn try_acquire(&self) -> Result<Attempt<FencedGuard<B>>, LockError> {
        self.attempt(&crate::fresh_token()).await
    }

    async fn acquire(&self) -> Result<FencedGuard<B>, LockError> {
        let token = crate::fresh_token();
        acquire_with_policy(self, |_| self.attempt(&token)).await
    }
}

/// A held [`FencedLock`]: a token lock's hold plus this acquisition's fencing token.
pub struct FencedGuard<B: KvBackend + Clone + 'static> {
    held: Held<TokenRelease<B>>,
    fence: i64,
}

impl<B: KvBackend + Clone + 'static> FencedGuard<B> {
    /// The fencing token: strictly greater than every earlier acquisition's.
    pub fn fence(&self) -> i64 {
        self.fence
    }

    /// The random token this acquisition wrote.
    pub fn token(&self) -> &str {
        &self.held.releaser.token
    }
}

held_debug!(FencedGuard, fence);

impl<B: KvBackend + Clone + 'static> LockGuard for FencedGuard<B> {
    held_guard!();

    async fn extend(&mut self, ttl: Duration) -> Result<bool, LockError> {
        let Held { releaser, hold, .. } = &mut self.held;
        releaser.extend(hold, &COMPARE_AND_PEXPIRE, ttl).await
    }
}
