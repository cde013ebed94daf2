//! One run's shared state: the trace, each client's pending faults, the open critical
//! sections and fences, the counters, and the first violation. Client views and the
//! context report to it; it checks exclusion and fences as events happen, so a
//! violation carries the nodes' keys of that moment.

use std::collections::HashMap;
use std::sync::Arc;

use lock_core::Clock;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::options::Fencing;
use crate::step::{Fault, Step, When};
use crate::topology::{Deployment, Recovery};
use crate::trace::{Event, Trace, What};
use crate::violation::{Violation, ViolationKind};

/// Faults armed on one client, consumed by its next operations.
#[derive(Debug, Default)]
struct ClientFaults {
    pause_ms: u64,
    latency_ms: u64,
    late_ms: u64,
    lost: u32,
    refused: u32,
    killed: u32,
    cancel: bool,
}

/// What a client's next operation must do before it starts.
#[derive(Debug, Default)]
struct Before {
    delay_ms: u64,
    cancel: bool,
    refuse: bool,
}

/// What happens to a command's reply.
#[derive(Debug, Default)]
pub(crate) struct After {
    pub(crate) late_ms: u64,
    pub(crate) lost: bool,
    pub(crate) killed: bool,
}

#[derive(Debug)]
struct Client {
    faults: ClientFaults,
    ops: u32,
    clock: Clock,
    /// Woken when the client's cycle must be dropped.
    cancelled: Arc<Notify>,
    /// Resources this client is inside, with the fence it entered with.
    inside: Vec<(String, Option<i64>)>,
    /// Whether the client made progress (entered, wrote, counted) since the mark.
    progressed: bool,
}

#[derive(Debug, Default)]
struct Resource {
    /// Every fence a client entered with, and the first client that did.
    entered: HashMap<i64, usize>,
    /// Highest fence the resource accepted a write with, and from whom.
    highest_accepted: Option<(i64, usize)>,
}

#[derive(Debug, Default)]
struct Counter {
    value: i64,
    sure: u64,
    unsure: u64,
}

#[derive(Debug)]
struct State {
    trace: Trace,
    clients: Vec<Client>,
    resources: HashMap<String, Resource>,
    counters: HashMap<String, Counter>,
    /// Steps that wait for a client's operation, by (client, op).
    waiting: Vec<Step>,
    /// Timed node faults to end later: (virtual µs, recovery).
    recoveries: Vec<(i64, Recovery)>,
    violation: Option<Violation>,
    /// Faults stopped: steps still due are ignored.
    healed: bool,
    /// The slot of the last key a client's command named: where a cluster's failover or
    /// migration strikes.
    last_slot: Option<u16>,
    /// Whether events are kept.
    recording: bool,
}

/// Shared by a run's client views, contexts and driver.
#[derive(Debug)]
pub(crate) struct Monitor {
    state: Mutex<State>,
    pub(crate) clock: Clock,
    start_us: i64,
    pub(crate) deployment: Deployment,
    fencing: Fencing,
    /// Whether events are kept (see [`crate::run::Trace`]).
    pub(crate) recording: bool,
    /// Woken on the first violation: the run stops there.
    pub(crate) stop: Notify,
    /// Woken when a timed node fault was armed, so the driver schedules its end.
    pub(crate) recovery_armed: Notify,
}

/// A write refused because the resource has accepted a newer (or equal) fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("stale fence {fence}: the resource has accepted fence {highest}")]
pub struct StaleWrite {
    /// The fence the write carried.
    pub fence: i64,
    /// The highest the resource accepted.
    pub highest: i64,
}

impl Monitor {
    pub(crate) fn new(
        clock: Clock,
        deployment: Deployment,
        clients: usize,
        steps: &[Step],
        fencing: Fencing,
        recording: bool,
    ) -> Self {
        let start_us = clock.now_us();
        let clients = (0..clients)
            .map(|_| Client {
                faults: ClientFaults::default(),
                ops: 0,
                clock: clock.detached(),
                cancelled: Arc::new(Notify::new()),
                inside: Vec::new(),
                progressed: false,
            })
            .collect();
        let waiting = steps
            .iter()
            .filter(|s| matches!(s.when, When::After { .. }))
            .copied()
            .collect();
        Monitor {
            state: Mutex::new(State {
                trace: Vec::with_capacity(1024),
                clients,
                resources: HashMap::new(),
                counters: HashMap::new(),
                waiting,
                recoveries: Vec::new(),
                violation: None,
                healed: false,
                last_slot: None,
                recording,
            }),
            clock,
            start_us,
            deployment,
            fencing,
            recording,
            stop: Notify::new(),
            recovery_armed: Notify::new(),
        }
    }

