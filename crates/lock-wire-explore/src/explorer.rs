//! [`WireExplorer`]: the search over lock code run as processes. A fault-free run
//! first counts each client's operations; each run after draws a few steps anchored
//! after one of them; the first violation of the lock's own is replayed, shrunk, and
//! replayed again. Processes are not deterministic, so a finding is reported with how
//! often it reproduced.

use std::fmt;
use std::time::{Duration, Instant};

use std::sync::Arc;

use lock_explore::{FaultKind, Options, Step, Timeline, Topology, Violation, When, random_fault};

use crate::processes::Lanes;
use crate::replay::{WIRE_REPLAY_FORMAT, WireReplay};
use crate::run::{Outcome, RunError, run};

/// Every fault kind a run through serve can apply, where the topology has what it
/// acts on: a client's connection held, refused, killed, its reply late or lost; a
/// pause inside a critical section (held at the client's next marker there); a node's
/// clock jumping or drifting; a replicated set's (or a cluster shard's) primary failing
/// over (losing what its replicas had not received) or its replication stalling; a
/// Redlock node dying (restarted with or without its data) or black-holed; a cluster's
/// slot migrating to another shard.
pub const WIRE_FAULTS_ALL: [FaultKind; 13] = [
    FaultKind::Pause,
    FaultKind::SectionPause,
    FaultKind::NodeClock,
    FaultKind::Drift,
    FaultKind::LostReply,
    FaultKind::Refuse,
    FaultKind::Latency,
    FaultKind::KillConnection,
    FaultKind::Failover,
    FaultKind::Restart,
    FaultKind::RestartEmpty,
    FaultKind::Blackhole,
    FaultKind::Migrate,
];

/// The fault kinds a run through serve applies by default on `topology`: those it
/// can apply and that a correct lock survives (the inherent ones are opt-in), as
/// [`FaultKind::defaults`] for in-process exploration.
pub fn wire_faults(topology: Topology) -> Vec<FaultKind> {
    FaultKind::defaults(&topology)
        .into_iter()
        .filter(|k| WIRE_FAULTS_ALL.contains(k))
        .collect()
}

/// Explores a command run once per client against serve.
#[derive(Clone, Debug)]
pub struct WireExplorer {
    command: String,
    options: Options,
    runs: u64,
    seed: u64,
    replays: u32,
    /// Runs made at once, each on its own server and ports (`None`: see
    /// [`WireExplorer::parallel`]).
    parallel: Option<usize>,
    /// Whether each client's process serves many runs (see [`WireExplorer::long_lived`]).
    long_lived: bool,
}

/// A violation found, shrunk and replayed.
#[derive(Clone, Debug)]
pub struct WireFinding {
    /// What broke, in the run that reproduced the shrunk schedule.
    pub violation: Violation,
    /// The shrunk schedule.
    pub steps: Vec<Step>,
    /// How many steps the first schedule that broke it had.
    pub found_with: usize,
    /// The run (counted from 0, the fault-free one) that found it.
    pub run: u64,
    /// How many of the replays of the shrunk schedule broke it.
    pub reproduced: u32,
    /// How many replays were made.
    pub replays: u32,
    /// The run that reproduced it.
    pub outcome: Outcome,
}

/// What a search found.
#[derive(Clone, Debug)]
pub struct WireReport {
    /// The command explored.
    pub command: String,
    /// Runs made by the search (shrinking and replays not counted).
    pub runs: u64,
    /// How long the search took (shrinking and replays not counted).
    pub elapsed: Duration,
    /// The first violation of the lock's own, if any.
    pub finding: Option<WireFinding>,
    /// A finding inherent to TTL locks met on the way (never the end of a search).
    pub inherent: Option<Violation>,
    /// What a client wrote to stderr when it failed, first seen.
    pub client_failure: Option<String>,
    /// The options the runs were made with.
    pub options: Options,
}

