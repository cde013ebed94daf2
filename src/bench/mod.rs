//! Contention benchmarks: N clients looping acquire → hold → release on K keys, measured
//! with HdrHistogram, checked for mutual-exclusion violations. Shared by `nxlock bench`
//! and the criterion benches.

mod floor;
mod report;
mod workload;

pub use floor::hand_written_floor;
pub use report::{BenchReport, Fairness, Latency, Percentiles};
pub use workload::{Algorithm, Waiting, Workload, run};
