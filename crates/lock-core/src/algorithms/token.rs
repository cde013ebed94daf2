//! Seed 000's lock: `SET key token NX PX ttl`, released by compare-and-delete.

use std::sync::Arc;
use std::time::Duration;

use super::{Binding, holder_ttl, int_reply, ms_arg, pair_reply, refused};
use crate::lock::{Budget, acquire_with_policy, run_in_background};
use crate::scripts::{ACQUIRE_OR_PTTL, COMPARE_AND_DELETE, COMPARE_AND_PEXPIRE, NOTIFY_RELEASE};
use crate::wake::{SubscriptionSlot, Waiter, wake_channel};
use crate::{
    Attempt, Clock, KvBackend, LockAlgorithm, LockError, LockGuard, LockOptions, SetOptions,
    SetReply, Wait,
};

/// The token lock (seed 000): a fresh random UUID v4 per acquisition is the value, so only
/// the holder can release or extend it.
///
/// - acquire: `SET key token NX PX ttl` (one round trip); when that fails, `PTTL key`
///   reports how long the holder has left;
/// - release: [`COMPARE_AND_DELETE`]; extend: [`COMPARE_AND_PEXPIRE`].
///
/// With [`Wait::Notify`] a release also publishes on `<key>:wake` ([`NOTIFY_RELEASE`]), and
/// a blocked acquire's backoff sleeps end early when a release is published; it retries
/// with [`ACQUIRE_OR_PTTL`] (one command per attempt).
///
/// Remaining hazard: a holder paused longer than its TTL loses the lock without knowing
/// until its next release or extend reports `false`; see [`FencedLock`](crate::FencedLock).
#[derive(Clone, Debug)]
pub struct TokenLock<B> {
    binding: Binding<B>,
    /// `Some(<key>:wake)` with [`Wait::Notify`].
    channel: Option<Arc<[u8]>>,
    subscription: SubscriptionSlot,
}

impl<B: KvBackend + Clone + 'static> TokenLock<B> {
    /// A token lock on `key` with default options.
    pub fn new(backend: B, key: impl Into<Vec<u8>>) -> Self {
        Self::with_options(backend, key, LockOptions::default())
    }

    /// A token lock on `key` with `options`.
    pub fn with_options(backend: B, key: impl Into<Vec<u8>>, options: LockOptions) -> Self {
        let binding = Binding::new(backend, key, options);
        let channel =
            (binding.options.wait == Wait::Notify).then(|| wake_channel(&binding.key).into());
        Self {
            binding,
            channel,
            subscription: SubscriptionSlot::default(),
        }
    }

    fn guard(&self, token: String) -> TokenGuard<B> {
        let mut guard = TokenGuard::held(
            self.binding.backend.clone(),
            self.binding.key.clone(),
            token,
        );
        guard.channel = self.channel.clone();
        guard
    }

    /// [`Wait::Notify`]: attempt, subscribe, attempt, then sleep until a release or the
    /// holder's TTL; repeat while the policy allows.
    async fn acquire_notified(&self, channel: &[u8]) -> Result<TokenGuard<B>, LockError> {
        let Binding {
            backend,
            key,
            options,
            clock,
        } = &self.binding;
        let ttl_ms = ms_arg(options.ttl_ms()?);
        let policy = &options.policy;
        let mut budget = Budget::new(policy, clock);
        let mut waiter = Waiter::new(backend, channel, &self.subscription);
        loop {
            budget.count_attempt();
            let token = TokenGuard::<B>::new_token();
            let reply = backend
                .eval(&ACQUIRE_OR_PTTL, &[&**key], &[token.as_bytes(), &ttl_ms])
                .await?;
            let holder = match pair_reply(&ACQUIRE_OR_PTTL, reply)? {
                (1, _) => return Ok(self.guard(token)),
                (_, pttl) => holder_ttl(pttl),
            };
            budget.allow_another(key)?;
            if waiter.subscribe().await {
                continue;
            }
            // The policy's backoff still bounds each sleep: a lost wake-up costs at most
            // one backoff step, and Retry::Attempts counts wake-ups and timeouts alike.
            let limit = policy.delay(budget.attempts, holder, budget.waited());
            waiter.wait(clock, limit, |_| true).await;
        }
    }
}

