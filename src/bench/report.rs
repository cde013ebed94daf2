//! [`BenchReport`]: what a benchmark run measured, as a table or as JSON.

use std::fmt;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::workload::Workload;

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ClientResult {
    pub(crate) cycles: u64,
    pub(crate) errors: u64,
    /// Optimistic writes that found another write first and were done again.
    pub(crate) conflicts: u64,
    pub(crate) acquire_ns: Histogram<u64>,
    pub(crate) release_ns: Histogram<u64>,
    pub(crate) cycle_ns: Histogram<u64>,
    /// For acquires that had to wait: from the previous holder starting its release to
    /// this client holding the lock.
    pub(crate) handoff_ns: Histogram<u64>,
    /// Per acquire: the TTL less the validity the guard reported, ms.
    pub(crate) validity_lost_ms: Histogram<u64>,
}

impl ClientResult {
    pub(crate) fn new() -> Self {
        Self {
            cycles: 0,
            errors: 0,
            conflicts: 0,
            acquire_ns: histogram(),
            release_ns: histogram(),
            cycle_ns: histogram(),
            handoff_ns: histogram(),
            validity_lost_ms: histogram(),
        }
    }

    #[cfg(feature = "redis")]
    /// This client's results followed by `later`, the same client's in a later run.
    fn add(&mut self, later: &ClientResult) {
        self.cycles += later.cycles;
        self.errors += later.errors;
        self.conflicts += later.conflicts;
        // Same bounds on both sides: adding cannot fail.
        let _ = self.acquire_ns.add(&later.acquire_ns);
        let _ = self.release_ns.add(&later.release_ns);
        let _ = self.cycle_ns.add(&later.cycle_ns);
        let _ = self.handoff_ns.add(&later.handoff_ns);
        let _ = self.validity_lost_ms.add(&later.validity_lost_ms);
    }
}

/// What a run measured before it was summarised, kept so that runs of one workload can
/// be merged into one report.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Samples {
    clients: Vec<ClientResult>,
    elapsed: Duration,
    commands: u64,
    violations: usize,
}

fn histogram() -> Histogram<u64> {
    // Nanoseconds, 3 significant figures, up to an hour.
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// A latency distribution's percentiles, in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Worst.
    pub max: f64,
}

impl Latency {
    /// Percentiles of a histogram of whole milliseconds, in milliseconds.
    fn of_ms(histogram: &Histogram<u64>) -> Self {
        let ms = |q: f64| histogram.value_at_quantile(q) as f64;
        Self {
            p50: ms(0.5),
            p99: ms(0.99),
            p999: ms(0.999),
            max: histogram.max() as f64,
        }
    }

    fn of(histogram: &Histogram<u64>) -> Self {
        Self {
            p50: us(histogram.value_at_quantile(0.5)),
            p99: us(histogram.value_at_quantile(0.99)),
            p999: us(histogram.value_at_quantile(0.999)),
            max: us(histogram.max()),
        }
    }
}

/// Cycles completed by the least and the most lucky client.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fairness {
    /// Fewest cycles of any client.
    pub min: u64,
    /// Most cycles of any client.
    pub max: u64,
}

/// Where a run's client and the servers it spawned were kept (`nxlock bench --pin`): the
/// client's CPUs to itself, as if the servers were other machines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Placement {
    /// The CPUs the client's threads ran on.
    pub client_cpus: Vec<usize>,
    /// The CPUs the spawned servers ran on.
    pub server_cpus: Vec<usize>,
}

