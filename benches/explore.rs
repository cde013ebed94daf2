//! `cargo bench --bench explore`: the explorer's speed in runs per second, for 4 clients
//! x 20 cycles of a token lock on a replicated set with pauses and failovers, on one
//! core and on every core. Each iteration is a search of 1,024 runs that runs its whole
//! budget (`keep_going`), so violations do not cut it short; only the search is timed.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use nxlock::explore::{Algorithm, Explorer, FaultKind, Topology};

/// The allocator `nxlock explore` runs with, so that the figures are the command's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const RUNS: u64 = 1024;

fn explore(c: &mut Criterion) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut group = c.benchmark_group("explore/token-replicated-pause-failover-4x20");
    group.throughput(Throughput::Elements(RUNS));
    group.sample_size(10);
    for threads in [1, cores] {
        let explorer = Explorer::builtin(
            Algorithm::Token,
            Topology::Replicated { replicas: 2 },
            Duration::from_secs(1),
        )
        .clients(4)
        .cycles(20)
        .faults(&[FaultKind::Pause, FaultKind::Failover])
        .keep_going(true)
        .runs(RUNS)
        .threads(threads);
        group.bench_function(BenchmarkId::new("threads", threads), |b| {
            let mut seed = 0;
            // The search's own time: shrinking and replaying what it found are not runs
            // of the search, and a report times them apart.
            b.iter_custom(|iterations| {
                (0..iterations)
                    .map(|_| {
                        seed += 1;
                        explorer.clone().seed(seed).explore().unwrap().elapsed
                    })
                    .sum()
            });
        });
    }
    group.finish();
}

criterion_group!(benches, explore);
criterion_main!(benches);