impl<B: KvBackend + Clone + 'static> LockAlgorithm for TokenLock<B> {
    type Guard = TokenGuard<B>;

    fn name(&self) -> &'static str {
        "token"
    }
    binding_accessors!();

    async fn acquire(&self) -> Result<TokenGuard<B>, LockError> {
        match &self.channel {
            Some(channel) => self.acquire_notified(channel).await,
            None => acquire_with_policy(self).await,
        }
    }

    async fn try_acquire(&self) -> Result<Attempt<TokenGuard<B>>, LockError> {
        let Binding {
            backend,
            key,
            options,
            ..
        } = &self.binding;
        let ttl_ms = options.ttl_ms()?;
        let token = TokenGuard::<B>::new_token();
        match backend
            .set(key, token.as_bytes(), SetOptions::new().nx().px(ttl_ms))
            .await?
        {
            SetReply::Applied => Ok(Attempt::Acquired(self.guard(token))),
            _ => Ok(refused(backend.pttl(key).await?)),
        }
    }
}

/// A held [`TokenLock`].
#[derive(Debug)]
pub struct TokenGuard<B: KvBackend + Clone + 'static> {
    backend: B,
    key: Arc<[u8]>,
    token: String,
    /// Where the release publishes ([`Wait::Notify`]).
    channel: Option<Arc<[u8]>>,
    armed: bool,
}

impl<B: KvBackend + Clone + 'static> TokenGuard<B> {
    /// A fresh random UUID v4 token, encoded into a stack buffer (no formatting machinery).
    pub(super) fn new_token() -> String {
        let mut buffer = uuid::Uuid::encode_buffer();
        String::from(uuid::Uuid::new_v4().hyphenated().encode_lower(&mut buffer))
    }

    /// The guard of a lock just acquired with `token`.
    pub(super) fn held(backend: B, key: Arc<[u8]>, token: String) -> Self {
        Self {
            backend,
            key,
            token,
            channel: None,
            armed: true,
        }
    }

    /// Release, publishing a wake-up when the lock was built with [`Wait::Notify`]: true
    /// if we still held the lock.
    async fn release_by(
        backend: &B,
        key: &[u8],
        token: &str,
        channel: Option<&[u8]>,
    ) -> Result<bool, LockError> {
        let (script, reply) = match channel {
            Some(channel) => (
                &*NOTIFY_RELEASE,
                backend
                    .eval(&NOTIFY_RELEASE, &[key], &[token.as_bytes(), channel])
                    .await,
            ),
            None => (
                &*COMPARE_AND_DELETE,
                backend
                    .eval(&COMPARE_AND_DELETE, &[key], &[token.as_bytes()])
                    .await,
            ),
        };
        Ok(int_reply(script, reply?)? == 1)
    }

    pub(super) fn backend(&self) -> &B {
        &self.backend
    }

    pub(super) fn key_arc(&self) -> Arc<[u8]> {
        self.key.clone()
    }

    /// Stops Drop from releasing; true if it would have.
    pub(super) fn disarm(&mut self) -> bool {
        std::mem::replace(&mut self.armed, false)
    }

    /// The random token this acquisition wrote.
    pub fn token(&self) -> &str {
        &self.token
    }
}

impl<B: KvBackend + Clone + 'static> LockGuard for TokenGuard<B> {
    fn key(&self) -> &[u8] {
        &self.key
    }

    async fn release(mut self) -> Result<bool, LockError> {
        let released = Self::release_by(
            &self.backend,
            &self.key,
            &self.token,
            self.channel.as_deref(),
        )
        .await;
        // Only now: if this future is dropped mid-flight, Drop still releases.
        self.armed = false;
        released
    }

    async fn extend(&mut self, ttl: Duration) -> Result<bool, LockError> {
        let ttl_ms = LockOptions::new().ttl(ttl).ttl_ms()?;
        let reply = self
            .backend
            .eval(
                &COMPARE_AND_PEXPIRE,
                &[&*self.key],
                &[self.token.as_bytes(), &ms_arg(ttl_ms)],
            )
            .await?;
        Ok(int_reply(&COMPARE_AND_PEXPIRE, reply)? == 1)
    }
}

impl<B: KvBackend + Clone + 'static> Drop for TokenGuard<B> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let backend = self.backend.clone();
        let key = self.key.clone();
        let token = std::mem::take(&mut self.token);
        let channel = self.channel.take();
        run_in_background(async move {
            let _ = Self::release_by(&backend, &key, &token, channel.as_deref()).await;
        });
    }
}
