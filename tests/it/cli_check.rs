//! `nxlock check`: its table, its JSON contract and its exit code.

use crate::support;

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
            "cases",
            "causes",
            "failed",
            "passed",
            "redis_version",
            "server",
            "skipped",
            "target",
            "topology",
            "xfail"
        ]
    );
    assert_eq!(json["topology"], "single");
    assert_eq!(json["failed"], 0);
    // The double is no server.
    assert_eq!(json["server"], serde_json::Value::Null);
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
        assert_eq!(fields, ["detail", "missing", "name", "ok", "outcome"]);
        assert_eq!(
            case["missing"].as_array().unwrap().is_empty(),
            case["outcome"] != "skipped",
            "{case}"
        );
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
            .ends_with("0 failed, 34 skipped"),
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

/// How [`misbehaving_server`] departs from Redis.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Defects {
    /// It answers GET with a simple string where Redis sends a bulk string, and it drops
    /// the connection on every INCR.
    SimpleGetAndDroppedIncr,
    /// It closes the connection after every error reply, as some fakes do.
    HangsUpAfterErrors,
}

/// A Redis-protocol server with `defects`, in front of `nxlock serve`. Serves until the
/// runtime stops.
async fn misbehaving_server(defects: Defects) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = nxlock::server::Server::start(nxlock::server::ServerOptions::default())
        .await
        .unwrap();
    let upstream = server.addr().to_string();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("redis://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _server = server;
        while let Ok((mut client, _)) = listener.accept().await {
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let mut server = tokio::net::TcpStream::connect(upstream).await.unwrap();
                let (mut requests, mut replies) = (Vec::new(), Vec::new());
                loop {
                    let Some(end) = support::raw::reply_end(&requests, 0) else {
                        if client.read_buf(&mut requests).await.unwrap_or(0) == 0 {
                            return;
                        }
                        continue;
                    };
                    let request: Vec<u8> = requests.drain(..end).collect();
                    // `*N\r\n$len\r\nNAME\r\n…`: the name is the third line.
                    let name = request.split(|&b| b == b'\n').nth(2).unwrap_or_default();
                    let name = name
                        .strip_suffix(b"\r")
                        .unwrap_or(name)
                        .to_ascii_uppercase();
                    if name == b"INCR" && defects == Defects::SimpleGetAndDroppedIncr {
                        return;
                    }
                    server.write_all(&request).await.unwrap();
                    let reply = loop {
                        if let Some(end) = support::raw::reply_end(&replies, 0) {
                            break replies.drain(..end).collect::<Vec<u8>>();
                        }
                        if server.read_buf(&mut replies).await.unwrap_or(0) == 0 {
                            return;
                        }
                    };
                    let hang_up = defects == Defects::HangsUpAfterErrors && reply.starts_with(b"-");
                    let reply = match (name.as_slice(), reply.first()) {
                        (b"GET", Some(b'$'))
                            if !reply.starts_with(b"$-1")
                                && defects == Defects::SimpleGetAndDroppedIncr =>
                        {
                            let body = reply.splitn(2, |&b| b == b'\n').nth(1).unwrap();
                            [b"+".as_slice(), body].concat()
                        }
                        _ => reply,
                    };
                    if client.write_all(&reply).await.is_err() || hang_up {
                        return;
                    }
                }
            });
        }
    });
    url
}

