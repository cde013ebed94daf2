//! [`Lease`]: a held lock kept alive by a watchdog until released, with a loss signal.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, watch};
use tokio::task::JoinHandle;

use crate::{Clock, Error, LockError, LockGuard};

/// How a [`Lease`] renews.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseOptions {
    /// The TTL each renewal sets.
    pub ttl: Duration,
    /// Time between renewals; default `ttl / 3`, at least 1 ms. A period at or past the
    /// TTL lets the lock lapse between renewals ([`LostReason::NotHeld`]).
    pub renew_every: Duration,
    /// Stop renewing once the lock has been held this long (the lock then expires at its
    /// TTL and the lease reports [`LostReason::HoldCapReached`]). `None`: no cap.
    pub max_hold: Option<Duration>,
}

impl LeaseOptions {
    /// Renew to `ttl` every `ttl / 3`, without cap.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            renew_every: ttl / 3,
            max_hold: None,
        }
    }

    /// Renews every `period` instead of every `ttl / 3` (at least every millisecond).
    pub fn renew_every(mut self, period: Duration) -> Self {
        self.renew_every = period;
        self
    }

    /// Sets the cap on the total hold time.
    pub fn max_hold(mut self, cap: Duration) -> Self {
        self.max_hold = Some(cap);
        self
    }
}

/// Why a lease stopped protecting its lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LostReason {
    /// A renewal found the lock expired or owned by someone else.
    NotHeld,
    /// Renewals failed (the last error is kept) until the lock's TTL ran out.
    Backend(Error),
    /// [`LeaseOptions::max_hold`] was reached and the last renewal's TTL ran out: the lock
    /// is free when this is reported.
    HoldCapReached,
    /// Renewals reached the primary but too few replicas acknowledged them (see
    /// [`LockOptions::replication`](crate::LockOptions::replication)) until the TTL the
    /// replicas last acknowledged ran out. Unlike the other reasons, the lock may still be
    /// on the primary when this is reported: it is the replicas that no longer have a
    /// live copy, so a failover from then on would lose it.
    NotReplicated {
        /// Replicas that acknowledged the last renewal.
        acknowledged: i64,
        /// Replicas the options ask for.
        required: u32,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Held,
    Lost(LostReason),
}

/// A lock kept alive by a background watchdog.
///
/// - The watchdog extends the lock to [`LeaseOptions::ttl`] every
///   [`LeaseOptions::renew_every`], measured on the guard's [`Clock`] (the lock's, so
///   virtual time drives it in tests).
/// - It stops on [`Lease::release`] (even one that comes before the first renewal), when
///   the lease is dropped, and when the task owning the lease is cancelled, because that
///   drops it. Dropping releases the lock in the background, like dropping a guard.
/// - When a renewal finds the lock gone or taken, or renewals keep failing until the TTL
///   has run out, or the hold cap is reached, [`Lease::lost`] resolves with the reason.
#[derive(Debug)]
pub struct Lease<G: LockGuard + 'static> {
    guard: Arc<Mutex<Option<G>>>,
    state: watch::Receiver<State>,
    /// What the watchdog is doing: what [`Lease::settled`] waits on.
    progress: watch::Receiver<Progress>,
    clock: Clock,
    watchdog: JoinHandle<()>,
}

/// What the watchdog is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Progress {
    /// Renewing, or not yet started.
    Busy,
    /// Asleep until the clock reads this (µs).
    WaitingUntil(i64),
}