impl WireReport {
    /// The finding's timeline as a self-contained HTML page (a lane per client and per
    /// node, from the server's trace), if there is one.
    pub fn timeline_html(&self) -> Option<String> {
        let found = self.finding.as_ref()?;
        Some(lock_explore::timeline_page(&Timeline {
            clients: self.options.clients,
            topology: self.options.topology,
            steps: &found.steps,
            violation: &found.violation,
            trace: &found.outcome.trace,
            text: &self.to_string(),
        }))
    }

    /// The finding as a replay file, if there is one.
    pub fn replay_file(&self) -> Option<WireReplay> {
        let found = self.finding.as_ref()?;
        Some(WireReplay {
            format: WIRE_REPLAY_FORMAT.to_owned(),
            command: self.command.clone(),
            topology: self.options.topology,
            clients: self.options.clients,
            cycles: self.options.cycles,
            ttl_ms: self.options.ttl_ms,
            steps: found.steps.clone(),
            violation: found.violation.to_string(),
        })
    }
}

impl WireExplorer {
    /// Explores `command` (a shell command line), started once per client with
    /// `NXLOCK_CLIENT`, `REDIS_URL`, `NXLOCK_CYCLES`, `NXLOCK_TTL_MS` and
    /// `NXLOCK_REPLICAS` in its environment: 3 clients of 4 cycles, a 200 ms TTL, 100
    /// runs, 10 replays.
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            options: Options {
                ttl_ms: 200,
                max_steps: 2,
                faults: wire_faults(Topology::Single),
                ..Options::default()
            },
            runs: 100,
            seed: 0,
            replays: 10,
            parallel: None,
            long_lived: false,
        }
    }

    /// What the clients connect to: `single` (the default), `replicated` (each client's
    /// one address reaches the primary and follows its failovers; `NXLOCK_REPLICAS`
    /// says how many replicas it has), `redlock` (each client gets one port per node,
    /// in `NXLOCK_NODES`) or `cluster` (`NXLOCK_NODES` holds the client's address of
    /// every shard, `REDIS_URL` the first). Resets the faults to [`wire_faults`] of that
    /// topology.
    pub fn topology(mut self, topology: Topology) -> Self {
        self.options.topology = topology;
        self.options.faults = wire_faults(topology);
        self
    }

    /// Each client's process is started once and serves run after run, told on its
    /// stdin where each run is (the protocol is in this crate's `processes` module and
    /// in EXPLORE.md): no interpreter start-up or imports per run.
    pub fn long_lived(mut self, long_lived: bool) -> Self {
        self.long_lived = long_lived;
        self
    }

    /// How many runs proceed at once (default: one per core, two per core with
    /// [`long_lived`](Self::long_lived)), each on its own server and ports. The
    /// schedules tried are the same for any number; which of them breaks the lock may
    /// not be, as with any run of processes.
    pub fn parallel(mut self, runs: usize) -> Self {
        self.parallel = Some(runs.max(1));
        self
    }

    /// How many processes run at once.
    pub fn clients(mut self, clients: usize) -> Self {
        self.options.clients = clients.max(1);
        self
    }

    /// How many cycles each runs (`NXLOCK_CYCLES`).
    pub fn cycles(mut self, cycles: u32) -> Self {
        self.options.cycles = cycles;
        self
    }

    /// The TTL the clients are told to use (`NXLOCK_TTL_MS`): the unit of pauses.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.options.ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        self
    }

    /// The fault kinds in play; those a run through serve cannot apply, or the
    /// topology has nothing for, are left out.
    pub fn faults(mut self, faults: &[FaultKind]) -> Self {
        let topology = self.options.topology;
        self.options.faults = faults
            .iter()
            .copied()
            .filter(|f| WIRE_FAULTS_ALL.contains(f) && topology.supports(*f))
            .collect();
        self
    }

    /// At most this many steps per schedule (default 2).
    pub fn max_steps(mut self, steps: usize) -> Self {
        self.options.max_steps = steps.max(1);
        self
    }

    /// The search's budget of runs.
    pub fn runs(mut self, runs: u64) -> Self {
        self.runs = runs;
        self
    }

    /// The seed the schedules are drawn from.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// How many times a finding is replayed.
    pub fn replays(mut self, replays: u32) -> Self {
        self.replays = replays.max(1);
        self
    }

    /// The options every run is made with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Runs the search on a runtime of its own.
    pub fn explore(&self) -> Result<WireReport, RunError> {
        runtime().block_on(self.search())
    }

    /// Runs `steps` once more.
    pub fn run_steps(&self, steps: &[Step]) -> Result<Outcome, RunError> {
        runtime().block_on(async {
            let lanes = self.lanes();
            run(&self.command, &self.options, steps, lanes.as_deref()).await
        })
    }

    /// Runs made at once: as set, or one per core; twice that with long-lived
    /// processes, which spend most of a run asleep (no interpreter to start).
    fn runs_at_once(&self) -> usize {
        self.parallel.unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            if self.long_lived { 2 * cores } else { cores }
        })
    }

    /// The lanes of long-lived processes for one search or replay, if long-lived.
    fn lanes(&self) -> Option<Arc<Lanes>> {
        self.long_lived
            .then(|| Lanes::new(&self.command, &self.options))
    }

    /// Replays a saved finding with this explorer's command, under the file's clients,
    /// cycles and TTL, [`WireExplorer::replays`] times: how many runs broke the lock (of
    /// its own), and the first that did.
    pub fn replay_file(&self, replay: &WireReplay) -> Result<(u32, Option<Outcome>), RunError> {
        let explorer = self
            .clone()
            .topology(replay.topology)
            .faults(&self.options.faults)
            .clients(replay.clients)
            .cycles(replay.cycles)
            .ttl(Duration::from_millis(replay.ttl_ms));
        explorer.replay(&replay.steps)
    }

    /// Replays `steps` [`WireExplorer::replays`] times: how many runs broke the lock
    /// (of its own), and the first that did.
    pub fn replay(&self, steps: &[Step]) -> Result<(u32, Option<Outcome>), RunError> {
        runtime().block_on(async {
            let lanes = self.lanes();
            self.replay_async(steps, self.replays, lanes.as_deref())
                .await
        })
    }

    async fn search(&self) -> Result<WireReport, RunError> {
        let started = Instant::now();
        let mut report = WireReport {
            command: self.command.clone(),
            runs: 0,
            elapsed: Duration::ZERO,
            finding: None,
            inherent: None,
            client_failure: None,
            options: self.options.clone(),
        };
        let lanes = self.lanes();
        let baseline = run(&self.command, &self.options, &[], lanes.as_deref()).await?;
        if baseline.failures.len() == self.options.clients {
            return Err(RunError::ClientsFailed(baseline.failures[0].clone()));
        }
        report.runs = 1;
        let ops = baseline.op_names.clone();
        let mut found = self.judge(&mut report, baseline, Vec::new(), 0);
        // A finding whose schedule breaks the lock in none of 3 more tries was a rare
        // interleaving of the processes, not something a user can replay: the search
        // goes on, and reports it only if it finds nothing better.
        let mut unreproduced = None;
        let mut rng = fastrand::Rng::with_seed(self.seed);
        // Runs are drawn in order and judged in order, and up to `runs_at_once` of them
        // proceed at once: a new one starts as soon as any ends, not when the slowest of
        // a batch does. They take their slots in the order drawn (each waits until the
        // one before has its slot), so that with long-lived processes the same run
        // lands on the same lane's process every time.
        let at_once = self.runs_at_once();
        let slots = Arc::new(tokio::sync::Semaphore::new(at_once));
        let mut pending = std::collections::VecDeque::new();
        let mut before: Option<tokio::sync::oneshot::Receiver<()>> = None;
        let mut drawn = 1;
        loop {
            if let Some((steps, ..)) = &found {
                // The search's time ends here: the tries that follow check the finding.
                report.elapsed = started.elapsed();
                if steps.is_empty() || self.replay_async(steps, 3, lanes.as_deref()).await?.0 > 0 {
                    break;
                }
                unreproduced.get_or_insert(found.take());
            }
            while pending.len() < 2 * at_once && drawn < self.runs {
                let steps = self.draw(&mut rng, &ops);
                let (command, options, lanes, slots) = (
                    self.command.clone(),
                    self.options.clone(),
                    lanes.clone(),
                    slots.clone(),
                );
                let (placed, next) = tokio::sync::oneshot::channel();
                let after = before.replace(next);
                let scheduled = steps.clone();
                let handle = tokio::spawn(async move {
                    if let Some(after) = after {
                        let _ = after.await;
                    }
                    // Closed once the search has what it needs: a run not begun is not.
                    let Ok(_slot) = slots.acquire_owned().await else {
                        return None;
                    };
                    let _ = placed.send(());
                    Some(run(&command, &options, &scheduled, lanes.as_deref()).await)
                });
                pending.push_back((drawn, steps, handle));
                drawn += 1;
            }
            let Some((index, steps, handle)) = pending.pop_front() else {
                break;
            };
            let Some(outcome) = handle.await.expect("a run does not panic") else {
                continue;
            };
            let outcome = outcome?;
            report.runs += 1;
            if found.is_none() {
                let outcome = self.classify(&steps, outcome, lanes.as_deref()).await?;
                found = self.judge(&mut report, outcome, steps, index);
            }
        }
        // Runs not begun never will; those under way end, and give their processes back.
        slots.close();
        for (_, _, handle) in pending {
            let _ = handle.await;
        }
        if found.is_none() {
            report.elapsed = started.elapsed();
        }
        let found = found.or(unreproduced.flatten());
        if let Some((steps, run_index, first)) = found {
            let found_with = steps.len();
            let shrunk = self.shrink(steps.clone(), lanes.as_deref()).await?;
            let (reproduced, outcome) = self
                .replay_async(&shrunk, self.replays, lanes.as_deref())
                .await?;
            // A shrunk schedule that never reproduced proves nothing: the schedule that
            // found it, and the run that did, are reported instead.
            let (steps, outcome) = match outcome {
                Some(outcome) => (shrunk, outcome),
                None => (steps, first),
            };
            if let Some(violation) = outcome.violation.clone() {
                report.finding = Some(WireFinding {
                    violation,
                    steps,
                    found_with,
                    run: run_index,
                    reproduced,
                    replays: self.replays,
                    outcome,
                });
            }
        }
        Ok(report)
    }

    /// Labels a violation of the lock's own in `outcome` as inherent when it needs the
    /// schedule's inherent faults (a server clock jump, a pause inside a section): the
    /// schedule without them breaks the lock in that way in none of 3 tries.
    async fn classify(
        &self,
        steps: &[Step],
        mut outcome: Outcome,
        lanes: Option<&Lanes>,
    ) -> Result<Outcome, RunError> {
        let Some(violation) = outcome.violation.as_ref().filter(|v| !v.is_inherent()) else {
            return Ok(outcome);
        };
        let kinds = Step::inherent_kinds(steps);
        if kinds.is_empty() {
            return Ok(outcome);
        }
        let kind = violation.kind;
        let without: Vec<Step> = steps
            .iter()
            .filter(|s| !s.fault.kind().is_inherent())
            .cloned()
            .collect();
        for _ in 0..3 {
            let again = run(&self.command, &self.options, &without, lanes).await?;
            if again
                .violation
                .is_some_and(|v| v.kind == kind && !v.is_inherent())
            {
                return Ok(outcome);
            }
        }
        if let Some(violation) = &mut outcome.violation {
            violation.needs_inherent(&kinds);
        }
        Ok(outcome)
    }

    /// Keeps what `outcome` says; `Some` when it broke the lock of its own.
    fn judge(
        &self,
        report: &mut WireReport,
        outcome: Outcome,
        steps: Vec<Step>,
        index: u64,
    ) -> Option<(Vec<Step>, u64, Outcome)> {
        if report.client_failure.is_none() {
            report.client_failure = outcome.failures.first().cloned();
        }
        match &outcome.violation {
            Some(v) if v.is_inherent() => {
                report.inherent.get_or_insert(v.clone());
                None
            }
            Some(_) => Some((steps, index, outcome)),
            None => None,
        }
    }

    /// One to `max_steps` steps, each after an operation of a random client, named
    /// (the `nth` of its name) so that a replay aims at the same moment even when the
    /// client's retries made it send more or fewer commands before.
    fn draw(&self, rng: &mut fastrand::Rng, ops: &[Vec<String>]) -> Vec<Step> {
        if self.options.faults.is_empty() {
            return Vec::new();
        }
        let count = rng.usize(1..=self.options.max_steps.max(1));
        (0..count)
            .map(|_| {
                let client = rng.usize(..self.options.clients);
                let when = match ops.get(client).filter(|names| !names.is_empty()) {
                    Some(names) => {
                        // A name first, then one of its operations: a client that
                        // retried SET fifty times is not fifty times likelier to pause
                        // there than after its one GET.
                        let mut kinds: Vec<&String> = names.iter().collect();
                        kinds.sort();
                        kinds.dedup();
                        let kind = kinds[rng.usize(..kinds.len())].clone();
                        let count = names.iter().filter(|n| **n == kind).count();
                        let nth = rng.usize(..count);
                        When::AfterNext {
                            client,
                            kind,
                            from_us: 0,
                            nth: u32::try_from(nth).unwrap_or(u32::MAX),
                        }
                    }
                    None => When::After { client, op: 0 },
                };
                let kind = self.options.faults[rng.usize(..self.options.faults.len())];
                let fault = random_fault(rng, kind, &self.options, client);
                Step { when, fault }
            })
            .collect()
    }

    /// Fewer steps, earlier anchors, then shorter pauses, as long as the smaller schedule still breaks
    /// the lock at least once in 3 tries.
    async fn shrink(
        &self,
        mut steps: Vec<Step>,
        lanes: Option<&Lanes>,
    ) -> Result<Vec<Step>, RunError> {
        let mut i = 0;
        while i < steps.len() && steps.len() > 1 {
            let mut fewer = steps.clone();
            fewer.remove(i);
            if self.replay_async(&fewer, 3, lanes).await?.0 > 0 {
                steps = fewer;
            } else {
                i += 1;
            }
        }
        // Earlier anchors: after a client's 1st GET rather than its 3rd, where the other
        // clients are surely still contending, so that the finding reproduces whoever
        // wins the first acquires.
        for i in 0..steps.len() {
            while let When::AfterNext { nth, .. } = steps[i].when {
                if nth == 0 {
                    break;
                }
                let mut earlier = steps.clone();
                if let When::AfterNext { nth, .. } = &mut earlier[i].when {
                    *nth /= 2;
                }
                if self.replay_async(&earlier, 3, lanes).await?.0 > 0 {
                    steps = earlier;
                } else {
                    break;
                }
            }
        }
        for i in 0..steps.len() {
            while let Some(ms) = steps[i].fault.length() {
                if ms < 2 * self.options.ttl_ms / 10 {
                    break;
                }
                let mut shorter = steps.clone();
                shorter[i].fault = shorter[i].fault.with_length(ms / 2);
                if self.replay_async(&shorter, 3, lanes).await?.0 > 0 {
                    steps = shorter;
                } else {
                    break;
                }
            }
        }
        Ok(steps)
    }

    async fn replay_async(
        &self,
        steps: &[Step],
        times: u32,
        lanes: Option<&Lanes>,
    ) -> Result<(u32, Option<Outcome>), RunError> {
        let mut reproduced = 0;
        let mut first = None;
        for _ in 0..times {
            let outcome = run(&self.command, &self.options, steps, lanes).await?;
            if outcome.violation.as_ref().is_some_and(|v| !v.is_inherent()) {
                reproduced += 1;
                first.get_or_insert(outcome);
            }
        }
        Ok((reproduced, first))
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime with I/O and time builds")
}