#[cfg(feature = "redis")]
impl From<&lock_testkit::spawn::CpuPlacement> for Placement {
    fn from(placement: &lock_testkit::spawn::CpuPlacement) -> Self {
        Self {
            client_cpus: placement.client.clone(),
            server_cpus: placement.servers.clone(),
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cpus = |cpus: &[usize]| {
            let listed: Vec<String> = cpus.iter().map(usize::to_string).collect();
            let plural = if cpus.len() == 1 { "" } else { "s" };
            format!("CPU{plural} {}", listed.join(","))
        };
        write!(
            f,
            "client on {}, servers on {}",
            cpus(&self.client_cpus),
            cpus(&self.server_cpus)
        )
    }
}

/// One benchmark run. Serialises to exactly the documented JSON fields.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchReport {
    /// `memory` or the server URL.
    pub backend: String,
    /// How the backend is deployed: `single` or `cluster`.
    pub topology: String,
    /// `token`, `legacy` or `scripted`.
    pub algorithm: String,
    /// Concurrent clients.
    pub clients: usize,
    /// Keys.
    pub keys: usize,
    /// Hold time per cycle, µs.
    pub hold_us: u64,
    /// Measured duration, seconds.
    pub duration_s: f64,
    /// Completed acquire → hold → release cycles.
    pub cycles: u64,
    /// Cycles per second.
    pub cycles_per_sec: f64,
    /// Time from starting to acquire until holding, µs.
    pub acquire_us: Latency,
    /// Time from starting to acquire until released, µs.
    pub cycle_us: Latency,
    /// Per-client cycle counts.
    pub per_client_cycles: Fairness,
    /// Backend commands per completed cycle (2 is the floor for the token lock; more is
    /// polling).
    pub commands_per_cycle: f64,
    /// Times two holders were inside one key's critical section at once, or (counter
    /// workloads) increments reported but missing from the counters (must be 0).
    pub violations: usize,
    /// Counter workloads (`optimistic`, `watch`, `locked`): attempts that met a conflict
    /// and were done again, per increment that landed. Absent for the lock cycles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflicts_per_cycle: Option<f64>,
    /// With `--pin`: the CPUs the client and the spawned servers were kept on. Absent
    /// otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// Failed acquires or releases that reported the lock lost (not part of the JSON).
    #[serde(skip)]
    pub errors: u64,
    /// Hand-off latency of waiting acquires (from the previous holder starting its release
    /// to the next holding the lock); `None` when no acquire waited. Table only: the JSON
    /// fields are fixed.
    #[serde(skip)]
    pub handoff_us: Option<Latency>,
    /// Time from starting to release until released, µs (table only).
    #[serde(skip)]
    pub release_us: Latency,
    /// The TTL less the validity each acquire reported, ms: drift allowance and time
    /// spent acquiring (Redlock); time spent acquiring (others). Table only.
    #[serde(skip)]
    pub validity_lost_ms: Latency,
    #[serde(skip)]
    samples: Samples,
}

/// `numerator / denominator` to three decimals, as every ratio in a report is given; 0
/// when there is nothing to divide by.
pub(crate) fn ratio(numerator: f64, denominator: f64) -> f64 {
    if denominator > 0.0 {
        (numerator / denominator * 1000.0).round() / 1000.0
    } else {
        0.0
    }
}

#[cfg(feature = "redis")]
/// A failure of a reference library's client, as the client loop counts it.
pub(crate) fn connection_error(e: impl std::fmt::Display) -> lock_core::LockError {
    lock_core::LockError::Backend(lock_core::Error::new(
        lock_core::ErrorKind::Connection,
        e.to_string(),
    ))
}

fn us(ns: u64) -> f64 {
    (ns as f64 / 1_000.0 * 1_000.0).round() / 1_000.0
}

impl BenchReport {
    pub(crate) fn collect(
        backend: String,
        workload: &Workload,
        elapsed: Duration,
        commands: u64,
        violations: usize,
        clients: Vec<ClientResult>,
    ) -> Self {
        let samples = Samples {
            clients,
            elapsed,
            commands,
            violations,
        };
        let mut report = BenchReport {
            backend,
            topology: "single".into(),
            algorithm: workload.label().into(),
            clients: workload.clients,
            keys: workload.keys,
            hold_us: u64::try_from(workload.hold.as_micros()).unwrap_or(u64::MAX),
            duration_s: 0.0,
            cycles: 0,
            cycles_per_sec: 0.0,
            acquire_us: Latency::of(&histogram()),
            cycle_us: Latency::of(&histogram()),
            per_client_cycles: Fairness { min: 0, max: 0 },
            commands_per_cycle: 0.0,
            violations: 0,
            conflicts_per_cycle: None,
            placement: None,
            errors: 0,
            handoff_us: None,
            release_us: Latency::of(&histogram()),
            validity_lost_ms: Latency::of_ms(&histogram()),
            samples: Samples::default(),
        };
        report.summarise(samples);
        report
    }

