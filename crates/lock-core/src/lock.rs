//! The traits every lock algorithm implements, their options, and the one retry loop
//! they share.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use crate::outcome::lossy;
use crate::{
    AcquirePolicy, Attempt, Clock, Error, LockBinding, LockError, LockName, Replication, Wait,
};

/// The longest TTL a lock accepts: 2^52 ms (about 142,000 years).
///
/// Scripts compute with TTLs and timestamps as Lua numbers (doubles), which are exact up
/// to 2^53; this bound keeps `now + ttl` (plus the timestamp locks' 1 s safety margin)
/// below that, so every backend computes the same expiry.
pub const MAX_TTL: Duration = Duration::from_millis(1 << 52);

/// Default [`LockOptions::barging_window`].
pub const DEFAULT_BARGING_WINDOW: Duration = Duration::from_millis(10);

/// Options shared by every algorithm. They are checked when a lock is built
/// (`with_options` answers [`LockError::InvalidConfig`]), never halfway through an acquire.
#[derive(Clone, Debug)]
pub struct LockOptions {
    /// How long a hold lasts before the backend frees it (or, for timestamp locks, before
    /// others may take it over). Between 1 ms and [`MAX_TTL`]. Default 30 s.
    pub ttl: Duration,
    /// How [`LockAlgorithm::acquire`] retries. Default: [`AcquirePolicy::default`].
    pub policy: AcquirePolicy,
    /// The clock for timestamps, sleeps and validity; `None` uses the backend's
    /// ([`KvBackend::clock`](crate::KvBackend::clock)). Give one client
    /// [`Clock::skewed`] to reproduce clock skew.
    pub clock: Option<Clock>,
    /// How a blocked acquire waits. Default [`Wait::Poll`]; only
    /// [`TokenLock`](crate::TokenLock) accepts [`Wait::Notify`] (see
    /// [`FairLock`](crate::FairLock) for first-come first-served).
    pub wait: Wait,
    /// Replicas that must acknowledge every acquire and extend before it counts (see
    /// [`Replication`]). `None` (the default) trusts the primary's reply alone, as plain
    /// Redis locks do. Token, fenced and reentrant locks accept it.
    pub replication: Option<Replication>,
    /// With [`Wait::Notify`]: how long a waiter lets others take the lock ahead of it
    /// before it claims the next turn, which only it may then take (see
    /// [`NOTIFY_ACQUIRE`](crate::scripts::NOTIFY_ACQUIRE)). Zero claims at the first
    /// refusal. Default [`DEFAULT_BARGING_WINDOW`].
    pub barging_window: Duration,
}

impl Default for LockOptions {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(30),
            policy: AcquirePolicy::default(),
            clock: None,
            wait: Wait::Poll,
            replication: None,
            barging_window: DEFAULT_BARGING_WINDOW,
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

    /// Sets how long a notified waiter lets others barge ahead before it claims the next
    /// turn ([`LockOptions::barging_window`]).
    pub fn barging_window(mut self, window: Duration) -> Self {
        self.barging_window = window;
        self
    }

    /// Asks `replication` to acknowledge every acquire and extend.
    pub fn replication(mut self, replication: Replication) -> Self {
        self.replication = Some(replication);
        self
    }

    /// Checks these options for `algorithm`, which honours [`Wait::Notify`] only if
    /// `support.notify` and [`LockOptions::replication`] only if `support.replication`.
    /// Returns the TTL in whole milliseconds.
    pub(crate) fn validate(&self, algorithm: &str, support: Supports) -> Result<i64, LockError> {
        if self.wait == Wait::Notify && !support.notify {
            return Err(LockError::InvalidConfig(format!(
                "{algorithm} locks do not support Wait::Notify (only token locks do)"
            )));
        }
        if let Some(replication) = &self.replication {
            if !support.replication {
                return Err(LockError::InvalidConfig(format!(
                    "{algorithm} locks do not support replication (token, fenced and reentrant locks do)"
                )));
            }
            replication.validate()?;
        }
        ttl_ms(self.ttl)
    }
}

/// Which optional behaviours an algorithm honours (see [`LockOptions::validate`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Supports {
    pub(crate) notify: bool,
    pub(crate) replication: bool,
}

/// A TTL in whole milliseconds: [`LockError::InvalidConfig`] unless it is between 1 ms and
/// [`MAX_TTL`].
pub(crate) fn ttl_ms(ttl: Duration) -> Result<i64, LockError> {
    if ttl < Duration::from_millis(1) || ttl > MAX_TTL {
        return Err(LockError::InvalidConfig(format!(
            "ttl must be between 1 ms and {} ms, got {ttl:?}",
            MAX_TTL.as_millis()
        )));
    }
    Ok(i64::try_from(ttl.as_millis()).expect("MAX_TTL fits in i64"))
}

