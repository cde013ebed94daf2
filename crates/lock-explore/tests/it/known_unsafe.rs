//! Each known unsafe case, found by search alone (no scripted scenario) with a fixed
//! seed and a small budget, and shrunk to at most 6 steps. The cases that need an
//! inherent fault (a server clock jump, a holder paused inside its section) are found
//! with that fault named, and labelled inherent rather than blamed on the lock.

use std::time::Duration;

use lock_core::{LockAlgorithm, LockGuard, LockName, LockOptions, Redlock};
use lock_explore::{Algorithm, Context, Explorer, FaultKind, Topology, ViolationKind};

use crate::support::{TTL, explorer, found, inherent, token_cycle};

/// Searches nxlock's `algorithm` on `topology` with `faults` alone: what it found.
fn search(
    algorithm: Algorithm,
    topology: Topology,
    faults: &[FaultKind],
    runs: u64,
    kind: ViolationKind,
) -> lock_explore::Counterexample {
    let report = explorer(Explorer::builtin(algorithm, topology, TTL))
        .faults(faults)
        .runs(runs)
        .explore()
        .unwrap();
    found(report, kind)
}

#[test]
fn the_legacy_lock_races_under_client_clock_jumps() {
    let found = search(
        Algorithm::Legacy,
        Topology::Single,
        &[FaultKind::ClientClock],
        500,
        ViolationKind::MutualExclusion,
    );
    assert!(
        found
            .schedule
            .steps
            .iter()
            .any(|s| s.fault.kind() == FaultKind::ClientClock)
    );
    assert!(!found.violation.is_inherent(), "{found}");
}

#[test]
fn a_token_lock_without_wait_is_lost_on_failover() {
    // The holder's key is gone from the new primary while it is still valid: caught as
    // lost ownership, before another client even enters.
    let found = search(
        Algorithm::Token,
        Topology::Replicated { replicas: 2 },
        &[FaultKind::Failover],
        2_000,
        ViolationKind::LostOwnership,
    );
    assert!(!found.violation.is_inherent(), "{found}");
}

#[test]
fn a_fenced_lock_is_lost_on_failover_before_its_fence_goes_back() {
    search(
        Algorithm::Fenced,
        Topology::Replicated { replicas: 2 },
        &[FaultKind::Failover],
        2_000,
        ViolationKind::LostOwnership,
    );
}

#[test]
fn redlock_breaks_when_a_node_restarts_without_persistence() {
    // Inherent to Redlock: no client can prevent it; the deployment can.
    let report = explorer(Explorer::builtin(
        Algorithm::Redlock,
        Topology::Redlock { nodes: 3 },
        TTL,
    ))
    .faults(&[FaultKind::Restart, FaultKind::RestartEmpty])
    .runs(2_000)
    .explore()
    .unwrap();
    let found = inherent(report);
    assert!(
        found.schedule.steps.iter().any(|s| matches!(
            s.fault,
            lock_explore::Fault::Restart {
                persistent: false,
                ..
            }
        )),
        "{found}"
    );
}

#[test]
fn redlock_breaks_when_a_bare_majority_node_jumps_its_clock() {
    // Inherent: a server clock jump ends every lease early. Found, and labelled so.
    let report = explorer(Explorer::builtin(
        Algorithm::Redlock,
        Topology::Redlock { nodes: 3 },
        TTL,
    ))
    .faults(&[FaultKind::NodeClock])
    .runs(2_000)
    .explore()
    .unwrap();
    let found = inherent(report);
    assert!(
        found
            .schedule
            .steps
            .iter()
            .any(|s| matches!(s.fault, lock_explore::Fault::NodeClock { .. })),
        "{found}"
    );
    assert!(
        found
            .violation
            .inherent
            .as_deref()
            .unwrap()
            .contains("node-clock"),
        "{found}"
    );
}

#[test]
fn a_holder_paused_past_its_validity_is_an_inherent_finding() {
    let report = explorer(Explorer::new(|ctx: Context| token_cycle(ctx, None)))
        .ttl(TTL)
        .faults(&[FaultKind::SectionPause])
        .runs(500)
        .explore()
        .unwrap();
    let found = inherent(report);
    assert_eq!(
        found.violation.kind,
        ViolationKind::ExpiredHolder,
        "{found}"
    );
    assert!(
        found
            .schedule
            .steps
            .iter()
            .any(|s| matches!(s.fault, lock_explore::Fault::SectionPause { .. })),
        "{found}"
    );
}

#[test]
fn an_unprotected_read_modify_write_loses_updates() {
    let report = explorer(Explorer::new(|ctx: Context| async move {
        let hit = ctx.increment("hits");
        let value = ctx.read_counter("hits").await;
        ctx.work(Duration::from_millis(5)).await;
        ctx.write_counter("hits", value + 1).await;
        hit.done();
    }))
    .faults(&[FaultKind::Pause, FaultKind::Latency])
    .runs(500)
    .explore()
    .unwrap();
    found(report, ViolationKind::LostUpdate);
}

/// Redlock on nodes the client reaches through its context: the user's wiring of the
/// algorithm, not the built-in workload.
#[test]
fn a_users_redlock_workload_sees_every_node() {
    let explorer = explorer(Explorer::new(|ctx: Context| async move {
        assert_eq!(ctx.nodes().len(), 3);
        let name = LockName::new("r").unwrap();
        let lock = Redlock::with_options(ctx.nodes(), &name, LockOptions::new().ttl(TTL)).unwrap();
        if let Ok(guard) = lock.acquire().await {
            ctx.enter("r").await;
            ctx.exit("r").await;
            let _ = guard.release().await;
        }
    }))
    .topology(Topology::Redlock { nodes: 3 })
    .faults(&[FaultKind::SectionPause])
    .runs(50);
    let report = explorer.explore().unwrap();
    // A pause can land inside the section: found or not, the run must be consistent.
    if let Some(found) = report.counterexample {
        assert_eq!(
            found.violation.kind,
            ViolationKind::MutualExclusion,
            "{found}"
        );
    }
}

#[test]
fn a_token_lock_on_a_cluster_is_lost_when_its_shard_fails_over() {
    let found = search(
        Algorithm::Token,
        Topology::Cluster { shards: 3 },
        &[FaultKind::Failover, FaultKind::Migrate],
        2_000,
        ViolationKind::LostOwnership,
    );
    assert!(
        found
            .schedule
            .steps
            .iter()
            .any(|s| matches!(s.fault, lock_explore::Fault::Failover)),
        "{found}"
    );
}