    #[cfg(feature = "redis")]
    /// This run followed by `later`, a run of the same workload with the same clients:
    /// one report over both, as if they had been one run.
    pub(crate) fn merged(mut self, later: BenchReport) -> BenchReport {
        let mut samples = std::mem::take(&mut self.samples);
        for (client, later) in samples.clients.iter_mut().zip(&later.samples.clients) {
            client.add(later);
        }
        samples.elapsed += later.samples.elapsed;
        samples.commands += later.samples.commands;
        samples.violations += later.samples.violations;
        self.summarise(samples);
        self
    }

    #[cfg(feature = "redis")]
    /// The same run with `commands` counted another way (by the server, for a reference
    /// client that nxlock cannot count).
    pub(crate) fn with_commands(mut self, commands: u64) -> BenchReport {
        let mut samples = std::mem::take(&mut self.samples);
        samples.commands = commands;
        self.summarise(samples);
        self
    }

    /// The same run of a counter workload, which reports its conflicts.
    pub(crate) fn with_conflicts(mut self) -> BenchReport {
        self.conflicts_per_cycle = Some(0.0);
        let samples = std::mem::take(&mut self.samples);
        self.summarise(samples);
        self
    }

    /// Computes every measured field from `samples`, and keeps them.
    fn summarise(&mut self, samples: Samples) {
        let clients = &samples.clients;
        let mut acquire = histogram();
        let mut cycle = histogram();
        let mut handoff = histogram();
        let mut release = histogram();
        let mut lost = histogram();
        for c in clients {
            let _ = release.add(&c.release_ns);
            let _ = lost.add(&c.validity_lost_ms);
            let _ = acquire.add(&c.acquire_ns);
            let _ = cycle.add(&c.cycle_ns);
            let _ = handoff.add(&c.handoff_ns);
        }
        let cycles: u64 = clients.iter().map(|c| c.cycles).sum();
        let seconds = samples.elapsed.as_secs_f64();
        self.duration_s = (seconds * 1000.0).round() / 1000.0;
        self.cycles = cycles;
        self.cycles_per_sec = if seconds > 0.0 {
            (cycles as f64 / seconds).round()
        } else {
            0.0
        };
        self.acquire_us = Latency::of(&acquire);
        self.cycle_us = Latency::of(&cycle);
        self.per_client_cycles = Fairness {
            min: clients.iter().map(|c| c.cycles).min().unwrap_or(0),
            max: clients.iter().map(|c| c.cycles).max().unwrap_or(0),
        };
        self.commands_per_cycle = ratio(samples.commands as f64, cycles as f64);
        self.violations = samples.violations;
        if self.conflicts_per_cycle.is_some() {
            let conflicts: u64 = clients.iter().map(|c| c.conflicts).sum();
            self.conflicts_per_cycle = Some(ratio(conflicts as f64, cycles as f64));
        }
        self.errors = clients.iter().map(|c| c.errors).sum();
        self.handoff_us = (!handoff.is_empty()).then(|| Latency::of(&handoff));
        self.release_us = Latency::of(&release);
        self.validity_lost_ms = Latency::of_ms(&lost);
        self.samples = samples;
    }

