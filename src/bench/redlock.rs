//! `nxlock bench --topology redlock`: nxlock's [`Redlock`] over N instances, healthy,
//! with one instance refusing connections and with one black-holed; and rslock's
//! `LockManager` over the same servers in the same run.

use std::fmt;

use lock_core::{CountingBackend, KvBackend, LockName, Redlock, RedlockOptions};
use lock_memory::MemoryInstances;
use serde::Serialize;

use super::locks::{one_per_key, run_clients};
use super::report::{BenchReport, Fairness, Latency, Placement};
use super::{BenchError, Workload};

/// One scenario's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scenario {
    /// Completed acquire → hold → release cycles per second.
    pub cycles_per_sec: f64,
    /// Completed cycles over cycles and failed acquires or releases.
    pub success_rate: f64,
    /// Time from starting to acquire until holding, µs.
    pub acquire_us: Latency,
    /// Time from starting to release until released, µs.
    pub release_us: Latency,
    /// Per-client cycle counts.
    pub per_client_cycles: Fairness,
    /// `min / max` of per-client cycles.
    pub fairness: f64,
    /// The TTL less the validity each acquire reported, ms: the drift allowance plus the
    /// time the acquire took.
    pub validity_lost_ms: Latency,
    /// Times two holders were inside at once (must be 0).
    pub violations: usize,
}

impl Scenario {
    fn of(report: &BenchReport) -> Self {
        let attempts = report.cycles + report.errors;
        Self {
            cycles_per_sec: report.cycles_per_sec,
            success_rate: if attempts == 0 {
                0.0
            } else {
                (report.cycles as f64 / attempts as f64 * 1e4).round() / 1e4
            },
            acquire_us: report.acquire_us.clone(),
            release_us: report.release_us.clone(),
            per_client_cycles: report.per_client_cycles.clone(),
            fairness: (report.fairness() * 1e3).round() / 1e3,
            validity_lost_ms: report.validity_lost_ms.clone(),
            violations: report.violations,
        }
    }
}

/// What `nxlock bench --topology redlock` measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RedlockReport {
    /// `memory` or `spawned redis-server`.
    pub backend: String,
    /// Always `redlock`.
    pub topology: String,
    /// N.
    pub instances: usize,
    /// Concurrent clients.
    pub clients: usize,
    /// With `--pin`: the CPUs the client and the servers were kept on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// Whether the clients on one key shared one Redlock (`--shared-lock`).
    pub shared_lock: bool,
    /// Keys.
    pub keys: usize,
    /// Lock TTL, ms.
    pub ttl_ms: u64,
    /// Seconds per scenario.
    pub duration_s: f64,
    /// The drift allowance of every hold, ms (1% of the TTL + 2 ms).
    pub drift_ms: i64,
    /// nxlock's Redlock, every instance up.
    pub nxlock: Scenario,
    /// rslock's LockManager on the same instances (`--compare rslock`).
    pub rslock: Option<Scenario>,
    /// nxlock cycles/s over rslock's, when both ran.
    pub ratio: Option<f64>,
    /// With rslock: the two took turns, and this is the ratio in each round.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round_ratios: Option<Vec<f64>>,
    /// With rslock: the median of `round_ratios`, the comparison's figure on a noisy
    /// machine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round_median: Option<f64>,
    /// With rslock: the first and third quartiles of `round_ratios`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round_quartiles: Option<[f64; 2]>,
    /// nxlock with the last instance refusing connections (killed).
    pub one_refused: Scenario,
    /// nxlock with the last instance black-holed (nothing answers).
    pub one_blackholed: Scenario,
}

impl RedlockReport {
    /// The report as one JSON object.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Total violations over every scenario.
    pub fn violations(&self) -> usize {
        let rslock = self.rslock.as_ref().map_or(0, |s| s.violations);
        self.nxlock.violations
            + rslock
            + self.one_refused.violations
            + self.one_blackholed.violations
    }
}

