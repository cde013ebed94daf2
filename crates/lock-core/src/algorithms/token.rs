//! Seed 000's lock: `SET key token NX PX ttl`, released by compare-and-delete.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::held::{Held, Releaser};
use super::{
    Hold, bind, holder_ttl, int_reply, ms_arg, pair_reply, refused, replicated_enough, write,
};
use crate::lock::{
    Before, Budget, ReleaseError, Supports, acquire_with_policy, run_in_background, ttl_ms,
};
use crate::publish_command;
use crate::scripts::{
    ACQUIRE_OR_PTTL, COMPARE_AND_DELETE, COMPARE_AND_PEXPIRE, NOTIFY_ACQUIRE, NOTIFY_RELEASE,
};
use crate::wake::{SubscriptionSlot, Waiter};
use crate::{
    Attempt, Clock, KvBackend, LockAlgorithm, LockBinding, LockError, LockGuard, LockName,
    LockOptions, NamedLock, Replication, SetOptions, SetReply, Wait,
};

/// The token lock (seed 000): a fresh random UUID v4 per acquire call is the value, so
/// only the holder can release or extend it.
///
/// - acquire: `SET {name}:lock token NX PX ttl` (one round trip); when that fails,
///   `PTTL` reports how long the holder has left. An attempt retried after a transient
///   error uses [`ACQUIRE_OR_PTTL`] with the same token, so a lock that the lost attempt
///   did take is recognised as ours.
/// - release: [`COMPARE_AND_DELETE`]; extend: [`COMPARE_AND_PEXPIRE`].
///
/// With [`Wait::Notify`] a release also publishes on `{name}:wake` ([`NOTIFY_RELEASE`]),
/// and a blocked acquire's backoff sleeps end early when a release is published; every
/// attempt is one [`NOTIFY_ACQUIRE`], which also honours and makes claims on the next
/// turn (`{name}:next`): a waiter refused for longer than the
/// [`barging_window`](LockOptions::barging_window) claims it, so no waiter starves while
/// others cycle. A claim lasts the TTL or 1 s, whichever is shorter, unless its waiter
/// renews it by trying again; an acquire that gives up or is cancelled withdraws it.
///
/// # Invariants
///
/// - At most one client holds the lock at any time: the key is written only by `SET NX`
///   and holds one token.
/// - A hold lasts at least [`LockGuard::valid_until_ms`], and the key disappears by itself
///   1 ms after its TTL, so a crashed holder delays others by at most the TTL.
/// - Release and extend touch the key only if it still holds this acquisition's token.
///
/// Remaining hazard: a holder paused longer than its TTL loses the lock without knowing
/// until its next release or extend reports `false`; see [`FencedLock`](crate::FencedLock).
#[derive(Clone, Debug)]
pub struct TokenLock<B> {
    backend: B,
    binding: LockBinding,
    /// The keys [`Wait::Notify`] adds.
    notify: Option<NotifyKeys>,
    subscription: SubscriptionSlot,
}

/// The wake-up channel and the claim on the next turn.
#[derive(Clone, Debug)]
struct NotifyKeys {
    channel: Arc<[u8]>,
    claim: Arc<[u8]>,
}

/// The longest a claim on the next turn lasts without being renewed, ms.
const CLAIM_TTL_MS: i64 = 1_000;

impl<B: KvBackend + Clone + 'static> NamedLock<B> for TokenLock<B> {
    fn with_options(backend: B, name: &LockName, options: LockOptions) -> Result<Self, LockError> {
        let supports = Supports {
            notify: true,
            replication: true,
        };
        let binding = bind(&backend, name, options, "token", supports)?;
        let notify = (binding.options.wait == Wait::Notify).then(|| NotifyKeys {
            channel: name.key("wake").into(),
            claim: name.key("next").into(),
        });
        Ok(Self {
            backend,
            binding,
            notify,
            subscription: SubscriptionSlot::default(),
        })
    }
}

