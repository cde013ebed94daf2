//! [`Explorer`]: the builder of a search. It holds what the user asked for, and
//! validates it once, when the search starts, into a [`Plan`] the search runs: faults
//! resolved against the topology and the runner, nothing clamped in silence, the same
//! errors whichever runner makes the runs.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use lock_memory::ScriptRunner;

use crate::in_process::InProcess;
use crate::options::{Fencing, Options};
use crate::replay::{ReplayError, ReplayFile, Replayed};
use crate::report::Report;
use crate::runner::{Confirmation, Recording, Runner, RunnerError};
use crate::schedule::Schedule;
use crate::step::FaultKind;
use crate::topology::Topology;
use crate::trace::Trace;
use crate::violation::Violation;
use crate::workload::Workload;

/// The budget of a search given neither [`Explorer::runs`] nor [`Explorer::time`].
pub const DEFAULT_RUNS: u64 = 10_000;

/// How many times a counterexample is replayed: in process, to show it is
/// deterministic; with processes, to say how often it reproduces.
pub const REPLAYS: u32 = 10;

/// An exploration that cannot start, or a replay that cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ExploreError {
    /// The options ask for something the runner cannot do.
    #[error("{0}")]
    Unsupported(String),
    /// The options are inconsistent.
    #[error("{0}")]
    Invalid(String),
    /// A replay file could not be used.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The runner could not make a run.
    #[error(transparent)]
    Runner(#[from] RunnerError),
    /// Every client of the fault-free run failed: the code under test does not work,
    /// and no search would mean anything.
    #[error("every client of the fault-free run failed; the first said: {0}")]
    ClientsFailed(String),
    /// The fault-free run proved nothing: a harness error, or the machine stalled it.
    #[error("the fault-free run proved nothing: {0}")]
    Harness(String),
}

pub(crate) type Progress = Arc<dyn Fn(u64) + Send + Sync>;

/// Searches fault schedules for runs of lock code that break a property.
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
    runner: Arc<dyn Runner>,
    /// The in-process runner, when that is the one: [`Explorer::script_runner`] builds on it.
    in_process: Option<InProcess>,
    name: Option<String>,
    options: Options,
    /// The fault kinds asked for; `None`: the defaults of the topology and runner.
    faults: Option<Vec<FaultKind>>,
    seed: u64,
    runs: Option<u64>,
    time: Option<Duration>,
    threads: Option<usize>,
    determinism_runs: u64,
    shrink_budget: Option<u64>,
    keep_going: bool,
    progress: Option<Progress>,
    shard: Option<(u64, u64)>,
    confirmation: Confirmation,
    exhaustive: Option<usize>,
    guided: bool,
}

impl std::fmt::Debug for Explorer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Explorer")
            .field("runner", &self.runner.describe())
            .field("name", &self.name)
            .field("options", &self.options)
            .field("seed", &self.seed)
            .field("runs", &self.runs)
            .field("time", &self.time)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

/// A validated search: what [`Explorer::explore`] runs.
pub(crate) struct Plan {
    pub(crate) runner: Arc<dyn Runner>,
    pub(crate) name: Option<String>,
    pub(crate) options: Options,
    pub(crate) seed: u64,
    /// Runs of the budget (`u64::MAX` with a time alone).
    pub(crate) limit: u64,
    pub(crate) time: Option<Duration>,
    pub(crate) threads: usize,
    pub(crate) determinism_runs: u64,
    pub(crate) shrink_budget: u64,
    pub(crate) keep_going: bool,
    pub(crate) progress: Option<Progress>,
    pub(crate) shard: Option<(u64, u64)>,
    pub(crate) confirmation: Confirmation,
    /// Every schedule of at most this many steps, instead of random ones.
    pub(crate) exhaustive: Option<usize>,
    /// Random schedules steered by coverage feedback.
    pub(crate) guided: bool,
}

impl Plan {
    /// Whether the runner's runs are deterministic.
    pub(crate) fn deterministic(&self) -> bool {
        self.runner.deterministic()
    }

    /// Runs `schedule` under the plan's options.
    pub(crate) fn run(
        &self,
        schedule: &Schedule,
        recording: Recording,
    ) -> Result<crate::runner::Outcome, RunnerError> {
        self.runner.run(&self.options, schedule, recording)
    }
}

