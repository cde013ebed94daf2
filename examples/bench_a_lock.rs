//! For people benchmarking contention: run any lock algorithm through nxlock's benchmark
//! loop (here the fenced lock, 8 clients on 2 keys, on the double) and read the report.
//! `nxlock bench` runs the same loop from the command line.
//!
//! `cargo run --release -p nxlock-examples --example bench_a_lock`

use std::time::Duration;

use nxlock::bench::{Workload, run_locks};
use nxlock::{FencedLock, MemoryBackend, NamedLock};

#[tokio::main]
async fn main() -> Result<(), nxlock::bench::BenchError> {
    let workload = Workload {
        clients: 8,
        keys: 2,
        duration: Duration::from_secs(1),
        ..Workload::default()
    };
    let report = run_locks(
        MemoryBackend::new(),
        "memory",
        &workload,
        FencedLock::with_options,
    )
    .await?;
    println!("{report}");
    // The report names the lock that ran. Its per-client line shows what polling costs
    // fairness: with nothing between cycles, the client that releases takes the lock
    // again before a polling rival wakes. `FairLock` hands it on in turn.
    assert_eq!(report.algorithm, "FencedLock");
    assert_eq!(report.violations, 0, "two holders at once");
    Ok(())
}
