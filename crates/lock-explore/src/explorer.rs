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
use crate::step::{FaultKind, Step, When};
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
    /// How many runs broke each property of the lock's own ([`Explorer::keep_going`]
    /// counts them all; otherwise the search stops at the first).
    pub violations: BTreeMap<ViolationKind, u64>,
    /// How many runs gave each finding inherent to TTL locks (a holder past its
    /// validity, or a violation that needs an inherent fault). They never stop a search.
    pub inherent: BTreeMap<ViolationKind, u64>,
    /// The shard of the budget this search ran ([`Explorer::shard`]): `(k, n)`.
    pub shard: Option<(u64, u64)>,
    /// Wall-clock time the search took (shrinking and replays not counted).
    pub elapsed: Duration,
    /// The first violation of the lock's own, shrunk; `None` when no run had one.
    pub counterexample: Option<Counterexample>,
    /// When no run broke the lock itself: the first finding inherent to TTL locks,
    /// shrunk and labelled with its reason and remedy.
    pub inherent_finding: Option<Counterexample>,
}

impl Report {
    /// Runs per second of the search.
    pub fn runs_per_second(&self) -> f64 {
        self.runs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rate = self.runs_per_second();
        let seconds = self.elapsed.as_secs_f64();
        let shard = match self.shard {
            Some((k, n)) => format!(", shard {k}/{n}"),
            None => String::new(),
        };
        if let Some(found) = &self.counterexample {
            writeln!(f, "{found}")?;
            write!(
                f,
                "{} runs ({seconds:.1} s, {rate:.0} runs/s) before the violation; seed {}{shard}",
                self.runs, self.seed
            )?;
        } else {
            write!(
                f,
                "no violation of the lock's own in {} runs ({seconds:.1} s, {rate:.0} runs/s), seed {}{shard}",
                self.runs, self.seed
            )?;
        }
        if !self.inherent.is_empty() {
            let listed: Vec<String> = self
                .inherent
                .iter()
                .map(|(kind, n)| format!("{kind} {n}"))
                .collect();
            write!(
                f,
                "\nfindings inherent to TTL locks (not the lock's bugs): {}",
                listed.join(", ")
            )?;
        }
        if let Some(finding) = &self.inherent_finding {
            write!(f, "\n\nThe first inherent finding:\n{finding}")?;
        }
        Ok(())
    }
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
    /// Steps that could not be placed: the operation they are anchored to never came
    /// (the lock changed). A replay with unplaced steps proves little about a fix.
    pub unplaced: Vec<Step>,
}

impl Replayed {
    /// Whether the recorded violation happened again.
    pub fn reproduced(&self) -> bool {
        self.violation.as_ref().map(|v| v.kind) == Some(self.expected)
    }
}

type Progress = Arc<dyn Fn(u64) + Send + Sync>;

