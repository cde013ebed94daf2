//! Time as a lock sees it: the real clock, or a virtual one for tests.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::Notify;
use tokio::time::Instant;

/// A shareable clock giving Unix time in milliseconds, and sleeps measured on it.
///
/// Clones share one clock. Two sources exist:
///
/// - [`Clock::system`]: the wall clock. For clients of real servers.
/// - [`Clock::tokio`]: anchored to the wall clock once, then driven by
///   [`tokio::time::Instant`]. Under `tokio::time::pause()` it is virtual:
///   `tokio::time::advance` (or the runtime's auto-advance while every task sleeps) moves
///   it together with every `tokio::time::sleep`.
///
/// Either can also be moved by hand with [`Clock::advance`], which wakes sleepers in
/// [`Clock::sleep`] so that retry loops see the jump at once (the memory backend's
/// equivalent of miniredis's `FastForward`).
///
/// [`Clock::skewed`] gives a view that reads ahead of (or behind) its clock: one client's
/// clock running fast or slow, for the timestamp locks' clock-skew hazard.
/// [`Clock::detached`] gives a view whose readings can later [`jump`](Clock::jump) on
/// their own: one Redis node's clock stepped by NTP while the others' are not.
#[derive(Clone)]
pub struct Clock {
    inner: Arc<Inner>,
    /// What this view adds to the shared clock's reading, in microseconds.
    skew_us: i64,
    /// What [`Clock::jump`] added to this view and its clones, in microseconds.
    jumped_us: Arc<AtomicI64>,
}

struct Inner {
    source: Source,
    /// Manual advance, in microseconds, so that sub-millisecond advances add up.
    offset_us: AtomicI64,
    advanced: Notify,
}

enum Source {
    System,
    Tokio {
        anchor_unix_us: i64,
        anchor: Instant,
    },
}

fn system_unix_us() -> i64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    i64::try_from(since_epoch.as_micros()).unwrap_or(i64::MAX)
}

/// Saturating, and without `as_micros`'s 128-bit arithmetic: this runs twice per lock
/// cycle on the memory backend.
fn duration_us(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).map_or(i64::MAX, |secs| {
        secs.saturating_mul(1_000_000)
            .saturating_add(i64::from(d.subsec_micros()))
    })
}

impl Clock {
    fn with_source(source: Source) -> Self {
        Self {
            inner: Arc::new(Inner {
                source,
                offset_us: AtomicI64::new(0),
                advanced: Notify::new(),
            }),
            skew_us: 0,
            jumped_us: Arc::new(AtomicI64::new(0)),
        }
    }

    /// The system wall clock.
    pub fn system() -> Self {
        Self::with_source(Source::System)
    }

    /// A clock driven by tokio's time, so `tokio::time::pause()` makes it virtual.
    pub fn tokio() -> Self {
        Self::with_source(Source::Tokio {
            anchor_unix_us: system_unix_us(),
            anchor: Instant::now(),
        })
    }

    /// Like [`Clock::tokio`], but anchored at `start_unix_ms` instead of the wall clock's
    /// reading: under paused tokio time two runs read the same times, which a
    /// deterministic simulation needs.
    pub fn simulated(start_unix_ms: i64) -> Self {
        Self::with_source(Source::Tokio {
            anchor_unix_us: start_unix_ms.saturating_mul(1000),
            anchor: Instant::now(),
        })
    }

    /// Unix time in microseconds.
    pub fn now_us(&self) -> i64 {
        let base = match &self.inner.source {
            Source::System => system_unix_us(),
            Source::Tokio {
                anchor_unix_us,
                anchor,
            } => anchor_unix_us.saturating_add(duration_us(anchor.elapsed())),
        };
        self.reading(base, self.inner.offset_us.load(Ordering::Acquire))
    }