impl<G: LockGuard + 'static> Lease<G> {
    /// Starts renewing `guard` on its clock ([`LockGuard::clock`]). Needs a tokio runtime.
    pub fn start(guard: G, options: LeaseOptions) -> Self {
        let clock = guard.clock().clone();
        let guard = Arc::new(Mutex::new(Some(guard)));
        let (state_tx, state) = watch::channel(State::Held);
        let (progress_tx, progress) = watch::channel(Progress::Busy);
        // Read here, not when the task first runs: the guard's TTL counts from now.
        let started = clock.now_us();
        let watchdog = tokio::spawn(watchdog(
            guard.clone(),
            clock.clone(),
            started,
            options,
            state_tx,
            progress_tx,
        ));
        Self {
            guard,
            state,
            progress,
            clock,
            watchdog,
        }
    }

    /// Resolves once the watchdog has done everything that is due at the clock's present
    /// reading (renewed, or reported the loss) and sleeps until a later one, or has
    /// stopped. A test that moves a virtual clock waits on it after each step, so that
    /// renewals land when they are due however the runtime schedules the watchdog:
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use lock_core::{Clock, Lease, LockGuard};
    /// async fn six_seconds_later<G: LockGuard>(lease: &Lease<G>, clock: &Clock) {
    ///     for _ in 0..6 {
    ///         clock.advance(Duration::from_secs(1)); // virtual time
    ///         lease.settled().await; // the renewal due now has happened
    ///     }
    /// }
    /// ```
    ///
    /// It compares readings of the lock's clock, so after a [`Clock::jump`] forward it
    /// may wait until the watchdog next wakes.
    pub async fn settled(&self) {
        let mut progress = self.progress.clone();
        loop {
            let waiting = *progress.borrow_and_update();
            if matches!(waiting, Progress::WaitingUntil(due) if due > self.clock.now_us()) {
                return;
            }
            // A dropped sender: the watchdog has stopped, so nothing more is due.
            if progress.changed().await.is_err() {
                return;
            }
        }
    }

    /// Resolves when the lease stops protecting the lock, with the reason. Never resolves
    /// while the lock is held and renewed.
    pub async fn lost(&self) -> LostReason {
        let mut state = self.state.clone();
        loop {
            if let State::Lost(reason) = &*state.borrow_and_update() {
                return reason.clone();
            }
            if state.changed().await.is_err() {
                // The watchdog ended without a loss: it was stopped by release, which
                // consumes the lease, so this is unreachable through the public API.
                std::future::pending::<()>().await;
            }
        }
    }

    /// Whether the lease has already been lost.
    pub fn is_lost(&self) -> bool {
        matches!(*self.state.borrow(), State::Lost(_))
    }

    /// Stops the watchdog, then releases the lock: `Ok(true)` if it was still ours. On an
    /// error the guard is dropped, which releases once more in the background (see
    /// [`LockGuard::release`]).
    pub async fn release(self) -> Result<bool, LockError> {
        self.watchdog.abort();
        let guard = self.guard.lock().await.take();
        match guard {
            Some(guard) => Ok(guard.release().await?),
            None => Ok(false),
        }
    }
}

impl<G: LockGuard + 'static> Drop for Lease<G> {
    fn drop(&mut self) {
        // The guard itself goes when the last Arc does; its Drop releases in the background.
        self.watchdog.abort();
    }
}

async fn watchdog<G: LockGuard>(
    guard: Arc<Mutex<Option<G>>>,
    clock: Clock,
    started: i64,
    options: LeaseOptions,
    state: watch::Sender<State>,
    progress: watch::Sender<Progress>,
) {
    let mut protected_until = started + micros(options.ttl);
    // A zero period would renew in a busy loop.
    let period = options.renew_every.max(Duration::from_millis(1));
    // Sleeps, saying until when: the sleep starts before it is announced, so an advance
    // made as soon as [`Lease::settled`] sees the announcement counts towards it.
    let sleep = |duration: Duration| {
        let (clock, progress) = (&clock, &progress);
        async move {
            let (due, sleeping) = clock.timer(duration);
            let _ = progress.send(Progress::WaitingUntil(due));
            sleeping.await;
            let _ = progress.send(Progress::Busy);
        }
    };
    // The first renewal is due a period after the lease started, however late the task
    // first runs.
    let late = u64::try_from(clock.now_us() - started).unwrap_or(0);
    let mut wait = period.saturating_sub(Duration::from_micros(late));
    loop {
        sleep(wait).await;
        wait = period;
        let now = clock.now_us();
        if options
            .max_hold
            .is_some_and(|cap| now - started >= micros(cap))
        {
            // A key lives through the millisecond its TTL ends (it expires when now >
            // expiry), so the lock is free 1 ms after the last renewal's TTL.
            let left = u64::try_from(protected_until - now).unwrap_or(0);
            sleep(Duration::from_micros(left) + Duration::from_millis(1)).await;
            let _ = state.send(State::Lost(LostReason::HoldCapReached));
            return;
        }
        let mut slot = guard.lock().await;
        let Some(held) = slot.as_mut() else {
            return; // released
        };
        match held.extend(options.ttl).await {
            Ok(true) => protected_until = clock.now_us() + micros(options.ttl),
            Ok(false) => {
                let _ = state.send(State::Lost(LostReason::NotHeld));
                return;
            }
            // A backend failure may be transient: keep trying while the last TTL still
            // protects the lock, and report the error once it no longer does.
            Err(LockError::Backend(e) | LockError::NoQuorum { last_error: e, .. })
                if clock.now_us() >= protected_until =>
            {
                let _ = state.send(State::Lost(LostReason::Backend(e)));
                return;
            }
            Err(LockError::Backend(_) | LockError::NoQuorum { .. }) => {}
            // The primary has the new TTL, the replicas may catch up: as for a backend
            // failure, only the end of the last acknowledged TTL settles it.
            Err(LockError::NotReplicated {
                acknowledged,
                required,
                ..
            }) if clock.now_us() >= protected_until => {
                let reason = LostReason::NotReplicated {
                    acknowledged,
                    required,
                };
                let _ = state.send(State::Lost(reason));
                return;
            }
            Err(LockError::NotReplicated { .. }) => {}
            // Anything else (an algorithm without extend, say) will not get better.
            Err(other) => {
                let error = Error::new(crate::ErrorKind::Unsupported, other.to_string());
                let _ = state.send(State::Lost(LostReason::Backend(error)));
                return;
            }
        }
    }
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}