/// What the search made.
struct Searched {
    runs: u64,
    violations: BTreeMap<ViolationKind, u64>,
    inherent: BTreeMap<ViolationKind, u64>,
    /// The first violation of the lock's own in run order, with its schedule.
    found: Option<(u64, Schedule, Outcome)>,
    /// The first inherent finding in run order.
    inherent_found: Option<(u64, Schedule, Outcome)>,
}

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
    /// Whether the faults were chosen, or follow the topology's default.
    faults_chosen: bool,
    shard: Option<(u64, u64)>,
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
            faults_chosen: false,
            shard: None,
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
        self.faults_chosen = true;
        self
    }

    /// The options in force.
    pub fn current_options(&self) -> &Options {
        &self.options
    }

    /// What the clients talk to.
    pub fn topology(mut self, topology: Topology) -> Self {
        self.options.topology = topology;
        if !self.faults_chosen {
            self.options.faults = FaultKind::defaults(&topology);
        }
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

    /// The fault families in play. The default is [`FaultKind::defaults`] of the
    /// topology: every kind it supports that is not inherent. Inherent kinds
    /// ([`FaultKind::is_inherent`]) are opt-in.
    pub fn faults(mut self, faults: &[FaultKind]) -> Self {
        self.options.faults = faults.to_vec();
        self.faults_chosen = true;
        self
    }

    /// No pause is drawn longer than `cap`.
    pub fn max_pause(mut self, cap: Duration) -> Self {
        self.options.max_pause_ms = Some(u64::try_from(cap.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// No latency or late reply is drawn longer than `cap`.
    pub fn max_latency(mut self, cap: Duration) -> Self {
        self.options.max_latency_ms = Some(u64::try_from(cap.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// Runs only shard `k` of `n` of the budget: the runs whose index is `k` modulo `n`.
    /// `n` machines (a CI matrix, batch jobs), each with its own `k` and the same seed
    /// and budget, explore one budget together; [`ShardReport::merge`](crate::ShardReport::merge)
    /// combines their reports into the one a single machine would have made.
    pub fn shard(mut self, k: u64, n: u64) -> Self {
        self.shard = Some((k, n));
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
        if let Some((k, n)) = self.shard
            && (n == 0 || k >= n)
        {
            return Err(ExploreError::Invalid(format!(
                "shard {k}/{n}: a shard is K/N with 0 <= K < N"
            )));
        }
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
            unplaced: outcome.unplaced,
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
            return Ok(self.report(started, 1, Searched::new(), Some(found), None));
        }
        // A fault-free run that breaks the lock is the counterexample; one with only an
        // inherent finding goes on to the search.
        if let Some(violation) = &first.violation
            && !violation.is_inherent()
        {
            let kind = violation.kind;
            let found = self.conclude(empty.clone(), first.clone(), kind, false, u64::MAX);
            return Ok(self.report(started, 1, Searched::new(), Some(found), None));
        }
        let baseline = Baseline {
            ops: first.ops.clone(),
            duration_ms: u64::try_from(first.main_us / 1000).unwrap_or(0),
        };
        let mut searched = self.search(&baseline, started);
        // The search's time, without shrinking: what runs per second are measured by.
        let elapsed = started.elapsed();
        let found = searched
            .found
            .take()
            .and_then(|(index, schedule, outcome)| {
                let violation = outcome.violation.clone()?;
                Some(if violation.kind == ViolationKind::Nondeterminism {
                    self.counterexample(schedule.clone(), schedule, 0, violation, outcome.trace, 0)
                } else {
                    self.conclude(schedule, outcome, violation.kind, false, index)
                })
            });
        // Shrunk only when the lock showed no bug of its own: then it is the news.
        let finding = match &found {
            Some(_) => None,
            None => searched
                .inherent_found
                .take()
                .and_then(|(index, schedule, outcome)| {
                    let kind = outcome.violation.as_ref()?.kind;
                    Some(self.conclude(schedule, outcome, kind, true, index))
                }),
        };
        let mut report = self.report(started, searched.runs, searched, found, finding);
        report.elapsed = elapsed;
        Ok(report)
    }

    /// Labels a violation of `outcome` that needs one of the schedule's inherent faults
    /// (a server clock jump, a pause inside a section): without those steps, the same
    /// kind of violation no longer happens.
    fn classify(&self, schedule: &Schedule, verdict: &mut Option<Violation>) {
        let Some(violation) = verdict.as_ref() else {
            return;
        };
        if violation.is_inherent() || violation.kind == ViolationKind::Nondeterminism {
            return;
        }
        let kinds = Step::inherent_kinds(&schedule.steps);
        if kinds.is_empty() {
            return;
        }
        let mut without = schedule.clone();
        without.steps.retain(|s| !s.fault.kind().is_inherent());
        let again = run(&self.subject, &self.options, &without, Record::Dropped);
        if again
            .violation
            .is_some_and(|v| v.kind == violation.kind && !v.is_inherent())
        {
            return;
        }
        if let Some(violation) = verdict {
            violation.needs_inherent(&kinds);
        }
    }

    fn report(
        &self,
        started: Instant,
        runs: u64,
        searched: Searched,
        found: Option<Counterexample>,
        finding: Option<Counterexample>,
    ) -> Report {
        Report {
            seed: self.seed,
            runs,
            violations: searched.violations,
            inherent: searched.inherent,
            shard: self.shard,
            elapsed: started.elapsed(),
            counterexample: found,
            inherent_finding: finding,
        }
    }

    /// The search proper: runs in index order across threads; the lowest index that
    /// breaks a property wins.
    fn search(&self, baseline: &Baseline, started: Instant) -> Searched {
        let next = AtomicU64::new(0);
        let counts: Mutex<Searched> = Mutex::new(Searched::new());
        let done = AtomicU64::new(0);
        let lowest = AtomicU64::new(u64::MAX);
        let limit = match (self.runs, self.time) {
            (Some(runs), _) => runs,
            (None, Some(_)) => u64::MAX,
            (None, None) => DEFAULT_RUNS,
        };
        let (first, stride) = self.shard.unwrap_or((0, 1));
        let worker = || {
            loop {
                let taken = next.fetch_add(1, Ordering::Relaxed);
                let index = taken.saturating_mul(stride).saturating_add(first);
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
                self.classify(&schedule, &mut outcome.violation);
                let total = done.fetch_add(1, Ordering::Relaxed) + 1;
                if let Some(progress) = &self.progress
                    && total.is_multiple_of(64)
                {
                    progress(total);
                }
                let Some(violation) = &outcome.violation else {
                    continue;
                };
                let mut guard = counts.lock();
                let searched = &mut *guard;
                let inherent = violation.is_inherent();
                let (map, slot) = if inherent {
                    (&mut searched.inherent, &mut searched.inherent_found)
                } else {
                    (&mut searched.violations, &mut searched.found)
                };
                *map.entry(violation.kind).or_default() += 1;
                if slot.as_ref().is_none_or(|(i, _, _)| index < *i) {
                    *slot = Some((index, schedule, outcome));
                    if !inherent {
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
        let mut searched = counts.into_inner();
        searched.runs = runs;
        // An inherent finding after the first violation in run order depends on how far
        // the other threads got: it is dropped, so that the report is the same on any
        // machine.
        let cut = searched.found.as_ref().map(|(i, _, _)| *i);
        if let (Some(cut), false) = (cut, self.keep_going)
            && searched
                .inherent_found
                .as_ref()
                .is_some_and(|(i, _, _)| *i > cut)
        {
            searched.inherent_found = None;
        }
        searched
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

    /// Shrinks what run `index` found (a violation of `kind`, inherent or the lock's
    /// own), and replays the result.
    fn conclude(
        &self,
        schedule: Schedule,
        outcome: Outcome,
        kind: ViolationKind,
        inherent: bool,
        index: u64,
    ) -> Counterexample {
        let original = schedule.clone();
        let keeps = |candidate: &Schedule, outcome: &Outcome| {
            let mut verdict = outcome.violation.clone();
            self.classify(candidate, &mut verdict);
            verdict.is_some_and(|v| v.kind == kind && v.is_inherent() == inherent)
        };
        let (shrunk, outcome, shrink_runs) = shrink(
            &self.subject,
            &self.options,
            schedule,
            outcome,
            &keeps,
            self.shrink_budget,
        );
        // The search and the shrinking kept no trace: the first replay is the reference.
        let mut reference = run(&self.subject, &self.options, &shrunk, Record::Kept);
        self.classify(&shrunk, &mut reference.violation);
        let outcome = Outcome {
            violation: reference.violation.clone().or(outcome.violation),
            ..reference
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
            inherent: None,
        });
        let anchored = anchor(&shrunk.steps, &outcome.op_logs);
        let mut found = self.counterexample(
            original,
            shrunk,
            shrink_runs,
            violation,
            outcome.trace,
            identical,
        );
        found.anchored = anchored;
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
            anchored: Vec::new(),
            shard: self.shard,
        }
    }
}

impl Searched {
    fn new() -> Self {
        Searched {
            runs: 0,
            violations: BTreeMap::new(),
            inherent: BTreeMap::new(),
            found: None,
            inherent_found: None,
        }
    }
}

/// `steps` with each step placed after an operation anchored to that operation's name
/// and time instead of its index, from the operations of the run that showed them: a
/// replay on a lock that now sends one command more or fewer still aims at the same
/// moment.
fn anchor(steps: &[Step], logs: &[Vec<(String, i64)>]) -> Vec<Step> {
    steps
        .iter()
        .map(|step| {
            let When::After { client, op } = step.when else {
                return step.clone();
            };
            let Some(log) = logs.get(client) else {
                return step.clone();
            };
            let Some((kind, at_us)) = log.get(op as usize) else {
                return step.clone();
            };
            // Operations of the same name finishing at the same instant before it.
            let nth = log[..op as usize]
                .iter()
                .filter(|(k, t)| k == kind && t == at_us)
                .count();
            Step {
                when: When::AfterNext {
                    client,
                    kind: kind.clone(),
                    from_us: *at_us,
                    nth: u32::try_from(nth).unwrap_or(u32::MAX),
                },
                fault: step.fault,
            }
        })
        .collect()
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
            "two runs of one schedule first differ at event {at}: first `{}`, then `{}`; the workload uses time, randomness or I/O that does not come from its context (use ctx.rng() and ctx.clock())",
            show(first),
            show(second)
        ),
        at_us: first.get(at).or(second.get(at)).map_or(0, |e| e.at_us),
        clients: Vec::new(),
        dumps: Vec::new(),
        inherent: None,
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