impl<B: KvBackend + Clone + 'static> TokenLock<B> {
    fn guard(&self, token: String, started_ms: i64) -> TokenGuard<B> {
        let binding = &self.binding;
        let hold = Hold::new(binding.clock.clone(), started_ms, binding.ttl_ms);
        let mut releaser = TokenRelease::new(self.backend.clone(), binding.key.clone(), token)
            .replicated(binding.options.replication);
        releaser.channel = self.notify.as_ref().map(|keys| keys.channel.clone());
        TokenGuard {
            held: Held::new(releaser, hold),
        }
    }

    /// [`ACQUIRE_OR_PTTL`] with `token` ([`NOTIFY_ACQUIRE`] with [`Wait::Notify`], which
    /// claims the next turn for `claim_ms` unless that is `0`), waiting for the replicas
    /// when the options ask: `(acquired, pttl)`. An acquire fewer replicas acknowledged is
    /// undone and reported as [`LockError::NotReplicated`].
    async fn acquire_or_pttl(
        &self,
        token: &str,
        ttl_ms: &[u8],
        claim_ms: &[u8],
    ) -> Result<(bool, i64), LockError> {
        let LockBinding { key, options, .. } = &self.binding;
        let backend = &self.backend;
        let replication = options.replication.as_ref();
        let (script, reply, acknowledged) = match &self.notify {
            None => {
                let (keys, args) = (&[&**key], &[token.as_bytes(), ttl_ms]);
                let (reply, acknowledged) =
                    write(backend, replication, &ACQUIRE_OR_PTTL, keys, args).await?;
                (&*ACQUIRE_OR_PTTL, reply, acknowledged)
            }
            Some(notify) => {
                let keys = &[&**key, &*notify.claim];
                let args = &[token.as_bytes(), ttl_ms, claim_ms];
                let (reply, acknowledged) =
                    write(backend, replication, &NOTIFY_ACQUIRE, keys, args).await?;
                (&*NOTIFY_ACQUIRE, reply, acknowledged)
            }
        };
        let (code, pttl) = pair_reply(script, reply)?;
        if code == 1
            && let Err(not_replicated) = replicated_enough(key, replication, acknowledged)
        {
            release_by(backend, key, token, None).await?;
            return Err(not_replicated);
        }
        Ok((code == 1, pttl))
    }

    /// One attempt with `token`: `SET NX PX` then `PTTL`, or, when an earlier attempt's
    /// outcome is unknown, the script that also recognises our own token.
    async fn attempt(
        &self,
        token: &str,
        before: Before,
    ) -> Result<Attempt<TokenGuard<B>>, LockError> {
        let LockBinding {
            key, ttl_ms, clock, ..
        } = &self.binding;
        let backend = &self.backend;
        let started = clock.now_ms();
        // The script recognises our own token: a retry after a lost reply, or any attempt
        // whose write must also reach the replicas, is safe to repeat. Notified locks
        // always use theirs, which honours a waiter's claim on the next turn.
        if before == Before::Unknown
            || self.binding.options.replication.is_some()
            || self.notify.is_some()
        {
            return match self.acquire_or_pttl(token, &ms_arg(*ttl_ms), b"0").await? {
                (true, _) => Ok(Attempt::Acquired(self.guard(token.to_owned(), started))),
                (false, pttl) => Ok(refused(pttl)),
            };
        }
        match backend
            .set(key, token.as_bytes(), SetOptions::new().nx().px(*ttl_ms))
            .await?
        {
            SetReply::Applied => Ok(Attempt::Acquired(self.guard(token.to_owned(), started))),
            _ => Ok(refused(backend.pttl(key).await?)),
        }
    }

    /// [`Wait::Notify`]: attempt, subscribe, attempt, then sleep until a release or the
    /// holder's TTL; repeat while the policy allows. Attempts made after the barging
    /// window claim the next turn; an acquire that ends without the lock withdraws its
    /// claim before it returns (in the background if it is cancelled).
    async fn acquire_notified(&self, notify: &NotifyKeys) -> Result<TokenGuard<B>, LockError> {
        let mut claim = WithdrawOnDrop {
            backend: &self.backend,
            claim: &notify.claim,
            token: crate::fresh_token(),
            armed: false,
        };
        let outcome = self.wait_notified(&notify.channel, &mut claim).await;
        if outcome.is_err() && claim.armed && claim.withdraw().await.is_ok() {
            claim.armed = false;
        }
        outcome
    }

    async fn wait_notified(
        &self,
        channel: &[u8],
        claim: &mut WithdrawOnDrop<'_, B>,
    ) -> Result<TokenGuard<B>, LockError> {
        let LockBinding {
            key,
            options,
            ttl_ms,
            clock,
            ..
        } = &self.binding;
        let backend = &self.backend;
        let claim_ms = ms_arg((*ttl_ms).min(CLAIM_TTL_MS));
        let ttl_ms = ms_arg(*ttl_ms);
        let policy = &options.policy;
        let mut budget = Budget::new(policy, clock);
        let mut waiter = Waiter::new(backend, channel, &self.subscription);
        let token = claim.token.clone();
        loop {
            budget.count_attempt();
            let started = clock.now_ms();
            let claiming = budget.waited() >= options.barging_window;
            claim.armed |= claiming;
            let claim_ms: &[u8] = if claiming { &claim_ms } else { b"0" };
            let reply = self.acquire_or_pttl(&token, &ttl_ms, claim_ms).await;
            let holder = match reply {
                Ok((true, _)) => {
                    // Taking the lock ended the claim.
                    claim.armed = false;
                    return Ok(self.guard(token, started));
                }
                Err(error @ LockError::NotReplicated { .. }) => return Err(error),
                Ok((false, pttl)) => holder_ttl(pttl),
                Err(error) => {
                    budget.absorb(error)?;
                    None
                }
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

/// Withdraws a notified waiter's claim on the next turn if its acquire ends without the
/// lock: otherwise the claim would keep a free lock from everyone for up to
/// [`CLAIM_TTL_MS`].
struct WithdrawOnDrop<'a, B: KvBackend + Clone + 'static> {
    backend: &'a B,
    claim: &'a Arc<[u8]>,
    token: String,
    /// A claim may stand.
    armed: bool,
}

impl<B: KvBackend + Clone + 'static> WithdrawOnDrop<'_, B> {
    /// The claim is a key holding our token: withdrawing is releasing it.
    async fn withdraw(&self) -> Result<bool, LockError> {
        release_by(self.backend, self.claim, &self.token, None).await
    }
}

impl<B: KvBackend + Clone + 'static> Drop for WithdrawOnDrop<'_, B> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (backend, claim) = (self.backend.clone(), self.claim.clone());
        let token = std::mem::take(&mut self.token);
        run_in_background(async move {
            let _ = release_by(&backend, &claim, &token, None).await;
        });
    }
}

impl<B: KvBackend + Clone + 'static> LockAlgorithm for TokenLock<B> {
    type Guard = TokenGuard<B>;

    fn binding(&self) -> &LockBinding {
        &self.binding
    }

    async fn acquire(&self) -> Result<TokenGuard<B>, LockError> {
        if let Some(notify) = &self.notify {
            return self.acquire_notified(notify).await;
        }
        let token = crate::fresh_token();
        acquire_with_policy(self, |before| self.attempt(&token, before)).await
    }

    async fn try_acquire(&self) -> Result<Attempt<TokenGuard<B>>, LockError> {
        self.attempt(&crate::fresh_token(), Before::Nothing).await
    }
}

