//! [`BenchError`]: why a benchmark could not run.

/// Why a benchmark could not run. (Failed acquires during a run are counted in the
/// report, not errors.)
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The workload asks for something the algorithm cannot do.
    #[error("invalid workload: {0}")]
    InvalidWorkload(String),
    /// A lock could not be built (its options were refused).
    #[error("cannot build the lock: {0}")]
    Lock(#[from] lock_core::LockError),
    /// The hand-written redis-rs floor could not run.
    #[error("the hand-written floor failed: {0}")]
    Floor(String),
    /// A reference library's run (`--compare rslock`) could not start.
    #[error("the reference run failed: {0}")]
    Reference(String),
}
