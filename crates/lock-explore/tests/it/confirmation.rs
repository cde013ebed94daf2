//! The explorer over a runner whose runs are not deterministic, played by a scripted
//! runner: a finding counts only once it reproduces in most replays, an unconfirmed one
//! is listed and never fails the search, voided runs are counted and prove nothing, and
//! a fault-free run that checked nothing is never called clean.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lock_explore::{
    Confirmation, EXIT_FOUND, EXIT_NOTHING_CHECKED, Explorer, FaultKind, Options, Outcome,
    Recording, Runner, RunnerError, Schedule, Violation, ViolationKind, Void,
};

/// Runs that break the lock at random, at a rate for schedules with steps and another
/// for the fault-free one, and are voided at a third; the clients check something
/// unless told not to.
struct Scripted {
    breaks: f64,
    breaks_fault_free: f64,
    voids: f64,
    checks: bool,
    runs: AtomicU64,
}

impl Scripted {
    fn new(breaks: f64) -> Self {
        Scripted {
            breaks,
            breaks_fault_free: 0.0,
            voids: 0.0,
            checks: true,
            runs: AtomicU64::new(0),
        }
    }
}

impl Runner for Scripted {
    fn describe(&self) -> String {
        "scripted".to_owned()
    }
    fn deterministic(&self) -> bool {
        false
    }
    fn applies(&self, kind: FaultKind) -> bool {
        kind == FaultKind::Pause
    }
    fn place(&self) -> &'static str {
        "by the script"
    }
    fn parallelism(&self) -> usize {
        1
    }
    fn run(
        &self,
        options: &Options,
        schedule: &Schedule,
        _: Recording,
    ) -> Result<Outcome, RunnerError> {
        let n = self.runs.fetch_add(1, Ordering::Relaxed);
        let mut rng = fastrand::Rng::with_seed(n);
        let rate = if schedule.steps.is_empty() {
            self.breaks_fault_free
        } else {
            self.breaks
        };
        let void = (rng.f64() < self.voids).then(|| Void::Stall {
            who: "client 0".to_owned(),
            ms: 30,
        });
        let violation = (rng.f64() < rate).then(|| Violation {
            kind: ViolationKind::LostOwnership,
            detail: "client 1 holds \"k\" but the key is gone".to_owned(),
            at_us: 1_000,
            clients: vec![1],
            dumps: Vec::new(),
            inherent: None,
            margin_us: Some(100_000),
        });
        Ok(Outcome {
            violation,
            ops: vec![3; schedule.clients],
            op_logs: vec![
                vec![
                    ("SET".to_owned(), 10),
                    ("ENTER".to_owned(), 20),
                    ("EXIT".to_owned(), 30)
                ];
                schedule.clients
            ],
            checked: vec![self.checks; schedule.clients],
            void,
            main_us: i64::try_from(options.ttl_ms * 1000).unwrap(),
            ..Outcome::default()
        })
    }
}

fn explorer(runner: Scripted) -> Explorer {
    Explorer::with_runner(Arc::new(runner))
        .faults(&[FaultKind::Pause])
        .seed(1)
        .runs(200)
        .shrink_budget(12)
}

#[test]
fn a_finding_that_reproduces_in_most_replays_is_the_locks_own() {
    let report = explorer(Scripted::new(0.9)).explore().unwrap();
    let found = report.counterexample.as_ref().expect("confirmed");
    assert!(found.reproduced >= 5 && found.replays == 10, "{report}");
    assert_eq!(report.exit_code(), EXIT_FOUND);
    assert!(report.to_string().contains("reproduced in"), "{report}");
    // Steps of a runner that is not deterministic are anchored by name.
    assert!(
        found
            .schedule
            .steps
            .iter()
            .all(|s| matches!(s.when, lock_explore::When::AfterNext { .. })),
        "{found}"
    );
}

#[test]
fn a_finding_that_rarely_reproduces_is_listed_and_never_fails_the_search() {
    // One run in ten breaks: what a machine's hiccup looks like.
    let report = explorer(Scripted::new(0.1)).explore().unwrap();
    assert!(report.counterexample.is_none(), "{report}");
    assert!(!report.unconfirmed.is_empty(), "{report}");
    assert!(
        report.unconfirmed.iter().all(|u| u.reproduced < 5),
        "{report}"
    );
    assert_eq!(report.exit_code(), 0);
    assert_eq!(report.runs, 200, "the search went on");
    let text = report.to_string();
    assert!(
        text.contains("unconfirmed (not counted as the lock's own)"),
        "{text}"
    );
    let json = report.to_json();
    assert_eq!(json["verdict"], "clean");
    assert!(
        !json["unconfirmed"].as_array().unwrap().is_empty(),
        "{json:#}"
    );
}

#[test]
fn voided_runs_are_counted_and_prove_nothing() {
    let runner = Scripted {
        voids: 0.5,
        ..Scripted::new(0.0)
    };
    let report = explorer(runner).explore().unwrap();
    let voided = report.voided_runs();
    assert!((50..150).contains(&voided), "{voided}: {report}");
    assert!(report.to_string().contains("runs voided"), "{report}");
    assert_eq!(report.exit_code(), 0);
}

#[test]
fn a_fault_free_finding_is_confirmed_like_any_other() {
    let breaks_once = Scripted {
        breaks_fault_free: 0.2,
        ..Scripted::new(0.0)
    };
    let report = explorer(breaks_once).seed(4).explore().unwrap();
    assert!(report.counterexample.is_none(), "{report}");
    let confirmed = Scripted {
        breaks_fault_free: 1.0,
        ..Scripted::new(0.0)
    };
    let report = explorer(confirmed).explore().unwrap();
    let found = report.counterexample.expect("confirmed");
    assert_eq!(found.run, None, "the fault-free run");
    assert_eq!(found.reproduced, found.replays);
}

#[test]
fn clients_that_send_no_marker_are_never_called_clean() {
    let silent = Scripted {
        checks: false,
        ..Scripted::new(0.0)
    };
    let report = explorer(silent).explore().unwrap();
    assert_eq!(report.nothing_checked, Some(vec![0, 1, 2]));
    assert_eq!(report.exit_code(), EXIT_NOTHING_CHECKED);
    assert_eq!(report.to_json()["verdict"], "nothing-checked");
}

#[test]
fn a_confirmation_asking_more_than_its_replays_is_refused() {
    let error = explorer(Scripted::new(0.0))
        .confirm(Confirmation {
            replays: 3,
            needed: 4,
        })
        .explore()
        .unwrap_err();
    assert!(error.to_string().contains("4 of 3 replays"), "{error}");
}