impl Explorer {
    /// An explorer of `workload` run in process, with the default [`Options`], seed 0,
    /// [`DEFAULT_RUNS`] runs, on every core.
    pub fn new(workload: impl Workload + 'static) -> Self {
        Self::from_arc(Arc::new(workload))
    }

    /// An explorer of a shared workload, run in process.
    pub fn from_arc(workload: Arc<dyn Workload>) -> Self {
        let in_process = InProcess::new(workload);
        let mut explorer = Self::with_runner(Arc::new(in_process.clone()));
        explorer.in_process = Some(in_process);
        explorer
    }

    /// An explorer whose runs `runner` makes: lock code as processes
    /// (`lock-wire-explore`), or anything else that turns a schedule into an outcome.
    pub fn with_runner(runner: Arc<dyn Runner>) -> Self {
        Explorer {
            runner,
            in_process: None,
            name: None,
            options: Options::default(),
            faults: None,
            seed: 0,
            runs: None,
            time: None,
            threads: None,
            determinism_runs: 3,
            shrink_budget: None,
            keep_going: false,
            progress: None,
            shard: None,
            confirmation: Confirmation::DEFAULT,
            exhaustive: None,
            guided: false,
        }
    }

    /// Every node runs the scripts that have no native body with `runner`: the
    /// workload's own Lua, exactly as a server runs it (`nxlock::memory::LuaScripts`,
    /// feature `lua`). Without one, such a script fails with
    /// [`ErrorKind::Unsupported`](lock_core::ErrorKind::Unsupported). Only an in-process
    /// explorer runs scripts on the double; on any other it does nothing.
    pub fn script_runner(mut self, runner: Arc<dyn ScriptRunner>) -> Self {
        if let Some(in_process) = self.in_process.take() {
            let in_process = in_process.script_runner(runner);
            self.runner = Arc::new(in_process.clone());
            self.in_process = Some(in_process);
        }
        self
    }

    /// Names the workload in reports and replay files (the CLI's built-in algorithms).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Replaces every option at once (its faults count as chosen).
    pub fn options(mut self, options: Options) -> Self {
        self.faults = Some(options.faults.clone());
        self.options = options;
        self
    }

    /// The options as set so far (the faults as asked for; the defaults are resolved
    /// when a search starts).
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

