//! `nxlock bench`: its JSON contract, its table, and its argument checks. (Timings are not
//! asserted here; they belong in the README's Performance section.)

use std::process::Command;

fn nxlock(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_nxlock"))
        .args(args)
        .output()
        .expect("run nxlock")
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = nxlock(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is exactly one JSON object")
}

fn keys(v: &serde_json::Value) -> Vec<String> {
    let mut keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

#[test]
fn json_has_exactly_the_documented_fields() {
    let report = json(&["bench", "--duration", "0.3", "--json"]);
    assert_eq!(
        keys(&report),
        [
            "acquire_us",
            "algorithm",
            "backend",
            "clients",
            "commands_per_cycle",
            "cycle_us",
            "cycles",
            "cycles_per_sec",
            "duration_s",
            "hold_us",
            "keys",
            "per_client_cycles",
            "topology",
            "violations"
        ]
    );
    assert_eq!(keys(&report["acquire_us"]), ["max", "p50", "p99", "p999"]);
    assert_eq!(keys(&report["cycle_us"]), ["max", "p50", "p99", "p999"]);
    assert_eq!(keys(&report["per_client_cycles"]), ["max", "min"]);
    assert_eq!(report["backend"], "memory");
    // The default is the best wait: the fair lock.
    assert_eq!(report["algorithm"], "fair");
    assert!(report["cycles"].as_u64().unwrap() > 0);
    // Uncontended: one acquire script and one release script, nothing else.
    assert_eq!(report["commands_per_cycle"].as_f64(), Some(2.0));
    let polling = json(&["bench", "--duration", "0.3", "--wait", "poll", "--json"]);
    assert_eq!(polling["algorithm"], "token");
    // SET NX PX + EVALSHA.
    assert_eq!(polling["commands_per_cycle"].as_f64(), Some(2.0));
    assert_eq!(report["violations"], 0);
}

#[test]
fn contended_runs_of_every_algorithm_keep_mutual_exclusion() {
    for algorithm in ["token", "legacy", "scripted"] {
        let report = json(&[
            "bench",
            "--algorithm",
            algorithm,
            "--clients",
            "8",
            "--keys",
            "2",
            "--hold-us",
            "100",
            "--duration",
            "0.3",
            "--runtime",
            "multi",
            "--json",
        ]);
        assert_eq!(report["violations"], 0, "{algorithm}: {report}");
        assert_eq!(report["clients"], 8);
        assert_eq!(report["hold_us"], 100);
        assert!(
            report["cycles"].as_u64().unwrap() > 0,
            "{algorithm}: {report}"
        );
    }
}

/// Every wait mode keeps exclusion under contention. (That the fair lock serves in arrival
/// order is the suite's `fair::waiters_are_served_in_arrival_order`, on virtual time; how
/// evenly it spreads cycles over real time is a benchmark figure, not a test.)
#[test]
fn every_wait_mode_keeps_exclusion() {
    for wait in ["poll", "notify", "fair"] {
        let report = json(&[
            "bench",
            "--wait",
            wait,
            "--clients",
            "8",
            "--duration",
            "0.3",
            "--runtime",
            "multi",
            "--json",
        ]);
        assert_eq!(report["violations"], 0, "{wait}: {report}");
        assert!(report["cycles"].as_u64().unwrap() > 0, "{wait}: {report}");
    }
}

#[test]
fn the_table_names_every_measure() {
    let out = nxlock(&["bench", "--duration", "0.2"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for label in [
        "cycles/s",
        "acquire wait µs",
        "p99.9",
        "per-client cycles",
        "commands/cycle",
        "violations",
    ] {
        assert!(text.contains(label), "missing {label:?} in\n{text}");
    }
}

#[test]
fn bad_arguments_are_usage_errors() {
    for args in [
        &["bench", "--duration", "0"][..],
        &["bench", "--duration", "nan"],
        &["bench", "--clients", "0"],
        &["bench", "--algorithm", "redlock"],
        &["bench", "--compare"],
        &["bench", "--algorithm", "legacy", "--wait", "fair"],
        &["bench", "--algorithm", "scripted", "--wait", "notify"],
        &["bench", "--wait", "spin"],
        &["bench", "--rounds", "3"],
        &[
            "bench",
            "--url",
            "redis://127.0.0.1:1",
            "--compare",
            "--rounds",
            "0",
        ],
        &["bench", "--topology", "redlock", "--spawn", "--rounds", "2"],
    ] {
        let out = nxlock(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stderr.is_empty(), "{args:?} gave no reason");
    }
    // The range a refused number is told is the one that holds.
    let zero = nxlock(&["bench", "--duration", "0"]);
    let said = String::from_utf8_lossy(&zero.stderr);
    assert!(said.contains("more than 0 and at most 86400"), "{said}");
}

#[test]
fn redis_bench_with_compare_reports_the_floor() {
    let target = match nxlock::testing::RedisTarget::from_env() {
        Ok(target) => target,
        Err(why) => {
            return nxlock::testing::announce_skip(
                "redis_bench_with_compare_reports_the_floor",
                &why,
            );
        }
    };
    let url = target.url();
    let out = nxlock(&[
        "bench",
        "--url",
        &url,
        "--duration",
        "0.3",
        "--wait",
        "poll",
        "--compare",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("hand-written redis-rs floor"), "{text}");
    assert!(text.contains("commands/cycle     2.000"), "{text}");
    let report = json(&[
        "bench",
        "--url",
        &url,
        "--duration",
        "0.3",
        "--clients",
        "4",
        "--json",
    ]);
    assert_eq!(report["backend"], url.as_str());
    assert_eq!(report["violations"], 0);
}

/// `--compare rslock` and `--compare floor` on one server: nxlock's report, the
/// reference's, and the ratio of their cycles/s, as one JSON object; the two sides take
/// turns for `--rounds` rounds, and each side's report covers all of its rounds.
#[test]
fn one_server_compares_with_rslock_and_the_floor() {
    let target = match nxlock::testing::RedisTarget::from_env() {
        Ok(target) => target,
        Err(why) => {
            return nxlock::testing::announce_skip(
                "one_server_compares_with_rslock_and_the_floor",
                &why,
            );
        }
    };
    let url = target.url();
    let args = |compare| {
        [
            "bench",
            "--url",
            &url,
            "--clients",
            "2",
            "--duration",
            "0.3",
            "--compare",
            compare,
            "--rounds",
            "3",
            "--json",
        ]
        .map(String::from)
    };
    let run = |compare| json(&args(compare).iter().map(String::as_str).collect::<Vec<_>>());
    let report = run("rslock");
    assert_eq!(
        keys(&report),
        [
            "nxlock",
            "ratio",
            "round_median",
            "round_quartiles",
            "round_ratios",
            "rslock"
        ]
    );
    let rounds = report["round_ratios"].as_array().unwrap();
    assert_eq!(rounds.len(), 3, "{report}");
    let mut sorted: Vec<f64> = rounds.iter().map(|r| r.as_f64().unwrap()).collect();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(report["round_median"].as_f64(), Some(sorted[1]), "{report}");
    let quartiles = report["round_quartiles"].as_array().unwrap();
    assert!(
        quartiles[0].as_f64() <= Some(sorted[1]) && Some(sorted[1]) <= quartiles[1].as_f64(),
        "{report}"
    );
    assert!(rounds.iter().all(|r| r.as_f64().unwrap() > 0.0), "{report}");
    assert_eq!(report["nxlock"]["algorithm"], "fair");
    assert_eq!(report["rslock"]["algorithm"], "rslock");
    for side in ["nxlock", "rslock"] {
        assert_eq!(report[side]["violations"], 0, "{side}");
        assert_eq!(report[side]["clients"], 2, "{side}");
        // Three slices of 0.1 s each, merged: the report spans all of them.
        assert!(
            report[side]["duration_s"].as_f64().unwrap() >= 0.3,
            "{side}: {report}"
        );
        assert!(
            report[side]["cycles_per_sec"].as_f64().unwrap() > 0.0,
            "{side}"
        );
        // rslock's commands are the server's count: at least a SET and an unlock each.
        assert!(
            report[side]["commands_per_cycle"].as_f64().unwrap() >= 2.0,
            "{side}"
        );
    }
    let expected = report["nxlock"]["cycles_per_sec"].as_f64().unwrap()
        / report["rslock"]["cycles_per_sec"].as_f64().unwrap();
    let ratio = report["ratio"].as_f64().unwrap();
    assert!((ratio - expected).abs() < 0.01, "{ratio} vs {expected}");

    let report = run("floor");
    assert_eq!(
        keys(&report),
        [
            "floor",
            "nxlock",
            "ratio",
            "round_median",
            "round_quartiles",
            "round_ratios"
        ]
    );
    assert!(report["floor"]["cycles_per_sec"].as_f64().unwrap() > 0.0);
    assert!(report["ratio"].as_f64().unwrap() > 0.0);
}

/// The Redlock report: three scenarios on the double, each with exclusion kept, and the
/// drift every hold gives up.
#[test]
fn redlock_topology_reports_every_scenario_on_the_double() {
    let report = json(&[
        "bench",
        "--topology",
        "redlock",
        "--instances",
        "5",
        "--clients",
        "4",
        "--duration",
        "0.3",
        "--json",
    ]);
    assert_eq!(
        keys(&report),
        [
            "backend",
            "clients",
            "drift_ms",
            "duration_s",
            "instances",
            "keys",
            "nxlock",
            "one_blackholed",
            "one_refused",
            "ratio",
            "rslock",
            "shared_lock",
            "topology",
            "ttl_ms"
        ]
    );
    assert_eq!(report["instances"], 5);
    assert_eq!(report["shared_lock"], false);
    assert_eq!(report["topology"], "redlock");
    assert_eq!(report["drift_ms"], 102, "1% of the 10 s TTL + 2 ms");
    assert!(report["rslock"].is_null() && report["ratio"].is_null());
    for scenario in ["nxlock", "one_refused", "one_blackholed"] {
        let s = &report[scenario];
        assert_eq!(
            keys(s),
            [
                "acquire_us",
                "cycles_per_sec",
                "fairness",
                "per_client_cycles",
                "release_us",
                "success_rate",
                "validity_lost_ms",
                "violations"
            ],
            "{scenario}"
        );
        assert_eq!(s["violations"], 0, "{scenario}");
        assert_eq!(
            s["success_rate"], 1.0,
            "{scenario}: one node of five is no loss"
        );
        assert!(s["cycles_per_sec"].as_f64().unwrap() > 0.0, "{scenario}");
        assert!(
            s["validity_lost_ms"]["p50"].as_f64().unwrap() >= 102.0,
            "{scenario}: the drift is always lost"
        );
    }
}

/// With `--shared-lock` the four clients take turns in process: each gets the lock in
/// rotation, in every scenario.
#[test]
fn redlock_clients_sharing_one_lock_take_turns() {
    let report = json(&[
        "bench",
        "--topology",
        "redlock",
        "--clients",
        "4",
        "--shared-lock",
        "--duration",
        "0.3",
        "--json",
    ]);
    assert_eq!(report["shared_lock"], true);
    for scenario in ["nxlock", "one_refused", "one_blackholed"] {
        let s = &report[scenario];
        assert_eq!(s["violations"], 0, "{scenario}");
        let cycles = &s["per_client_cycles"];
        let (min, max) = (
            cycles["min"].as_u64().unwrap(),
            cycles["max"].as_u64().unwrap(),
        );
        assert!(
            max > 0 && max - min <= 1,
            "{scenario}: clients served in rotation differ by at most one cycle, got {cycles}"
        );
    }
}

/// Eight clients sharing one fair lock on the double: served in rotation, each hold the
/// uncontended two-command cycle.
#[test]
fn clients_sharing_one_fair_lock_take_turns() {
    let report = json(&[
        "bench",
        "--clients",
        "8",
        "--shared-lock",
        "--duration",
        "0.3",
        "--json",
    ]);
    assert_eq!(report["algorithm"], "fair, shared");
    assert_eq!(report["violations"], 0);
    // Each hold is passed to the next client in one command; each of the 8 clients may
    // spend one more to join the turns (which counts on a slow machine, whose 0.3 s holds
    // few cycles).
    let commands = report["commands_per_cycle"].as_f64().unwrap();
    let cycles_run = report["cycles"].as_f64().unwrap();
    assert!(
        commands >= 1.0 && commands <= 1.0 + 9.0 / cycles_run + 0.001,
        "{commands} commands per cycle over {cycles_run} cycles"
    );
    let cycles = &report["per_client_cycles"];
    let (min, max) = (
        cycles["min"].as_u64().unwrap(),
        cycles["max"].as_u64().unwrap(),
    );
    assert!(max > 0 && max - min <= 1, "not in rotation: {cycles}");
}

#[test]
fn redlock_topology_argument_mistakes_are_usage_errors() {
    for args in [
        &["bench", "--topology", "redlock", "--compare", "rslock"][..],
        &["bench", "--topology", "redlock", "--spawn", "--compare"],
        &[
            "bench",
            "--topology",
            "redlock",
            "--url",
            "redis://127.0.0.1:1",
        ],
        &["bench", "--topology", "redlock", "--wait", "fair"],
        &["bench", "--compare", "rslock"],
        &[
            "bench",
            "--topology",
            "cluster",
            "--spawn",
            "--compare",
            "rslock",
        ],
        &["bench", "--spawn"],
        &["bench", "--instances", "3"],
        &["bench", "--shared-lock", "--wait", "poll"],
        &["bench", "--topology", "redlock", "--pin"],
        &["bench", "--url", "redis://127.0.0.1:1", "--pin"],
        &["bench", "--shared-lock", "--algorithm", "legacy"],
    ] {
        let out = nxlock(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?} gave no reason");
    }
}

/// `nxlock bench` on three spawned Redlock instances.
const SPAWNED_REDLOCK: [&str; 6] = [
    "bench",
    "--spawn",
    "--topology",
    "redlock",
    "--instances",
    "3",
];

/// nxlock's Redlock and rslock's LockManager on the same spawned servers, in one run,
/// taking turns.
#[test]
fn spawned_redlock_compares_with_rslock() {
    if let Err(why) = nxlock::testing::RedisServer::spawn() {
        nxlock::testing::skip_or_fail("nxlock bench --spawn --topology redlock", &why);
        return;
    }
    let compare = [
        "--compare",
        "rslock",
        "--rounds",
        "2",
        "--duration",
        "0.3",
        "--json",
    ];
    let report = json(&[&SPAWNED_REDLOCK[..], &compare].concat());
    assert_eq!(report["backend"], "spawned redis-server");
    assert_eq!(
        report["round_ratios"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    for scenario in ["nxlock", "rslock", "one_refused", "one_blackholed"] {
        assert_eq!(report[scenario]["violations"], 0, "{scenario}");
        assert!(
            report[scenario]["cycles_per_sec"].as_f64().unwrap() > 0.0,
            "{scenario}"
        );
    }
    let ratio = report["ratio"].as_f64().unwrap();
    let expected = report["nxlock"]["cycles_per_sec"].as_f64().unwrap()
        / report["rslock"]["cycles_per_sec"].as_f64().unwrap();
    assert!((ratio - expected).abs() < 0.01, "{ratio} vs {expected}");
}

/// `--pin` keeps the client on one CPU and the spawned servers on the others, and says
/// so in the report; on a machine with one CPU it refuses, as a usage error.
#[cfg(target_os = "linux")]
#[test]
fn pin_reports_where_the_client_and_the_servers_ran() {
    if let Err(why) = nxlock::testing::RedisServer::spawn() {
        nxlock::testing::skip_or_fail("nxlock bench --spawn --pin", &why);
        return;
    }
    let allowed = nxlock::testing::cpus_of(std::process::id()).unwrap();
    let redlock = [
        &SPAWNED_REDLOCK[..],
        &["--duration", "0.3", "--pin", "--json"],
    ]
    .concat();
    let cluster = [
        "bench",
        "--spawn",
        "--topology",
        "cluster",
        "--duration",
        "0.3",
        "--pin",
        "--json",
    ];
    if allowed.len() < 2 {
        let out = nxlock(&redlock);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("needs 2 CPUs"), "{stderr}");
        return;
    }
    let placement = serde_json::json!({
        "client_cpus": [allowed[0]],
        "server_cpus": allowed[1..],
    });
    let report = json(&redlock);
    assert_eq!(report["placement"], placement, "{report}");
    for scenario in ["nxlock", "one_refused", "one_blackholed"] {
        assert_eq!(report[scenario]["violations"], 0, "{scenario}");
    }
    let report = json(&cluster);
    assert_eq!(report["placement"], placement, "{report}");
    assert_an_uncontended_cluster_run(&report);
    // Without --pin the field is absent: the documented fields stay exactly those.
    let unpinned: Vec<&str> = redlock.iter().copied().filter(|&a| a != "--pin").collect();
    let unpinned = json(&unpinned);
    assert!(unpinned.get("placement").is_none(), "{unpinned}");
}

/// Locks spread over a cluster's slots: one acquire script and one release script per
/// uncontended cycle, as on one server, and the JSON says `cluster`.
fn assert_an_uncontended_cluster_run(report: &serde_json::Value) {
    assert_eq!(report["topology"], "cluster");
    assert_eq!(report["violations"], 0);
    assert!(report["cycles"].as_u64().unwrap() > 0);
    assert_eq!(report["commands_per_cycle"].as_f64(), Some(2.0));
}

#[test]
fn cluster_topology_runs_on_the_double_with_cluster_rules() {
    let report = json(&[
        "bench",
        "--topology",
        "cluster",
        "--clients",
        "8",
        "--keys",
        "64",
        "--duration",
        "0.3",
        "--json",
    ]);
    assert_an_uncontended_cluster_run(&report);
    assert_eq!(report["backend"], "memory");
}

#[test]
fn spawned_cluster_topology_runs_on_a_real_cluster() {
    if let Err(why) = nxlock::testing::RedisServer::spawn() {
        nxlock::testing::skip_or_fail("nxlock bench --spawn --topology cluster", &why);
        return;
    }
    let report = json(&[
        "bench",
        "--spawn",
        "--topology",
        "cluster",
        "--clients",
        "8",
        "--keys",
        "64",
        "--duration",
        "0.5",
        "--json",
    ]);
    assert_an_uncontended_cluster_run(&report);
    // Three primaries' URLs.
    assert_eq!(report["backend"].as_str().unwrap().split(',').count(), 3);
}

#[test]
fn cluster_topology_argument_mistakes_are_usage_errors() {
    for args in [
        &["bench", "--cluster", "redis://127.0.0.1:1"][..],
        &[
            "bench",
            "--topology",
            "cluster",
            "--url",
            "redis://127.0.0.1:1",
        ],
        &[
            "bench",
            "--topology",
            "cluster",
            "--spawn",
            "--cluster",
            "redis://127.0.0.1:1",
        ],
        &["bench", "--topology", "cluster", "--compare", "rslock"],
    ] {
        let out = nxlock(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?} gave no reason");
    }
}

/// Counters without a lock (compare-and-set, WATCH) and inside the fair lock, on the
/// double and on a real server: no increment lost, conflicts reported per increment.
#[test]
fn counter_algorithms_lose_no_increment_and_report_conflicts() {
    let server = nxlock::testing::RedisServer::spawn();
    let url = match &server {
        Ok(server) => Some(server.url()),
        Err(why) => {
            nxlock::testing::skip_or_fail("nxlock bench --algorithm optimistic --url", why);
            None
        }
    };
    let mut targets = vec![None];
    targets.extend(url.as_deref().map(Some));
    for target in targets {
        for algorithm in ["optimistic", "watch", "locked"] {
            let mut args = vec![
                "bench",
                "--algorithm",
                algorithm,
                "--clients",
                "8",
                "--keys",
                "2",
                "--duration",
                "0.3",
                "--json",
            ];
            if let Some(url) = target {
                args.extend(["--url", url]);
            }
            let report = json(&args);
            assert_eq!(report["algorithm"], algorithm, "{target:?}");
            assert_eq!(
                report["violations"], 0,
                "{algorithm} on {target:?}: {report}"
            );
            assert!(report["cycles"].as_u64().unwrap() > 0);
            let conflicts = report["conflicts_per_cycle"].as_f64().unwrap();
            if algorithm == "locked" {
                assert_eq!(conflicts, 0.0, "a lock never conflicts");
            }
        }
    }
}
