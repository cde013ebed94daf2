//! `nxlock check`: its table, its JSON contract and its exit code.

mod support;

use std::process::Command;
use support::MiniRedis;

fn nxlock(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_nxlock"))
        .args(args)
        .output()
        .expect("run nxlock")
}

/// `nxlock check ARGS`, which must succeed with 0 failed on `topology`: its JSON.
fn passing_check(args: &[&str], topology: &str) -> serde_json::Value {
    let out = nxlock(args);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(json["topology"], topology);
    assert_eq!(json["failed"], 0);
    json
}

#[test]
fn check_json_has_exactly_the_documented_fields() {
    let out = nxlock(&["check", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is one JSON object");
    let mut fields: Vec<_> = json.as_object().unwrap().keys().cloned().collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "cases", "failed", "passed", "skipped", "target", "topology", "xfail"
        ]
    );
    assert_eq!(json["topology"], "single");
    assert_eq!(json["failed"], 0);
    let cases = json["cases"].as_array().unwrap();
    let skipped: Vec<_> = cases.iter().filter(|c| c["outcome"] == "skipped").collect();
    assert_eq!(json["skipped"].as_u64().unwrap() as usize, skipped.len());
    for case in &skipped {
        let name = case["name"].as_str().unwrap();
        assert!(
            name.starts_with("replication::")
                || name.starts_with("redlock::")
                || name.starts_with("cluster::"),
            "one double declares every capability but replication, multi-instance and \
             cluster: {case}"
        );
    }
    assert_eq!(
        json["passed"].as_u64().unwrap() as usize + skipped.len(),
        cases.len()
    );
    assert_eq!(cases.len(), nxlock::conformance::case_names().len());
    for case in cases {
        let mut fields: Vec<_> = case.as_object().unwrap().keys().cloned().collect();
        fields.sort();
        assert_eq!(fields, ["detail", "name", "ok", "outcome"]);
        assert!(
            ["pass", "xfail", "skipped"].contains(&case["outcome"].as_str().unwrap()),
            "{case}"
        );
    }
    let xfails = cases.iter().filter(|c| c["outcome"] == "xfail").count();
    assert_eq!(json["xfail"].as_u64().unwrap() as usize, xfails);
    let naive = cases
        .iter()
        .find(|c| c["name"] == "races::naive_del_then_setnx_recovery_lets_two_clients_hold")
        .unwrap();
    assert_eq!(naive["ok"], true);
    assert_eq!(naive["outcome"], "xfail");
    assert!(
        naive["detail"]
            .as_str()
            .unwrap()
            .starts_with("expected failure: "),
        "{naive}"
    );
}

#[test]
fn check_prints_a_table_with_a_summary() {
    let out = nxlock(&["check"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("token::mutual_exclusion"), "{text}");
    assert!(text.contains("xfail"), "{text}");
    assert!(
        text.lines()
            .last()
            .unwrap()
            .ends_with("0 failed, 33 skipped"),
        "{text}"
    );
}

/// The seed's loss reproduced (xfail) and `WAIT` refusing it (pass).
fn assert_the_failover_cases(json: &serde_json::Value) {
    let outcome = |name: &str| {
        json["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no case {name}"))["outcome"]
            .clone()
    };
    assert_eq!(
        outcome("replication::failover_loses_an_unreplicated_lock"),
        "xfail"
    );
    assert_eq!(
        outcome("replication::waiting_for_replicas_refuses_the_lock_a_failover_would_lose"),
        "pass"
    );
}

#[test]
fn topology_replicated_runs_the_failover_cases_on_the_double() {
    let json = passing_check(
        &["check", "--topology", "replicated", "--json"],
        "replicated",
    );
    assert_only_skipped(
        &json,
        "redlock::",
        "the replica set has no independent instances",
    );
    assert_the_failover_cases(&json);
}

/// Every skipped case's name starts with `group`.
/// Only `group`'s cases were skipped (and the cluster cases, which need a cluster).
fn assert_only_skipped(json: &serde_json::Value, group: &str, why: &str) {
    let cases = json["cases"].as_array().unwrap();
    for case in cases.iter().filter(|c| c["outcome"] == "skipped") {
        let name = case["name"].as_str().unwrap();
        assert!(
            name.starts_with(group) || name.starts_with("cluster::"),
            "{why}: {case}"
        );
    }
}

