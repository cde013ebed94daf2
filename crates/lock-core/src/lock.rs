//! The traits every lock algorithm implements, and the one retry loop they share.

use std::future::Future;
use std::time::Duration;

use crate::outcome::lossy;
use crate::{AcquirePolicy, Attempt, Clock, LockError, Wait};

/// Options shared by every algorithm.
#[derive(Clone, Debug)]
pub struct LockOptions {
    /// How long a hold lasts before the backend frees it (or, for timestamp locks, before
    /// others may take it over). Default 30 s.
    pub ttl: Duration,
    /// How [`LockAlgorithm::acquire`] retries. Default: [`AcquirePolicy::default`].
    pub policy: AcquirePolicy,
    /// The clock for timestamps and sleeps; `None` uses the backend's
    /// ([`KvBackend::clock`](crate::KvBackend::clock)).
    pub clock: Option<Clock>,
    /// How a blocked acquire waits. Default [`Wait::Poll`]; [`Wait::Notify`] is supported
    /// by [`TokenLock`](crate::TokenLock) (see [`FairLock`](crate::FairLock) for FIFO).
    pub wait: Wait,
}

impl Default for LockOptions {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(30),
            policy: AcquirePolicy::default(),
            clock: None,
            wait: Wait::Poll,
        }
    }
}

impl LockOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the TTL.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }
    /// Sets the acquire policy.
    pub fn policy(mut self, policy: AcquirePolicy) -> Self {
        self.policy = policy;
        self
    }
    /// Sets the clock (for example a skewed one, to test timestamp locks).
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Sets how a blocked acquire waits.
    pub fn wait(mut self, wait: Wait) -> Self {
        self.wait = wait;
        self
    }

    /// The TTL in whole milliseconds, at least 1.
    pub(crate) fn ttl_ms(&self) -> Result<i64, LockError> {
        match i64::try_from(self.ttl.as_millis()) {
            Ok(ms) if ms >= 1 => Ok(ms),
            _ => Err(LockError::InvalidConfig(format!(
                "ttl must be between 1 ms and i64::MAX ms, got {:?}",
                self.ttl
            ))),
        }
    }
}

/// A lock held through a backend. Dropping it without [`LockGuard::release`] releases it
/// in the background when a tokio runtime is available (best effort); otherwise the TTL
/// frees it.
pub trait LockGuard: Send {
    /// The lock's key.
    fn key(&self) -> &[u8];

    /// Releases the lock. `Ok(true)` if we still held it, `Ok(false)` if it had expired or
    /// been taken over (and then nothing is touched).
    fn release(self) -> impl Future<Output = Result<bool, LockError>> + Send;

    /// Extends the hold to `ttl` from now. `Ok(false)` if we no longer hold the lock.
    fn extend(&mut self, ttl: Duration) -> impl Future<Output = Result<bool, LockError>> + Send;
}

/// A SETNX-family lock algorithm bound to one key.
pub trait LockAlgorithm: Send + Sync {
    /// What a successful acquisition returns.
    type Guard: LockGuard;

    /// A short name (`token`, `legacy`, `scripted`, `reentrant`).
    fn name(&self) -> &'static str;

    /// The lock key.
    fn key(&self) -> &[u8];

    /// The lock's options.
    fn options(&self) -> &LockOptions;

    /// The clock used for timestamps and retry sleeps.
    fn clock(&self) -> &Clock;

    /// One attempt, no waiting.
    fn try_acquire(&self) -> impl Future<Output = Result<Attempt<Self::Guard>, LockError>> + Send;

    /// Attempts until acquired or until the policy gives up ([`LockError::Timeout`]).
    fn acquire(&self) -> impl Future<Output = Result<Self::Guard, LockError>> + Send {
        acquire_with_policy(self)
    }
}

pub(crate) async fn acquire_with_policy<A: LockAlgorithm + ?Sized>(
    lock: &A,
) -> Result<A::Guard, LockError> {
    if lock.options().wait != Wait::Poll {
        // Polling instead would look like it worked while ignoring the option.
        return Err(LockError::Unsupported {
            algorithm: lock.name(),
            operation: "Wait::Notify",
        });
    }
    let (policy, clock) = (&lock.options().policy, lock.clock());
    let mut budget = Budget::new(policy, clock);
    loop {
        budget.count_attempt();
        let held = match lock.try_acquire().await? {
            Attempt::Acquired(guard) => return Ok(guard),
            Attempt::Held { holder_ttl } => Some(holder_ttl),
            Attempt::Contended => None,
        };
        budget.allow_another(lock.key())?;
        let delay = held.map_or(Duration::ZERO, |holder_ttl| {
            policy.delay(budget.attempts, holder_ttl, budget.waited())
        });
        if delay.is_zero() {
            // Raced (seed 001's codes 1 and 3), or a zero backoff: retry at once, but let
            // other tasks run first.
            tokio::task::yield_now().await;
        } else {
            clock.sleep(delay).await;
        }
    }
}

/// One acquire call's attempts and time waited, against its policy.
pub(crate) struct Budget<'a> {
    policy: &'a AcquirePolicy,
    clock: &'a Clock,
    started_us: i64,
    pub(crate) attempts: u32,
}

impl<'a> Budget<'a> {
    pub(crate) fn new(policy: &'a AcquirePolicy, clock: &'a Clock) -> Self {
        Self {
            policy,
            clock,
            started_us: clock.now_us(),
            attempts: 0,
        }
    }

    pub(crate) fn count_attempt(&mut self) {
        self.attempts = self.attempts.saturating_add(1);
    }

    /// Time since the acquire started, on the lock's clock.
    pub(crate) fn waited(&self) -> Duration {
        Duration::from_micros(u64::try_from(self.clock.now_us() - self.started_us).unwrap_or(0))
    }

    /// [`LockError::Timeout`] for `key` once the policy allows no further attempt.
    pub(crate) fn allow_another(&self, key: &[u8]) -> Result<(), LockError> {
        let waited = self.waited();
        if self.policy.allows_another(self.attempts, waited) {
            return Ok(());
        }
        Err(LockError::Timeout {
            key: lossy(key),
            attempts: self.attempts,
            waited,
        })
    }
}

/// Runs a release in the background when a guard is dropped unreleased.
pub(crate) fn run_in_background<F>(release: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(release);
    }
}