fn row(f: &mut fmt::Formatter<'_>, name: &str, s: &Scenario) -> fmt::Result {
    writeln!(
        f,
        "{name:<15} {:>9.0} {:>7.2}% {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>6.2} {:>6.0}/{:<4.0} {:>4}",
        s.cycles_per_sec,
        s.success_rate * 100.0,
        s.acquire_us.p50,
        s.acquire_us.p99,
        s.release_us.p50,
        s.release_us.p99,
        s.fairness,
        s.validity_lost_ms.p50,
        s.validity_lost_ms.max,
        s.violations
    )
}

impl fmt::Display for RedlockReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "redlock on {} {} instances: {} clients, {} keys, ttl {} ms (drift {} ms), {:.1} s per scenario",
            self.instances,
            self.backend,
            self.clients,
            self.keys,
            self.ttl_ms,
            self.drift_ms,
            self.duration_s
        )?;
        if let Some(placement) = &self.placement {
            writeln!(f, "{placement}")?;
        }
        writeln!(
            f,
            "{:<15} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9} {:>6} {:>11} {:>4}",
            "scenario",
            "cycles/s",
            "success",
            "acq p50",
            "acq p99",
            "rel p50",
            "rel p99",
            "min/max",
            "lost ms",
            "viol"
        )?;
        row(f, "nxlock", &self.nxlock)?;
        if let Some(rslock) = &self.rslock {
            row(f, "rslock", rslock)?;
        }
        row(f, "1 refused", &self.one_refused)?;
        row(f, "1 black-holed", &self.one_blackholed)?;
        if let Some(ratio) = self.ratio {
            write!(f, "nxlock/rslock cycles/s = {ratio:.3}")?;
        }
        if let (Some(median), Some([q1, q3])) = (self.round_median, self.round_quartiles) {
            write!(f, "; median round {median:.3}, quartiles {q1:.3}-{q3:.3}")?;
        }
        Ok(())
    }
}

/// Runs `workload` with a Redlock over `nodes`, counting their commands.
async fn redlock_scenario<B: KvBackend + Clone + 'static>(
    nodes: Vec<B>,
    label: &str,
    workload: &Workload,
) -> Result<BenchReport, BenchError> {
    let counted: Vec<_> = nodes.into_iter().map(CountingBackend::new).collect();
    let counters = counted.clone();
    let commands = move || counters.iter().map(CountingBackend::commands).sum();
    let make = one_per_key(workload.shared_lock, Redlock::with_options);
    let make = |name: &LockName, options| make(counted.clone(), name, options);
    run_clients(label, workload, commands, make).await
}

fn report(
    backend: &str,
    instances: usize,
    workload: &Workload,
    [healthy, refused, blackholed]: [BenchReport; 3],
    rslock: Option<(BenchReport, Vec<f64>)>,
    placement: Option<Placement>,
) -> RedlockReport {
    let (rslock, round_ratios) = rslock.unzip();
    let spread = round_ratios.as_deref().map(super::compare::round_spread);
    let ratio = rslock
        .as_ref()
        .filter(|r| r.cycles_per_sec > 0.0)
        .map(|r| super::report::ratio(healthy.cycles_per_sec, r.cycles_per_sec));
    RedlockReport {
        backend: backend.into(),
        topology: "redlock".into(),
        instances,
        clients: workload.clients,
        placement,
        shared_lock: workload.shared_lock,
        keys: workload.keys,
        ttl_ms: u64::try_from(workload.ttl.as_millis()).unwrap_or(u64::MAX),
        duration_s: workload.duration.as_secs_f64(),
        drift_ms: RedlockOptions::default().drift_ms(workload.ttl),
        nxlock: Scenario::of(&healthy),
        rslock: rslock.as_ref().map(Scenario::of),
        ratio,
        round_median: spread.map(|(median, _)| median),
        round_quartiles: spread.map(|(_, quartiles)| quartiles),
        round_ratios,
        one_refused: Scenario::of(&refused),
        one_blackholed: Scenario::of(&blackholed),
    }
}