/// The xfails of the Redlock cases name their reason; the cases that show the remedies
/// pass.
fn assert_the_redlock_cases(json: &serde_json::Value) {
    let cases = json["cases"].as_array().unwrap();
    let redlock: Vec<_> = cases
        .iter()
        .filter(|c| c["name"].as_str().unwrap().starts_with("redlock::"))
        .collect();
    assert_eq!(redlock.len(), 20);
    let xfails: Vec<_> = redlock.iter().filter(|c| c["outcome"] == "xfail").collect();
    let names: Vec<_> = xfails.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "redlock::a_restart_without_persistence_grants_a_second_holder",
            "redlock::a_clock_jump_on_a_bare_majority_node_grants_a_second_holder",
            "redlock::a_node_losing_a_bare_majority_lets_a_second_client_in",
            "redlock::a_paused_holder_overlaps_the_next",
        ]
    );
    for xfail in xfails {
        let detail = xfail["detail"].as_str().unwrap();
        assert!(
            detail.contains("two holders") || detail.contains("both wrote"),
            "{detail}"
        );
    }
    for remedy in [
        "redlock::staying_down_longer_than_the_ttl_prevents_a_second_holder",
        "redlock::a_restart_with_fsynced_data_keeps_the_lock",
        "redlock::a_token_checking_resource_refuses_the_paused_holder",
    ] {
        let case = redlock.iter().find(|c| c["name"] == remedy).unwrap();
        assert_eq!(case["outcome"], "pass", "{case}");
    }
}

#[test]
fn topology_redlock_runs_the_redlock_cases_on_the_double() {
    let json = passing_check(&["check", "--topology", "redlock", "--json"], "redlock");
    assert_only_skipped(
        &json,
        "replication::",
        "independent doubles have no replicas",
    );
    assert_the_redlock_cases(&json);
}

#[test]
fn spawn_topology_redlock_runs_the_redlock_cases_on_real_instances() {
    if let Err(why) = nxlock::testing::RedisServer::spawn() {
        nxlock::testing::skip_or_fail("nxlock check --spawn --topology redlock", &why);
        return;
    }
    // Three instances here; tests/conformance_redis_redlock.rs runs the suite on five.
    let args = [
        "check",
        "--spawn",
        "--topology",
        "redlock",
        "--instances",
        "3",
        "--json",
    ];
    let json = passing_check(&args, "redlock");
    assert_the_redlock_cases(&json);
}

