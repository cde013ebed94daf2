//! `nxlock explore`: the explorer on nxlock's own algorithms.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use nxlock::explore::{Algorithm, FaultKind, Fencing, Report, Topology};

/// `println!` that stops quietly when stdout is closed (`nxlock explore | head`).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

#[derive(Debug, Args)]
pub struct ExploreArgs {
    /// The algorithm: token, fenced, fair, reentrant, legacy, scripted, redlock or
    /// optimistic.
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
    /// Comma-separated faults in play: pause, skew, lost-reply, refuse, latency,
    /// interrupt, kill-connection, failover, restart, blackhole, migrate, cancel.
    /// Default: every one the topology supports.
    #[arg(long, value_delimiter = ',')]
    faults: Option<Vec<FaultKind>>,
    /// Clients running the algorithm at once.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=64))]
    clients: u64,
    /// Cycles (acquire, critical section, release) per client.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    cycles: u32,
    /// The lock TTL in milliseconds: the unit of pause lengths and the liveness bound.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    ttl_ms: u64,
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
    /// Worker threads (default: every core).
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

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum FencingArg {
    Strict,
    Lenient,
    None,
}

pub fn run(args: ExploreArgs) -> ExitCode {
    if let Some(path) = &args.replay {
        return replay(path, args.json);
    }
    let topology = match (args.topology, args.nodes) {
        (Topology::Redlock { .. }, Some(nodes)) => Topology::Redlock { nodes },
        (Topology::Replicated { .. }, Some(replicas)) => Topology::Replicated { replicas },
        (Topology::Cluster { .. }, Some(shards)) => Topology::Cluster { shards },
        (topology, _) => topology,
    };
    let faults = args.faults.clone().unwrap_or_else(|| {
        FaultKind::ALL
            .into_iter()
            .filter(|k| topology.supports(*k))
            .collect()
    });
    let mut explorer = args
        .algorithm
        .explorer_waiting(
            topology,
            Duration::from_millis(args.ttl_ms),
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
    let rate = report.runs as f64 / report.elapsed.as_secs_f64().max(1e-9);
    let counts: serde_json::Map<String, serde_json::Value> = report
        .violations
        .iter()
        .map(|(kind, n)| (kind.name().to_owned(), (*n).into()))
        .collect();
    if args.keep_going && !args.json {
        let listed: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
        say!(
            "{} runs in {:.1} s ({rate:.0} runs/s); runs with a violation: {}",
            report.runs,
            report.elapsed.as_secs_f64(),
            if listed.is_empty() {
                "none".to_owned()
            } else {
                listed.join(", ")
            }
        );
    }
    let Some(found) = &report.counterexample else {
        if args.json {
            let json = serde_json::json!({
                "algorithm": args.algorithm.name(),
                "seed": report.seed,
                "runs": report.runs,
                "seconds": report.elapsed.as_secs_f64(),
                "runs_per_second": rate,
                "violations": counts,
                "violation": null,
            });
            say!("{json:#}");
        } else {
            say!(
                "no violation in {} runs ({:.1} s, {rate:.0} runs/s), seed {}",
                report.runs,
                report.elapsed.as_secs_f64(),
                report.seed
            );
        }
        return ExitCode::SUCCESS;
    };
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
    if args.json {
        let mut json: serde_json::Value =
            serde_json::from_str(&found.to_json()).unwrap_or(serde_json::Value::Null);
        json["seed"] = report.seed.into();
        json["runs"] = report.runs.into();
        json["seconds"] = report.elapsed.as_secs_f64().into();
        json["runs_per_second"] = rate.into();
        json["violations"] = counts.into();
        json["found_by_run"] = found.run.into();
        json["shrink_runs"] = found.shrink_runs.into();
        json["identical_replays"] = found.identical_replays.into();
        say!("{json:#}");
    } else {
        say!("{found}");
        say!(
            "{} runs ({:.1} s, {rate:.0} runs/s) before the violation; seed {}",
            report.runs,
            report.elapsed.as_secs_f64(),
            report.seed
        );
    }
    ExitCode::from(1)
}

fn replay(path: &std::path::Path, json: bool) -> ExitCode {
    match nxlock::explore::replay(path) {
        Ok(replayed) => {
            let reproduced = replayed.reproduced();
            if json {
                let found = replayed.violation.as_ref();
                let value = serde_json::json!({
                    "expected": replayed.expected.name(),
                    "violation": found.map(|v| v.kind.name()),
                    "detail": found.map(|v| v.detail.clone()),
                    "reproduced": reproduced,
                });
                say!("{value:#}");
            } else if let Some(violation) = &replayed.violation {
                say!("{violation}");
            } else {
                say!(
                    "no violation: the recorded {} did not happen",
                    replayed.expected
                );
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