/// A held [`TokenLock`].
pub struct TokenGuard<B: KvBackend + Clone + 'static> {
    held: Held<TokenRelease<B>>,
}

impl<B: KvBackend + Clone + 'static> TokenGuard<B> {
    /// The random token this acquisition wrote.
    pub fn token(&self) -> &str {
        &self.held.releaser.token
    }
}

/// Compare-and-delete of one acquisition's token ([`COMPARE_AND_DELETE`], or
/// [`NOTIFY_RELEASE`] when the release publishes a wake-up): the release of the token,
/// fenced and fair locks' holds.
#[derive(Clone)]
pub(super) struct TokenRelease<B> {
    pub(super) backend: B,
    pub(super) key: Arc<[u8]>,
    pub(super) token: String,
    /// Where the release publishes ([`Wait::Notify`]).
    channel: Option<Arc<[u8]>>,
    /// Replicas every extend must reach ([`LockOptions::replication`]).
    replication: Option<Replication>,
}

impl<B: KvBackend + Clone + 'static> TokenRelease<B> {
    /// The release of a lock just acquired with `token`.
    pub(super) fn new(backend: B, key: Arc<[u8]>, token: String) -> Self {
        Self {
            backend,
            key,
            token,
            channel: None,
            replication: None,
        }
    }

    /// This release, its hold's extends acknowledged by `replication`.
    pub(super) fn replicated(mut self, replication: Option<Replication>) -> Self {
        self.replication = replication;
        self
    }

    /// Extends `hold` by `script`, a compare-and-PEXPIRE of this token (`KEYS[1]` key,
    /// `ARGV[1]` token, `ARGV[2]` ms; replies 1 if extended): [`LockGuard::extend`].
    pub(super) async fn extend(
        &self,
        hold: &mut Hold,
        script: &crate::Script,
        ttl: Duration,
    ) -> Result<bool, LockError> {
        let ttl_ms = ttl_ms(ttl)?;
        let started = hold.clock.now_ms();
        let (reply, acknowledged) = write(
            &self.backend,
            self.replication.as_ref(),
            script,
            &[&*self.key],
            &[self.token.as_bytes(), &ms_arg(ttl_ms)],
        )
        .await?;
        let extended = int_reply(script, reply)? == 1;
        if extended {
            *hold = Hold::new(hold.clock.clone(), started, ttl_ms);
            replicated_enough(&self.key, self.replication.as_ref(), acknowledged)?;
        }
        Ok(extended)
    }
}

