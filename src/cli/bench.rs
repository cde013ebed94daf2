//! `nxlock bench`: a contention benchmark on the embedded double or any Redis server.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use nxlock::backend::DynBackend;
use nxlock::bench::{
    Algorithm, BenchReport, ComparedReport, RedlockReport, Reference, Waiting, Workload,
    compare_on_server, run, run_redlock_memory, run_redlock_spawned,
};
use nxlock::cluster::{ClusterBackend, SlotLayout};
use nxlock::testing::{CpuPlacement, RedisCluster};
use nxlock::{MemoryBackend, RedisBackend, TopologyKind};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum WaitArg {
    Poll,
    Notify,
    Fair,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum CompareArg {
    /// The token cycle hand-written on redis-rs (single topology, with --url).
    Floor,
    /// rslock's LockManager on the same server (with --url) or instances (redlock
    /// topology, with --spawn).
    Rslock,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum RuntimeArg {
    Current,
    Multi,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Benchmark this server (any Redis-protocol server) instead of the embedded double.
    #[arg(long, value_name = "redis://HOST:PORT", conflicts_with = "cluster")]
    url: Option<String>,
    /// Benchmark the existing Redis Cluster these nodes belong to (comma separated),
    /// through ClusterBackend (--topology cluster).
    #[arg(long, value_name = "redis://HOST:PORT,...", value_delimiter = ',')]
    cluster: Vec<String>,
    /// The lock algorithm: token, legacy or scripted; or, on counters incremented with
    /// --hold-us between read and write: optimistic (versioned compare-and-set), watch
    /// (WATCH … EXEC) or locked (the fair lock around the same read and write).
    #[arg(long, default_value = "token", value_parser = benched_algorithm)]
    algorithm: Algorithm,
    /// How blocked clients wait: poll (backoff and retry), notify (wake on release) or
    /// fair (FIFO ticket line with direct hand-off). Default: fair for token, else poll.
    #[arg(long, value_enum)]
    wait: Option<WaitArg>,
    /// Concurrent clients: 1 to 100,000.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    clients: u32,
    /// Keys, 1 to 100,000; client i uses key i % keys.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    keys: u32,
    /// Microseconds each client holds the lock per cycle: 0 (release at once) to
    /// 3,600,000,000 (an hour).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=3_600_000_000))]
    hold_us: u64,
    /// Lock TTL in milliseconds: 1 to 4,503,599,627,370,496 (2^52, the longest TTL a
    /// lock accepts).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1 << 52))]
    ttl_ms: u64,
    /// Seconds to run: more than 0, at most 86,400 (a day).
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Tokio runtime flavour.
    #[arg(long, value_enum, default_value = "current")]
    runtime: RuntimeArg,
    /// Print one JSON object and nothing else.
    #[arg(long)]
    json: bool,
    /// `single` (one server or the double); `redlock`: nxlock's Redlock over
    /// --instances independent instances, healthy, with one refusing and with one
    /// black-holed; `cluster`: a Redis Cluster of 3 primaries (the double with cluster
    /// rules, --spawn, or --cluster URL,...), client i on key i % --keys, the keys spread
    /// over the slots.
    #[arg(long, default_value = "single", value_parser = benched_topology)]
    topology: TopologyKind,
    /// Instances for --topology redlock: 1 to 99.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=99))]
    instances: u32,
    /// Spawn the instances (--topology redlock) or the cluster (--topology cluster) as
    /// redis-server processes.
    #[arg(long)]
    spawn: bool,
    /// Also run a reference and print the ratio: `floor` (the token cycle hand-written on
    /// redis-rs; needs --url; the default) or `rslock` (rslock's LockManager, the same
    /// clients and keys, on the --url server or, with --topology redlock --spawn, on the
    /// same instances).
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "floor")]
    compare: Option<CompareArg>,
    /// With --compare: nxlock and the reference take turns this many times, each run a
    /// slice of --duration, so a machine that speeds up or slows down during the
    /// comparison moves both sides alike: 1 to 1,000, default 5.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    rounds: Option<u32>,
    /// The clients on one key share one lock object (clones of it), as the tasks of one
    /// process would, and take turns in process (the fair lock and --topology redlock);
    /// by default each client builds its own, as separate processes would.
    #[arg(long)]
    shared_lock: bool,
    /// With --spawn (Linux): keep this process on the first CPU it may use and the
    /// spawned servers on the others, as if they were separate machines. Otherwise the
    /// scheduler may run a server on the client's CPU, where a server the client wakes
    /// takes the CPU from it, and how often that happens moves each round's figure.
    /// Needs 2 CPUs.
    #[arg(long)]
    pin: bool,
}

