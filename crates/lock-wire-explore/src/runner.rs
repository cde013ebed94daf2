//! [`WireRunner`]: the explorer's runner for lock code run as processes. Each run is a
//! fresh deployment of `nxlock serve` on fresh loopback ports, and the command once per
//! client (or a long-lived process per client, told of each run on its stdin). Runs
//! are not deterministic: the explorer confirms a finding by replaying it, and voids a
//! run the machine disturbed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use lock_explore::{
    Explorer, FaultKind, Options, Outcome, Recording, Runner, RunnerError, Schedule,
};
use parking_lot::Mutex;

use crate::processes::Lanes;

/// Every fault kind a run through serve can apply, where the topology has what it
/// acts on: a client's connection held, refused, killed, its reply late or lost; a
/// pause inside a critical section (held at the client's next marker there); a node's
/// clock jumping or drifting; a replicated set's (or a cluster shard's) primary failing
/// over (losing what its replicas had not received) or its replication stalling; a
/// Redlock node dying (restarted with or without its data) or black-holed; a cluster's
/// slot migrating to another shard. A process's own clock, a script cut short inside
/// the server, and a cancelled cycle are not among them.
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

/// The TTL a search of processes uses unless told otherwise: short, since clients sleep
/// in real time.
pub const DEFAULT_TTL: Duration = Duration::from_millis(200);

/// Long-lived processes started with the same environment.
type LaneKey = (usize, u64, usize);

/// Runs a shell command once per client against serve.
#[derive(Debug)]
pub struct WireRunner {
    command: String,
    long_lived: bool,
    in_flight: Option<usize>,
    startup: Duration,
    runtime: tokio::runtime::Runtime,
    lanes: Mutex<HashMap<LaneKey, Arc<Lanes>>>,
}

impl WireRunner {
    /// Runs `command` (a shell command line), started once per client with
    /// `NXLOCK_CLIENT`, `NXLOCK_CLIENTS`, `REDIS_URL`, `NXLOCK_NODES`, `NXLOCK_CYCLES`,
    /// `NXLOCK_TTL_MS` and `NXLOCK_REPLICAS` in its environment.
    pub fn new(command: impl Into<String>) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime with I/O and time builds");
        Self {
            command: command.into(),
            long_lived: false,
            in_flight: None,
            startup: crate::run::STARTUP,
            runtime,
            lanes: Mutex::new(HashMap::new()),
        }
    }

    /// Each client's process is started once and serves run after run, told on its
    /// stdin where each run is (the protocol is in EXPLORE.md, and the client helpers
    /// speak it): no interpreter start-up or imports per run.
    pub fn long_lived(mut self, long_lived: bool) -> Self {
        self.long_lived = long_lived;
        self
    }

    /// How many runs proceed at once by default (each on its own server and ports):
    /// one per core, eight per core with long-lived processes, which sleep through most
    /// of a run. [`Explorer::threads`] overrides it.
    pub fn in_flight(mut self, runs: usize) -> Self {
        self.in_flight = Some(runs);
        self
    }

    /// How long a client's process may take to send its first command (default 10 s):
    /// one that sends none by then is a harness error, and the run proves nothing.
    pub fn startup(mut self, bound: Duration) -> Self {
        self.startup = bound;
        self
    }

    /// The lanes of long-lived processes started with `options` and `schedule`'s shape.
    fn lanes(&self, options: &Options, schedule: &Schedule) -> Option<Arc<Lanes>> {
        if !self.long_lived {
            return None;
        }
        let key = (
            schedule.clients,
            options.ttl_ms,
            options.topology.replicas(),
        );
        Some(
            self.lanes
                .lock()
                .entry(key)
                .or_insert_with(|| Lanes::new(&self.command))
                .clone(),
        )
    }
}

impl Runner for WireRunner {
    fn describe(&self) -> String {
        self.command.clone()
    }

    fn command(&self) -> Option<String> {
        Some(self.command.clone())
    }

    fn deterministic(&self) -> bool {
        false
    }

    fn applies(&self, kind: FaultKind) -> bool {
        WIRE_FAULTS_ALL.contains(&kind)
    }

    fn place(&self) -> &'static str {
        "through serve"
    }

    fn parallelism(&self) -> usize {
        self.in_flight.unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            if self.long_lived { 8 * cores } else { cores }
        })
    }

    fn run(
        &self,
        options: &Options,
        schedule: &Schedule,
        _recording: Recording,
    ) -> Result<Outcome, RunnerError> {
        let lanes = self.lanes(options, schedule);
        self.runtime.handle().block_on(crate::run::run(
            &self.command,
            options,
            schedule,
            lanes.as_deref(),
            self.startup,
        ))
    }
}

/// An explorer of `command` run as processes against serve: 3 clients of 4 cycles, a
/// 200 ms TTL, at most 2 steps per schedule, 100 runs, every fault of the topology that
/// serve applies and a correct lock survives.
pub fn explorer(command: impl Into<String>) -> Explorer {
    wire(WireRunner::new(command))
}

/// [`explorer`] of a runner set up as wanted (long-lived, runs in flight).
pub fn wire(runner: WireRunner) -> Explorer {
    Explorer::with_runner(Arc::new(runner))
        .ttl(DEFAULT_TTL)
        .max_steps(2)
        .runs(100)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lock_explore::Topology;

    #[test]
    fn the_default_faults_are_those_serve_applies_and_inherent_ones_are_opt_in() {
        let faults = |topology| explorer("true").topology(topology).resolved_faults();
        let single = faults(Topology::Single);
        assert!(!single.contains(&FaultKind::SectionPause), "opt-in");
        assert!(
            !single.contains(&FaultKind::ClientClock),
            "no process clock to jump"
        );
        assert!(single.contains(&FaultKind::Pause) && single.contains(&FaultKind::LostReply));
        let redlock = faults(Topology::Redlock { nodes: 3 });
        assert!(redlock.contains(&FaultKind::Restart) && redlock.contains(&FaultKind::Blackhole));
        assert!(!redlock.contains(&FaultKind::RestartEmpty), "inherent");
        assert!(!redlock.contains(&FaultKind::Failover));
        let cluster = faults(Topology::Cluster { shards: 3 });
        assert!(cluster.contains(&FaultKind::Migrate) && cluster.contains(&FaultKind::Failover));
        let replicated = faults(Topology::Replicated { replicas: 2 });
        assert!(!replicated.contains(&FaultKind::Migrate));
        assert!(replicated.contains(&FaultKind::Failover));
        assert!(
            !replicated.contains(&FaultKind::NodeClock),
            "one clock for the set"
        );
    }

    #[test]
    fn a_fault_serve_cannot_apply_is_refused_not_dropped() {
        let refused = explorer("true")
            .faults(&[FaultKind::Pause, FaultKind::ClientClock])
            .explore()
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("'client-clock' cannot be applied through serve"),
            "{refused}"
        );
        let topology = explorer("true")
            .faults(&[FaultKind::Failover])
            .explore()
            .unwrap_err()
            .to_string();
        assert!(
            topology.contains("'failover' does not apply to the single topology"),
            "{topology}"
        );
        // The topology set after the faults changes nothing of them.
        let later = explorer("true")
            .faults(&[FaultKind::Failover])
            .topology(Topology::Replicated { replicas: 2 });
        assert_eq!(later.resolved_faults(), [FaultKind::Failover]);
        let zero = explorer("true")
            .clients(0)
            .explore()
            .unwrap_err()
            .to_string();
        assert!(zero.contains("at least 1 client"), "{zero}");
    }
}
