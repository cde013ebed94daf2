//! The same seed gives the same runs; a workload that reaches outside its context is
//! reported as nondeterministic, not left as a flaky result.

use std::time::{Duration, Instant};

use lock_explore::{Algorithm, Context, Explorer, FaultKind, Topology, ViolationKind};

use crate::support::{TTL, explorer};

#[test]
fn one_seed_finds_the_same_counterexample_twice() {
    let explore = || {
        explorer(Explorer::builtin(Algorithm::Legacy, Topology::Single, TTL))
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
        Explorer::builtin(Algorithm::Legacy, Topology::Single, TTL)
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
    let explorer = explorer(Explorer::builtin(Algorithm::Fair, Topology::Single, TTL)).faults(&[
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

#[test]
fn ctx_rng_is_seeded_by_the_run_the_client_and_the_cycle() {
    let explorer = Explorer::new(|ctx: Context| async move {
        let drawn = ctx.rng().u64(..) % 1_000;
        ctx.work(Duration::from_millis(drawn)).await;
        let _ = lock_core::KvBackend::get(&ctx.backend(), drawn.to_string().as_bytes()).await;
    })
    .clients(2)
    .cycles(2)
    .liveness(None);
    let schedule = lock_explore::Schedule {
        clients: 2,
        cycles: 2,
        token_seed: 9,
        steps: Vec::new(),
    };
    let (first, _) = explorer.run_schedule(&schedule);
    assert_eq!(explorer.run_schedule(&schedule).0, first);
    let other = lock_explore::Schedule {
        token_seed: 10,
        ..schedule
    };
    assert_ne!(explorer.run_schedule(&other).0, first);
    // The whole search agrees: no nondeterminism.
    let report = explorer
        .clone()
        .seed(1)
        .runs(20)
        .threads(1)
        .explore()
        .unwrap();
    assert!(
        report
            .counterexample
            .is_none_or(|c| c.violation.kind != ViolationKind::Nondeterminism)
    );
}

#[test]
fn shards_of_a_budget_merge_into_what_one_search_finds() {
    let search = || {
        explorer(Explorer::builtin(Algorithm::Legacy, Topology::Single, TTL))
            .faults(&[FaultKind::ClientClock, FaultKind::Pause])
            .seed(5)
            .runs(400)
    };
    let whole = lock_explore::ShardReport::of(&search().explore().unwrap());
    let shards: Vec<_> = (0..3)
        .map(|k| lock_explore::ShardReport::of(&search().shard(k, 3).explore().unwrap()))
        .collect();
    let merged = lock_explore::ShardReport::merge(&shards).unwrap();
    assert_eq!(merged.found_by_run, whole.found_by_run);
    assert_eq!(
        merged.replay.as_ref().map(|r| &r.steps),
        whole.replay.as_ref().map(|r| &r.steps)
    );
    assert!(matches!(
        lock_explore::ShardReport::merge(&shards[..2]),
        Err(lock_explore::MergeError::Coverage(_))
    ));
    assert!(matches!(
        lock_explore::ShardReport::merge(&[]),
        Err(lock_explore::MergeError::Empty)
    ));
}
