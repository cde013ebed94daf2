//! `nxlock explore`: the explorer on nxlock's own algorithms.

mod exec;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use nxlock::explore::{Algorithm, FaultKind, Fencing, Report, ShardReport, Topology};

#[derive(Debug, Args)]
pub struct ExploreArgs {
    /// The algorithm: token, fenced, fair, reentrant, legacy, scripted, redlock,
    /// optimistic or unprotected.
    #[arg(long, default_value = "token")]
    algorithm: Algorithm,
    /// What the clients talk to: single, replicated (1 primary + 2 replicas), redlock
    /// (3 nodes, see --nodes) or cluster (3 shards of a primary and a replica, see
    /// --nodes).
    #[arg(long, default_value = "single")]
    topology: Topology,
    /// Redlock nodes (--topology redlock), replicas (--topology replicated) or shards
    /// (--topology cluster).
    #[arg(long)]
    nodes: Option<usize>,
    /// The lock waits for this many replicas to acknowledge every acquire and extend
    /// (WAIT, within a tenth of the TTL): token, fenced and reentrant locks.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    wait_replicas: Option<u32>,
    /// Comma-separated faults in play: pause, client-clock, lost-reply, refuse,
    /// latency, interrupt, kill-connection, failover, restart, blackhole, migrate,
    /// cancel; and the inherent ones, which break every TTL lock and are opt-in:
    /// section-pause, node-clock, drift, restart-empty. Default: every non-inherent
    /// fault the topology supports.
    #[arg(long, value_delimiter = ',')]
    faults: Option<Vec<FaultKind>>,
    /// No pause is drawn longer than this many milliseconds.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_pause_ms: Option<u64>,
    /// No latency or late reply is drawn longer than this many milliseconds.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_latency_ms: Option<u64>,
    /// Run shard K of N of the budget (K from 0): N machines with the same seed and
    /// budget explore it together; --merge combines their --json reports.
    #[arg(long, value_parser = parse_shard)]
    shard: Option<(u64, u64)>,
    /// Merge these shard reports (written by --shard K/N --json) and print the result.
    #[arg(long, num_args = 1.., conflicts_with_all = ["replay", "shard", "runs", "time"])]
    merge: Option<Vec<PathBuf>>,
    /// Clients running the algorithm at once.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=64))]
    clients: u64,
    /// Cycles (acquire, critical section, release) per client.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    cycles: u32,
    /// The lock TTL in milliseconds: the unit of pause lengths and the liveness bound.
    /// Default 1000; 200 with --exec, whose clients sleep in real time.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    ttl_ms: Option<u64>,
    /// Explore lock code in any language: run this shell command once per client
    /// against a fresh nxlock serve, each told NXLOCK_CLIENT, REDIS_URL (NXLOCK_NODES
    /// on Redlock and a cluster), NXLOCK_CYCLES, NXLOCK_TTL_MS and NXLOCK_REPLICAS (see
    /// docs/EXPLORE.md, "Lock code in any language"). Every topology is served.
    #[arg(long, conflicts_with_all = ["merge", "shard", "algorithm", "wait_replicas"])]
    exec: Option<String>,
    /// With --exec: start each client's process once and let it serve run after run,
    /// told on stdin where each run is (NXLOCK_LONG_LIVED=1; see docs/EXPLORE.md).
    #[arg(long, requires = "exec")]
    long_lived: bool,
    /// With --exec: how many times a finding is replayed (it is reported with how many
    /// of them reproduced it).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    replays: u32,
    /// At most this many fault steps per schedule.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(0..=64))]
    max_steps: u64,
    /// How the fenced resource judges fences (fenced): strict, lenient or none.
    #[arg(long, default_value = "strict")]
    fencing: FencingArg,
    /// Stop after this many runs (default 10,000 when --time is not given).
    #[arg(long)]
    runs: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long)]
    time: Option<f64>,
    /// The seed: the same seed (and budget in runs) finds the same counterexample.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Worker threads (default: every core). With --exec: runs at once (default: one per
    /// core, two with --long-lived).
    #[arg(long)]
    threads: Option<usize>,
    /// Print the result as JSON (the counterexample's fault steps under "steps").
    #[arg(long)]
    json: bool,
    /// Write the counterexample's timeline to this HTML file.
    #[arg(long)]
    html: Option<PathBuf>,
    /// Save the counterexample's replay file here (see nxlock::explore::replay).
    #[arg(long)]
    save: Option<PathBuf>,
    /// Replay this file instead of searching; exits 1 if its violation happens again.
    #[arg(long, conflicts_with_all = ["runs", "time", "seed"])]
    replay: Option<PathBuf>,
    /// Run the whole budget instead of stopping at the first violation, and count the
    /// runs that break each property (the first is still shrunk and printed).
    #[arg(long)]
    keep_going: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// `--topology`, sized by `--nodes`.