/// A lock held through a backend.
///
/// Dropping a guard without [`LockGuard::release`] releases it in the background when a
/// tokio runtime is available (best effort); otherwise the TTL frees it.
/// [`LockGuard::abandon`] lets it go without either, as a crashed holder would.
pub trait LockGuard: fmt::Debug + Send + Sized {
    /// The lock's key.
    fn key(&self) -> &[u8];

    /// The clock this hold is measured on (the lock's).
    fn clock(&self) -> &Clock;

    /// Unix milliseconds, on [`LockGuard::clock`], before which no other client can take
    /// this lock: the hold's validity, counted from when the acquire (or the last
    /// successful extend) *started*, so it never overstates. It assumes what every
    /// SETNX-family lock assumes: that clocks advance alike and the holder is not paused
    /// past it (see [`FencedLock`](crate::FencedLock) for what to do about pauses).
    fn valid_until_ms(&self) -> i64;

    /// Releases the lock. `Ok(true)` if we still held it, `Ok(false)` if it had expired or
    /// been taken over (and then nothing is touched).
    ///
    /// # A failed release
    ///
    /// An error means the outcome is unknown: the command may or may not have run (a
    /// timeout, a lost connection). The [`ReleaseError`] gives the guard back: call
    /// [`ReleaseError::into_guard`] and release again to retry. Dropping the error (or
    /// turning it into a [`LockError`] with `?`) drops the guard, which releases once more
    /// in the background; if that fails too, the lock lapses at its TTL.
    fn release(self) -> impl Future<Output = Result<bool, ReleaseError<Self>>> + Send;

    /// Extends the hold to `ttl` from now. `Ok(false)` if we no longer hold the lock.
    /// `ttl` must be between 1 ms and [`MAX_TTL`].
    fn extend(&mut self, ttl: Duration) -> impl Future<Output = Result<bool, LockError>> + Send;

    /// Lets the lock go without releasing it, in the foreground or the background: what a
    /// crashed holder does. The lock stays held until its TTL runs out. For tests.
    fn abandon(self);
}

/// A release whose outcome is unknown; it carries the guard so the release can be retried.
/// See [`LockGuard::release`].
pub struct ReleaseError<G> {
    error: LockError,
    guard: G,
}

impl<G> ReleaseError<G> {
    pub(crate) fn new(error: LockError, guard: G) -> Self {
        Self { error, guard }
    }

    /// What went wrong.
    pub fn error(&self) -> &LockError {
        &self.error
    }

    /// The guard, still armed: release it again to retry.
    pub fn into_guard(self) -> G {
        self.guard
    }

    /// The error alone. The guard is dropped, which releases in the background.
    pub fn into_error(self) -> LockError {
        self.error
    }
}

impl<G> From<ReleaseError<G>> for LockError {
    fn from(e: ReleaseError<G>) -> Self {
        e.into_error()
    }
}

impl<G> fmt::Debug for ReleaseError<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReleaseError")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl<G> fmt::Display for ReleaseError<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "release outcome unknown: {}", self.error)
    }
}

impl<G> std::error::Error for ReleaseError<G> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// A SETNX-family lock algorithm bound to one [`LockName`](crate::LockName).
pub trait LockAlgorithm: Send + Sync {
    /// What a successful acquisition returns.
    type Guard: LockGuard;

    /// What the lock is bound to: its algorithm's name, key, options and clock, which the
    /// accessors below answer from.
    fn binding(&self) -> &LockBinding;

    /// A short name (`token`, `legacy`, `scripted`, `reentrant`, `fenced`, `fair`,
    /// `redlock`).
    fn name(&self) -> &'static str {
        self.binding().algorithm()
    }

    /// The lock key, `{name}:lock`.
    fn key(&self) -> &[u8] {
        self.binding().key()
    }

    /// The lock's options.
    fn options(&self) -> &LockOptions {
        self.binding().options()
    }

    /// The clock used for timestamps, retry sleeps and validity.
    fn clock(&self) -> &Clock {
        self.binding().clock()
    }

    /// One attempt, no waiting.
    fn try_acquire(&self) -> impl Future<Output = Result<Attempt<Self::Guard>, LockError>> + Send;

    /// Attempts until acquired or until the policy gives up ([`LockError::Timeout`]).
    ///
    /// Under a policy that retries ([`Retry::Attempts`](crate::Retry::Attempts),
    /// [`For`](crate::Retry::For), [`Forever`](crate::Retry::Forever)), transient backend
    /// errors (connection, timeout) are retried like a refusal; the
    /// [`LockError::Timeout`] that ends such a run counts them and keeps the last one.
    fn acquire(&self) -> impl Future<Output = Result<Self::Guard, LockError>> + Send {
        acquire_with_policy(self, |_| self.try_acquire())
    }
}

