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
        "client-clock",
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
    assert!(steps.iter().any(|s| s["fault"] == "client_clock"));
    assert_eq!(json["identical_replays"], 10);
    // The reference token lock survives the same schedule: the legacy lock's own bug.
    assert!(
        json["blame"].as_str().unwrap().contains("survives"),
        "{json:#}"
    );
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
        "legacy",
        "--faults",
        "client-clock",
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
        summary.starts_with("runs with a violation of the lock's own: mutual-exclusion"),
        "{summary}"
    );
    assert!(first.contains("300 runs ("), "{first}");
    assert!(first.contains("runs/s"), "{first}");
}

#[test]
fn inherent_faults_give_labelled_findings_and_exit_0() {
    let out = nxlock(&[
        "explore",
        "--algorithm",
        "token",
        "--faults",
        "section-pause,node-clock,drift",
        "--runs",
        "2000",
        "--seed",
        "1",
        "--threads",
        "1",
    ]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("no violation of the lock's own"), "{shown}");
    assert!(shown.contains("INHERENT FINDING"), "{shown}");
    assert!(shown.contains("INHERENT TO TTL LOCKS"), "{shown}");
    assert!(!shown.contains("VIOLATION mutual-exclusion"), "{shown}");
}

#[test]
fn shards_merge_into_what_one_machine_finds() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "explore",
        "--algorithm",
        "legacy",
        "--faults",
        "client-clock,pause",
        "--runs",
        "600",
        "--seed",
        "4",
        "--threads",
        "1",
        "--json",
    ];
    let whole = nxlock(&args);
    let whole: serde_json::Value = serde_json::from_slice(&whole.stdout).unwrap();
    let mut files = Vec::new();
    for k in 0..3 {
        let shard = format!("{k}/3");
        let mut sharded = args.to_vec();
        sharded.extend(["--shard", &shard]);
        let out = nxlock(&sharded);
        let path = dir.path().join(format!("shard-{k}.json"));
        std::fs::write(&path, &out.stdout).unwrap();
        files.push(path);
    }
    let mut merge = vec!["explore", "--json", "--merge"];
    merge.extend(files.iter().map(|p| p.to_str().unwrap()));
    let out = nxlock(&merge);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let merged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(merged["found_by_run"], whole["found_by_run"], "{merged:#}");
    assert_eq!(merged["replay"]["steps"], whole["steps"], "{merged:#}");
    assert_eq!(merged["covered"], serde_json::json!([0, 1, 2]));

    // A missing shard is refused.
    let out = nxlock(&["explore", "--merge", files[0].to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("missing shards 1/3, 2/3"),
        "{}",
        text(&out)
    );
}

