//! Counterexamples save as replay files that run again deterministically; shrinking
//! gives small schedules; bad options and bad files get typed errors.

use lock_explore::{
    Algorithm, Blame, ExploreError, Explorer, FaultKind, ReplayError, ReplayFile, Topology,
    ViolationKind,
};

use crate::support::{TTL, explorer};

/// The legacy lock's race under client clock jumps: a bug of its own.
fn found() -> lock_explore::Counterexample {
    explorer(Explorer::builtin(Algorithm::Legacy, Topology::Single, TTL))
        .faults(&[FaultKind::ClientClock])
        .runs(500)
        .explore()
        .unwrap()
        .counterexample
        .expect("found")
}

#[test]
fn a_saved_counterexample_replays() {
    let found = found();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("legacy.json");
    found.save(&path).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        json["steps"].as_array().unwrap().len(),
        found.schedule.steps.len()
    );
    assert_eq!(json["violation"], "mutual-exclusion");
    assert_eq!(json["workload"], "legacy");
    for _ in 0..3 {
        let replayed = lock_explore::replay(&path).unwrap();
        assert!(replayed.reproduced());
        assert_eq!(replayed.trace, found.trace);
    }
    let on_the_explorer = Explorer::builtin(Algorithm::Legacy, Topology::Single, TTL)
        .replay(&path)
        .unwrap();
    assert_eq!(
        on_the_explorer.violation.unwrap().kind,
        ViolationKind::MutualExclusion
    );
}

#[test]
fn a_counterexample_prints_steps_trace_and_keys_and_draws_a_timeline() {
    let found = found();
    let text = found.to_string();
    assert!(text.starts_with("VIOLATION mutual-exclusion"), "{text}");
    assert!(
        text.contains("Steps:") && text.contains("clock jumps"),
        "{text}"
    );
    assert!(text.contains("ENTER resource"), "{text}");
    assert!(text.contains("{explored}:lock"), "{text}");
    let html = found.timeline_html();
    assert!(html.starts_with("<!doctype html>"));
    assert!(
        html.contains("<svg") && html.contains("#d0021b"),
        "the overlap is drawn in red"
    );
}

#[test]
fn shrinking_keeps_the_violation_and_drops_what_it_does_not_need() {
    let found = found();
    assert!(found.schedule.steps.len() <= found.original.steps.len());
    assert!(found.schedule.steps.len() <= 2, "{found}");
    assert!(found.shrink_runs > 0);
}

#[test]
fn options_the_double_cannot_honour_are_refused() {
    let refused = |explorer: lock_explore::Explorer| match explorer.explore() {
        Err(error) => error,
        Ok(report) => panic!("ran: {report:?}"),
    };
    let migrate = refused(
        Explorer::builtin(Algorithm::Token, Topology::Single, TTL).faults(&[FaultKind::Migrate]),
    );
    assert!(matches!(migrate, ExploreError::Unsupported(_)), "{migrate}");
    assert!(
        migrate
            .to_string()
            .contains("'migrate' does not apply to the single topology")
    );
    let failover = refused(
        Explorer::builtin(Algorithm::Token, Topology::Single, TTL).faults(&[FaultKind::Failover]),
    );
    assert!(
        failover
            .to_string()
            .contains("does not apply to the single topology")
    );
    let nobody = refused(Explorer::builtin(Algorithm::Token, Topology::Single, TTL).clients(0));
    assert!(matches!(nobody, ExploreError::Invalid(_)));
    let stepless = refused(Explorer::builtin(Algorithm::Token, Topology::Single, TTL).max_steps(0));
    assert!(
        stepless.to_string().contains("at least 1 step"),
        "{stepless}"
    );
}

#[test]
fn a_bad_replay_file_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = ReplayFile::load(dir.path().join("absent.json")).unwrap_err();
    assert!(matches!(missing, ReplayError::Io { .. }));
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "{\"format\": 1, \"steps\": 7}").unwrap();
    assert!(matches!(
        ReplayFile::load(&garbage).unwrap_err(),
        ReplayError::Invalid { .. }
    ));
    let mut file = found().replay_file();
    file.format = 99;
    let future = dir.path().join("future.json");
    std::fs::write(&future, serde_json::to_string(&file).unwrap()).unwrap();
    let error = ReplayFile::load(&future).unwrap_err().to_string();
    assert!(error.contains("format 99"), "{error}");
}

#[test]
fn shrinking_finds_the_smallest_length_that_still_breaks() {
    let found = found();
    for step in &found.schedule.steps {
        if let lock_explore::Fault::ClientClock { ms, .. } = step.fault {
            // One less no longer breaks it.
            let mut smaller = found.schedule.clone();
            for s in &mut smaller.steps {
                if let lock_explore::Fault::ClientClock { ms: m, .. } = &mut s.fault
                    && *m == ms
                {
                    *m -= ms.signum();
                }
            }
            let explorer = explorer(Explorer::builtin(Algorithm::Legacy, Topology::Single, TTL));
            let (_, violation) = explorer.run_schedule(&smaller);
            assert_ne!(
                violation.map(|v| v.kind),
                Some(found.violation.kind),
                "{ms} ms was not the smallest: {found}"
            );
        }
    }
}

#[test]
fn blame_tells_an_algorithms_bug_from_the_deployments() {
    // The legacy lock's race: the token lock survives the same schedule.
    let blame = Blame::of(Algorithm::Legacy, &found());
    assert_eq!(blame.reference, Algorithm::Token);
    assert!(!blame.is_inherent(), "{blame}");
    assert!(blame.to_string().contains("a bug of legacy"), "{blame}");
    // A failover without WAIT: the reference token lock breaks too.
    let lost = explorer(Explorer::builtin(
        Algorithm::Token,
        Topology::Replicated { replicas: 2 },
        TTL,
    ))
    .faults(&[FaultKind::Failover])
    .runs(2_000)
    .explore()
    .unwrap()
    .counterexample
    .expect("found");
    let blame = Blame::of(Algorithm::Token, &lost);
    assert!(blame.is_inherent(), "{blame}");
    assert!(
        blame.to_string().contains("reference lock of its kind"),
        "{blame}"
    );
}
