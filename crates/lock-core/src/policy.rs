//! Acquire policies: how often to retry and how long to sleep in between.

use std::time::Duration;

/// When to give up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// One attempt only.
    Once,
    /// At most this many attempts in all (0 counts as 1).
    Attempts(u32),
    /// Keep trying until this much time has passed on the lock's clock; one last
    /// attempt is made at the deadline.
    For(Duration),
    /// Never give up. Only when explicitly asked for.
    Forever,
}

/// How long to sleep after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Backoff {
    /// The same sleep every time.
    Fixed(Duration),
    /// `initial`, doubling up to `max`; with `jitter`, a uniformly random part of
    /// each step (full jitter) so that waiters do not wake in lockstep.
    Exponential {
        /// First sleep.
        initial: Duration,
        /// Largest sleep.
        max: Duration,
        /// Randomise each sleep in `[step/2, step]`.
        jitter: bool,
    },
    /// Sleep exactly as long as the holder's lock has left (seed 000's hint), at most
    /// `max`; `max` also when the holder's TTL is unknown.
    HolderTtl {
        /// Upper bound of one sleep.
        max: Duration,
    },
}

/// A complete acquire policy: [`Retry`] plus [`Backoff`].
///
/// The default tries for up to 10 seconds with exponential backoff from 1 ms to 100 ms,
/// jittered, and never sleeps past the holder's reported TTL.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AcquirePolicy {
    /// When to give up.
    pub retry: Retry,
    /// How long to sleep between attempts.
    pub backoff: Backoff,
    /// Cap every sleep at the holder's reported TTL (a lock cannot be free before its TTL
    /// runs out, but can be released earlier; waking when it expires is never too late).
    pub cap_by_holder_ttl: bool,
}

impl Default for AcquirePolicy {
    fn default() -> Self {
        Self {
            retry: Retry::For(Duration::from_secs(10)),
            backoff: Backoff::Exponential {
                initial: Duration::from_millis(1),
                max: Duration::from_millis(100),
                jitter: true,
            },
            cap_by_holder_ttl: true,
        }
    }
}

impl AcquirePolicy {
    /// One attempt, no waiting.
    pub fn try_once() -> Self {
        Self {
            retry: Retry::Once,
            ..Self::default()
        }
    }

    /// The default backoff with a different [`Retry`].
    pub fn retry(retry: Retry) -> Self {
        Self {
            retry,
            ..Self::default()
        }
    }

    /// Replaces the backoff.
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Whether this policy tries more than once, and so retries transient backend errors.
    pub fn retries(&self) -> bool {
        !matches!(self.retry, Retry::Once | Retry::Attempts(0 | 1))
    }

    /// Whether another attempt is allowed after `attempts` attempts and `waited` time.
    pub fn allows_another(&self, attempts: u32, waited: Duration) -> bool {
        match self.retry {
            Retry::Once => false,
            Retry::Attempts(n) => attempts < n.max(1),
            Retry::For(limit) => waited < limit,
            Retry::Forever => true,
        }
    }

    /// The sleep before attempt `attempts + 1`, given the holder's TTL if reported, and
    /// never past the policy's deadline.
    ///
    /// A key expires strictly *after* its expiry time, so a lock whose PTTL is `t` is free
    /// only `t + 1 ms` from now; that is what holder-TTL sleeps and caps use. (Sleeping
    /// exactly `t` would find PTTL 0 and spin.)
    pub fn delay(&self, attempts: u32, holder_ttl: Option<Duration>, waited: Duration) -> Duration {
        let holder_ttl = holder_ttl.map(|ttl| ttl + Duration::from_millis(1));
        let mut delay = match self.backoff {
            Backoff::Fixed(d) => d,
            Backoff::Exponential {
                initial,
                max,
                jitter,
            } => {
                let shift = attempts.saturating_sub(1).min(31);
                let step = initial.saturating_mul(1 << shift).min(max);
                if jitter {
                    let half = step / 2;
                    half + step
                        .saturating_sub(half)
                        .mul_f64(crate::random::random_f64())
                } else {
                    step
                }
            }
            Backoff::HolderTtl { max } => holder_ttl.unwrap_or(max).min(max),
        };
        if self.cap_by_holder_ttl
            && let Some(ttl) = holder_ttl
        {
            delay = delay.min(ttl);
        }
        if let Retry::For(limit) = self.retry {
            delay = delay.min(limit.saturating_sub(waited));
        }
        delay
    }
}