#[test]
fn help_lists_every_algorithm_and_the_inherent_faults() {
    let out = nxlock(&["explore", "--help"]);
    let help = text(&out);
    for name in [
        "token",
        "fenced",
        "fair",
        "reentrant",
        "legacy",
        "scripted",
        "redlock",
        "optimistic",
        "unprotected",
    ] {
        assert!(help.contains(name), "{name}: {help}");
    }
    for fault in [
        "section-pause",
        "node-clock",
        "drift",
        "restart-empty",
        "client-clock",
    ] {
        assert!(help.contains(fault), "{fault}: {help}");
    }
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
    let shard = nxlock(&["explore", "--shard", "3/3"]);
    assert_eq!(shard.status.code(), Some(2));
    assert!(text(&shard).contains("not a shard K/N"), "{}", text(&shard));
    let unknown = nxlock(&["explore", "--faults", "meteor"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown).contains("unknown fault \"meteor\""));
    let missing = nxlock(&["explore", "--replay", "/nonexistent/replay.json"]);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn exec_refuses_what_serve_cannot_serve_with_exit_2() {
    let restart = nxlock(&[
        "explore",
        "--exec",
        "true",
        "--topology",
        "replicated",
        "--faults",
        "restart",
    ]);
    assert_eq!(restart.status.code(), Some(2));
    assert!(
        text(&restart).contains("'restart' does not apply to the replicated topology"),
        "{}",
        text(&restart)
    );
    // What the topology has but serve cannot do is refused too, never dropped.
    let clock = nxlock(&[
        "explore",
        "--exec",
        "true",
        "--faults",
        "pause,client-clock",
    ]);
    assert_eq!(clock.status.code(), Some(2));
    assert!(
        text(&clock).contains("'client-clock' cannot be applied through serve")
            && text(&clock).contains("it applies pause"),
        "{}",
        text(&clock)
    );
    // No silent clamping: no clients, no runs.
    let nobody = nxlock(&["explore", "--exec", "true", "--runs", "0"]);
    assert_eq!(nobody.status.code(), Some(2), "{}", text(&nobody));
    assert!(
        text(&nobody).contains("at least 1 run"),
        "{}",
        text(&nobody)
    );
    // A schedule of no steps is a search without faults, which is said another way.
    let stepless = nxlock(&["explore", "--max-steps", "0", "--runs", "10"]);
    assert_eq!(stepless.status.code(), Some(2), "{}", text(&stepless));
    assert!(
        text(&stepless).contains("--max-steps"),
        "{}",
        text(&stepless)
    );
}

/// A whole exhaustive space small enough for a test: one step, 2 clients × 1 cycle.
const SMALL_EXHAUSTIVE: [&str; 7] = [
    "--exhaustive",
    "1",
    "--clients",
    "2",
    "--cycles",
    "1",
    "--quiet",
];

#[test]
fn an_exhaustive_search_states_its_guarantee_and_its_shards_merge_to_it() {
    let small = SMALL_EXHAUSTIVE;
    let whole = nxlock(&[&["explore"][..], &small].concat());
    assert_eq!(whole.status.code(), Some(0), "{}", text(&whole));
    let line = text(&whole)
        .lines()
        .find(|l| l.starts_with("guarantee:"))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no guarantee line: {}", text(&whole)));
    assert!(
        line.starts_with("guarantee: every schedule of at most 1 step over "),
        "{line}"
    );
    assert!(line.ends_with(": clean"), "{line}");
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for k in 0..3 {
        let shard = format!("{k}/3");
        let out = nxlock(&[&["explore", "--json", "--shard", &shard][..], &small].concat());
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let path = dir.path().join(format!("shard-{k}.json"));
        std::fs::write(&path, &out.stdout).unwrap();
        paths.push(path.to_string_lossy().into_owned());
    }
    let mut args = vec!["explore", "--merge"];
    args.extend(paths.iter().map(String::as_str));
    let merged = nxlock(&args);
    assert_eq!(merged.status.code(), Some(0), "{}", text(&merged));
    // The union of the shards is the single machine's space, run or pruned.
    assert!(
        text(&merged).contains(&line),
        "{}\nwanted: {line}",
        text(&merged)
    );
    // Two shards of three prove nothing.
    let partial = nxlock(&["explore", "--merge", &paths[0], &paths[1]]);
    assert_eq!(partial.status.code(), Some(2), "{}", text(&partial));
}

#[test]
fn a_shard_count_alone_takes_its_index_from_job_completion_index() {
    let out = Command::new(env!("CARGO_BIN_EXE_nxlock"))
        .arg("explore")
        .args(SMALL_EXHAUSTIVE)
        .args(["--shard", "4"])
        .env("JOB_COMPLETION_INDEX", "2")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("shard 2/4"), "{}", text(&out));
    let out = Command::new(env!("CARGO_BIN_EXE_nxlock"))
        .args(["explore", "--shard", "4", "--quiet"])
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("NXLOCK_SHARD")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("JOB_COMPLETION_INDEX"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_guided_search_reports_its_states_and_refuses_exhaustive() {
    let args = [
        "explore",
        "--guided",
        "--runs",
        "300",
        "--clients",
        "2",
        "--cycles",
        "2",
        "--quiet",
        "--json",
    ];
    let out = nxlock(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["coverage"]["mode"], "guided", "{json}");
    assert!(json["coverage"]["states"].as_u64().unwrap() > 5, "{json}");
    let line = json["guarantee"].as_str().unwrap();
    assert!(
        line.contains("300 guided schedules") && line.contains("abstract lock states reached"),
        "{line}"
    );
    let both = nxlock(&["explore", "--guided", "--exhaustive", "1", "--quiet"]);
    assert_eq!(both.status.code(), Some(2), "{}", text(&both));
    assert!(text(&both).contains("--exhaustive"), "{}", text(&both));
}