/// Against a server with defects, each failing case says in protocol terms what differs
/// (the command, the reply's RESP type and bytes, what Redis replies); a dropped
/// connection fails only the cases whose command it dropped, and the next case runs on a
/// working connection. `--case` picks the cases, and `--list` names them.
#[test]
fn check_names_each_difference_in_protocol_terms_and_one_drop_fails_one_case() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let url = runtime.block_on(misbehaving_server(Defects::SimpleGetAndDroppedIncr));
    let out = nxlock(&[
        "check",
        "--url",
        &url,
        "--case",
        "strings::",
        "--case",
        "keys::",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let cases = json["cases"].as_array().unwrap();
    assert!(
        cases
            .iter()
            .all(|c| c["name"].as_str().unwrap().starts_with("strings::")
                || c["name"].as_str().unwrap().starts_with("keys::")),
        "--case ran other cases: {cases:?}"
    );
    let detail = |name: &str| -> String {
        let case = cases
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("{name} did not run"));
        assert_eq!(case["outcome"], "fail", "{case}");
        case["detail"].as_str().unwrap().to_string()
    };
    let get = detail("strings::set_nx_sets_only_missing_keys");
    assert!(
        get.contains("GET replied with a simple string \"+")
            && get.contains("where Redis replies with a bulk string or a null"),
        "{get}"
    );
    let incr = detail("keys::incr_counts_from_zero_and_keeps_the_ttl");
    assert!(incr.contains("INCR: "), "{incr}");
    // Every failure names one of the two defects' commands: nothing cascades.
    let mut passed = 0;
    for case in cases {
        match case["outcome"].as_str().unwrap() {
            "fail" => {
                let detail = case["detail"].as_str().unwrap();
                // A binary value as a simple string cannot even be read: still named.
                assert!(
                    ["GET replied", "GET: ", "INCR: "]
                        .iter()
                        .any(|named| detail.contains(named)),
                    "{} failed for another reason: {detail}",
                    case["name"]
                );
            }
            "pass" => passed += 1,
            _ => {}
        }
    }
    assert!(passed > 0, "no case passed: {cases:?}");
    runtime.shutdown_background();
}