/// The three scenarios on `instances` in-memory nodes ([`MemoryInstances`]).
pub async fn run_memory(
    instances: usize,
    workload: &Workload,
) -> Result<RedlockReport, BenchError> {
    let set = MemoryInstances::new(instances);
    let last = instances.saturating_sub(1);
    let healthy = redlock_scenario(set.nodes(), "memory", workload).await?;
    let node_error = |e: lock_memory::NoSuchNode| BenchError::InvalidWorkload(e.to_string());
    set.kill(last).map_err(node_error)?;
    let refused = redlock_scenario(set.nodes(), "memory", workload).await?;
    set.restart(last, lock_memory::Persistence::None)
        .map_err(node_error)?;
    set.blackhole(last).map_err(node_error)?;
    let blackholed = redlock_scenario(set.nodes(), "memory", workload).await?;
    let scenarios = [healthy, refused, blackholed];
    Ok(report("memory", instances, workload, scenarios, None, None))
}

/// The three scenarios on `instances` spawned `redis-server` processes and, with
/// `rslock_rounds`, rslock's `LockManager` on the same servers, taking turns with the
/// healthy scenario for that many rounds. The healthy runs connect to the servers
/// directly; the fault scenarios go through each server's proxy.
///
/// With `placement`, the servers are kept on its server CPUs (a restarted one too); the
/// caller keeps its own threads on the client's ([`CpuPlacement::pin_this_thread`]
/// before building the runtime).
///
/// [`CpuPlacement::pin_this_thread`]: lock_testkit::spawn::CpuPlacement::pin_this_thread
#[cfg(feature = "compare-rslock")]
pub async fn run_spawned(
    instances: usize,
    workload: &Workload,
    rslock_rounds: Option<usize>,
    placement: Option<&lock_testkit::spawn::CpuPlacement>,
) -> Result<RedlockReport, BenchError> {
    use std::time::Duration;

    use lock_redis::{RedisBackend, RedisOptions};
    use lock_testkit::spawn::{Durability, RedisInstances};

    let failed = |e: String| BenchError::InvalidWorkload(e);
    let spawned = RedisInstances::spawn(instances, Durability::None)
        .await
        .map_err(failed)?;
    if let Some(placement) = placement {
        spawned.keep_on_cpus(&placement.servers).map_err(failed)?;
    }
    let mut direct = Vec::new();
    for url in spawned.server_urls() {
        let backend = RedisBackend::connect(&url).await;
        direct.push(backend.map_err(|e| failed(format!("cannot connect to {url}: {e}")))?);
    }
    let label = "spawned redis-server";
    let managers = super::RslockManagers::new(&spawned.server_urls(), workload.clients);
    let rslock = |workload: Workload| {
        let managers = &managers;
        async move {
            let make =
                |name: &LockName, options: lock_core::LockOptions| managers.lock(name, options);
            let mut report = run_clients(label, &workload, || 0, make).await?;
            report.algorithm = "rslock".into();
            Ok(report)
        }
    };
    // Fresh servers and connections are slower at first: both sides warm up, unmeasured,
    // before either is measured.
    let warm_up = Workload {
        duration: workload.duration.min(Duration::from_millis(500)),
        ..workload.clone()
    };
    redlock_scenario(direct.clone(), label, &warm_up).await?;
    let ours = |workload: Workload| {
        let direct = direct.clone();
        async move { redlock_scenario(direct, label, &workload).await }
    };
    let (healthy, rslock) = match rslock_rounds {
        Some(rounds) => {
            rslock(warm_up).await?;
            let compared = super::compare::alternate(workload, rounds, ours, rslock).await?;
            (
                compared.ours,
                Some((compared.reference, compared.round_ratios)),
            )
        }
        None => (ours(workload.clone()).await?, None),
    };
    let proxied = spawned
        .backends(RedisOptions::default())
        .await
        .map_err(failed)?;
    let last = instances.saturating_sub(1);
    spawned.kill(last).map_err(failed)?;
    let refused = redlock_scenario(proxied.clone(), label, workload).await?;
    spawned.restart(last, false).map_err(failed)?;
    spawned.blackhole(last).map_err(failed)?;
    let blackholed = redlock_scenario(proxied, label, workload).await?;
    let scenarios = [healthy, refused, blackholed];
    let placement = placement.map(Placement::from);
    Ok(report(
        label, instances, workload, scenarios, rslock, placement,
    ))
}