    /// The documented JSON object.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// `min / max` of per-client cycles (1.0 is perfectly fair).
    pub fn fairness(&self) -> f64 {
        if self.per_client_cycles.max == 0 {
            return 0.0;
        }
        self.per_client_cycles.min as f64 / self.per_client_cycles.max as f64
    }
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = &self.acquire_us;
        writeln!(f, "backend            {} ({})", self.backend, self.topology)?;
        if let Some(placement) = &self.placement {
            writeln!(f, "placement          {placement}")?;
        }
        writeln!(
            f,
            "algorithm          {} ({} clients, {} keys, hold {} µs)",
            self.algorithm, self.clients, self.keys, self.hold_us
        )?;
        writeln!(
            f,
            "cycles             {} in {:.2} s = {:.0} cycles/s",
            self.cycles, self.duration_s, self.cycles_per_sec
        )?;
        writeln!(
            f,
            "acquire wait µs    p50 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
            a.p50, a.p99, a.p999, a.max
        )?;
        writeln!(
            f,
            "cycle µs           p50 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
            self.cycle_us.p50, self.cycle_us.p99, self.cycle_us.p999, self.cycle_us.max
        )?;
        let r = &self.release_us;
        writeln!(
            f,
            "release µs         p50 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
            r.p50, r.p99, r.p999, r.max
        )?;
        if let Some(handoff) = &self.handoff_us {
            writeln!(
                f,
                "hand-off µs        p50 {:.1}  p99 {:.1}",
                handoff.p50, handoff.p99
            )?;
        }
        writeln!(
            f,
            "per-client cycles  min {}  max {}  (min/max {:.2})",
            self.per_client_cycles.min,
            self.per_client_cycles.max,
            self.fairness()
        )?;
        writeln!(f, "commands/cycle     {:.3}", self.commands_per_cycle)?;
        write!(f, "violations         {}", self.violations)?;
        if self.errors > 0 {
            write!(
                f,
                "\nerrors             {} (acquire timeouts or releases of lost locks)",
                self.errors
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(cycles: u64, wait_ns: u64) -> ClientResult {
        let mut result = ClientResult::new();
        result.cycles = cycles;
        for _ in 0..cycles {
            result.acquire_ns.record(wait_ns).unwrap();
            result.cycle_ns.record(wait_ns).unwrap();
        }
        result
    }

    fn run(elapsed_ms: u64, clients: Vec<ClientResult>) -> BenchReport {
        let workload = Workload {
            clients: clients.len(),
            ..Workload::default()
        };
        let commands = 2 * clients.iter().map(|c| c.cycles).sum::<u64>();
        let elapsed = Duration::from_millis(elapsed_ms);
        BenchReport::collect("memory".into(), &workload, elapsed, commands, 0, clients)
    }

    #[test]
    fn merged_runs_read_as_one_run() {
        let first = run(1_000, vec![client(100, 1_000), client(300, 1_000)]);
        let later = run(3_000, vec![client(500, 9_000), client(100, 9_000)]);
        let both = first.merged(later);
        assert_eq!(both.cycles, 1_000);
        assert_eq!(both.duration_s, 4.0);
        assert_eq!(both.cycles_per_sec, 250.0);
        // Per client over both runs: 600 and 400.
        assert_eq!(
            (both.per_client_cycles.min, both.per_client_cycles.max),
            (400, 600)
        );
        assert_eq!(both.commands_per_cycle, 2.0);
        // 400 waits of 1 µs and 600 of 9 µs: the median is in the later run's.
        assert!(
            (both.acquire_us.p50 - 9.0).abs() < 0.01,
            "{:?}",
            both.acquire_us
        );
        assert!(
            (both.acquire_us.max - 9.0).abs() < 0.01,
            "{:?}",
            both.acquire_us
        );
        assert_eq!(both.conflicts_per_cycle, None);
    }

    #[test]
    fn server_counted_commands_replace_the_clients_count() {
        let report = run(1_000, vec![client(100, 1_000)]).with_commands(450);
        assert_eq!(report.commands_per_cycle, 4.5);
        let merged = report.merged(run(1_000, vec![client(100, 1_000)]));
        assert_eq!(merged.commands_per_cycle, (450.0 + 200.0) / 200.0);
    }
}
