//! `nxlock check`: the conformance suite against a backend, on the topology asked for.

use std::process::ExitCode;

use clap::Args;
use nxlock::backend::RedisVersion;
use nxlock::conformance::check_instance_count;
use nxlock::conformance::{Harness, JudgedAs, Report, run_matching};
use nxlock::harness::{
    MemoryClusterHarness, MemoryHarness, MemoryRedlockHarness, MemoryReplicaSetHarness,
    RedisClusterHarness, RedisHarness, RedisRedlockHarness, RedisReplicatedHarness,
    RedisSentinelHarness,
};
use nxlock::{RedisBackend, RedisOptions, TopologyKind};

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Check the server at this URL (any Redis-protocol server: Redis, Valkey, KeyDB,
    /// Dragonfly, Garnet, …) through RedisBackend, instead of the embedded double.
    #[arg(long, value_name = "redis://HOST:PORT", conflicts_with_all = ["spawn", "sentinel", "cluster"])]
    url: Option<String>,
    /// Check the existing Redis Cluster these nodes belong to (one or more, comma
    /// separated) through ClusterBackend. Slots are only read: the migration and
    /// failover cases are skipped.
    #[arg(
        long,
        value_name = "redis://HOST:PORT,...",
        value_delimiter = ',',
        conflicts_with_all = ["spawn", "sentinel"]
    )]
    cluster: Vec<String>,
    /// Spawn real redis-server processes on free loopback ports (from PATH) for the
    /// topology, and stop them afterwards, instead of using the embedded double.
    #[arg(long)]
    spawn: bool,
    /// How the backend is deployed: `single`; `replicated` (a primary and a replica, with
    /// the failover cases); `redlock` (--instances independent instances, with the
    /// Redlock cases); `cluster` (3 primaries, with the cross-slot cases, and with
    /// --spawn 1 replica each and the migration and failover cases). In memory, or
    /// spawned with --spawn.
    #[arg(long, default_value = "single")]
    topology: TopologyKind,
    /// How many independent instances each Redlock case runs on (--topology redlock): an
    /// odd number from 3 to 99.
    #[arg(long, default_value_t = 5, value_name = "N", value_parser = redlock_instances)]
    instances: usize,
    /// Check the master an existing Sentinel deployment names (repeat for several
    /// sentinels); needs --master.
    #[arg(long, value_name = "HOST:PORT", requires = "master")]
    sentinel: Vec<String>,
    /// The master name the sentinels watch.
    #[arg(long, value_name = "NAME", requires = "sentinel")]
    master: Option<String>,
    /// Judge the answers against this Redis version (7.0, 7.2 or 7.4) instead of the one
    /// the server reports in `INFO server` (`valkey_version`, then `redis_version`). The
    /// double answers as this version; without the option it answers as the newest.
    #[arg(long, value_name = "VERSION")]
    redis_version: Option<RedisVersion>,
    /// Print `{"target", "topology", "redis_version", "passed", "failed", "skipped",
    /// "xfail", "cases": […]}`.
    #[arg(long)]
    json: bool,
    /// Also write a JUnit XML report to FILE: a test case per conformance case. In GitHub Actions
    /// (GITHUB_ACTIONS=true), each failure is also an `::error` annotation.
    #[arg(long, value_name = "FILE")]
    junit: Option<std::path::PathBuf>,
    /// Run only the cases whose names (`group::case`) contain PATTERN, as `cargo test
    /// NAME` does; repeat for several.
    #[arg(long = "case", value_name = "PATTERN")]
    cases: Vec<String>,
    /// List the cases (those --case selects) and exit, without running any.
    #[arg(long)]
    list: bool,
}

impl CheckArgs {
    /// Whether the case named `name` is selected.
    fn wanted(&self, name: &str) -> bool {
        self.cases.is_empty() || self.cases.iter().any(|pattern| name.contains(pattern))
    }
}

