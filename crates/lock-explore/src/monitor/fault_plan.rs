//! The fault plan of one run: the steps still waiting for their anchor, the faults armed
//! on each client and consumed by its next operations, and the timed node faults still
//! to end. It decides what happens to an operation; it checks nothing.

use crate::step::{Fault, Step, When};
use crate::topology::Recovery;

/// Faults armed on one client, consumed by its next operations.
#[derive(Debug, Default)]
pub(crate) struct ClientFaults {
    pause_ms: u64,
    section_pause_ms: u64,
    latency_ms: u64,
    late_ms: u64,
    lost: u32,
    refused: u32,
    killed: u32,
    cancel: bool,
}

/// What a client's next operation must do before it starts.
#[derive(Debug, Default)]
pub(crate) struct Before {
    pub(crate) pause_ms: u64,
    pub(crate) latency_ms: u64,
    pub(crate) cancel: bool,
    pub(crate) refuse: bool,
}

/// What happens to a command's reply.
#[derive(Debug, Default)]
pub(crate) struct After {
    pub(crate) late_ms: u64,
    pub(crate) lost: bool,
    pub(crate) killed: bool,
}

/// A step waiting for an operation, and how many matching operations have passed.
#[derive(Debug)]
struct Waiting {
    step: Step,
    seen: u32,
}

/// The steps and faults of one run.
#[derive(Debug)]
pub(crate) struct FaultPlan {
    /// Per client.
    clients: Vec<ClientFaults>,
    /// Steps that wait for a client's operation.
    waiting: Vec<Waiting>,
    /// Steps still waiting when faults stopped: they found no place in this run.
    unplaced: Vec<Step>,
    /// Timed node faults to end later: (µs into the run, recovery).
    pub(crate) recoveries: Vec<(i64, Recovery)>,
    /// Faults stopped: steps still due are ignored.
    pub(crate) healed: bool,
}

impl FaultPlan {
    pub(crate) fn new(clients: usize, steps: &[Step]) -> Self {
        let waiting = steps
            .iter()
            .filter(|s| !matches!(s.when, When::At { .. }))
            .map(|step| Waiting {
                step: step.clone(),
                seen: 0,
            })
            .collect();
        FaultPlan {
            clients: (0..clients).map(|_| ClientFaults::default()).collect(),
            waiting,
            unplaced: Vec::new(),
            recoveries: Vec::new(),
            healed: false,
        }
    }

    /// Arms a client fault on `client` (a clock jump is the caller's: it moves a clock).
    pub(crate) fn arm(&mut self, client: usize, fault: Fault) {
        let Some(faults) = self.clients.get_mut(client) else {
            return;
        };
        match fault {
            Fault::Pause { ms, .. } => faults.pause_ms += ms,
            Fault::SectionPause { ms, .. } => faults.section_pause_ms += ms,
            Fault::LostReply { .. } => faults.lost += 1,
            Fault::Refuse { .. } => faults.refused += 1,
            Fault::Latency { ms, .. } => faults.latency_ms += ms,
            Fault::LateReply { ms, .. } => faults.late_ms += ms,
            Fault::KillConnection { .. } => faults.killed += 1,
            Fault::Cancel { .. } => faults.cancel = true,
            _ => {}
        }
    }

    /// What `client`'s next operation waits for. A pause between commands waits for a
    /// command; a pause in a section for an operation inside one. Commands also take
    /// latency and a refusal. A cancellation is taken only by an operation of the
    /// client's own cycle (`own_cycle`): a lock's background task (a watchdog) leaves it
    /// for the cycle.
    pub(crate) fn before(
        &mut self,
        client: usize,
        inside: bool,
        command: bool,
        own_cycle: bool,
    ) -> Before {
        let faults = &mut self.clients[client];
        let mut before = Before {
            cancel: own_cycle && std::mem::take(&mut faults.cancel),
            ..Before::default()
        };
        if inside {
            before.pause_ms += std::mem::take(&mut faults.section_pause_ms);
        }
        if command {
            before.pause_ms += std::mem::take(&mut faults.pause_ms);
            before.latency_ms = std::mem::take(&mut faults.latency_ms);
            if faults.refused > 0 {
                faults.refused -= 1;
                before.refuse = true;
            }
        }
        before
    }

    /// What happens to the reply of `client`'s command that just ran.
    pub(crate) fn after(&mut self, client: usize) -> After {
        let faults = &mut self.clients[client];
        let mut after = After {
            late_ms: std::mem::take(&mut faults.late_ms),
            ..After::default()
        };
        if faults.lost > 0 {
            faults.lost -= 1;
            after.lost = true;
        } else if faults.killed > 0 {
            faults.killed -= 1;
            after.killed = true;
        }
        after
    }

    /// Whether some step waits for an operation of `client` (cheap: most operations
    /// anchor nothing).
    fn waits_for(&self, client: usize, op: u32, kind: &str) -> bool {
        self.waiting
            .iter()
            .any(|w| anchored_here(w, client, op, kind))
    }

    /// `client` finished its operation number `op`, named `kind`, at `now_us`: the steps
    /// it fires, in the order they were planned. An anchor by name also waits for its
    /// time and lets `nth` matches pass.
    pub(crate) fn fired(
        &mut self,
        client: usize,
        op: u32,
        kind: &str,
        now_us: impl Fn() -> i64,
    ) -> Vec<Step> {
        if !self.waits_for(client, op, kind) {
            return Vec::new();
        }
        let mut now = None;
        let mut due = Vec::new();
        self.waiting.retain_mut(|waiting| {
            if !anchored_here(waiting, client, op, kind) {
                return true;
            }
            let fire = match &waiting.step.when {
                When::AfterNext { from_us, nth, .. } => {
                    if *now.get_or_insert_with(&now_us) < *from_us {
                        false
                    } else if waiting.seen == *nth {
                        true
                    } else {
                        waiting.seen += 1;
                        false
                    }
                }
                _ => true,
            };
            if fire {
                due.push(waiting.step.clone());
            }
            !fire
        });
        due
    }

    /// Faults stop: every client's pending faults go, and the steps still waiting are
    /// unplaced.
    pub(crate) fn heal(&mut self) {
        self.healed = true;
        self.recoveries.clear();
        let unplaced: Vec<Step> = self.waiting.drain(..).map(|w| w.step).collect();
        self.unplaced = unplaced;
        for faults in &mut self.clients {
            *faults = ClientFaults::default();
        }
    }

    /// The steps that found no place in this run (their anchor never came).
    pub(crate) fn unplaced(&self) -> Vec<Step> {
        let mut unplaced = self.unplaced.clone();
        unplaced.extend(self.waiting.iter().map(|w| w.step.clone()));
        unplaced
    }
}

fn anchored_here(waiting: &Waiting, client: usize, op: u32, kind: &str) -> bool {
    match &waiting.step.when {
        When::After { client: c, op: o } => *c == client && *o == op,
        When::AfterNext {
            client: c, kind: k, ..
        } => *c == client && k == kind,
        When::At { .. } => false,
    }
}