    /// The fault families in play. The default is [`FaultKind::defaults`] of the
    /// topology (every kind it supports that is not inherent), less those the runner
    /// cannot apply. Inherent kinds ([`FaultKind::is_inherent`]) are opt-in. A kind the
    /// topology or the runner cannot apply is refused when the search starts.
    pub fn faults(mut self, faults: &[FaultKind]) -> Self {
        self.faults = Some(faults.to_vec());
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

    /// Runs every schedule of at most `depth` steps (1 to 4) instead of random ones:
    /// each client's operations and the run's start as anchors, the fault kinds in
    /// play, and four length classes (see docs/EXPLORE.md, "Exhaustive search"). The
    /// report's [`Coverage`](crate::Coverage) counts the space and what was pruned; the
    /// search is clean only when every schedule ran or was pruned. Without
    /// [`Explorer::runs`] or [`Explorer::time`] the whole space is searched.
    pub fn exhaustive(mut self, depth: usize) -> Self {
        self.exhaustive = Some(depth);
        self
    }

    /// Steers the random search by coverage feedback: a run that reaches an abstract
    /// lock state no earlier run reached keeps its schedule, and most later schedules
    /// are mutations of kept ones (see docs/EXPLORE.md, "Coverage feedback"). The report's
    /// [`Coverage::Guided`](crate::Coverage::Guided) counts the states and says whether
    /// they stopped growing. A seed gives the same search on any number of threads.
    pub fn guided(mut self, guided: bool) -> Self {
        self.guided = guided;
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

    /// Whether connection set-up (HELLO, AUTH, CLIENT …, the ready checks) may anchor a
    /// fault ([`Options::anchor_setup`]); off by default.
    pub fn anchor_setup(mut self, anchor: bool) -> Self {
        self.options.anchor_setup = anchor;
        self
    }

    /// Whether `--exhaustive`'s levels 2 and deeper combine the middles of a client's
    /// repeated operations too ([`Options::every_repeat`]); off by default.
    pub fn every_repeat(mut self, every: bool) -> Self {
        self.options.every_repeat = every;
        self
    }

    /// The seed: the same seed gives the same schedules (and, in process, the same runs).
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

    /// Runs made at once: worker threads in process (default: every core), runs in
    /// flight with processes (default: the runner's). In process, the first violation
    /// in run order is reported whatever the count, so a seed finds the same
    /// counterexample on any machine once its budget is in runs.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// How many of the first runs are made twice to check that the workload is
    /// deterministic (default 3; the fault-free baseline always is). Runners whose runs
    /// are not deterministic skip the check.
    pub fn determinism_runs(mut self, runs: u64) -> Self {
        self.determinism_runs = runs;
        self
    }

    /// At most this many runs spent shrinking a finding (default: 2,000 in process, 100
    /// with processes, whose runs take real time).
    pub fn shrink_budget(mut self, runs: u64) -> Self {
        self.shrink_budget = Some(runs);
        self
    }

    /// How a finding of a runner whose runs are not deterministic is confirmed
    /// (default [`Confirmation::DEFAULT`]: 5 of 10 replays). The replays of a shrunk
    /// counterexample are as many.
    pub fn confirm(mut self, confirmation: Confirmation) -> Self {
        self.confirmation = confirmation;
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

    /// The runner that makes the runs.
    pub fn runner(&self) -> &Arc<dyn Runner> {
        &self.runner
    }

    /// The fault kinds a search would use: as asked, or the defaults of the topology
    /// that the runner can apply.
    pub fn resolved_faults(&self) -> Vec<FaultKind> {
        match &self.faults {
            Some(faults) => faults.clone(),
            None => FaultKind::defaults(&self.options.topology)
                .into_iter()
                .filter(|k| self.runner.applies(*k))
                .collect(),
        }
    }

    /// The options with their faults resolved, checked once: what every run of a
    /// search or a replay is made with.
    pub fn validated_options(&self) -> Result<Options, ExploreError> {
        let mut options = self.options.clone();
        options.faults = self.resolved_faults();
        validate(&options, self.runner.as_ref())?;
        Ok(options)
    }

    pub(crate) fn plan(&self) -> Result<Plan, ExploreError> {
        if let Some((k, n)) = self.shard
            && (n == 0 || k >= n)
        {
            return Err(ExploreError::Invalid(format!(
                "shard {k}/{n}: a shard is K/N with 0 <= K < N"
            )));
        }
        if self.runs == Some(0) {
            return Err(ExploreError::Invalid(
                "a search needs at least 1 run".to_owned(),
            ));
        }
        if self.threads == Some(0) {
            return Err(ExploreError::Invalid(
                "a search needs at least 1 thread".to_owned(),
            ));
        }
        if let Some(depth) = self.exhaustive
            && !(1..=crate::strategy::MAX_DEPTH).contains(&depth)
        {
            return Err(ExploreError::Invalid(format!(
                "--exhaustive takes a depth from 1 to {} (steps per schedule), not {depth}",
                crate::strategy::MAX_DEPTH
            )));
        }
        let c = self.confirmation;
        if c.needed == 0 || c.needed > c.replays {
            return Err(ExploreError::Invalid(format!(
                "a finding confirmed by {} of {} replays: the count must be between 1 and the replays",
                c.needed, c.replays
            )));
        }
        if self.guided && self.exhaustive.is_some() {
            return Err(ExploreError::Invalid(
                "--guided steers a sample; --exhaustive runs every schedule: choose one".to_owned(),
            ));
        }
        let mut options = self.validated_options()?;
        options.track_lock_states = self.guided;
        let deterministic = self.runner.deterministic();
        Ok(Plan {
            runner: self.runner.clone(),
            name: self.name.clone(),
            options,
            seed: self.seed,
            limit: match (self.runs, self.time, self.exhaustive) {
                (Some(runs), _, _) => runs,
                (None, Some(_), _) | (None, None, Some(_)) => u64::MAX,
                (None, None, None) => DEFAULT_RUNS,
            },
            time: self.time,
            threads: self.threads.unwrap_or_else(|| self.runner.parallelism()),
            determinism_runs: if deterministic {
                self.determinism_runs
            } else {
                0
            },
            shrink_budget: self
                .shrink_budget
                .unwrap_or(if deterministic { 2_000 } else { 100 }),
            keep_going: self.keep_going,
            progress: self.progress.clone(),
            shard: self.shard,
            confirmation: self.confirmation,
            exhaustive: self.exhaustive,
            guided: self.guided,
        })
    }

    /// Runs `schedule` once: its trace and violation, if any. A runner that cannot make
    /// the run gives an empty trace and no violation; [`Explorer::try_run_schedule`]
    /// says why.
    pub fn run_schedule(&self, schedule: &Schedule) -> (Trace, Option<Violation>) {
        match self.try_run_schedule(schedule) {
            Ok(outcome) => (outcome.trace, outcome.violation),
            Err(_) => (Vec::new(), None),
        }
    }

    /// Runs `schedule` once under the validated options: the whole outcome.
    pub fn try_run_schedule(
        &self,
        schedule: &Schedule,
    ) -> Result<crate::runner::Outcome, ExploreError> {
        let options = self.validated_options()?;
        Ok(self.runner.run(&options, schedule, Recording::Kept)?)
    }

    /// Runs `schedule` once and judges it as a search does: its violation, labelled
    /// inherent when it needs one of the schedule's inherent faults (the schedule without
    /// them is run again: once in process, up to 3 times with processes). A voided run is
    /// made again, up to 3 times; `None` when it breaks nothing (or stays voided).
    pub fn classify_schedule(
        &self,
        schedule: &Schedule,
    ) -> Result<Option<Violation>, ExploreError> {
        let plan = self.plan()?;
        for _ in 0..4 {
            let outcome = plan.run(schedule, Recording::Kept)?;
            if outcome.void.is_some() {
                continue;
            }
            let mut verdict = outcome.violation;
            crate::verdict::classify(&plan, schedule, &mut verdict)?;
            return Ok(verdict);
        }
        Ok(None)
    }

    /// Runs `steps` once with the options' clients and cycles: the whole outcome.
    pub fn run_steps(
        &self,
        steps: &[crate::step::Step],
    ) -> Result<crate::runner::Outcome, ExploreError> {
        self.try_run_schedule(&Schedule {
            clients: self.options.clients,
            cycles: self.options.cycles,
            token_seed: 0,
            steps: steps.to_vec(),
        })
    }

    /// Replays the file at `path` on this explorer's code under test, with the file's
    /// options: once in process, [`REPLAYS`] times (the confirmation's replays) with
    /// processes.
    pub fn replay(&self, path: impl AsRef<Path>) -> Result<Replayed, ExploreError> {
        let file = ReplayFile::load(path)?;
        self.replay_file(&file)
    }

    /// Replays `file` as [`Explorer::replay`] does.
    pub fn replay_file(&self, file: &ReplayFile) -> Result<Replayed, ExploreError> {
        validate(&file.options, self.runner.as_ref())?;
        let times = if self.runner.deterministic() {
            1
        } else {
            self.confirmation.replays
        };
        crate::replay::replay(self.runner.as_ref(), file, times)
    }

    /// Searches until the budget is spent or a violation of the lock's own is found
    /// (and, with processes, confirmed), then shrinks it and replays it.
    pub fn explore(&self) -> Result<Report, ExploreError> {
        let plan = self.plan()?;
        crate::search::explore(&plan)
    }
}

/// Checks `options` against their topology and `runner`.
pub(crate) fn validate(options: &Options, runner: &dyn Runner) -> Result<(), ExploreError> {
    let o = options;
    if let Some(kind) = o.faults.iter().find(|k| !o.topology.supports(**k)) {
        return Err(ExploreError::Unsupported(format!(
            "the fault '{kind}' does not apply to the {} topology",
            o.topology.name()
        )));
    }
    let cannot: Vec<String> = o
        .faults
        .iter()
        .filter(|k| !runner.applies(**k))
        .map(ToString::to_string)
        .collect();
    if !cannot.is_empty() {
        let applies: Vec<String> = FaultKind::ALL
            .into_iter()
            .filter(|k| runner.applies(*k) && o.topology.supports(*k))
            .map(|k| k.to_string())
            .collect();
        return Err(ExploreError::Unsupported(format!(
            "the fault '{}' cannot be applied {}; on the {} topology it applies {}",
            cannot.join("', '"),
            runner.place(),
            o.topology.name(),
            applies.join(", ")
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
    if o.max_steps == 0 {
        return Err(ExploreError::Invalid(
            "a schedule needs room for at least 1 step (--max-steps; to explore without faults, give no fault kinds)"
                .to_owned(),
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