/// How long a waiter that wakes on releases sleeps when the holder's TTL is unknown (the
/// lock has no TTL) before checking again.
const UNKNOWN_HOLDER_RECHECK: Duration = Duration::from_millis(100);

impl AcquirePolicy {
    /// The longest a fair-lock waiter sleeps before checking the lock again: the holder's
    /// TTL plus 1 ms when known, and never past a [`Retry::For`] deadline. The backoff does
    /// not apply: the hand-off's wake-up, not a timer, is what normally ends the wait.
    pub(crate) fn wake_limit(&self, holder_ttl: Option<Duration>, waited: Duration) -> Duration {
        let limit = holder_ttl.map_or(UNKNOWN_HOLDER_RECHECK, |ttl| ttl + Duration::from_millis(1));
        match self.retry {
            Retry::For(deadline) => limit.min(deadline.saturating_sub(waited)),
            _ => limit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn exponential_doubles_up_to_max() {
        let p = AcquirePolicy::retry(Retry::Forever).with_backoff(Backoff::Exponential {
            initial: MS,
            max: 8 * MS,
            jitter: false,
        });
        let delays: Vec<_> = (1..=6).map(|n| p.delay(n, None, Duration::ZERO)).collect();
        assert_eq!(delays, [MS, 2 * MS, 4 * MS, 8 * MS, 8 * MS, 8 * MS]);
    }

    #[test]
    fn jitter_stays_within_half_to_full_step() {
        let p = AcquirePolicy::retry(Retry::Forever).with_backoff(Backoff::Exponential {
            initial: 64 * MS,
            max: 64 * MS,
            jitter: true,
        });
        for _ in 0..1000 {
            let d = p.delay(1, None, Duration::ZERO);
            assert!(d >= 32 * MS && d <= 64 * MS, "{d:?}");
        }
    }

    #[test]
    fn holder_ttl_caps_and_deadline_truncates() {
        let p = AcquirePolicy::retry(Retry::For(100 * MS)).with_backoff(Backoff::Fixed(50 * MS));
        assert_eq!(p.delay(1, Some(7 * MS), Duration::ZERO), 8 * MS);
        assert_eq!(p.delay(1, None, 90 * MS), 10 * MS);
        let ttl =
            AcquirePolicy::retry(Retry::Forever).with_backoff(Backoff::HolderTtl { max: 5 * MS });
        assert_eq!(ttl.delay(1, Some(3 * MS), Duration::ZERO), 4 * MS);
        // PTTL 0: the key is still there for up to a millisecond; never a zero sleep.
        assert_eq!(ttl.delay(1, Some(Duration::ZERO), Duration::ZERO), MS);
        assert_eq!(ttl.delay(1, Some(30 * MS), Duration::ZERO), 5 * MS);
        assert_eq!(ttl.delay(1, None, Duration::ZERO), 5 * MS);
    }

    #[test]
    fn retry_limits() {
        assert!(!AcquirePolicy::try_once().allows_another(1, Duration::ZERO));
        let three = AcquirePolicy::retry(Retry::Attempts(3));
        assert!(three.allows_another(2, Duration::ZERO));
        assert!(!three.allows_another(3, Duration::ZERO));
        let deadline = AcquirePolicy::retry(Retry::For(MS));
        assert!(deadline.allows_another(100, Duration::ZERO));
        assert!(!deadline.allows_another(1, MS));
    }
}
