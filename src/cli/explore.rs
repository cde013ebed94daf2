//! `nxlock explore`: the explorer on nxlock's own algorithms, or (`--exec`) on lock code
//! in any language run as processes. One explorer makes both searches; only the runner
//! differs.

mod exec;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use nxlock::explore::{
    Algorithm, Blame, Confirmation, EXIT_FOUND, EXIT_NOTHING_CHECKED, Explorer, FaultKind, Fencing,
    ReplayFile, Report, ShardReport, Topology,
};

#[derive(Debug, Args)]
pub struct ExploreArgs {
    /// The algorithm: token, fenced, fair, reentrant, legacy, scripted, redlock; or, on a
    /// counter: optimistic (versioned compare-and-set), watch (WATCH … EXEC), locked
    /// (inside the fair lock) or unprotected (GET then SET).
    #[arg(long, default_value = "token")]
    algorithm: Algorithm,
    /// What the clients talk to: single, replicated (1 primary + 2 replicas), redlock
    /// (3 nodes, see --nodes) or cluster (3 shards of a primary and a replica, see
    /// --nodes).
    #[arg(long, default_value = "single")]
    topology: Topology,
    /// Redlock nodes (--topology redlock), replicas (--topology replicated) or shards
    /// (--topology cluster): 1 to 16.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=16))]
    nodes: Option<u64>,
    /// The lock waits for this many replicas to acknowledge every acquire and extend
    /// (WAIT, within a tenth of the TTL): token, fenced and reentrant locks; 1 to 64.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    wait_replicas: Option<u32>,
    /// Comma-separated faults in play: pause, client-clock, lost-reply, refuse,
    /// latency, interrupt, kill-connection, failover, restart, blackhole, migrate,
    /// cancel; and the inherent ones, which break every TTL lock and are opt-in:
    /// section-pause, node-clock, drift, restart-empty. Default: every non-inherent
    /// fault the topology supports.
    #[arg(long, value_delimiter = ',')]
    faults: Option<Vec<FaultKind>>,
    /// No pause is drawn longer than this many milliseconds: 1 to 3,600,000 (an hour).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    max_pause_ms: Option<u64>,
    /// No latency or late reply is drawn longer than this many milliseconds: 1 to
    /// 3,600,000 (an hour).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    max_latency_ms: Option<u64>,
    /// Run shard K of N of the budget (0 <= K < N): N machines with the same seed and
    /// budget explore it together; --merge combines their --json reports. Also read
    /// from NXLOCK_SHARD; given as N alone, K is a Kubernetes Indexed Job's
    /// JOB_COMPLETION_INDEX.
    #[arg(long, env = "NXLOCK_SHARD", value_parser = parse_shard)]
    shard: Option<(u64, u64)>,
    /// Run every schedule of at most D steps (1 to 4) instead of random ones, and say
    /// what that covered: each client's operations as anchors, the faults in play, three
    /// length classes (see docs/EXPLORE.md, "Exhaustive search"). Without --runs or
    /// --time the whole space is searched.
    #[arg(long, value_name = "D", value_parser = clap::value_parser!(u64).range(1..=4))]
    exhaustive: Option<u64>,
    /// Steer the random search by coverage feedback: schedules that reach a new abstract
    /// lock state are kept and mutated, and the report says how many states were
    /// reached and whether they stopped growing (see docs/EXPLORE.md, "Coverage
    /// feedback").
    #[arg(long, conflicts_with = "exhaustive")]
    guided: bool,
    /// Merge these shard reports (written by --shard K/N --json) and print the result.
    #[arg(long, num_args = 1.., conflicts_with_all = ["replay", "shard", "runs", "time", "exec"])]
    merge: Option<Vec<PathBuf>>,
    /// Clients running the algorithm at once: 1 to 64.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=64))]
    clients: u64,
    /// Cycles (acquire, critical section, release) per client: 1 to 10,000.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    cycles: u32,
    /// The lock TTL in milliseconds, 1 to 3,600,000: the unit of pause lengths and the
    /// liveness bound. Default 1000; 200 with --exec, whose clients sleep in real time.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    ttl_ms: Option<u64>,
    /// Explore lock code in any language: run this shell command once per client
    /// against a fresh nxlock serve, each told NXLOCK_CLIENT, REDIS_URL (NXLOCK_NODES
    /// on Redlock and a cluster), NXLOCK_CYCLES, NXLOCK_TTL_MS and NXLOCK_REPLICAS (see
    /// docs/EXPLORE.md, "Lock code in any language"). Every topology is served.
    #[arg(long, conflicts_with_all = ["merge", "algorithm", "wait_replicas"])]
    exec: Option<String>,
    /// With --exec (or a replay of a file saved from it): start each client's process
    /// once and let it serve run after run, told on stdin where each run is
    /// (NXLOCK_LONG_LIVED=1; see docs/EXPLORE.md).
    #[arg(long)]
    long_lived: bool,
    /// With --exec: how many times a finding is replayed to confirm it, and its shrunk
    /// schedule to say how often it reproduces: 1 to 1,000.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    replays: u32,
    /// With --exec: how many of the --replays must reproduce a finding for it to count
    /// as the lock's own (1 to --replays; default 5 of 10, or half the replays); fewer, and it is listed
    /// as unconfirmed, never failing the search.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    confirm: Option<u32>,
    /// Keys starting with this prefix may outlive a run without a TTL (a fence counter,
    /// data kept by design); repeatable. Lock code can say it too (NXLOCK.PERMANENT).
    #[arg(long = "permanent-keys", value_name = "PREFIX")]
    permanent_keys: Vec<String>,
    /// A counter kept in a Redis key, as COUNTER=KEY: the checker reads the key at the
    /// end; repeatable. Lock code can say it too (NXLOCK.COUNTER).
    #[arg(long = "counter-key", value_name = "COUNTER=KEY", value_parser = parse_counter_key)]
    counter_keys: Vec<(String, String)>,
    /// Let connection set-up (HELLO, AUTH, CLIENT …, the ready checks INFO and PING)
    /// anchor faults; by default it does not.
    #[arg(long)]
    anchor_setup: bool,
    /// With --exhaustive 2 or more: let the deeper levels combine every anchor, the
    /// middle passes of a retry loop too (by default only its first and last).
    #[arg(long)]
    every_repeat: bool,
    /// At most this many fault steps per schedule: 1 to 64.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=64))]
    max_steps: u64,
    /// How the fenced resource judges fences (the fenced algorithm; NXLOCK.WRITE with
    /// --exec): strict, lenient or none.
    #[arg(long, default_value = "strict")]
    fencing: FencingArg,
    /// Stop after this many runs, at least 1 (default 10,000 when --time is not given).
    #[arg(long, value_parser = at_least_one_run)]
    runs: Option<u64>,
    /// Stop after this many seconds: more than 0, at most 31,536,000 (a year).
    #[arg(long)]
    time: Option<f64>,
    /// The seed, any 64-bit number: the same seed (and budget in runs) finds the same
    /// counterexample.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Worker threads, 1 to 1,024 (default: every core). With --exec: runs at once
    /// (default: one per core, two with --long-lived).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    threads: Option<u64>,
    /// Print the result as JSON (the counterexample's fault steps under "steps").
    #[arg(long)]
    json: bool,
    /// Also write a JUnit XML report to FILE: a test case per finding (a violation of the lock's own fails it), or one for a clean search. In GitHub Actions
    /// (GITHUB_ACTIONS=true), each failure is also an `::error` annotation.
    #[arg(long, value_name = "FILE")]
    junit: Option<std::path::PathBuf>,
    /// Write the counterexample's timeline to this HTML file.
    #[arg(long)]
    html: Option<PathBuf>,
    /// Save the counterexample's replay file here (see nxlock::explore::replay).
    #[arg(long)]
    save: Option<PathBuf>,
    /// Replay this file instead of searching; exits 1 if its violation happens again.
    /// A file saved from --exec replays its command, or the one --exec gives.
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
    // At most 16 (clap checked it), so the conversion cannot fail.
    let nodes = args.nodes.and_then(|n| usize::try_from(n).ok());
    match (args.topology, nodes) {
        (Topology::Redlock { .. }, Some(nodes)) => Topology::Redlock { nodes },
        (Topology::Replicated { .. }, Some(replicas)) => Topology::Replicated { replicas },
        (Topology::Cluster { .. }, Some(shards)) => Topology::Cluster { shards },
        (topology, _) => topology,
    }
}

