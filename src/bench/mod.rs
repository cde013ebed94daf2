//! Contention benchmarks: N clients looping acquire → hold → release on K keys, measured
//! with HdrHistogram, checked for mutual-exclusion violations; and the same clients
//! incrementing K counters without a lock (optimistic compare-and-set, `WATCH`), checked
//! for lost updates. Shared by `nxlock bench`
//! and the criterion benches; [`run_locks`] runs any [`LockAlgorithm`](crate::LockAlgorithm).

/// The [`LockGuard`](crate::LockGuard) accessors of a reference lock's guard, answered
/// from its `key`, `clock` and `valid_until_ms` fields.
#[cfg(feature = "redis")]
macro_rules! reference_guard_accessors {
    () => {
        fn key(&self) -> &[u8] {
            &self.key
        }
        fn clock(&self) -> &Clock {
            &self.clock
        }
        fn valid_until_ms(&self) -> i64 {
            self.valid_until_ms
        }
    };
}

mod compare;
mod counters;
mod error;
#[cfg(feature = "redis")]
mod floor;
mod locks;
mod redlock;
mod report;
#[cfg(feature = "compare-rslock")]
mod rslock;
mod run;
mod workload;

#[cfg(feature = "compare-rslock")]
pub use compare::compare_on_server;
pub use compare::{ComparedReport, FloorReport, Reference};
pub use error::BenchError;
#[cfg(feature = "redis")]
pub use floor::hand_written_floor;
pub use locks::run_locks;
#[cfg(feature = "compare-rslock")]
pub use redlock::run_spawned as run_redlock_spawned;
pub use redlock::{RedlockReport, Scenario, run_memory as run_redlock_memory};
pub use report::{BenchReport, Fairness, Latency, Placement};
#[cfg(feature = "compare-rslock")]
pub use rslock::{RslockGuard, RslockLock, RslockManagers, run_rslock};
pub use run::{benched_names, run};
pub use workload::{Algorithm, Waiting, Workload};
