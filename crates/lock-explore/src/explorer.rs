//! [`Explorer`]: seeded search over fault schedules, on all cores, then shrinking and a
//! determinism check of what it found.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lock_memory::ScriptRunner;
use parking_lot::Mutex;

use crate::counterexample::{Counterexample, ReplayError, ReplayFile};
use crate::generate::{Baseline, schedule};
use crate::options::{Fencing, Options};
use crate::run::{Outcome, Subject, Trace as Record, run};
use crate::schedule::Schedule;
use crate::shrink::shrink;
use crate::step::FaultKind;
use crate::topology::Topology;
use crate::trace::Trace;
use crate::violation::{Violation, ViolationKind};
use crate::workload::Workload;

/// The budget of a search given neither [`Explorer::runs`] nor [`Explorer::time`].
pub const DEFAULT_RUNS: u64 = 10_000;

/// How many times a counterexample is replayed to show it is deterministic.
pub const REPLAYS: u32 = 10;

/// An exploration that cannot start, or a replay that cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ExploreError {
    /// The options ask for something the double cannot do.
    #[error("{0}")]
    Unsupported(String),
    /// The options are inconsistent.
    #[error("{0}")]
    Invalid(String),
    /// A replay file could not be used.
    #[error(transparent)]
    Replay(#[from] ReplayError),
}

/// What an exploration found.
#[derive(Clone, Debug)]
pub struct Report {
    /// The seed it started from.
    pub seed: u64,
    /// Runs made in the search (shrinking and replays not counted).
    pub runs: u64,
    /// How many runs broke each property ([`Explorer::keep_going`] counts them all;
    /// otherwise the search stops at the first).
    pub violations: BTreeMap<ViolationKind, u64>,
    /// Wall-clock time the search took (shrinking and replays not counted).
    pub elapsed: Duration,
    /// The first violation, shrunk; `None` when every run passed.
    pub counterexample: Option<Counterexample>,
}

/// What replaying a schedule gave.
#[derive(Clone, Debug)]
pub struct Replayed {
    /// The violation the file recorded.
    pub expected: ViolationKind,
    /// The violation this run found, if any.
    pub violation: Option<Violation>,
    /// This run's trace.
    pub trace: Trace,
}

impl Replayed {
    /// Whether the recorded violation happened again.
    pub fn reproduced(&self) -> bool {
        self.violation.as_ref().map(|v| v.kind) == Some(self.expected)
    }
}

type Progress = Arc<dyn Fn(u64) + Send + Sync>;

/// What the search made: its runs, the violations it counted, and the first in run
/// order with its schedule.
type Searched = (
    u64,
    BTreeMap<ViolationKind, u64>,
    Option<(u64, Schedule, Outcome)>,
);

/// Searches fault schedules for runs of a [`Workload`] that break a property.
///
/// ```
/// use lock_explore::{Explorer, FaultKind};
/// // An unprotected read-modify-write: two clients lose each other's increments.
/// let report = Explorer::new(|ctx: lock_explore::Context| async move {
///     let hit = ctx.increment("hits");
///     let value = ctx.read_counter("hits").await;
///     ctx.write_counter("hits", value + 1).await;
///     hit.done();
/// })
/// .clients(2)
/// .faults(&[FaultKind::Pause])
/// .seed(1)
/// .runs(200)
/// .threads(1)
/// .explore()
/// .unwrap();
/// let found = report.counterexample.expect("found");
/// assert_eq!(found.violation.kind, lock_explore::ViolationKind::LostUpdate);
/// ```
#[derive(Clone)]
pub struct Explorer {
    subject: Subject,
    name: Option<String>,
    options: Options,
    seed: u64,
    runs: Option<u64>,
    time: Option<Duration>,
    threads: usize,
    determinism_runs: u64,
    shrink_budget: u64,
    keep_going: bool,
    progress: Option<Progress>,
}

impl std::fmt::Debug for Explorer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Explorer")
            .field("name", &self.name)
            .field("options", &self.options)
            .field("seed", &self.seed)
            .field("runs", &self.runs)
            .field("time", &self.time)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

impl Explorer {
    /// An explorer of `workload` with the default [`Options`], seed 0, [`DEFAULT_RUNS`]
    /// runs, on every core.
    pub fn new(workload: impl Workload + 'static) -> Self {
        Self::from_arc(Arc::new(workload))
    }

    /// An explorer of a shared workload.
    pub fn from_arc(workload: Arc<dyn Workload>) -> Self {
        Explorer {
            subject: Subject {
                workload,
                scripts: None,
            },
            name: None,
            options: Options::default(),
            seed: 0,
            runs: None,
            time: None,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            determinism_runs: 3,
            shrink_budget: 2_000,
            keep_going: false,
            progress: None,
        }
    }