fn parse_counter_key(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((counter, key)) if !counter.is_empty() && !key.is_empty() => {
            Ok((counter.to_owned(), key.to_owned()))
        }
        _ => Err(format!("{text:?} is not COUNTER=KEY")),
    }
}

/// `--runs N`: a search makes at least 1 run.
fn at_least_one_run(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("a search makes at least 1 run".into()),
        Ok(runs) => Ok(runs),
        Err(_) => Err(format!("{text:?} is not a number of runs")),
    }
}

fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    shard_of(text, std::env::var("JOB_COMPLETION_INDEX").ok().as_deref())
}

/// `K/N`, or `N` alone with K from `index` (JOB_COMPLETION_INDEX).
fn shard_of(text: &str, index: Option<&str>) -> Result<(u64, u64), String> {
    let parsed = match text.split_once('/') {
        Some((k, n)) => k.parse().ok().zip(n.parse().ok()),
        None => {
            let n: u64 = text
                .parse()
                .map_err(|_| format!("{text:?} is not a shard K/N with 0 <= K < N"))?;
            let Some(k) = index else {
                return Err(format!(
                    "--shard {n} takes K from JOB_COMPLETION_INDEX, which is not set; give K/N"
                ));
            };
            let k = k
                .parse()
                .map_err(|_| format!("JOB_COMPLETION_INDEX={k:?} is not a shard index"))?;
            Some((k, n))
        }
    };
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
    if let Some(paths) = &args.merge {
        return merge(paths, args.json);
    }
    if let Some(path) = &args.replay {
        return replay(&args, path);
    }
    let explorer = match &args.exec {
        Some(command) => exec::explorer(command, &args),
        None => algorithm_explorer(&args),
    };
    let explorer = match configured(explorer, &args) {
        Ok(explorer) => explorer,
        Err(code) => return code,
    };
    let bar = progress(args.runs, args.quiet || args.json);
    let explorer = match &bar {
        Some(bar) => {
            let bar = bar.clone();
            explorer.on_progress(move |runs| bar.set_position(runs))
        }
        None => explorer,
    };
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

/// The explorer of `--algorithm` on the double.
fn algorithm_explorer(args: &ExploreArgs) -> Explorer {
    Explorer::builtin_waiting(
        args.algorithm,
        topology(args),
        Duration::from_millis(args.ttl_ms.unwrap_or(1_000)),
        args.wait_replicas,
    )
}

/// What every search takes from the command line, whichever runner makes its runs.
fn configured(mut explorer: Explorer, args: &ExploreArgs) -> Result<Explorer, ExitCode> {
    explorer = explorer
        .topology(topology(args))
        .clients(args.clients as usize)
        .cycles(args.cycles)
        .max_steps(args.max_steps as usize)
        .seed(args.seed)
        .keep_going(args.keep_going)
        .anchor_setup(args.anchor_setup)
        .every_repeat(args.every_repeat)
        .fencing(match args.fencing {
            FencingArg::Strict => Fencing::Strict,
            FencingArg::Lenient => Fencing::Lenient,
            FencingArg::None => Fencing::None,
        });
    if let Some(faults) = &args.faults {
        explorer = explorer.faults(faults);
    }
    if let Some(ms) = args.ttl_ms {
        explorer = explorer.ttl(Duration::from_millis(ms));
    }
    for prefix in &args.permanent_keys {
        explorer = explorer.permanent_keys(prefix.clone());
    }
    for (counter, key) in &args.counter_keys {
        explorer = explorer.counter_in_key(counter.clone(), key.clone());
    }
    let needed = args.confirm.unwrap_or(args.replays.div_ceil(2));
    if needed > args.replays {
        eprintln!(
            "nxlock explore: --confirm {needed} asks for more reproductions than the {} --replays make",
            args.replays
        );
        return Err(ExitCode::from(2));
    }
    explorer = explorer.confirm(Confirmation {
        replays: args.replays,
        needed,
    });
    if let Some(time) = args.time {
        if !(time > 0.0 && time <= 31_536_000.0) {
            eprintln!("nxlock explore: --time must be more than 0 and at most 31,536,000 seconds");
            return Err(ExitCode::from(2));
        }
        explorer = explorer.time(Duration::from_secs_f64(time));
    }
    if let Some(runs) = args.runs {
        explorer = explorer.runs(runs);
    }
    if let Some(threads) = args.threads.and_then(|n| usize::try_from(n).ok()) {
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
    if let Some(depth) = args.exhaustive.and_then(|d| usize::try_from(d).ok()) {
        explorer = explorer.exhaustive(depth);
    }
    if args.guided {
        explorer = explorer.guided(true);
    }
    Ok(explorer)
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
    // Runs the reference algorithm once: only where the verdict is shown.
    let blame = || {
        let found = report.counterexample.as_ref()?;
        found.workload.as_ref()?;
        Some(Blame::of(args.algorithm, found))
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
        let mut json = report.to_json();
        if args.exec.is_none() {
            json["algorithm"] = args.algorithm.name().into();
            json["blame"] = blame().as_ref().map(ToString::to_string).into();
        }
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
        let found = report
            .counterexample
            .as_ref()
            .or(report.inherent_finding.as_ref());
        if let (Some(path), Some(_)) = (&args.html, found) {
            say!("timeline written to {}", path.display());
        }
        if let (Some(path), Some(_)) = (&args.save, found) {
            say!("saved to {}", path.display());
        }
    }
    let subject = match &args.exec {
        Some(command) => format!("--exec {command}"),
        None => format!("--algorithm {}", args.algorithm),
    };
    let suite = super::junit::of_explore(report, &subject);
    suite.annotate();
    if let Some(path) = &args.junit
        && let Err(error) = suite.write(path)
    {
        eprintln!("nxlock explore: {}: {error}", path.display());
        return ExitCode::from(2);
    }
    ExitCode::from(report.exit_code())
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
        if let Some(line) = merged.guarantee() {
            say!("{line}");
        }
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

/// `--replay FILE`: the file's schedule again, on the code it names (a built-in
/// algorithm, the command it was found with) or on `--exec`'s. Exits 1 when the
/// recorded violation happens again.
fn replay(args: &ExploreArgs, path: &std::path::Path) -> ExitCode {
    let file = match ReplayFile::load(path) {
        Ok(file) => file,
        Err(error) => {
            eprintln!("nxlock explore: {error}");
            return ExitCode::from(2);
        }
    };
    let replayed = match (&args.exec, &file.command) {
        (Some(command), _) | (None, Some(command)) => {
            match configured(exec::explorer(command, args), args) {
                Ok(explorer) => explorer.replay_file(&file),
                Err(code) => return code,
            }
        }
        (None, None) => nxlock::explore::replay(path),
    };
    let replayed = match replayed {
        Ok(replayed) => replayed,
        Err(error) => {
            eprintln!("nxlock explore: {error}");
            return ExitCode::from(2);
        }
    };
    let reproduced = replayed.reproduced();
    if args.json {
        let found = replayed.violation.as_ref();
        let unplaced: Vec<String> = replayed.unplaced.iter().map(ToString::to_string).collect();
        let value = serde_json::json!({
            "expected": replayed.expected.name(),
            "violation": found.map(|v| v.kind.name()),
            "detail": found.map(|v| v.detail.clone()),
            "reproduced": reproduced,
            "reproductions": replayed.reproduced,
            "replays": replayed.replays,
            "unplaced": unplaced,
            "nothing_checked": (!replayed.unchecked.is_empty() && !reproduced)
                .then_some(&replayed.unchecked),
        });
        say!("{value:#}");
    } else if !reproduced && !replayed.unchecked.is_empty() {
        let who: Vec<String> = replayed.unchecked.iter().map(ToString::to_string).collect();
        say!("found before: {}: {}", file.violation, file.detail);
        say!(
            "NOTHING WAS CHECKED: client {} sent no checking marker in the replay, so it proves nothing",
            who.join(", ")
        );
    } else {
        say!("found before: {}: {}", file.violation, file.detail);
        match (&replayed.violation, reproduced) {
            (Some(violation), true) => {
                say!("VIOLATION {violation}");
                say!(
                    "reproduced in {} of {} replays",
                    replayed.reproduced,
                    replayed.replays
                );
            }
            _ => say!(
                "no violation: the recorded {} did not happen in {} replays",
                replayed.expected,
                replayed.replays
            ),
        }
        for step in &replayed.unplaced {
            say!("could not place: {step} (the operation it is anchored to never came)");
        }
    }
    if reproduced {
        ExitCode::from(EXIT_FOUND)
    } else if !replayed.unchecked.is_empty() {
        ExitCode::from(EXIT_NOTHING_CHECKED)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::shard_of;

    #[test]
    fn a_shard_is_k_of_n_or_n_with_the_job_completion_index() {
        assert_eq!(shard_of("1/4", None), Ok((1, 4)));
        assert_eq!(shard_of("4", Some("3")), Ok((3, 4)));
        assert!(
            shard_of("4", None)
                .unwrap_err()
                .contains("JOB_COMPLETION_INDEX")
        );
        assert!(shard_of("4", Some("4")).is_err());
        assert!(shard_of("4", Some("x")).is_err());
        assert!(shard_of("2/2", None).is_err());
    }
}