pub fn run(args: CheckArgs) -> ExitCode {
    if args.list {
        let names: Vec<&str> = nxlock::conformance::case_names()
            .iter()
            .copied()
            .filter(|name| args.wanted(name))
            .collect();
        if args.json {
            say!("{}", serde_json::json!(names));
        } else {
            for name in names {
                say!("{name}");
            }
        }
        return ExitCode::SUCCESS;
    }
    if !nxlock::conformance::case_names()
        .iter()
        .any(|name| args.wanted(name))
    {
        eprintln!(
            "nxlock check: no case matches {:?}; `nxlock check --list` shows them all",
            args.cases
        );
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("nxlock: cannot start a tokio runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let report = runtime.block_on(check(&args));
    let report = match report {
        Ok(report) => report,
        Err(why) => {
            eprintln!("nxlock check: {why}");
            return ExitCode::from(2);
        }
    };
    if args.json {
        say!("{}", report.to_json());
    } else {
        say!("{report}");
    }
    let suite = super::junit::of_check(&report);
    suite.annotate();
    if let Some(path) = &args.junit
        && let Err(error) = suite.write(path)
    {
        eprintln!("nxlock check: {}: {error}", path.display());
        return ExitCode::from(2);
    }
    if report.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The version to judge against and the server talked to, as it names itself: the
/// version is `--redis-version`, else what the server reports, else (the double) the
/// newest. A server that does not say (no `INFO`, or a version nxlock has no profile
/// for) is judged as the newest, with a note on stderr.
/// A server that cannot be reached, or a URL that cannot be read, is an error: one line
/// and exit 2, not every case failing at its setup.
async fn judged_version(args: &CheckArgs) -> Result<Judged, String> {
    let (server, reported) = server_info(args).await?;
    let version = match args.redis_version {
        Some(version) => version,
        None => reported,
    };
    Ok(Judged { version, server })
}

/// What `check` judges against: the version's profile, and the server it talks to.
#[derive(Clone, Debug)]
struct Judged {
    version: RedisVersion,
    server: Option<String>,
}

/// The server's own name and version (`Valkey 8.0.1`), and the profile its version maps
/// to (see [`judged_version`]).
async fn server_info(args: &CheckArgs) -> Result<(Option<String>, RedisVersion), String> {
    let server = if let Some(master) = &args.master {
        let sentinels: Vec<&str> = args.sentinel.iter().map(String::as_str).collect();
        let named = format!(
            "the master {master:?} of the sentinels at {}",
            args.sentinel.join(",")
        );
        Some((
            named,
            RedisBackend::connect_sentinel(&sentinels, master, RedisOptions::default()).await,
        ))
    } else if let Some(url) = args
        .url
        .as_deref()
        .or(args.cluster.first().map(String::as_str))
    {
        if !url.contains("://") {
            return Err(format!(
                "{url:?} is not a URL: give redis://{url} (rediss://{url} for TLS)"
            ));
        }
        Some((url.to_owned(), RedisBackend::connect(url).await))
    } else {
        None
    };
    let Some((named, server)) = server else {
        return Ok(match args.spawn {
            true => (
                nxlock::testing::installed_server(),
                nxlock::testing::installed_version().unwrap_or_default(),
            ),
            false => (None, RedisVersion::default()),
        });
    };
    let server = server.map_err(|e| format!("cannot reach {named}: {}", e.message()))?;
    let info = server
        .query::<String>(nxlock::redis::cmd("INFO").arg("server"))
        .await
        .map_err(|e| format!("INFO server failed: {}", e.message()));
    let named = info.as_deref().ok().and_then(server_name);
    let reported = info.and_then(|info| {
        RedisVersion::from_info(&info)
            .ok_or_else(|| "INFO server names no version from 7.0 on".to_owned())
    });
    let version = reported.unwrap_or_else(|why| {
        let newest = RedisVersion::default();
        if args.redis_version.is_none() {
            eprintln!(
                "nxlock check: the server's version is unknown ({why}); judged as Redis {newest} (--redis-version sets it)"
            );
        }
        newest
    });
    Ok((named, version))
}

/// `Valkey 8.0.1` or `Redis 7.0.15`, from `INFO server` (Valkey reports both fields; its
/// own comes first).
fn server_name(info: &str) -> Option<String> {
    let field = |name: &str| {
        info.lines()
            .find_map(|line| line.trim_end().strip_prefix(name))
            .map(str::to_owned)
    };
    field("valkey_version:")
        .map(|version| format!("Valkey {version}"))
        .or_else(|| field("redis_version:").map(|version| format!("Redis {version}")))
}

/// Runs the selected cases on `harness`, judged against `judged`'s version.
async fn judged<H: Harness>(harness: H, judged: Judged, args: &CheckArgs) -> Report {
    let mut report = run_matching(&JudgedAs::new(harness, judged.version), &|name| {
        args.wanted(name)
    })
    .await;
    report.server = judged.server;
    report
}

async fn check(args: &CheckArgs) -> Result<Report, String> {
    // Read only once the arguments are known to fit together.
    let version = || judged_version(args);
    if let Some(master) = &args.master {
        if args.topology != TopologyKind::Single || args.spawn {
            return Err(
                "--sentinel checks an existing deployment: no --spawn or --topology".into(),
            );
        }
        let harness = RedisSentinelHarness::new(args.sentinel.clone(), master.clone());
        return Ok(judged(harness, version().await?, args).await);
    }
    if args.topology != TopologyKind::Redlock && args.instances != 5 {
        return Err("--instances is for --topology redlock".into());
    }
    if !args.cluster.is_empty() {
        if !matches!(args.topology, TopologyKind::Single | TopologyKind::Cluster) {
            return Err("--cluster checks a Redis Cluster: --topology cluster or none".into());
        }
        let harness = RedisClusterHarness::at(args.cluster.clone());
        return Ok(judged(harness, version().await?, args).await);
    }
    match (&args.url, args.spawn, args.topology) {
        (Some(url), _, TopologyKind::Single) => {
            Ok(judged(RedisHarness::at(url), version().await?, args).await)
        }
        (Some(_), _, TopologyKind::Replicated) => Err(
            "--topology replicated needs --spawn (real processes) or neither (the double); \
             an existing deployment is checked with --sentinel"
                .into(),
        ),
        (Some(_), _, TopologyKind::Redlock) => Err(
            "--topology redlock needs --spawn (real processes, which the cases kill and \
             restart) or neither (the double)"
                .into(),
        ),
        (None, false, TopologyKind::Redlock) => Ok(judged(
            MemoryRedlockHarness::new(args.instances),
            version().await?,
            args,
        )
        .await),
        (None, true, TopologyKind::Redlock) => {
            let harness = RedisRedlockHarness::spawn(args.instances);
            match harness.skip_reason() {
                Some(why) => Err(why),
                None => Ok(judged(harness, version().await?, args).await),
            }
        }
        (Some(_), _, TopologyKind::Cluster) => {
            Err("a cluster is checked with --cluster URL[,URL...], not --url".into())
        }
        (None, false, TopologyKind::Cluster) => {
            // The double answers as the version it is judged against.
            let version = version().await?;
            let harness = MemoryClusterHarness::default().with_redis_version(version.version);
            Ok(judged(harness, version, args).await)
        }
        (None, true, TopologyKind::Cluster) => {
            // Building a cluster blocks on the nodes' answers; keep it off the runtime.
            let harness = tokio::task::spawn_blocking(|| RedisClusterHarness::spawn(3, 1))
                .await
                .map_err(|e| format!("spawning the cluster panicked: {e}"))??;
            Ok(judged(harness, version().await?, args).await)
        }
        (None, false, TopologyKind::Single) => {
            Ok(judged(MemoryHarness, version().await?, args).await)
        }
        (None, false, TopologyKind::Replicated) => {
            Ok(judged(MemoryReplicaSetHarness, version().await?, args).await)
        }
        (None, true, TopologyKind::Single) => {
            Ok(judged(RedisHarness::spawned()?, version().await?, args).await)
        }
        (None, true, TopologyKind::Replicated) => {
            let harness = RedisReplicatedHarness::spawn().await;
            match harness.skip_reason() {
                Some(why) => Err(why),
                None => Ok(judged(harness, version().await?, args).await),
            }
        }
    }
}

/// `--instances N`: odd, 3 to 99 (the check spawns that many servers with --spawn).
fn redlock_instances(text: &str) -> Result<usize, String> {
    let n: usize = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of instances"))?;
    check_instance_count(n)?;
    if n > 99 {
        return Err(format!("at most 99 instances (got {n})"));
    }
    Ok(n)
}