fn topology(args: &ExploreArgs) -> Topology {
    match (args.topology, args.nodes) {
        (Topology::Redlock { .. }, Some(nodes)) => Topology::Redlock { nodes },
        (Topology::Replicated { .. }, Some(replicas)) => Topology::Replicated { replicas },
        (Topology::Cluster { .. }, Some(shards)) => Topology::Cluster { shards },
        (topology, _) => topology,
    }
}

fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let parsed = text
        .split_once('/')
        .and_then(|(k, n)| Some((k.parse().ok()?, n.parse().ok()?)));
    match parsed {
        Some((k, n)) if k < n => Ok((k, n)),
        _ => Err(format!("{text:?} is not a shard K/N with 0 <= K < N")),
    }
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum FencingArg {
    Strict,
    Lenient,
    None,
}

pub fn run(args: ExploreArgs) -> ExitCode {
    if let Some(command) = &args.exec {
        return exec::run(command, &args);
    }
    if let Some(path) = &args.replay {
        return replay(path, args.json);
    }
    if let Some(paths) = &args.merge {
        return merge(paths, args.json);
    }
    let topology = topology(&args);
    let faults = args
        .faults
        .clone()
        .unwrap_or_else(|| FaultKind::defaults(&topology));
    let mut explorer = args
        .algorithm
        .explorer_waiting(
            topology,
            Duration::from_millis(args.ttl_ms.unwrap_or(1_000)),
            args.wait_replicas,
        )
        .clients(args.clients as usize)
        .cycles(args.cycles)
        .max_steps(args.max_steps as usize)
        .faults(&faults)
        .fencing(match args.fencing {
            FencingArg::Strict => Fencing::Strict,
            FencingArg::Lenient => Fencing::Lenient,
            FencingArg::None => Fencing::None,
        })
        .seed(args.seed)
        .keep_going(args.keep_going);
    if let Some(time) = args.time {
        if !(time.is_finite() && time > 0.0) {
            eprintln!("nxlock explore: --time must be a positive number of seconds");
            return ExitCode::from(2);
        }
        explorer = explorer.time(Duration::from_secs_f64(time));
    }
    if let Some(runs) = args.runs {
        explorer = explorer.runs(runs);
    }
    if let Some(threads) = args.threads {
        explorer = explorer.threads(threads);
    }
    if let Some(ms) = args.max_pause_ms {
        explorer = explorer.max_pause(Duration::from_millis(ms));
    }
    if let Some(ms) = args.max_latency_ms {
        explorer = explorer.max_latency(Duration::from_millis(ms));
    }
    if let Some((k, n)) = args.shard {
        explorer = explorer.shard(k, n);
    }
    let bar = progress(args.runs, args.quiet || args.json);
    if let Some(bar) = &bar {
        let bar = bar.clone();
        explorer = explorer.on_progress(move |runs| bar.set_position(runs));
    }
    let report = explorer.explore();
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let report = match report {
        Ok(report) => report,
        Err(error) => {
            eprintln!("nxlock explore: {error}");
            return ExitCode::from(2);
        }
    };
    finish(&args, &report)
}

fn progress(runs: Option<u64>, quiet: bool) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(runs.unwrap_or(0));
    let template = if runs.is_some() {
        "{spinner} exploring {bar:40} {pos}/{len} runs {elapsed}"
    } else {
        "{spinner} exploring {pos} runs {elapsed}"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(100));
    Some(bar)
}