fn progress(seconds: f64, quiet: bool) -> Option<ProgressBar> {
    if quiet || !std::io::stdout().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new((seconds * 10.0) as u64);
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} benchmarking {bar:40} {elapsed}/{duration}")
    {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(100));
    Some(bar)
}

/// Why these arguments cannot run together, if they cannot.
/// `--rounds` without the flag.
const DEFAULT_ROUNDS: u32 = 5;

impl BenchArgs {
    /// How many turns a comparison takes.
    fn rounds(&self) -> usize {
        usize::try_from(self.rounds.unwrap_or(DEFAULT_ROUNDS)).unwrap_or(1)
    }
}

fn usage_error(args: &BenchArgs) -> Option<&'static str> {
    if !(args.duration.is_finite() && args.duration > 0.0 && args.duration <= 86_400.0) {
        return Some("--duration must be more than 0 and at most 86400 seconds");
    }
    if args.pin && !args.spawn {
        return Some("--pin is for --spawn (it places the spawned servers)");
    }
    if !args.cluster.is_empty() && args.topology != TopologyKind::Cluster {
        return Some("--cluster is for --topology cluster");
    }
    if args.rounds.is_some() && args.compare.is_none() {
        return Some("--rounds is for --compare");
    }
    let fair = matches!(args.algorithm, Algorithm::Token)
        && matches!(args.wait, None | Some(WaitArg::Fair));
    if args.shared_lock && args.topology != TopologyKind::Redlock && !fair {
        return Some("--shared-lock is for the fair lock and --topology redlock");
    }
    match args.topology {
        TopologyKind::Single if args.spawn || args.instances != 5 => {
            Some("--spawn and --instances are for --topology redlock or cluster")
        }
        TopologyKind::Cluster if args.url.is_some() => {
            Some("--topology cluster runs on the double, --spawn or --cluster URL,...")
        }
        TopologyKind::Cluster if args.spawn && !args.cluster.is_empty() => {
            Some("--spawn and --cluster exclude each other")
        }
        TopologyKind::Cluster if args.instances != 5 || args.compare.is_some() => {
            Some("--instances and --compare are not for --topology cluster")
        }
        TopologyKind::Redlock if args.url.is_some() => {
            Some("--topology redlock runs on the double or, with --spawn, on spawned servers")
        }
        TopologyKind::Redlock if args.compare == Some(CompareArg::Floor) => {
            Some("--topology redlock compares with rslock: --compare rslock")
        }
        TopologyKind::Redlock if args.compare.is_some() && !args.spawn => {
            Some("--compare rslock needs --spawn (rslock talks to real servers)")
        }
        TopologyKind::Redlock if args.wait.is_some() => {
            Some("--wait is for --topology single; Redlock polls")
        }
        _ => None,
    }
}

