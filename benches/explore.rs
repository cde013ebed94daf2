//! `cargo bench --bench explore`: the explorer's speed in runs per second, for 4 clients
//! x 20 cycles of a token lock on a replicated set with pauses and failovers, on one
//! core and on every core. Each iteration is a search of 1,024 runs that runs its whole
//! budget (`keep_going`), so violations do not cut it short; only the search is timed.
//!
//! Beside it, the floor a run stands on: the same number of runtimes and timer
//! wake-ups (a fresh paused current-thread runtime and local set per run, four tasks
//! that sleep 120 times each, about the 478 wake-ups a run of the workload makes) with
//! no lock, no double and no checker: what tokio's paused time costs alone.

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

/// Wake-ups per task in the floor's run: 4 × 120 is about the workload's 478 per run.
const SLEEPS_PER_TASK: u64 = 120;

fn tokio_floor(c: &mut Criterion) {
    let mut group = c.benchmark_group("explore/tokio-paused-time-floor-4x120-wakeups");
    group.throughput(Throughput::Elements(RUNS));
    group.sample_size(10);
    group.bench_function("threads/1", |b| {
        b.iter(|| {
            for _ in 0..RUNS {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .start_paused(true)
                    .build()
                    .unwrap();
                let local = tokio::task::LocalSet::new();
                local.block_on(&runtime, async {
                    let tasks: Vec<_> = (0..4u64)
                        .map(|task| {
                            tokio::task::spawn_local(async move {
                                for i in 0..SLEEPS_PER_TASK {
                                    // Distinct deadlines, as clients' retries have.
                                    let us = 1_000 + (task * 7 + i * 13) % 900;
                                    tokio::time::sleep(Duration::from_micros(us)).await;
                                }
                            })
                        })
                        .collect();
                    for task in tasks {
                        task.await.unwrap();
                    }
                });
            }
        });
    });
    group.finish();
}

criterion_group!(benches, explore, tokio_floor);
criterion_main!(benches);
