//! The same seed gives the same runs; a workload that reaches outside its context is
//! reported as nondeterministic, not left as a flaky result.

use std::time::{Duration, Instant};

use lock_explore::{Algorithm, Context, Explorer, FaultKind, Topology, ViolationKind};

use crate::support::{TTL, explorer};

#[test]
fn one_seed_finds_the_same_counterexample_twice() {
    let explore = || {
        explorer(Algorithm::Legacy.explorer(Topology::Single, TTL))
            .faults(&[FaultKind::ClientClock, FaultKind::LostReply])
            .runs(500)
            .explore()
            .unwrap()
            .counterexample
            .expect("a client clock jump breaks the legacy lock")
    };
    let (first, second) = (explore(), explore());
    assert_eq!(first.schedule, second.schedule);
    assert_eq!(first.trace, second.trace);
    assert_eq!(first.run, second.run);
}

#[test]
fn the_counterexample_does_not_depend_on_the_thread_count() {
    let explore = |threads| {
        Algorithm::Legacy
            .explorer(Topology::Single, TTL)
            .faults(&[FaultKind::ClientClock, FaultKind::Pause])
            .seed(3)
            .runs(500)
            .threads(threads)
            .explore()
            .unwrap()
            .counterexample
            .expect("found")
    };
    let (one, two) = (explore(1), explore(2));
    assert_eq!(one.run, two.run);
    assert_eq!(one.schedule, two.schedule);
}

#[test]
fn a_seeded_run_replays_to_an_identical_trace() {
    let explorer = explorer(Algorithm::Fair.explorer(Topology::Single, TTL)).faults(&[
        FaultKind::Pause,
        FaultKind::LostReply,
        FaultKind::Cancel,
    ]);
    let schedule = lock_explore::Schedule {
        clients: 3,
        cycles: 3,
        token_seed: 42,
        steps: vec![lock_explore::Step {
            when: lock_explore::When::After { client: 1, op: 2 },
            fault: lock_explore::Fault::Pause {
                client: 1,
                ms: 1_500,
            },
        }],
    };
    let (first, _) = explorer.run_schedule(&schedule);
    assert!(first.len() > 20);
    for _ in 0..10 {
        assert_eq!(explorer.run_schedule(&schedule).0, first);
    }
}

/// What the explorer says of a workload whose work time comes from `outside`.
fn verdict(outside: fn() -> u64) -> lock_explore::Counterexample {
    let report = explorer(Explorer::new(move |ctx: Context| async move {
        let ms = outside();
        ctx.enter("r").await;
        ctx.work(Duration::from_millis(ms)).await;
        ctx.exit("r").await;
    }))
    .clients(1)
    .runs(5)
    .explore()
    .unwrap();
    let found = report.counterexample.expect("reported");
    assert_eq!(
        found.violation.kind,
        ViolationKind::Nondeterminism,
        "{found}"
    );
    assert!(
        found.violation.detail.contains("first differ at event"),
        "{found}"
    );
    assert!(
        !found.to_string().contains("identical each time"),
        "{found}"
    );
    found
}

#[test]
fn a_workload_reading_the_real_clock_is_reported_as_nondeterministic() {
    verdict(|| {
        let started = Instant::now();
        std::thread::sleep(Duration::from_micros(50));
        started.elapsed().as_micros() as u64 % 7
    });
}

#[test]
fn a_workload_using_a_thread_rng_is_reported_as_nondeterministic() {
    verdict(|| fastrand::u64(0..1_000));
}