    /// Every node runs the scripts that have no native body with `runner`: the
    /// workload's own Lua, exactly as a server runs it (`nxlock::memory::LuaScripts`,
    /// feature `lua`). Without one, such a script fails with
    /// [`ErrorKind::Unsupported`](lock_core::ErrorKind::Unsupported).
    pub fn script_runner(mut self, runner: Arc<dyn ScriptRunner>) -> Self {
        self.subject.scripts = Some(runner);
        self
    }

    /// Names the workload in reports and replay files (the CLI's built-in algorithms).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Replaces every option at once.
    pub fn options(mut self, options: Options) -> Self {
        self.options = options;
        self
    }

    /// The options in force.
    pub fn current_options(&self) -> &Options {
        &self.options
    }

    /// What the clients talk to.
    pub fn topology(mut self, topology: Topology) -> Self {
        self.options.topology = topology;
        self
    }

    /// How many clients run at once.
    pub fn clients(mut self, clients: usize) -> Self {
        self.options.clients = clients;
        self
    }

    /// Cycles per client.
    pub fn cycles(mut self, cycles: u32) -> Self {
        self.options.cycles = cycles;
        self
    }

    /// The TTL the workload's lock uses: the unit of fault lengths and liveness.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.options.ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        self
    }

    /// The fault families in play.
    pub fn faults(mut self, faults: &[FaultKind]) -> Self {
        self.options.faults = faults.to_vec();
        self
    }

    /// At most this many fault steps per schedule.
    pub fn max_steps(mut self, steps: usize) -> Self {
        self.options.max_steps = steps;
        self
    }

    /// Once faults stop, every client must progress within `ttls` TTLs; `None` turns
    /// the liveness check off.
    pub fn liveness(mut self, ttls: Option<u64>) -> Self {
        self.options.liveness_ttls = ttls;
        self
    }

    /// How fenced resources judge fences.
    pub fn fencing(mut self, fencing: Fencing) -> Self {
        self.options.fencing = fencing;
        self
    }

    /// Keys starting with `prefix` may outlive the run without a TTL.
    pub fn permanent_keys(mut self, prefix: impl Into<String>) -> Self {
        self.options.permanent_keys.push(prefix.into());
        self
    }

    /// The counter `counter` lives in Redis at `key` (its value a decimal integer): the
    /// checker reads it there at the end.
    pub fn counter_in_key(mut self, counter: impl Into<String>, key: impl Into<String>) -> Self {
        self.options.counter_keys.push((counter.into(), key.into()));
        self
    }

    /// The seed: the same seed gives the same runs.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Stops after `runs` runs, or at [`Explorer::time`] if that comes first.
    pub fn runs(mut self, runs: u64) -> Self {
        self.runs = Some(runs);
        self
    }

    /// Stops after `time` of wall-clock time, or at [`Explorer::runs`] if that comes
    /// first; with a time alone, the runs are not limited.
    pub fn time(mut self, time: Duration) -> Self {
        self.time = Some(time);
        self
    }

    /// Worker threads (default: every core). The first violation in run order is
    /// reported whatever the count, so a seed finds the same counterexample on any
    /// machine once its budget is in runs.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// How many of the first runs are made twice to check that the workload is
    /// deterministic (default 3; the fault-free baseline always is).
    pub fn determinism_runs(mut self, runs: u64) -> Self {
        self.determinism_runs = runs;
        self
    }

    /// Runs the whole budget instead of stopping at the first violation, counting the
    /// runs that break each property ([`Report::violations`]): how often a bug shows,
    /// and a steady load for measuring runs per second. The first violation in run
    /// order is still shrunk and reported.
    pub fn keep_going(mut self, keep_going: bool) -> Self {
        self.keep_going = keep_going;
        self
    }

    /// Calls `progress` with the runs done so far, now and then.
    pub fn on_progress(mut self, progress: impl Fn(u64) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(progress));
        self
    }

    fn validate(&self) -> Result<(), ExploreError> {
        let o = &self.options;
        if let Some(kind) = o.faults.iter().find(|k| !o.topology.supports(**k)) {
            return Err(ExploreError::Unsupported(format!(
                "the fault '{kind}' does not apply to the {} topology",
                o.topology.name()
            )));
        }
        if o.clients == 0 || o.cycles == 0 {
            return Err(ExploreError::Invalid(
                "an exploration needs at least 1 client and 1 cycle".to_owned(),
            ));
        }
        if o.ttl_ms == 0 {
            return Err(ExploreError::Invalid(
                "the TTL must be at least 1 ms".to_owned(),
            ));
        }
        if let Topology::Redlock { nodes: 0 }
        | Topology::Replicated { replicas: 0 }
        | Topology::Cluster { shards: 0 } = o.topology
        {
            return Err(ExploreError::Invalid(
                "a redlock topology needs a node, a replicated one a replica, a cluster a shard"
                    .to_owned(),
            ));
        }
        Ok(())
    }

    /// Runs `schedule` once: its trace and violation, if any.
    pub fn run_schedule(&self, schedule: &Schedule) -> (Trace, Option<Violation>) {
        let outcome = run(&self.subject, &self.options, schedule, Record::Kept);
        (outcome.trace, outcome.violation)
    }

    /// Replays the file at `path` on this explorer's workload, with the file's options.
    pub fn replay(&self, path: impl AsRef<Path>) -> Result<Replayed, ExploreError> {
        let file = ReplayFile::load(path)?;
        let outcome = run(&self.subject, &file.options, &file.schedule(), Record::Kept);
        Ok(Replayed {
            expected: file.violation,
            violation: outcome.violation,
            trace: outcome.trace,
        })
    }

    /// Searches until the budget is spent or a violation is found, then shrinks it and
    /// replays it [`REPLAYS`] times.
    pub fn explore(&self) -> Result<Report, ExploreError> {
        self.validate()?;
        let started = Instant::now();
        let empty = Schedule {
            clients: self.options.clients,
            cycles: self.options.cycles,
            token_seed: run_seed(self.seed, u64::MAX),
            steps: Vec::new(),
        };
        let first = run(&self.subject, &self.options, &empty, Record::Kept);
        if let Some(found) = self.diverges(&empty, &first) {
            return Ok(self.report(started, 1, BTreeMap::new(), Some(found)));
        }
        if let Some(violation) = &first.violation {
            let kind = violation.kind;
            let found = self.conclude(empty.clone(), first, kind, u64::MAX);
            return Ok(self.report(started, 1, BTreeMap::new(), Some(found)));
        }
        let baseline = Baseline {
            ops: first.ops.clone(),
            duration_ms: u64::try_from(first.main_us / 1000).unwrap_or(0),
        };
        let (runs, violations, found) = self.search(&baseline, started);
        // The search's time, without shrinking: what runs per second are measured by.
        let elapsed = started.elapsed();
        let found = found.and_then(|(index, schedule, outcome)| {
            let violation = outcome.violation.clone()?;
            Some(if violation.kind == ViolationKind::Nondeterminism {
                self.counterexample(schedule.clone(), schedule, 0, violation, outcome.trace, 0)
            } else {
                self.conclude(schedule, outcome, violation.kind, index)
            })
        });
        let mut report = self.report(started, runs, violations, found);
        report.elapsed = elapsed;
        Ok(report)
    }

    fn report(
        &self,
        started: Instant,
        runs: u64,
        violations: BTreeMap<ViolationKind, u64>,
        found: Option<Counterexample>,
    ) -> Report {
        Report {
            seed: self.seed,
            runs,
            violations,
            elapsed: started.elapsed(),
            counterexample: found,
        }
    }

    /// The search proper: runs in index order across threads; the lowest index that
    /// breaks a property wins.
    fn search(&self, baseline: &Baseline, started: Instant) -> Searched {
        let next = AtomicU64::new(0);
        let counts: Mutex<BTreeMap<ViolationKind, u64>> = Mutex::new(BTreeMap::new());
        let done = AtomicU64::new(0);
        let lowest = AtomicU64::new(u64::MAX);
        let found: Mutex<Option<(u64, Schedule, Outcome)>> = Mutex::new(None);
        let limit = match (self.runs, self.time) {
            (Some(runs), _) => runs,
            (None, Some(_)) => u64::MAX,
            (None, None) => DEFAULT_RUNS,
        };
        let worker = || {
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= limit || (!self.keep_going && index > lowest.load(Ordering::Acquire)) {
                    return;
                }
                if self.time.is_some_and(|t| started.elapsed() >= t) {
                    return;
                }
                let schedule = schedule(run_seed(self.seed, index), &self.options, baseline);
                let checked = index < self.determinism_runs;
                let record = if checked {
                    Record::Kept
                } else {
                    Record::Dropped
                };
                let mut outcome = run(&self.subject, &self.options, &schedule, record);
                if outcome.violation.is_none() && checked {
                    let again = run(&self.subject, &self.options, &schedule, Record::Kept);
                    outcome.violation = divergence(&outcome.trace, &again.trace);
                }
                let broken = outcome.violation.is_some();
                let total = done.fetch_add(1, Ordering::Relaxed) + 1;
                if let Some(progress) = &self.progress
                    && total.is_multiple_of(64)
                {
                    progress(total);
                }
                if let Some(violation) = &outcome.violation {
                    *counts.lock().entry(violation.kind).or_default() += 1;
                }
                if broken {
                    let mut slot = found.lock();
                    if slot.as_ref().is_none_or(|(i, _, _)| index < *i) {
                        *slot = Some((index, schedule, outcome));
                        lowest.fetch_min(index, Ordering::AcqRel);
                    }
                }
            }
        };
        if self.threads <= 1 {
            worker();
        } else {
            std::thread::scope(|scope| {
                for _ in 0..self.threads {
                    scope.spawn(worker);
                }
            });
        }
        let runs = done.load(Ordering::Relaxed);
        if let Some(progress) = &self.progress {
            progress(runs);
        }
        (runs, counts.into_inner(), found.into_inner())
    }

    /// A second run of `schedule` that differs from `outcome`: the counterexample
    /// saying the workload is nondeterministic.
    fn diverges(&self, schedule: &Schedule, outcome: &Outcome) -> Option<Counterexample> {
        let again = run(&self.subject, &self.options, schedule, Record::Kept);
        let violation = divergence(&outcome.trace, &again.trace)?;
        let mut trace = outcome.trace.clone();
        trace.retain(|e| e.at_us <= violation.at_us);
        Some(self.counterexample(schedule.clone(), schedule.clone(), 0, violation, trace, 0))
    }

    /// Shrinks what run `index` found, and replays the result.
    fn conclude(
        &self,
        schedule: Schedule,
        outcome: Outcome,
        kind: ViolationKind,
        index: u64,
    ) -> Counterexample {
        let original = schedule.clone();
        let (shrunk, outcome, shrink_runs) = shrink(
            &self.subject,
            &self.options,
            schedule,
            outcome,
            kind,
            self.shrink_budget,
        );
        // The search and the shrinking kept no trace: the first replay is the reference.
        let outcome = Outcome {
            trace: run(&self.subject, &self.options, &shrunk, Record::Kept).trace,
            ..outcome
        };
        if let Some(nondeterministic) = self.diverges(&shrunk, &outcome) {
            return nondeterministic;
        }
        let mut identical = 2;
        for _ in 2..REPLAYS {
            if run(&self.subject, &self.options, &shrunk, Record::Kept).trace == outcome.trace {
                identical += 1;
            }
        }
        let violation = outcome.violation.clone().unwrap_or_else(|| Violation {
            kind,
            detail: "the violation did not persist".to_owned(),
            at_us: 0,
            clients: Vec::new(),
            dumps: Vec::new(),
        });
        let mut found = self.counterexample(
            original,
            shrunk,
            shrink_runs,
            violation,
            outcome.trace,
            identical,
        );
        found.run = (index != u64::MAX).then_some(index);
        found
    }

    fn counterexample(
        &self,
        original: Schedule,
        schedule: Schedule,
        shrink_runs: u64,
        violation: Violation,
        trace: Trace,
        identical_replays: u32,
    ) -> Counterexample {
        Counterexample {
            workload: self.name.clone(),
            options: self.options.clone(),
            seed: self.seed,
            run: None,
            original,
            schedule,
            shrink_runs,
            violation,
            trace,
            identical_replays,
        }
    }
}

/// The nondeterminism violation two traces of one schedule show, if they differ.
fn divergence(first: &Trace, second: &Trace) -> Option<Violation> {
    if first == second {
        return None;
    }
    let at = first
        .iter()
        .zip(second)
        .position(|(x, y)| x != y)
        .unwrap_or(first.len().min(second.len()));
    let show = |trace: &Trace| {
        trace.get(at).map_or_else(
            || "(the run ended)".to_owned(),
            |e| e.to_string().trim().to_owned(),
        )
    };
    Some(Violation {
        kind: ViolationKind::Nondeterminism,
        detail: format!(
            "two runs of one schedule diverged at event {at}: first `{}`, then `{}`; the workload uses time, randomness or I/O that does not come from its context",
            show(first),
            show(second)
        ),
        at_us: first.get(at).or(second.get(at)).map_or(0, |e| e.at_us),
        clients: Vec::new(),
        dumps: Vec::new(),
    })
}

/// Run `index`'s seed: SplitMix64 of the exploration's seed and the index, so that
/// neighbouring runs are unrelated.
fn run_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
