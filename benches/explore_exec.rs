//! `cargo bench --bench explore_exec`: `nxlock explore --exec`'s speed in runs per second
//! with real processes: 3 long-lived clients of 4 cycles of the correct token lock, the
//! default 200 ms TTL and faults, in Python (redis-py) and Node (ioredis). Each
//! iteration is a search of 100 runs that runs its whole budget (`keep_going`); only the
//! search is timed. A language whose client is not installed is skipped, loudly.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use nxlock::wire_explore::{WireRunner, wire};

const RUNS: u64 = 100;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn works(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .env("NODE_PATH", root().join("tests/clients/node_modules"))
        .output()
        .is_ok_and(|o| o.status.success())
}

fn explore_exec(c: &mut Criterion) {
    let python = format!(
        "PYTHONPATH={} python3 {}",
        root().join("clients/python/src").display(),
        root().join("examples/python/token_lock.py").display()
    );
    let node = format!(
        "NODE_PATH={} node {}",
        root().join("tests/clients/node_modules").display(),
        root().join("examples/node/token_lock.js").display()
    );
    let languages = [
        ("python", python, works("python3", &["-c", "import redis"])),
        (
            "node",
            node,
            works("node", &["-e", "require('ioredis'); require('nxlock')"]),
        ),
    ];
    let mut group = c.benchmark_group("explore-exec/token-lock-3x4-long-lived");
    group.throughput(Throughput::Elements(RUNS));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(60));
    for (name, command, installed) in languages {
        if !installed {
            eprintln!("*** SKIPPED {name}: its client library is not installed ***");
            continue;
        }
        let explorer = wire(WireRunner::new(command).long_lived(true))
            .keep_going(true)
            .runs(RUNS);
        group.bench_function(name, |b| {
            let mut seed = 0;
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

criterion_group!(benches, explore_exec);
criterion_main!(benches);