    /// What this clock reads at `base` (the source's µs) with the advance `offset_us`:
    /// the offset, this view's skew and its jumps added.
    fn reading(&self, base: i64, offset_us: i64) -> i64 {
        base.saturating_add(offset_us)
            .saturating_add(self.skew_us)
            .saturating_add(self.jumped_us.load(Ordering::Acquire))
    }

    /// This clock as a client whose clock is `offset_ms` ahead (negative: behind) would
    /// read it. Sleeps and [`Clock::advance`] are shared with this clock; only readings
    /// differ.
    pub fn skewed(&self, offset_ms: i64) -> Clock {
        Clock {
            inner: self.inner.clone(),
            skew_us: self.skew_us.saturating_add(offset_ms.saturating_mul(1000)),
            jumped_us: self.jumped_us.clone(),
        }
    }

    /// A view of this clock that reads the same now, and whose [`Clock::jump`]s move it
    /// (and its clones) alone. Sleeps and [`Clock::advance`] stay shared.
    pub fn detached(&self) -> Clock {
        Clock {
            inner: self.inner.clone(),
            skew_us: self.skew_us,
            jumped_us: Arc::new(AtomicI64::new(self.jumped_us.load(Ordering::Acquire))),
        }
    }

    /// Steps this view's readings by `by_ms` (negative: back), as NTP stepping one
    /// machine's wall clock does. Sleeps are not shortened, and views this one was not
    /// cloned from do not move (see [`Clock::detached`]).
    pub fn jump(&self, by_ms: i64) {
        self.jumped_us
            .fetch_add(by_ms.saturating_mul(1000), Ordering::AcqRel);
    }

    /// [`Clock::jump`] in microseconds: the small steps a drifting clock takes.
    pub fn jump_us(&self, by_us: i64) {
        self.jumped_us.fetch_add(by_us, Ordering::AcqRel);
    }

    /// How far this view reads ahead of the clock it was made from, in milliseconds.
    pub fn skew_ms(&self) -> i64 {
        self.skew_us / 1000
    }

    /// Unix time in milliseconds: the unit of Redis expiry times.
    pub fn now_ms(&self) -> i64 {
        self.now_us().div_euclid(1000)
    }

    /// Moves this clock (and every clone) forward by `by`, waking [`Clock::sleep`]ers.
    pub fn advance(&self, by: Duration) {
        self.inner
            .offset_us
            .fetch_add(duration_us(by), Ordering::AcqRel);
        self.inner.advanced.notify_waiters();
    }

    /// Sleeps until `duration` has passed on this clock: real (or tokio-virtual) time plus
    /// any [`Clock::advance`] made meanwhile.
    pub async fn sleep(&self, duration: Duration) {
        let start = Instant::now();
        let start_offset = self.inner.offset_us.load(Ordering::Acquire);
        self.sleep_from(start, start_offset, duration).await;
    }

    /// A sleep of `duration` that starts now, not when first polled, with the reading at
    /// which it ends: `(deadline_us, sleep)`. The start and the deadline are taken from
    /// one reading of the advance offset, so an [`Clock::advance`] made at any moment
    /// either counts towards the sleep or is already in the deadline (until a
    /// [`Clock::jump`], which moves readings and not sleeps).
    pub fn timer(&self, duration: Duration) -> (i64, impl Future<Output = ()> + Send + '_) {
        let start = Instant::now();
        let start_offset = self.inner.offset_us.load(Ordering::Acquire);
        let base = match &self.inner.source {
            Source::System => system_unix_us(),
            Source::Tokio {
                anchor_unix_us,
                anchor,
            } => anchor_unix_us.saturating_add(duration_us(start.duration_since(*anchor))),
        };
        let deadline_us = self
            .reading(base, start_offset)
            .saturating_add(duration_us(duration));
        (deadline_us, self.sleep_from(start, start_offset, duration))
    }

