//! What a benchmark runs: the algorithm, how its clients wait, how many clients and keys,
//! and the hold time. A description only; the runners ([`locks`](super::locks),
//! [`counters`](super::counters)) take it.

use std::time::Duration;

/// What `nxlock bench --algorithm` runs: the one list,
/// [`AlgorithmKind`](lock_core::AlgorithmKind), which `nxlock explore` shares; the bench
/// runs those [`AlgorithmKind::benched`](lock_core::AlgorithmKind::benched) says.
pub use lock_core::AlgorithmKind as Algorithm;

/// How blocked clients wait (`nxlock bench --wait`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Waiting {
    /// Sleep by the acquire policy's backoff and retry (every algorithm).
    Poll,
    /// [`Wait::Notify`](lock_core::Wait::Notify): releases publish, waiters sleep until one (token only).
    Notify,
    /// [`FairLock`](lock_core::FairLock): a ticket line with direct hand-off (token only).
    #[default]
    Fair,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Workload {
    /// The lock algorithm, with its default acquire policy.
    pub algorithm: Algorithm,
    /// Concurrent clients (tasks), each with its own lock objects.
    pub clients: usize,
    /// Keys; client `i` uses key `i % keys`.
    pub keys: usize,
    /// Time spent holding the lock per cycle (0: release at once); for the counter
    /// algorithms, the time between reading a counter and writing it. Tokio's timer has
    /// millisecond resolution, so holds below 1 ms are rounded up by the sleep.
    pub hold: Duration,
    /// The lock TTL.
    pub ttl: Duration,
    /// How long clients keep cycling.
    pub duration: Duration,
    /// How blocked clients wait; anything but [`Waiting::Poll`] needs [`Algorithm::Token`].
    pub wait: Waiting,
    /// The clients on one key share one lock object (clones of it) instead of building
    /// one each. Clones of a fair lock or a Redlock take turns in process; the other
    /// algorithms ignore this.
    pub shared_lock: bool,
}

impl Workload {
    /// The name reports use: the algorithm, how it waits unless it polls, and whether
    /// its clients share a fair lock.
    pub fn label(&self) -> &'static str {
        match (self.algorithm, self.wait) {
            (algorithm @ (Algorithm::Optimistic | Algorithm::Watch | Algorithm::Locked), _) => {
                algorithm.name()
            }
            (algorithm, Waiting::Poll) => algorithm.name(),
            (_, Waiting::Notify) => "token+notify",
            (_, Waiting::Fair) if self.shared_lock => "fair, shared",
            (_, Waiting::Fair) => "fair",
        }
    }
}

impl Default for Workload {
    fn default() -> Self {
        Self {
            algorithm: Algorithm::Token,
            clients: 1,
            keys: 1,
            hold: Duration::ZERO,
            ttl: Duration::from_secs(10),
            duration: Duration::from_secs(5),
            wait: Waiting::Fair,
            shared_lock: false,
        }
    }
}