pub fn run_bench(args: BenchArgs) -> ExitCode {
    if let Some(why) = usage_error(&args) {
        eprintln!("nxlock bench: {why}");
        return ExitCode::from(2);
    }
    if args.topology == TopologyKind::Redlock {
        return run_redlock(&args);
    }
    if args.compare.is_some() && args.url.is_none() {
        eprintln!("nxlock bench: --compare needs --url (the reference runs on that server)");
        return ExitCode::from(2);
    }
    if matches!(args.wait, Some(WaitArg::Notify | WaitArg::Fair))
        && !matches!(args.algorithm, Algorithm::Token)
    {
        eprintln!("nxlock bench: --wait notify and --wait fair need --algorithm token");
        return ExitCode::from(2);
    }
    let workload = Workload {
        algorithm: args.algorithm,
        clients: args.clients as usize,
        keys: args.keys as usize,
        hold: Duration::from_micros(args.hold_us),
        ttl: Duration::from_millis(args.ttl_ms),
        duration: Duration::from_secs_f64(args.duration),
        wait: match (args.wait, args.algorithm) {
            (Some(WaitArg::Notify), _) => Waiting::Notify,
            (Some(WaitArg::Fair), _) | (None, Algorithm::Token) => Waiting::Fair,
            (Some(WaitArg::Poll) | None, _) => Waiting::Poll,
        },
        shared_lock: args.shared_lock,
    };
    let (placement, runtime) = match placed_runtime(&args) {
        Ok(placed) => placed,
        Err(code) => return code,
    };
    let bar = progress(
        args.duration * if args.compare.is_some() { 2.0 } else { 1.0 },
        args.json,
    );
    let outcome: Result<Output, String> = runtime.block_on(async {
        let ticker = bar.clone().map(|bar| {
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    bar.inc(1);
                }
            })
        });
        let result = match &args.url {
            None if args.topology == TopologyKind::Cluster => {
                run_cluster(&args, &workload, placement.as_ref())
                    .await
                    .map(Output::Plain)
            }
            None => run(MemoryBackend::new(), "memory", &workload)
                .await
                .map(Output::Plain)
                .map_err(|e| e.to_string()),
            Some(url) => run_on_server(url, &workload, args.compare, args.rounds()).await,
        };
        if let Some(ticker) = ticker {
            ticker.abort();
        }
        result
    });
    finish(bar, outcome, |output| match output {
        Output::Plain(report) if args.json => {
            say!("{}", report.to_json());
            report.violations
        }
        Output::Plain(report) => {
            say!("{report}");
            report.violations
        }
        Output::Compared(compared) => {
            if args.json {
                say!("{}", compared.to_json());
            } else {
                say!("{compared}");
            }
            compared.violations()
        }
    })
}

/// What a single-topology run prints.
#[expect(
    clippy::large_enum_variant,
    reason = "one value per process, moved once"
)]
enum Output {
    Plain(BenchReport),
    Compared(ComparedReport),
}

/// The workload on the server at `url`, taking turns with the reference `compare` names
/// on the same server.
async fn run_on_server(
    url: &str,
    workload: &Workload,
    compare: Option<CompareArg>,
    rounds: usize,
) -> Result<Output, String> {
    let backend = RedisBackend::connect(url)
        .await
        .map_err(|e| format!("cannot connect to {url}: {e}"))?;
    // Behind one type: a boxed future per command costs nanoseconds against a round trip
    // of tens of microseconds, and the binary compiles each workload once for every
    // server (Redis, Cluster) instead of once per client type.
    let backend = DynBackend::new(backend);
    let reference = match compare {
        None => {
            let report = run(backend, url, workload).await;
            return report.map(Output::Plain).map_err(|e| e.to_string());
        }
        Some(CompareArg::Floor) => Reference::Floor,
        Some(CompareArg::Rslock) => Reference::Rslock,
    };
    compare_on_server(backend, url, workload, reference, rounds)
        .await
        .map(Output::Compared)
        .map_err(|e| e.to_string())
}

/// `--topology cluster`: the workload on 3 primaries (the double's rules, spawned
/// redis-servers or an existing cluster).
async fn run_cluster(
    args: &BenchArgs,
    workload: &Workload,
    placement: Option<&CpuPlacement>,
) -> Result<BenchReport, String> {
    let spawned = if args.spawn {
        // No replicas: they would share the machine's cores without changing a command.
        let mut cluster = tokio::task::spawn_blocking(|| RedisCluster::spawn(3, 0))
            .await
            .map_err(|e| format!("spawning the cluster panicked: {e}"))??;
        if let Some(placement) = placement {
            cluster.keep_on_cpus(&placement.servers)?;
        }
        Some(cluster)
    } else {
        None
    };
    let urls = match &spawned {
        Some(cluster) => cluster.urls(),
        None => args.cluster.clone(),
    };
    let mut report = if urls.is_empty() {
        let double = MemoryBackend::new().with_cluster_rules(SlotLayout::even(3));
        run(double, "memory", workload).await
    } else {
        let nodes: Vec<&str> = urls.iter().map(String::as_str).collect();
        let backend = ClusterBackend::connect(&nodes)
            .await
            .map_err(|e| format!("cannot connect to the cluster at {urls:?}: {e}"))?;
        run(DynBackend::new(backend), urls.join(","), workload).await
    }
    .map_err(|e| e.to_string())?;
    report.topology = "cluster".into();
    report.placement = placement.map(Into::into);
    Ok(report)
}