/// The outcome of every cluster case, by name.
fn cluster_outcomes(json: &serde_json::Value) -> Vec<(String, String)> {
    json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"].as_str().unwrap().starts_with("cluster::"))
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

const CLUSTER_RULE_CASES: [&str; 5] = [
    "cluster::keys_of_two_slots_in_one_command_are_crossslot",
    "cluster::a_transaction_writing_two_slots_writes_nothing",
    "cluster::a_script_may_touch_only_keys_its_node_serves",
    "cluster::one_command_in_a_script_spanning_slots_is_refused",
    "cluster::every_lock_keeps_its_keys_in_one_slot",
];
const CLUSTER_MOVING_CASES: [&str; 2] = [
    "cluster::a_lock_held_across_a_slot_migration_stays_exclusive",
    "cluster::a_lock_survives_a_manual_failover",
];

#[test]
fn topology_cluster_runs_the_cross_slot_cases_on_the_double() {
    let json = passing_check(&["check", "--topology", "cluster", "--json"], "cluster");
    let outcomes = cluster_outcomes(&json);
    for case in CLUSTER_RULE_CASES {
        assert!(
            outcomes.contains(&(case.into(), "pass".into())),
            "{outcomes:?}"
        );
    }
    // One store holds every slot: nothing moves.
    for case in CLUSTER_MOVING_CASES {
        assert!(
            outcomes.contains(&(case.into(), "skipped".into())),
            "{outcomes:?}"
        );
    }
}

#[test]
fn spawn_topology_cluster_runs_every_cluster_case_on_a_real_cluster() {
    if let Err(why) = nxlock::testing::RedisServer::spawn() {
        nxlock::testing::skip_or_fail("nxlock check --spawn --topology cluster", &why);
        return;
    }
    let json = passing_check(
        &["check", "--spawn", "--topology", "cluster", "--json"],
        "cluster",
    );
    let outcomes = cluster_outcomes(&json);
    for case in CLUSTER_RULE_CASES.iter().chain(&CLUSTER_MOVING_CASES) {
        assert!(
            outcomes.contains(&(case.to_string(), "pass".into())),
            "{outcomes:?}"
        );
    }
    assert!(
        json["target"]
            .as_str()
            .unwrap()
            .starts_with("cluster redis://127.0.0.1:")
    );
}

#[test]
fn a_cluster_given_with_url_or_another_topology_is_a_usage_error() {
    for (args, says) in [
        (
            &[
                "check",
                "--topology",
                "cluster",
                "--url",
                "redis://127.0.0.1:1",
            ][..],
            "--cluster URL",
        ),
        (
            &[
                "check",
                "--topology",
                "redlock",
                "--cluster",
                "redis://127.0.0.1:1",
            ][..],
            "--topology cluster or none",
        ),
    ] {
        let out = nxlock(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn an_even_or_tiny_instance_count_is_a_usage_error() {
    for n in ["1", "4"] {
        let out = nxlock(&["check", "--topology", "redlock", "--instances", n]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("odd number of instances, at least 3"),
            "{stderr}"
        );
    }
    let out = nxlock(&["check", "--instances", "3"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn spawn_topology_replicated_reproduces_the_loss_on_real_processes() {
    if let Err(why) = nxlock::testing::RedisServer::spawn() {
        nxlock::testing::skip_or_fail("nxlock check --spawn --topology replicated", &why);
        return;
    }
    let json = passing_check(
        &["check", "--spawn", "--topology", "replicated", "--json"],
        "replicated",
    );
    assert_the_failover_cases(&json);
    let cases = json["cases"].as_array().unwrap();
    for case in cases.iter().filter(|c| c["outcome"] == "skipped") {
        let detail = case["detail"].as_str().unwrap();
        assert!(
            detail.contains("needs time-control")
                || detail.contains("needs multi-instance")
                || detail.contains("needs cluster")
                || detail.contains("needs transactions"),
            "only virtual time, independent instances, a cluster and transactions are \
             missing: {case}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_checks_the_master_an_existing_deployment_names() {
    let deployment = match nxlock::testing::ReplicatedRedis::spawn(1).await {
        Ok(deployment) => deployment,
        Err(why) => {
            nxlock::testing::skip_or_fail("nxlock check --sentinel", &why);
            return;
        }
    };
    let deployment = deployment.with_sentinels(1).await.expect("a sentinel");
    let sentinel = deployment.sentinel_addresses().remove(0);
    let out = tokio::task::spawn_blocking(move || {
        nxlock(&[
            "check",
            "--sentinel",
            &sentinel,
            "--master",
            nxlock::testing::MASTER_NAME,
            "--json",
        ])
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(json["topology"], "sentinel");
    assert_eq!(json["failed"], 0);
    assert!(
        json["target"].as_str().unwrap().contains("\"nxlock\""),
        "the report names the master: {}",
        json["target"]
    );
    assert!(json["passed"].as_u64().unwrap() > 100);
}

#[test]
fn a_replicated_topology_at_a_url_is_a_usage_error() {
    let out = nxlock(&[
        "check",
        "--url",
        "redis://127.0.0.1:1",
        "--topology",
        "replicated",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--topology replicated needs --spawn"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn unknown_arguments_are_a_usage_error_not_a_panic() {
    let out = nxlock(&["check", "--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-such-flag"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_url_reports_an_incompatible_server_and_exits_non_zero() {
    let server = MiniRedis::start().await;
    let url = server.url.clone();
    let out = tokio::task::spawn_blocking(move || nxlock(&["check", "--url", &url, "--json"]))
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failing suite must exit non-zero"
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert!(json["failed"].as_u64().unwrap() > 0);
    let set_nx = json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "strings::set_nx_sets_only_missing_keys")
        .unwrap();
    assert_eq!(set_nx["ok"], false);
    assert_eq!(set_nx["outcome"], "fail");
    server.stop().await;
}