impl<B: KvBackend + Clone + 'static> Releaser for TokenRelease<B> {
    fn key(&self) -> &[u8] {
        &self.key
    }

    async fn release(&mut self, _hold: &Hold) -> Result<bool, LockError> {
        let channel = self.channel.as_deref();
        release_by(&self.backend, &self.key, &self.token, channel).await
    }

    fn detach(&mut self) -> Self {
        self.clone()
    }

    fn describe(&self, out: &mut fmt::DebugStruct<'_, '_>) {
        out.field("token", &self.token);
    }
}

/// Release, publishing a wake-up when the lock was built with [`Wait::Notify`]: true if we
/// still held the lock.
async fn release_by<B: KvBackend>(
    backend: &B,
    key: &[u8],
    token: &str,
    channel: Option<&[u8]>,
) -> Result<bool, LockError> {
    let (script, reply) = match channel {
        Some(channel) => (
            &*NOTIFY_RELEASE,
            backend
                .eval(
                    &NOTIFY_RELEASE,
                    &[key],
                    &[token.as_bytes(), channel, publish_command(backend)],
                )
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

impl<B: KvBackend + Clone + 'static> LockGuard for TokenGuard<B> {
    held_guard!();

    async fn extend(&mut self, ttl: Duration) -> Result<bool, LockError> {
        let Held { releaser, hold, .. } = &mut self.held;
        releaser.extend(hold, &COMPARE_AND_PEXPIRE, ttl).await
    }
}

held_debug!(TokenGuard);
