//! The validity-aware checkers: lost ownership caught at the command that caused it,
//! before any overlap; fence order; a holder past its validity reported as inherent and
//! never as mutual exclusion; violations that need an inherent fault labelled so.

use lock_explore::{Event, FaultKind, ViolationKind, What};

use crate::support::{TTL, explorer, token_cycle};
use crate::user_locks::UserLock;

/// Whether two clients were ever inside one resource at once before `until_us`.
fn overlapped_before(trace: &[Event], until_us: i64) -> bool {
    let mut inside: Vec<usize> = Vec::new();
    for event in trace.iter().filter(|e| e.at_us < until_us) {
        let Some(client) = event.client else { continue };
        match &event.what {
            What::Enter { .. } => {
                if inside.iter().any(|c| *c != client) {
                    return true;
                }
                inside.push(client);
            }
            What::Exit { .. } | What::Cancelled => inside.retain(|c| *c != client),
            _ => {}
        }
    }
    false
}

#[test]
fn a_get_compare_del_release_is_lost_ownership_before_any_overlap() {
    for seed in [1, 2, 3] {
        let report = UserLock::GetCompareDel
            .explorer()
            .seed(seed)
            .runs(2_000)
            .threads(1)
            .explore()
            .unwrap();
        let found = report.counterexample.expect("found");
        assert_eq!(
            found.violation.kind,
            ViolationKind::LostOwnership,
            "{found}"
        );
        assert!(found.violation.detail.contains("after client"), "{found}");
        assert!(found.violation.detail.contains("DEL"), "{found}");
        assert!(
            !overlapped_before(&found.trace, found.violation.at_us + 1),
            "an overlap came first: {found}"
        );
    }
}

#[test]
fn a_fence_taken_apart_from_the_lock_is_a_fence_order_violation() {
    let report = UserLock::SplitFence
        .explorer()
        .seed(2)
        .runs(5_000)
        .threads(1)
        .explore()
        .unwrap();
    let found = report.counterexample.expect("found");
    assert_eq!(found.violation.kind, ViolationKind::FenceOrder, "{found}");
    assert!(
        found.violation.detail.contains("fence order disagrees"),
        "{found}"
    );
}

#[test]
fn a_correct_token_lock_under_inherent_faults_gets_only_inherent_findings() {
    let report = explorer(lock_explore::Explorer::new(|ctx| token_cycle(ctx, None)))
        .ttl(TTL)
        .faults(&[
            FaultKind::SectionPause,
            FaultKind::NodeClock,
            FaultKind::Drift,
            FaultKind::Pause,
            FaultKind::LostReply,
        ])
        .keep_going(true)
        .runs(3_000)
        .explore()
        .unwrap();
    assert!(report.counterexample.is_none(), "{}", report);
    assert!(report.violations.is_empty(), "{report}");
    assert!(!report.inherent.is_empty(), "{report}");
    let finding = report.inherent_finding.expect("an inherent finding");
    assert!(finding.violation.is_inherent(), "{finding}");
    assert_ne!(finding.violation.kind, ViolationKind::MutualExclusion);
    assert!(
        finding.to_string().starts_with("INHERENT FINDING"),
        "{finding}"
    );
    assert!(finding.to_string().contains("Remedy"), "{finding}");
}

#[test]
fn a_violation_that_needs_a_server_clock_jump_is_labelled_inherent() {
    // The correct token lock, with only server clock jumps: the key expires early,
    // another client takes it while the holder is within its validity. Every TTL lock
    // does this, so it is labelled, naming the fault.
    let report = explorer(lock_explore::Explorer::new(|ctx| token_cycle(ctx, None)))
        .ttl(TTL)
        .faults(&[FaultKind::NodeClock])
        .keep_going(true)
        .runs(2_000)
        .explore()
        .unwrap();
    assert!(report.counterexample.is_none(), "{report}");
    let finding = report.inherent_finding.expect("found");
    let reason = finding.violation.inherent.clone().unwrap();
    assert!(reason.contains("node-clock"), "{finding}");
    assert!(
        finding
            .schedule
            .steps
            .iter()
            .all(|s| s.fault.kind() == FaultKind::NodeClock),
        "{finding}"
    );
}

#[test]
fn inherent_findings_never_hide_a_bug_of_the_locks_own() {
    // With every inherent fault in play too, the buggy lock's first report is its bug.
    let mut faults = FaultKind::defaults(&lock_explore::Topology::Single);
    faults.extend([
        FaultKind::SectionPause,
        FaultKind::NodeClock,
        FaultKind::Drift,
    ]);
    let report = UserLock::GetCompareDel
        .explorer()
        .faults(&faults)
        .seed(1)
        .runs(5_000)
        .threads(1)
        .explore()
        .unwrap();
    let found = report.counterexample.expect("found");
    assert!(!found.violation.is_inherent(), "{found}");
    assert!(
        UserLock::GetCompareDel
            .own_bug()
            .contains(&found.violation.kind),
        "{found}"
    );
}