impl fmt::Display for WireReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let per_second = self.runs as f64 / self.elapsed.as_secs_f64().max(1e-9);
        match &self.finding {
            None => {
                writeln!(
                    f,
                    "no violation of the lock's own in {} runs of {:?} ({:.1} s, {:.1} runs/s)",
                    self.runs,
                    self.command,
                    self.elapsed.as_secs_f64(),
                    per_second
                )?;
            }
            Some(found) => {
                writeln!(f, "VIOLATION {}", found.violation)?;
                writeln!(
                    f,
                    "found by run {} of {:?}; shrunk from {} steps to {}; reproduced in {} of {} replays",
                    found.run,
                    self.command,
                    found.found_with,
                    found.steps.len(),
                    found.reproduced,
                    found.replays
                )?;
                writeln!(f, "\nSteps:")?;
                for step in &found.steps {
                    writeln!(f, "  {step}")?;
                }
                writeln!(f, "\nTrace (the server's):")?;
                for event in &found.outcome.trace {
                    writeln!(f, "  {event}")?;
                }
                writeln!(f, "\nKeys when it happened:")?;
                f.write_str(&found.violation.keys_text())?;
                writeln!(
                    f,
                    "\n{} runs ({:.1} s, {:.1} runs/s) before the violation",
                    self.runs,
                    self.elapsed.as_secs_f64(),
                    per_second
                )?;
            }
        }
        if let Some(inherent) = &self.inherent {
            writeln!(f, "inherent to TTL locks, seen on the way: {inherent}")?;
        }
        if let Some(failure) = &self.client_failure {
            writeln!(f, "a client exited with a failure: {failure}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lock_explore::Fault;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn steps_are_anchored_after_a_named_operation_the_client_made() {
        let explorer = WireExplorer::new("true").clients(2).max_steps(3);
        let ops = vec![
            names(&["SET", "SET", "SET", "HOLDS", "ENTER", "EXIT", "GET", "DEL"]),
            Vec::new(),
        ];
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..200 {
            let steps = explorer.draw(&mut rng, &ops);
            assert!((1..=3).contains(&steps.len()));
            for step in steps {
                match step.when {
                    When::AfterNext {
                        client: 0,
                        kind,
                        nth,
                        from_us: 0,
                    } => {
                        let seen = ops[0].iter().filter(|n| **n == kind).count();
                        assert!((nth as usize) < seen, "{kind} {nth}");
                    }
                    // A client with no operation is anchored at its first.
                    When::After { client: 1, op: 0 } => {}
                    other => panic!("{other:?}"),
                }
                assert!(!matches!(step.fault, Fault::SectionPause { .. }), "opt-in");
            }
        }
    }

    #[test]
    fn only_the_faults_serve_can_apply_are_kept_and_inherent_ones_are_opt_in() {
        let explorer = WireExplorer::new("true").faults(&[
            FaultKind::SectionPause,
            FaultKind::Failover,
            FaultKind::ClientClock,
            FaultKind::Blackhole,
        ]);
        // No failover on a single server, no process clock to jump, no Redlock node.
        assert_eq!(explorer.options().faults, [FaultKind::SectionPause]);
        let mut rng = fastrand::Rng::with_seed(1);
        let steps = explorer.draw(&mut rng, &vec![names(&["GET"]); 3]);
        assert!(
            steps.iter().all(
                |s| matches!(s.fault, Fault::SectionPause { ms, .. } if (1..=600).contains(&ms))
            )
        );
        assert!(!wire_faults(Topology::Single).contains(&FaultKind::SectionPause));
        let redlock = wire_faults(Topology::Redlock { nodes: 3 });
        assert!(redlock.contains(&FaultKind::Restart) && redlock.contains(&FaultKind::Blackhole));
        assert!(!redlock.contains(&FaultKind::RestartEmpty), "inherent");
        assert!(!redlock.contains(&FaultKind::Failover));
        let cluster = wire_faults(Topology::Cluster { shards: 3 });
        assert!(cluster.contains(&FaultKind::Migrate) && cluster.contains(&FaultKind::Failover));
        let replicated = wire_faults(Topology::Replicated { replicas: 2 });
        assert!(!replicated.contains(&FaultKind::Migrate));
        assert!(replicated.contains(&FaultKind::Failover));
        assert!(!replicated.contains(&FaultKind::Restart));
        assert!(
            !replicated.contains(&FaultKind::NodeClock),
            "one clock for the set"
        );
    }
}