    async fn sleep_from(&self, start: Instant, start_offset: i64, duration: Duration) {
        loop {
            let notified = self.inner.advanced.notified();
            tokio::pin!(notified);
            // Register before reading the offset, so an advance in between is not missed.
            notified.as_mut().enable();
            let advanced_us = self.inner.offset_us.load(Ordering::Acquire) - start_offset;
            let advanced = Duration::from_micros(u64::try_from(advanced_us).unwrap_or(0));
            let Some(left) = duration
                .checked_sub(start.elapsed())
                .and_then(|d| d.checked_sub(advanced))
            else {
                return;
            };
            if left.is_zero() {
                return;
            }
            // Biased: a simulated run must take the same branch every time.
            tokio::select! {
                biased;
                _ = tokio::time::sleep(left) => return,
                _ = &mut notified => {}
            }
        }
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match self.inner.source {
            Source::System => "system",
            Source::Tokio { .. } => "tokio",
        };
        f.debug_struct("Clock")
            .field("source", &source)
            .field("skew_ms", &self.skew_ms())
            .field("now_ms", &self.now_ms())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_convert_to_whole_microseconds_and_saturate() {
        assert_eq!(duration_us(Duration::new(1, 999_999_999)), 1_999_999);
        assert_eq!(duration_us(Duration::from_nanos(999)), 0);
        assert_eq!(duration_us(Duration::from_secs(u64::MAX)), i64::MAX);
        assert_eq!(
            duration_us(Duration::from_secs(i64::MAX as u64 / 1000)),
            i64::MAX
        );
    }

    #[tokio::test(start_paused = true)]
    async fn tokio_clock_follows_paused_time() {
        let clock = Clock::tokio();
        let t0 = clock.now_ms();
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(clock.now_ms() - t0, 30_000);
    }

    #[tokio::test(start_paused = true)]
    async fn a_skewed_view_reads_ahead_and_shares_advances() {
        let clock = Clock::tokio();
        let fast = clock.skewed(5_000);
        let slow = clock.skewed(-2_000);
        assert_eq!(fast.now_ms() - clock.now_ms(), 5_000);
        assert_eq!(clock.now_ms() - slow.now_ms(), 2_000);
        fast.advance(Duration::from_secs(1));
        assert_eq!(fast.now_ms() - clock.now_ms(), 5_000);
        assert_eq!(fast.skewed(-5_000).now_ms(), clock.now_ms());
        let t0 = Instant::now();
        slow.sleep(Duration::from_secs(3)).await;
        assert_eq!(t0.elapsed(), Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_detached_view_jumps_alone_and_shares_advances() {
        let clock = Clock::tokio();
        let node = clock.detached();
        node.jump(5_000);
        assert_eq!(node.now_ms() - clock.now_ms(), 5_000);
        clock.advance(Duration::from_secs(1));
        assert_eq!(node.now_ms() - clock.now_ms(), 5_000);
        node.clone().jump(-7_000);
        assert_eq!(clock.now_ms() - node.now_ms(), 2_000);
        assert_eq!(node.skewed(2_000).now_ms(), clock.now_ms());
    }

    #[tokio::test(start_paused = true)]
    async fn manual_advance_wakes_a_sleeper() {
        let clock = Clock::tokio();
        let sleeper = {
            let clock = clock.clone();
            tokio::spawn(async move { clock.sleep(Duration::from_secs(3600)).await })
        };
        let t0 = Instant::now();
        tokio::task::yield_now().await;
        assert!(!sleeper.is_finished());
        clock.advance(Duration::from_secs(3600));
        sleeper.await.unwrap();
        // Paused tokio time would have auto-advanced an hour had the sleeper not woken.
        assert_eq!(t0.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn partial_advance_leaves_the_rest_to_sleep() {
        let clock = Clock::tokio();
        let t0 = Instant::now();
        let sleeper = {
            let clock = clock.clone();
            tokio::spawn(async move { clock.sleep(Duration::from_secs(10)).await })
        };
        tokio::task::yield_now().await;
        clock.advance(Duration::from_secs(4));
        sleeper.await.unwrap();
        assert_eq!(t0.elapsed(), Duration::from_secs(6));
    }
}
