//! `nxlock explore`: exit codes, the JSON with its `"steps"`, the timeline and replay
//! files, and refusals of what the double cannot do.

use std::process::{Command, Output};

fn nxlock(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nxlock"))
        .args(args)
        .output()
        .expect("run nxlock")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_violation_exits_1_with_the_shrunk_steps_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("timeline.html");
    let saved = dir.path().join("replay.json");
    let out = nxlock(&[
        "explore",
        "--algorithm",
        "legacy",
        "--faults",
        "skew",
        "--runs",
        "500",
        "--seed",
        "1",
        "--threads",
        "1",
        "--json",
        "--html",
        html.to_str().unwrap(),
        "--save",
        saved.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(json["violation"], "mutual-exclusion");
    assert_eq!(json["workload"], "legacy");
    let steps = json["steps"].as_array().expect("steps");
    assert!(!steps.is_empty() && steps.len() <= 6, "{json:#}");
    assert!(
        steps
            .iter()
            .any(|s| s["fault"] == "skew" || s["fault"] == "node_clock")
    );
    assert_eq!(json["identical_replays"], 10);
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"));

    let replayed = nxlock(&["explore", "--replay", saved.to_str().unwrap(), "--json"]);
    assert_eq!(replayed.status.code(), Some(1), "{}", text(&replayed));
    let json: serde_json::Value = serde_json::from_slice(&replayed.stdout).unwrap();
    assert_eq!(json["reproduced"], true);
}

#[test]
fn a_clean_search_exits_0_and_counts_its_runs() {
    let out = nxlock(&[
        "explore",
        "--algorithm",
        "fenced",
        "--faults",
        "pause,lost-reply,cancel",
        "--runs",
        "200",
        "--threads",
        "1",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["violation"], serde_json::Value::Null);
    assert_eq!(json["runs"], 200);
}

#[test]
fn keep_going_counts_every_violating_run() {
    let out = nxlock(&[
        "explore",
        "--algorithm",
        "token",
        "--faults",
        "pause",
        "--runs",
        "300",
        "--threads",
        "2",
        "--keep-going",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let first = String::from_utf8_lossy(&out.stdout);
    let summary = first.lines().next().unwrap();
    assert!(
        summary.starts_with("300 runs") && summary.contains("mutual-exclusion"),
        "{summary}"
    );
}

#[test]
fn what_the_double_cannot_do_is_refused_with_exit_2() {
    let migrate = nxlock(&["explore", "--topology", "redlock", "--faults", "migrate"]);
    assert_eq!(migrate.status.code(), Some(2));
    assert!(
        text(&migrate).contains("'migrate' does not apply to the redlock topology"),
        "{}",
        text(&migrate)
    );
    let failover = nxlock(&["explore", "--faults", "failover"]);
    assert_eq!(failover.status.code(), Some(2));
    assert!(text(&failover).contains("does not apply to the single topology"));
    let unknown = nxlock(&["explore", "--faults", "meteor"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown).contains("unknown fault \"meteor\""));
    let missing = nxlock(&["explore", "--replay", "/nonexistent/replay.json"]);
    assert_eq!(missing.status.code(), Some(2));
}