#[test]
fn check_list_names_the_cases_case_selects() {
    let out = nxlock(&["check", "--list", "--case", "fair::"]);
    assert!(out.status.success());
    let listed = String::from_utf8(out.stdout).unwrap();
    assert!(listed.lines().count() > 10, "{listed}");
    assert!(
        listed.lines().all(|line| line.starts_with("fair::")),
        "{listed}"
    );
    let all = nxlock(&["check", "--list", "--json"]);
    let names: Vec<String> = serde_json::from_slice(&all.stdout).unwrap();
    assert_eq!(names, nxlock::conformance::case_names());
    let none = nxlock(&["check", "--case", "no-such-case"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no case matches"));
}

/// `check` judges a server against the version it reports in `INFO server`, unless
/// `--redis-version` says otherwise; the double answers as the version asked for.
#[test]
fn check_judges_the_reported_version_unless_told_another() {
    let json = passing_check(
        &[
            "check",
            "--topology",
            "cluster",
            "--redis-version",
            "7.0",
            "--json",
        ],
        "cluster",
    );
    assert_eq!(json["redis_version"], "7.0");
    let server = match nxlock::testing::RedisServer::spawn() {
        Ok(server) => server,
        Err(why) => return nxlock::testing::skip_or_fail("check's version on redis-server", &why),
    };
    let url = server.url();
    let installed = nxlock::testing::installed_version().expect("the spawned server's version");
    let json = passing_check(
        &[
            "check",
            "--url",
            &url,
            "--case",
            "token::",
            "--case",
            "scripts::",
            "--json",
        ],
        "single",
    );
    assert_eq!(json["redis_version"], installed.name());
    let json = passing_check(
        &[
            "check",
            "--url",
            &url,
            "--case",
            "token::",
            "--redis-version",
            "7.2",
            "--json",
        ],
        "single",
    );
    assert_eq!(json["redis_version"], "7.2");
    let bad = nxlock(&["check", "--redis-version", "6.2"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// `check --url` names the server it talked to, as the server names itself, beside the
/// version it judged against: in the table and in the JSON.
#[test]
fn check_names_the_server_it_talked_to() {
    let server = match nxlock::testing::RedisServer::spawn() {
        Ok(server) => server,
        Err(why) => return nxlock::testing::skip_or_fail("check names the server", &why),
    };
    let expected = nxlock::testing::installed_server().expect("redis-server on PATH");
    let json = passing_check(
        &[
            "check",
            "--url",
            &server.url(),
            "--case",
            "strings::",
            "--json",
        ],
        "single",
    );
    assert_eq!(json["server"], expected.as_str());
    let table = nxlock(&["check", "--url", &server.url(), "--case", "strings::"]);
    let first = String::from_utf8_lossy(&table.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    assert!(
        first.contains(&format!("server: {expected}; judged as Redis")),
        "{first}"
    );
}

/// Against a server that hangs up after every error reply, the case where it happened
/// says so, naming the reply and the command it answered; the case's next command runs
/// on a fresh connection, and no later case fails because of it.
#[test]
fn a_server_that_hangs_up_after_errors_is_named_where_it_happened() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let url = runtime.block_on(misbehaving_server(Defects::HangsUpAfterErrors));
    let out = nxlock(&[
        "check",
        "--url",
        &url,
        "--case",
        "keys::",
        "--case",
        "strings::",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let cases = json["cases"].as_array().unwrap();
    let mut named = 0;
    for case in cases {
        let detail = case["detail"].as_str().unwrap();
        if case["outcome"] != "fail" {
            continue;
        }
        // Every failure is the hang-up, named with the reply before it.
        assert!(
            detail.contains("the server closed the connection after replying `-"),
            "{} failed for another reason: {detail}",
            case["name"]
        );
        named += 1;
    }
    assert!(named > 0, "no case met the hang-up: {cases:?}");
    let incr = cases
        .iter()
        .find(|c| c["name"] == "keys::incr_rejects_non_integers_and_overflow")
        .expect("the INCR case ran");
    assert!(
        incr["detail"]
            .as_str()
            .unwrap()
            .contains("after replying `-ERR value is not an integer or out of range` to INCR"),
        "{incr}"
    );
    runtime.shutdown_background();
}

/// A certificate authority and a server certificate for 127.0.0.1 made for one test, as
/// PEM files in `dir`: (the CA's certificate, the server's certificate, its key).
fn certificates(
    dir: &std::path::Path,
) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let files = (
        dir.join("ca.pem"),
        dir.join("server.pem"),
        dir.join("server.key"),
    );
    std::fs::write(&files.0, ca.pem()).unwrap();
    std::fs::write(&files.1, server.pem()).unwrap();
    std::fs::write(&files.2, key.serialize_pem()).unwrap();
    files
}

#[test]
fn a_rediss_url_is_checked_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificates(dir.path());
    let tls_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .unwrap()
        .port();
    let path = |p: &std::path::Path| p.display().to_string();
    let spawned = nxlock::testing::RedisServer::spawn_with(&[
        "--tls-port".into(),
        tls_port.to_string(),
        "--tls-cert-file".into(),
        path(&cert),
        "--tls-key-file".into(),
        path(&key),
        "--tls-ca-cert-file".into(),
        path(&ca),
        "--tls-auth-clients".into(),
        "no".into(),
    ]);
    let _server = match spawned {
        Ok(server) => server,
        Err(why) => {
            return nxlock::testing::skip_or_fail("nxlock check over TLS", &why);
        }
    };
    let url = format!("rediss://127.0.0.1:{tls_port}");
    // The test's authority is trusted the way a private one is: SSL_CERT_FILE.
    let out = Command::new(env!("CARGO_BIN_EXE_nxlock"))
        .args([
            "check",
            "--url",
            &url,
            "--case",
            "token::",
            "--case",
            "scripts::",
            "--json",
        ])
        .env("SSL_CERT_FILE", &ca)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert!(json["passed"].as_u64().unwrap() > 0, "{json}");
    assert_eq!(json["failed"], 0);
    assert!(
        json["server"].as_str().unwrap().starts_with("Redis "),
        "{json}"
    );
    // Without the authority, the certificate is refused: one line, exit 2.
    let untrusted = Command::new(env!("CARGO_BIN_EXE_nxlock"))
        .args(["check", "--url", &url, "--case", "token::"])
        .env("SSL_CERT_FILE", dir.path().join("absent.pem"))
        .output()
        .unwrap();
    assert_eq!(untrusted.status.code(), Some(2));
    let said = String::from_utf8_lossy(&untrusted.stderr);
    assert!(
        said.starts_with("nxlock check: cannot reach rediss://"),
        "{said}"
    );
    assert_eq!(said.lines().count(), 1, "{said}");
}

#[test]
fn an_unreachable_server_or_a_bad_url_is_one_line_and_exit_2() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .unwrap()
        .port();
    let down = format!("redis://127.0.0.1:{port}");
    for (url, expected) in [
        (down.as_str(), "cannot reach redis://127.0.0.1:"),
        (
            "localhost:6379",
            "is not a URL: give redis://localhost:6379",
        ),
        ("redis://[::1", "cannot reach redis://[::1"),
    ] {
        let out = nxlock(&["check", "--url", url]);
        assert_eq!(out.status.code(), Some(2), "{url}");
        assert!(out.stdout.is_empty(), "{url}: no table");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains(expected), "{url}: {said}");
        assert_eq!(said.lines().count(), 1, "{url}: {said}");
    }
}
