//! The whole conformance suite through ClusterBackend on a real Redis Cluster spawned on
//! loopback (3 primaries, 1 replica each): the cross-slot, migration and failover cases,
//! and every other case on a cluster. One cluster serves every case, so they run as one
//! test that names each failed case.

use nxlock::RedisClusterHarness;
use nxlock::conformance::{Outcome, run_all};
use nxlock::testing::skip_or_fail;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_suite_passes_on_a_real_cluster() {
    let harness = match RedisClusterHarness::spawn(3, 1) {
        Ok(harness) => harness,
        Err(why) => return skip_or_fail("the conformance suite on a real cluster", &why),
    };
    let report = run_all(&harness).await;
    let failed: Vec<String> = report
        .cases
        .iter()
        .filter(|case| case.outcome == Outcome::Failed)
        .map(|case| format!("{}: {}", case.name, case.detail))
        .collect();
    assert!(
        failed.is_empty(),
        "failed on a real cluster:\n{}",
        failed.join("\n")
    );
    let passed = |name: &str| {
        report
            .cases
            .iter()
            .any(|case| case.name == name && case.outcome == Outcome::Passed)
    };
    for case in [
        "cluster::keys_of_two_slots_in_one_command_are_crossslot",
        "cluster::a_script_may_touch_only_keys_its_node_serves",
        "cluster::a_lock_held_across_a_slot_migration_stays_exclusive",
        "cluster::a_lock_survives_a_manual_failover",
    ] {
        assert!(passed(case), "{case} did not pass");
    }
}