fn finish(args: &ExploreArgs, report: &Report) -> ExitCode {
    let rate = report.runs_per_second();
    let counts = |map: &std::collections::BTreeMap<nxlock::explore::ViolationKind, u64>| {
        map.iter()
            .map(|(kind, n)| (kind.name().to_owned(), serde_json::Value::from(*n)))
            .collect::<serde_json::Map<String, serde_json::Value>>()
    };
    // Runs the reference algorithm once: only where the verdict is shown.
    let blame = || {
        report
            .counterexample
            .as_ref()
            .map(|found| args.algorithm.blame(found))
    };
    if let Some(found) = report
        .counterexample
        .as_ref()
        .or(report.inherent_finding.as_ref())
    {
        if let Some(path) = &args.html
            && let Err(error) = std::fs::write(path, found.timeline_html())
        {
            eprintln!("nxlock explore: {}: {error}", path.display());
            return ExitCode::from(2);
        }
        if let Some(path) = &args.save
            && let Err(error) = found.save(path)
        {
            eprintln!("nxlock explore: {error}");
            return ExitCode::from(2);
        }
    }
    if args.json && args.shard.is_some() {
        let shard = ShardReport::of(report);
        say!(
            "{}",
            serde_json::to_string_pretty(&shard).unwrap_or_default()
        );
    } else if args.json {
        let mut json = match &report.counterexample {
            Some(found) => {
                let mut json: serde_json::Value =
                    serde_json::from_str(&found.to_json()).unwrap_or(serde_json::Value::Null);
                json["found_by_run"] = found.run.into();
                json["shrink_runs"] = found.shrink_runs.into();
                json["identical_replays"] = found.identical_replays.into();
                json["blame"] = blame().as_ref().map(ToString::to_string).into();
                json
            }
            None => serde_json::json!({ "algorithm": args.algorithm.name(), "violation": null }),
        };
        json["seed"] = report.seed.into();
        json["runs"] = report.runs.into();
        json["seconds"] = report.elapsed.as_secs_f64().into();
        json["runs_per_second"] = rate.into();
        json["violations"] = counts(&report.violations).into();
        json["inherent"] = counts(&report.inherent).into();
        json["inherent_finding"] = report
            .inherent_finding
            .as_ref()
            .map(|f| serde_json::json!({ "violation": f.violation.kind.name(), "detail": f.violation.detail, "reason": f.violation.inherent }))
            .into();
        say!("{json:#}");
    } else {
        if args.keep_going {
            let listed: Vec<String> = report
                .violations
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            say!(
                "runs with a violation of the lock's own: {}",
                if listed.is_empty() {
                    "none".to_owned()
                } else {
                    listed.join(", ")
                }
            );
        }
        say!("{report}");
        if let Some(blame) = blame() {
            say!("blame: {blame}");
        }
    }
    if report.counterexample.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `--merge`: shard reports combined into the one a single machine would have made.
fn merge(paths: &[PathBuf], json: bool) -> ExitCode {
    let mut shards = Vec::new();
    for path in paths {
        let parsed = std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str::<ShardReport>(&text).map_err(|e| e.to_string()));
        match parsed {
            Ok(shard) => shards.push(shard),
            Err(error) => {
                eprintln!("nxlock explore: {}: {error}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    let merged = match ShardReport::merge(&shards) {
        Ok(merged) => merged,
        Err(error) => {
            eprintln!("nxlock explore: {error}");
            return ExitCode::from(2);
        }
    };
    if json {
        say!(
            "{}",
            serde_json::to_string_pretty(&merged).unwrap_or_default()
        );
    } else {
        if let Some(text) = &merged.text {
            say!("{text}");
        }
        let rate = merged.runs as f64 / merged.seconds.max(1e-9);
        match merged.found_by_run {
            Some(run) => say!(
                "first violation at run {run} of seed {}; {} runs over {} shards ({rate:.0} runs/s per shard-second)",
                merged.seed,
                merged.runs,
                merged.shards
            ),
            None => say!(
                "no violation in {} runs over {} shards, seed {} ({rate:.0} runs/s per shard-second)",
                merged.runs,
                merged.shards,
                merged.seed
            ),
        }
    }
    if merged.found_by_run.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn replay(path: &std::path::Path, json: bool) -> ExitCode {
    match nxlock::explore::replay(path) {
        Ok(replayed) => {
            let reproduced = replayed.reproduced();
            if json {
                let found = replayed.violation.as_ref();
                let unplaced: Vec<String> =
                    replayed.unplaced.iter().map(ToString::to_string).collect();
                let value = serde_json::json!({
                    "expected": replayed.expected.name(),
                    "violation": found.map(|v| v.kind.name()),
                    "detail": found.map(|v| v.detail.clone()),
                    "reproduced": reproduced,
                    "unplaced": unplaced,
                });
                say!("{value:#}");
            } else {
                match &replayed.violation {
                    Some(violation) => say!("{violation}"),
                    None => say!(
                        "no violation: the recorded {} did not happen",
                        replayed.expected
                    ),
                }
                for step in &replayed.unplaced {
                    say!("could not place: {step} (the operation it is anchored to never came)");
                }
            }
            if reproduced {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(error) => {
            eprintln!("nxlock explore: {error}");
            ExitCode::from(2)
        }
    }
}
