//! Contention benchmarks: N clients looping acquire → hold → release on K keys, measured
//! with HdrHistogram, checked for mutual-exclusion violations. Shared by `nxlock bench`
//! and the criterion benches; [`run_locks`] runs any [`LockAlgorithm`](crate::LockAlgorithm).

mod error;
#[cfg(feature = "redis")]
mod floor;
mod report;
mod workload;

pub use error::BenchError;
#[cfg(feature = "redis")]
pub use floor::hand_written_floor;
pub use report::{BenchReport, Fairness, Latency};
pub use workload::{Algorithm, Waiting, Workload, run, run_locks};