    pub(crate) fn now_us(&self) -> i64 {
        self.clock.now_us() - self.start_us
    }

    pub(crate) fn client_clock(&self, client: usize) -> Clock {
        self.state.lock().clients[client].clock.clone()
    }

    pub(crate) fn cancellation(&self, client: usize) -> Arc<Notify> {
        self.state.lock().clients[client].cancelled.clone()
    }

    fn push(state: &mut State, at_us: i64, client: Option<usize>, what: What) {
        if !state.recording {
            return;
        }
        state.trace.push(Event {
            at_us,
            client,
            what,
        });
    }

    pub(crate) fn record(&self, client: Option<usize>, what: What) {
        let at_us = self.now_us();
        Self::push(&mut self.state.lock(), at_us, client, what);
    }

    // -- Faults -------------------------------------------------------------------------

    /// Applies `step` now (its time has come).
    pub(crate) fn apply(&self, step: &Step) {
        let mut state = self.state.lock();
        self.apply_locked(&mut state, step);
    }

    fn apply_locked(&self, state: &mut State, step: &Step) {
        if state.healed {
            return;
        }
        let at_us = self.now_us();
        Self::push(state, at_us, None, What::Fault { step: *step });
        let fault = step.fault;
        if let Some(client) = fault.client() {
            let Some(client) = state.clients.get_mut(client) else {
                return;
            };
            let faults = &mut client.faults;
            match fault {
                Fault::Pause { ms, .. } => faults.pause_ms += ms,
                Fault::Skew { ms, .. } => client.clock.jump(ms),
                Fault::LostReply { .. } => faults.lost += 1,
                Fault::Refuse { .. } => faults.refused += 1,
                Fault::Latency { ms, .. } => faults.latency_ms += ms,
                Fault::LateReply { ms, .. } => faults.late_ms += ms,
                Fault::KillConnection { .. } => faults.killed += 1,
                Fault::Cancel { .. } => faults.cancel = true,
                _ => {}
            }
        } else if let Some((ms, recovery)) = self.deployment.apply(&fault, state.last_slot) {
            let due = at_us + i64::try_from(ms).unwrap_or(i64::MAX / 4) * 1000;
            state.recoveries.push((due, recovery));
            self.recovery_armed.notify_one();
        }
    }

    /// A client's command names `key` (its first key).
    pub(crate) fn touched(&self, key: Option<&[u8]>) {
        if let Some(key) = key {
            self.state.lock().last_slot = Some(lock_core::hash_slot(key));
        }
    }

    /// The earliest timed node fault still to end.
    pub(crate) fn next_recovery(&self) -> Option<i64> {
        let state = self.state.lock();
        state.recoveries.iter().map(|(due, _)| *due).min()
    }

    /// Ends every timed node fault that is due.
    pub(crate) fn recover_due(&self) {
        let now = self.now_us();
        let mut state = self.state.lock();
        let (due, later): (Vec<_>, Vec<_>) =
            state.recoveries.drain(..).partition(|(at, _)| *at <= now);
        state.recoveries = later;
        for (_, recovery) in due {
            match self.deployment.recover(recovery) {
                // A drift goes on: its next step is due later, and is no event.
                Some((ms, next)) => {
                    let at = now + i64::try_from(ms).unwrap_or(i64::MAX / 4) * 1000;
                    state.recoveries.push((at, next));
                }
                None => Self::push(
                    &mut state,
                    now,
                    None,
                    What::Recovered {
                        what: format!("{recovery:?}"),
                    },
                ),
            }
        }
    }

    /// Faults stop: every client's pending faults go, every node heals.
    pub(crate) fn heal(&self) {
        let now = self.now_us();
        let mut state = self.state.lock();
        state.healed = true;
        state.recoveries.clear();
        state.waiting.clear();
        for client in &mut state.clients {
            client.faults = ClientFaults::default();
            client.progressed = false;
        }
        self.deployment.heal_all();
        Self::push(&mut state, now, None, What::Healed);
    }

    /// What `client`'s next operation waits for, or whether it is cancelled. Commands
    /// also take a refusal.
    fn before(&self, client: usize, command: bool) -> Before {
        let mut state = self.state.lock();
        let faults = &mut state.clients[client].faults;
        let mut before = Before {
            delay_ms: std::mem::take(&mut faults.pause_ms),
            cancel: std::mem::take(&mut faults.cancel),
            refuse: false,
        };
        if command {
            before.delay_ms += std::mem::take(&mut faults.latency_ms);
            if faults.refused > 0 {
                faults.refused -= 1;
                before.refuse = true;
            }
        }
        before
    }