/// A lock built from one backend and a [`LockName`]: every algorithm but
/// [`ReentrantLock`](crate::ReentrantLock), which also takes its owner, and
/// [`Redlock`](crate::Redlock), which takes its nodes. In scope with
/// `use nxlock::prelude::*`.
pub trait NamedLock<B>: LockAlgorithm + Sized {
    /// The lock named `name` on `backend` with `options`; [`LockError::InvalidConfig`] if
    /// they are out of range or ask for what the algorithm does not do (only token locks
    /// honour [`Wait::Notify`]; token, fenced and reentrant locks honour
    /// [`LockOptions::replication`]).
    fn with_options(backend: B, name: &LockName, options: LockOptions) -> Result<Self, LockError>;

    /// The lock named `name` on `backend` with the default options.
    fn new(backend: B, name: &LockName) -> Self {
        Self::with_options(backend, name, LockOptions::default())
            .expect("the default options are valid")
    }
}

/// What an attempt of a retrying acquire knows about the attempts before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Before {
    /// Nothing that could have taken the lock: the first attempt, or refusals only.
    Nothing,
    /// An attempt whose outcome is unknown (a transient error): it may hold the lock
    /// already, so an algorithm that can recognise its own hold should.
    Unknown,
}

/// The retry loop of [`LockAlgorithm::acquire`]: `attempt` until acquired, sleeping by the
/// policy's backoff (capped by the holder's TTL) and retrying transient errors.
pub(crate) async fn acquire_with_policy<A, F, Fut>(
    lock: &A,
    attempt: F,
) -> Result<A::Guard, LockError>
where
    A: LockAlgorithm + ?Sized,
    F: FnMut(Before) -> Fut,
    Fut: Future<Output = Result<Attempt<A::Guard>, LockError>>,
{
    let budget = Budget::new(&lock.options().policy, lock.clock());
    acquire_with_budget(lock, budget, attempt).await
}

/// [`acquire_with_policy`] with a `budget` that may already count attempts.
pub(crate) async fn acquire_with_budget<A, F, Fut>(
    lock: &A,
    mut budget: Budget<'_>,
    mut attempt: F,
) -> Result<A::Guard, LockError>
where
    A: LockAlgorithm + ?Sized,
    F: FnMut(Before) -> Fut,
    Fut: Future<Output = Result<Attempt<A::Guard>, LockError>>,
{
    let (policy, clock) = (&lock.options().policy, lock.clock());
    let mut before = Before::Nothing;
    loop {
        budget.count_attempt();
        let held = match attempt(before).await {
            Ok(Attempt::Acquired(guard)) => return Ok(guard),
            Ok(Attempt::Held { holder_ttl }) => Some(holder_ttl),
            Ok(Attempt::Contended) => None,
            // Slow nodes, not a holder: back off as after a refusal of unknown TTL.
            Ok(Attempt::ValidityLost { .. }) => Some(None),
            Err(error) => {
                budget.absorb(error)?;
                before = Before::Unknown;
                Some(None)
            }
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

/// One acquire call's attempts, errors and time waited, against its policy.
pub(crate) struct Budget<'a> {
    policy: &'a AcquirePolicy,
    clock: &'a Clock,
    started_us: i64,
    pub(crate) attempts: u32,
    errors: u32,
    last_error: Option<Error>,
}

impl<'a> Budget<'a> {
    pub(crate) fn new(policy: &'a AcquirePolicy, clock: &'a Clock) -> Self {
        Self {
            policy,
            clock,
            started_us: clock.now_us(),
            attempts: 0,
            errors: 0,
            last_error: None,
        }
    }

    pub(crate) fn count_attempt(&mut self) {
        self.attempts = self.attempts.saturating_add(1);
    }

    /// Time since the acquire started, on the lock's clock.
    pub(crate) fn waited(&self) -> Duration {
        Duration::from_micros(u64::try_from(self.clock.now_us() - self.started_us).unwrap_or(0))
    }

    /// Keeps a transient backend error of an attempt for the final report, so the caller
    /// retries it; any other error, or any error under a policy that does not retry, is
    /// given back.
    pub(crate) fn absorb(&mut self, error: LockError) -> Result<(), LockError> {
        match error {
            LockError::Backend(e) | LockError::NoQuorum { last_error: e, .. }
                if e.is_transient() && self.policy.retries() =>
            {
                self.note_transient(&e);
                Ok(())
            }
            other => Err(other),
        }
    }

    /// Counts a transient error that the caller retries, for the final report.
    pub(crate) fn note_transient(&mut self, error: &Error) {
        self.errors = self.errors.saturating_add(1);
        self.last_error = Some(error.clone());
    }

    /// [`LockError::Timeout`] for `key` once the policy allows no further attempt.
    pub(crate) fn allow_another(&mut self, key: &[u8]) -> Result<(), LockError> {
        let waited = self.waited();
        if self.policy.allows_another(self.attempts, waited) {
            return Ok(());
        }
        Err(LockError::Timeout {
            key: lossy(key),
            attempts: self.attempts,
            waited,
            errors: self.errors,
            last_error: self.last_error.take(),
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