/// Clears the progress bar, then prints the error, or the report through `print`, which
/// answers the violations it saw: the exit code.
fn finish<R>(
    bar: Option<ProgressBar>,
    outcome: Result<R, String>,
    print: impl FnOnce(R) -> usize,
) -> ExitCode {
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    match outcome.map(print) {
        Err(e) => {
            eprintln!("nxlock bench: {e}");
            ExitCode::FAILURE
        }
        Ok(0) => ExitCode::SUCCESS,
        Ok(_violations) => ExitCode::FAILURE,
    }
}

/// With `--pin`, the client's CPU and the servers', this thread kept on the client's;
/// then the runtime, built after so that its threads inherit the placement. A failure is
/// reported here, and answers the exit code.
fn placed_runtime(
    args: &BenchArgs,
) -> Result<(Option<CpuPlacement>, tokio::runtime::Runtime), ExitCode> {
    let placement = if args.pin {
        let placed = CpuPlacement::apart().and_then(|placement| {
            placement.pin_this_thread()?;
            Ok(placement)
        });
        match placed {
            Ok(placement) => Some(placement),
            Err(e) => {
                eprintln!("nxlock bench: --pin: {e}");
                return Err(ExitCode::from(2));
            }
        }
    } else {
        None
    };
    let Some(runtime) = runtime(args.runtime) else {
        eprintln!("nxlock bench: cannot start a tokio runtime");
        return Err(ExitCode::from(2));
    };
    Ok((placement, runtime))
}

fn runtime(flavour: RuntimeArg) -> Option<tokio::runtime::Runtime> {
    let mut builder = match flavour {
        RuntimeArg::Current => tokio::runtime::Builder::new_current_thread(),
        RuntimeArg::Multi => tokio::runtime::Builder::new_multi_thread(),
    };
    builder.enable_all().build().ok()
}

/// `--topology redlock`: three scenarios (and rslock) of `--duration` each.
fn run_redlock(args: &BenchArgs) -> ExitCode {
    let workload = Workload {
        clients: args.clients as usize,
        keys: args.keys as usize,
        hold: Duration::from_micros(args.hold_us),
        ttl: Duration::from_millis(args.ttl_ms),
        duration: Duration::from_secs_f64(args.duration),
        wait: Waiting::Poll,
        shared_lock: args.shared_lock,
        ..Workload::default()
    };
    let (placement, runtime) = match placed_runtime(args) {
        Ok(placed) => placed,
        Err(code) => return code,
    };
    let runs = if args.compare.is_some() { 4.0 } else { 3.0 };
    let bar = progress(args.duration * runs, args.json);
    let instances = args.instances as usize;
    let outcome: Result<RedlockReport, String> = runtime.block_on(async {
        let report = if args.spawn {
            let rslock_rounds = args.compare.map(|_| args.rounds());
            run_redlock_spawned(instances, &workload, rslock_rounds, placement.as_ref()).await
        } else {
            run_redlock_memory(instances, &workload).await
        };
        report.map_err(|e| e.to_string())
    });
    finish(bar, outcome, |report| {
        if args.json {
            say!("{}", report.to_json());
        } else {
            say!("{report}");
        }
        report.violations()
    })
}

/// `--algorithm`: a name from the one list that the bench runs.
fn benched_algorithm(name: &str) -> Result<Algorithm, String> {
    match name.parse::<Algorithm>() {
        Ok(algorithm) if algorithm.benched() => Ok(algorithm),
        _ => Err(format!("the bench runs {}", nxlock::bench::benched_names())),
    }
}

/// `--topology`: a name from the one list that the bench runs on.
fn benched_topology(name: &str) -> Result<TopologyKind, String> {
    match name.parse::<TopologyKind>() {
        Ok(TopologyKind::Replicated) => {
            Err("the bench runs on single, redlock and cluster topologies".into())
        }
        Ok(topology) => Ok(topology),
        Err(unknown) => Err(unknown.to_string()),
    }
}