    /// Waits out what `client`'s next operation must wait for (a pause, a command's
    /// latency), and never returns when the client's cycle is cancelled there: the
    /// runner drops the cycle's future at this await point. Whether a command must be
    /// refused.
    pub(crate) async fn start_op(&self, client: usize, command: bool) -> bool {
        let before = self.before(client, command);
        if before.delay_ms > 0 {
            self.clock
                .sleep(std::time::Duration::from_millis(before.delay_ms))
                .await;
        }
        if before.cancel {
            self.cancellation(client).notify_one();
            std::future::pending::<()>().await;
        }
        before.refuse
    }

    /// What happens to the reply of `client`'s command that just ran.
    pub(crate) fn after(&self, client: usize) -> After {
        let mut state = self.state.lock();
        let faults = &mut state.clients[client].faults;
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

    /// `client` finished an operation: record it, count it, and fire the steps that
    /// wait for it.
    pub(crate) fn finish_op(&self, client: usize, what: What) {
        let at_us = self.now_us();
        let mut state = self.state.lock();
        Self::push(&mut state, at_us, Some(client), what);
        self.count_op(&mut state, client);
    }

    /// `client` finished a marker the monitor already recorded: count it.
    pub(crate) fn finish_marker(&self, client: usize) {
        let mut state = self.state.lock();
        self.count_op(&mut state, client);
    }

    fn count_op(&self, state: &mut State, client: usize) {
        let op = state.clients[client].ops;
        state.clients[client].ops += 1;
        if state.waiting.is_empty() {
            return;
        }
        let due: Vec<Step> = state
            .waiting
            .iter()
            .filter(|s| s.when == When::After { client, op })
            .copied()
            .collect();
        if due.is_empty() {
            return;
        }
        state
            .waiting
            .retain(|s| s.when != When::After { client, op });
        for step in due {
            self.apply_locked(state, &step);
        }
    }

    /// How many operations each client ran.
    pub(crate) fn ops(&self) -> Vec<u32> {
        self.state.lock().clients.iter().map(|c| c.ops).collect()
    }

    /// The client's cycle was dropped: it is inside nothing any more.
    pub(crate) fn cancelled(&self, client: usize) {
        let at_us = self.now_us();
        let mut state = self.state.lock();
        state.clients[client].inside.clear();
        Self::push(&mut state, at_us, Some(client), What::Cancelled);
    }

    // -- Checks -------------------------------------------------------------------------

    fn violate(&self, state: &mut State, kind: ViolationKind, detail: String, clients: Vec<usize>) {
        if state.violation.is_some() {
            return;
        }
        state.violation = Some(Violation {
            kind,
            detail,
            at_us: self.now_us(),
            clients,
            dumps: self.deployment.dumps(),
        });
        self.stop.notify_one();
    }

    /// Reports a violation found outside the monitor (end-of-run checks, liveness).
    pub(crate) fn report(&self, kind: ViolationKind, detail: String, clients: Vec<usize>) {
        let mut state = self.state.lock();
        self.violate(&mut state, kind, detail, clients);
    }

    pub(crate) fn enter(&self, client: usize, resource: &str, fence: Option<i64>) {
        let at_us = self.now_us();
        let mut state = self.state.lock();
        let state = &mut *state;
        Self::push(
            state,
            at_us,
            Some(client),
            What::Enter {
                resource: resource.to_owned(),
                fence,
            },
        );
        state.clients[client].progressed = true;
        match fence {
            None => {
                let others: Vec<usize> = state
                    .clients
                    .iter()
                    .enumerate()
                    .filter(|(i, c)| {
                        *i != client && c.inside.iter().any(|(r, f)| r == resource && f.is_none())
                    })
                    .map(|(i, _)| i)
                    .collect();
                if let Some(&other) = others.first() {
                    self.violate(
                        state,
                        ViolationKind::MutualExclusion,
                        format!(
                            "client {client} entered {resource:?} while client {other} was inside"
                        ),
                        vec![other, client],
                    );
                }
            }
            Some(fence) => {
                let entry = state.resources.entry(resource.to_owned()).or_default();
                // A paused holder may enter late with an old fence (the resource refuses
                // its writes); what must never happen is one fence for two holders.
                match entry.entered.get(&fence) {
                    Some(&first) if first != client => self.violate(
                        state,
                        ViolationKind::FenceWentBack,
                        format!(
                            "client {client} entered {resource:?} with fence {fence}, which client {first} had entered with: the fence counter went back"
                        ),
                        vec![first, client],
                    ),
                    Some(_) => {}
                    None => {
                        entry.entered.insert(fence, client);
                    }
                }
            }
        }
        state.clients[client]
            .inside
            .push((resource.to_owned(), fence));
    }

    pub(crate) fn exit(&self, client: usize, resource: &str) {
        let at_us = self.now_us();
        let mut state = self.state.lock();
        Self::push(
            &mut state,
            at_us,
            Some(client),
            What::Exit {
                resource: resource.to_owned(),
            },
        );
        let inside = &mut state.clients[client].inside;
        if let Some(i) = inside.iter().rposition(|(r, _)| r == resource) {
            inside.remove(i);
        }
    }

    pub(crate) fn write(
        &self,
        client: usize,
        resource: &str,
        fence: i64,
    ) -> Result<(), StaleWrite> {
        let at_us = self.now_us();
        let mut state = self.state.lock();
        let state = &mut *state;
        state.clients[client].progressed = true;
        let entry = state.resources.entry(resource.to_owned()).or_default();
        let previous = entry.highest_accepted;
        let accepted = match (previous, self.fencing) {
            (None, _) => true,
            (Some((highest, _)), Fencing::Strict) => fence > highest,
            (Some((highest, _)), Fencing::Lenient) => fence >= highest,
            (Some(_), Fencing::None) => true,
        };
        if accepted && previous.is_none_or(|(highest, _)| fence > highest) {
            entry.highest_accepted = Some((fence, client));
        }
        Self::push(
            state,
            at_us,
            Some(client),
            What::Write {
                resource: resource.to_owned(),
                fence,
                accepted,
            },
        );
        if let Some((highest, by)) = previous {
            if accepted && fence <= highest && by != client {
                self.violate(
                    state,
                    ViolationKind::StaleFence,
                    format!(
                        "{resource:?} accepted fence {fence} from client {client} after accepting fence {highest} from client {by}"
                    ),
                    vec![by, client],
                );
            }
            if !accepted {
                return Err(StaleWrite { fence, highest });
            }
        }
        Ok(())
    }

    pub(crate) fn counter_read(&self, client: usize, counter: &str) -> i64 {
        let at_us = self.now_us();
        let mut state = self.state.lock();
        let value = state.counters.get(counter).map_or(0, |c| c.value);
        Self::push(
            &mut state,
            at_us,
            Some(client),
            What::CounterRead {
                counter: counter.to_owned(),
                value,
            },
        );
        value
    }

    pub(crate) fn counter_write(&self, client: usize, counter: &str, value: i64) {
        let at_us = self.now_us();
        let mut state = self.state.lock();
        state.counters.entry(counter.to_owned()).or_default().value = value;
        Self::push(
            &mut state,
            at_us,
            Some(client),
            What::CounterWrite {
                counter: counter.to_owned(),
                value,
            },
        );
    }

    /// One increment ended: applied (`Some(true)`), not applied (`Some(false)`), or
    /// unknown (`None`).
    pub(crate) fn counted(&self, client: usize, counter: &str, applied: Option<bool>) {
        let at_us = self.now_us();
        let mut state = self.state.lock();
        if applied == Some(true) {
            state.clients[client].progressed = true;
        }
        let entry = state.counters.entry(counter.to_owned()).or_default();
        match applied {
            Some(true) => entry.sure += 1,
            Some(false) => {}
            None => entry.unsure += 1,
        }
        Self::push(
            &mut state,
            at_us,
            Some(client),
            What::Counted {
                counter: counter.to_owned(),
                applied,
            },
        );
    }

    /// Whether `client` made progress since faults stopped.
    pub(crate) fn progressed(&self, client: usize) -> bool {
        self.state.lock().clients[client].progressed
    }

    /// Counters: name, the model's value, sure and unsure increments.
    pub(crate) fn counters(&self) -> Vec<(String, i64, u64, u64)> {
        let state = self.state.lock();
        let mut counters: Vec<_> = state
            .counters
            .iter()
            .map(|(name, c)| (name.clone(), c.value, c.sure, c.unsure))
            .collect();
        counters.sort();
        counters
    }

    pub(crate) fn violation(&self) -> Option<Violation> {
        self.state.lock().violation.clone()
    }

    pub(crate) fn has_violation(&self) -> bool {
        self.state.lock().violation.is_some()
    }

    pub(crate) fn take_trace(&self) -> Trace {
        std::mem::take(&mut self.state.lock().trace)
    }
}
