//! One run's shared state: the trace, each client's pending faults, the open critical
//! sections with their validity, the keys clients hold, fences, the counters, and the
//! first violation. Client views and the context report to it; it checks exclusion,
//! ownership and fences as events happen, so a violation carries the nodes' keys of
//! that moment.

use std::collections::HashMap;
use std::sync::Arc;

use lock_core::Clock;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::client::ClientView;
use crate::options::Fencing;
use crate::step::{Fault, Step, When};
use crate::topology::{Deployment, Recovery};
use crate::trace::{Event, Trace, What};
use crate::violation::{Violation, ViolationKind};

/// Faults armed on one client, consumed by its next operations.
#[derive(Debug, Default)]
struct ClientFaults {
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

/// What a client's operation may start with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Started {
    /// A command must fail before it runs.
    pub(crate) refuse: bool,
    /// When it left the client (after a pause, before latency), virtual µs.
    pub(crate) sent_us: i64,
    /// How long the command takes to reach the server (the caller waits it out, so
    /// that a command dropped meanwhile counts as sent).
    pub(crate) latency_ms: u64,
}

/// A critical section a client is inside.
#[derive(Debug)]
struct Inside {
    resource: String,
    fence: Option<i64>,
    /// Virtual µs (since the start) until which the lock promised it is alone.
    deadline_us: Option<i64>,
}

/// A key a client declared it holds, with its token.
#[derive(Debug)]
struct Holding {
    key: Vec<u8>,
    token: Vec<u8>,
    /// Last seen holding the token: at which write epoch, and until when (virtual µs)
    /// its TTL keeps it there at least. Nothing can change it before either moves.
    verified: Option<(u64, i64)>,
}

#[derive(Debug)]
struct Client {
    faults: ClientFaults,
    ops: u32,
    clock: Clock,
    /// The client clock's offset from true time, µs: only client clock jumps move it.
    offset_us: i64,
    /// The highest offset the client's clock had in this cycle: a validity is read with
    /// it, so a clock that jumped back mid-cycle never lengthens what the holder is
    /// entitled to.
    max_offset_us: i64,
    /// Set when the client's cycle must be dropped. Only the client's own operation sets
    /// it, while its cycle is being polled, so the runner reads it when that poll returns
    /// pending: no waker is needed.
    cancel_requested: bool,
    /// Sections this client is inside.
    inside: Vec<Inside>,
    /// Keys it holds while inside them.
    holding: Vec<Holding>,
    /// The first key of its last command.
    last_key: Vec<u8>,
    /// Every operation's name and finish time, when recording (for anchored replays).
    op_log: Vec<(String, i64)>,
    /// Whether the client made progress (entered, wrote, counted) since the mark.
    progressed: bool,
}

impl Client {
    /// The deadline of the client's latest section with a validity, if it is inside one.
    fn deadline(&self) -> Option<i64> {
        self.inside.iter().rev().find_map(|i| i.deadline_us)
    }
}

/// A step waiting for an operation, and how many matching operations have passed.
#[derive(Debug)]
struct Waiting {
    step: Step,
    seen: u32,
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
    /// Steps that wait for a client's operation.
    waiting: Vec<Waiting>,
    /// Steps still waiting when faults stopped: they found no place in this run.
    unplaced: Vec<Step>,
    /// Timed node faults to end later: (virtual µs, recovery).
    recoveries: Vec<(i64, Recovery)>,
    violation: Option<Violation>,
    /// The first finding inherent to TTL locks (a holder past its validity): kept, but
    /// the run goes on looking for a violation of the lock's own.
    finding: Option<Violation>,
    /// Faults stopped: steps still due are ignored.
    healed: bool,
    /// The last key a client's command named: its slot is where a cluster's failover
    /// or migration strikes (hashed only then).
    last_key: Option<Vec<u8>>,
    /// Whether events are kept.
    recording: bool,
    /// Moves on every fault and every recovery: a holding verified at the current epoch,
    /// before its key's expiry and with no write to its key since, still holds.
    epoch: u64,
}

/// Shared by a run's client views, contexts and driver.
#[derive(Debug)]
pub(crate) struct Monitor {
    state: Mutex<State>,
    pub(crate) clock: Clock,
    start_us: i64,
    /// The run's seed, for [`Context::rng`](crate::Context::rng).
    pub(crate) seed: u64,
    pub(crate) deployment: Deployment,
    fencing: Fencing,
    /// Whether events are kept (see [`crate::run::Trace`]).
    pub(crate) recording: bool,
    /// Woken on the first violation: the run stops there.
    pub(crate) stop: Notify,
    /// Woken when a timed node fault was armed, so the driver schedules its end.
    pub(crate) recovery_armed: Notify,
    /// Each client's connections ([`Monitor::views`]).
    views: Mutex<Vec<Arc<[ClientView]>>>,
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
        seed: u64,
    ) -> Self {
        let start_us = clock.now_us();
        let clients = (0..clients)
            .map(|_| Client {
                faults: ClientFaults::default(),
                ops: 0,
                clock: clock.detached(),
                offset_us: 0,
                max_offset_us: 0,
                cancel_requested: false,
                inside: Vec::new(),
                holding: Vec::new(),
                last_key: Vec::new(),
                op_log: Vec::new(),
                progressed: false,
            })
            .collect();
        let waiting = steps
            .iter()
            .filter(|s| !matches!(s.when, When::At { .. }))
            .map(|step| Waiting {
                step: step.clone(),
                seen: 0,
            })
            .collect();
        Monitor {
            state: Mutex::new(State {
                trace: Vec::with_capacity(1024),
                clients,
                resources: HashMap::new(),
                counters: HashMap::new(),
                waiting,
                unplaced: Vec::new(),
                recoveries: Vec::new(),
                violation: None,
                finding: None,
                healed: false,
                last_key: None,
                recording,
                epoch: 0,
            }),
            clock,
            start_us,
            seed,
            deployment,
            fencing,
            recording,
            stop: Notify::new(),
            recovery_armed: Notify::new(),
            views: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn now_us(&self) -> i64 {
        self.clock.now_us() - self.start_us
    }

    /// `client`'s connections (one per Redlock node, else one), made once per run and
    /// shared by its cycles.
    pub(crate) fn views(self: &Arc<Self>, client: usize) -> Arc<[ClientView]> {
        let mut views = self.views.lock();
        if views.len() <= client {
            views.resize_with(client + 1, || Arc::from(Vec::new()));
        }
        if views[client].is_empty() {
            let backends = self.deployment.client_backends();
            let several = backends.len() > 1;
            views[client] = backends
                .into_iter()
                .enumerate()
                .map(|(node, backend)| {
                    ClientView::new(backend, self.clone(), client, several.then_some(node))
                })
                .collect();
        }
        views[client].clone()
    }

    /// Drops the views made for the run: they hold the monitor, which holds them.
    pub(crate) fn forget_views(&self) {
        self.views.lock().clear();
    }

    pub(crate) fn client_clock(&self, client: usize) -> Clock {
        self.state.lock().clients[client].clock.clone()
    }

    /// Whether `client`'s cycle must be dropped now, clearing the request.
    pub(crate) fn take_cancel_request(&self, client: usize) -> bool {
        std::mem::take(&mut self.state.lock().clients[client].cancel_requested)
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

    /// The time for a trace event: read only when the trace is kept (search runs keep
    /// none, and reading the paused clock is a measurable share of a run).
    fn trace_now(&self) -> i64 {
        if self.recording { self.now_us() } else { 0 }
    }

    pub(crate) fn record(&self, client: Option<usize>, what: What) {
        if !self.recording {
            return;
        }
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
        state.epoch += 1;
        let at_us = self.now_us();
        Self::push(state, at_us, None, What::Fault { fault: step.fault });
        let fault = step.fault;
        if let Some(client) = fault.client() {
            let Some(client) = state.clients.get_mut(client) else {
                return;
            };
            let faults = &mut client.faults;
            match fault {
                Fault::Pause { ms, .. } => faults.pause_ms += ms,
                Fault::SectionPause { ms, .. } => faults.section_pause_ms += ms,
                Fault::ClientClock { ms, .. } => {
                    client.clock.jump(ms);
                    client.offset_us = client.offset_us.saturating_add(ms.saturating_mul(1000));
                    client.max_offset_us = client.max_offset_us.max(client.offset_us);
                }
                Fault::LostReply { .. } => faults.lost += 1,
                Fault::Refuse { .. } => faults.refused += 1,
                Fault::Latency { ms, .. } => faults.latency_ms += ms,
                Fault::LateReply { ms, .. } => faults.late_ms += ms,
                Fault::KillConnection { .. } => faults.killed += 1,
                Fault::Cancel { .. } => faults.cancel = true,
                _ => {}
            }
        } else if let Some((ms, recovery)) = self
            .deployment
            .apply(&fault, state.last_key.as_deref().map(lock_core::hash_slot))
        {
            let due = at_us + i64::try_from(ms).unwrap_or(i64::MAX / 4) * 1000;
            state.recoveries.push((due, recovery));
            self.recovery_armed.notify_one();
        }
    }

    /// `client`'s command names `key` (its first key).
    pub(crate) fn touched(&self, client: usize, key: Option<&[u8]>) {
        let mut state = self.state.lock();
        let state = &mut *state;
        let last = &mut state.clients[client].last_key;
        last.clear();
        if let Some(key) = key {
            last.extend_from_slice(key);
            // Only a cluster's faults aim at the last key's slot.
            if self.deployment.is_cluster() {
                let global = state.last_key.get_or_insert_with(Vec::new);
                global.clear();
                global.extend_from_slice(key);
            }
        }
    }

    /// The earliest timed node fault still to end.
    pub(crate) fn next_recovery(&self) -> Option<i64> {
        let state = self.state.lock();
        state.recoveries.iter().map(|(due, _)| *due).min()
    }

    /// When the timed node faults still in force end (µs into the run), and what ends them.
    pub(crate) fn pending_recoveries(&self) -> Vec<(i64, Recovery)> {
        self.state.lock().recoveries.clone()
    }

    /// Ends every timed node fault that is due.
    pub(crate) fn recover_due(&self) {
        let now = self.now_us();
        let mut state = self.state.lock();
        state.epoch += 1;
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
                        node: recovery.node(),
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
        state.epoch += 1;
        state.healed = true;
        state.recoveries.clear();
        let unplaced: Vec<Step> = state.waiting.drain(..).map(|w| w.step).collect();
        state.unplaced = unplaced;
        for client in &mut state.clients {
            client.faults = ClientFaults::default();
            client.progressed = false;
        }
        self.deployment.heal_all();
        Self::push(&mut state, now, None, What::Healed);
    }

    /// What `client`'s next operation waits for, or whether it is cancelled. A pause
    /// between commands waits for a command; a pause in a section for an operation
    /// inside one. Commands also take latency and a refusal.
    pub(crate) fn before(&self, client: usize, command: bool) -> Before {
        let mut state = self.state.lock();
        let inside = !state.clients[client].inside.is_empty();
        let faults = &mut state.clients[client].faults;
        let mut before = Before {
            pause_ms: 0,
            latency_ms: 0,
            cancel: std::mem::take(&mut faults.cancel),
            refuse: false,
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

    /// Waits out what `client`'s next operation must wait for (a pause, a command's
    /// latency), and never returns when the client's cycle is cancelled there: the
    /// runner drops the cycle's future at this await point.
    pub(crate) async fn start_op(&self, client: usize, command: bool) -> Started {
        let before = self.before(client, command);
        if before.pause_ms > 0 {
            self.clock
                .sleep(std::time::Duration::from_millis(before.pause_ms))
                .await;
        }
        if before.cancel {
            self.state.lock().clients[client].cancel_requested = true;
            std::future::pending::<()>().await;
        }
        Started {
            refuse: before.refuse,
            // Read only for the trace: search runs keep none, and a clock read is a
            // measurable share of a run.
            sent_us: if self.recording { self.now_us() } else { 0 },
            latency_ms: before.latency_ms,
        }
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

    /// `client` finished a command named `kind`: record it, check who still owns what,
    /// count it, and fire the steps that wait for it.
    pub(crate) fn finish_op(&self, client: usize, kind: &str, wrote: bool, what: Option<What>) {
        let mut state = self.state.lock();
        if wrote {
            // A write to a held key makes its holders look again.
            let state = &mut *state;
            let key = std::mem::take(&mut state.clients[client].last_key);
            for c in &mut state.clients {
                for h in &mut c.holding {
                    if h.key == key {
                        h.verified = None;
                    }
                }
            }
            state.clients[client].last_key = key;
        }
        if let Some(what) = what {
            let at_us = self.now_us();
            Self::push(&mut state, at_us, Some(client), what);
        }
        self.check_ownership(&mut state, client, Some(kind));
        self.count_op(&mut state, client, kind);
    }

    /// `client` finished a marker named `kind` the monitor already recorded: check its
    /// holdings, count it.
    pub(crate) fn finish_marker(&self, client: usize, kind: &str) {
        let mut state = self.state.lock();
        self.check_ownership(&mut state, client, None);
        self.count_op(&mut state, client, kind);
    }

    fn count_op(&self, state: &mut State, client: usize, kind: &str) {
        let op = state.clients[client].ops;
        state.clients[client].ops += 1;
        if state.recording {
            let at_us = self.now_us();
            state.clients[client].op_log.push((kind.to_owned(), at_us));
        }
        let anchored_here = |w: &Waiting| match &w.step.when {
            When::After { client: c, op: o } => *c == client && *o == op,
            When::AfterNext {
                client: c, kind: k, ..
            } => *c == client && k == kind,
            When::At { .. } => false,
        };
        if !state.waiting.iter().any(anchored_here) {
            return;
        }
        let mut now = None;
        let mut due = Vec::new();
        state.waiting.retain_mut(|waiting| {
            if !anchored_here(waiting) {
                return true;
            }
            // An anchor by name also waits for its time and lets `nth` matches pass.
            let fire = match &waiting.step.when {
                When::AfterNext { from_us, nth, .. } => {
                    if *now.get_or_insert_with(|| self.now_us()) < *from_us {
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
        for step in due {
            self.apply_locked(state, &step);
        }
    }

    /// Lost ownership: a holder within its validity whose key no longer holds its
    /// token. Checked at each of the holder's operations and after every command of
    /// anyone. A holder whose own command changed its key let go of it (a release
    /// before leaving the section), which is no violation.
    fn check_ownership(&self, state: &mut State, actor: usize, command: Option<&str>) {
        if state.violation.is_some() || state.clients.iter().all(|c| c.holding.is_empty()) {
            return;
        }
        let mut now = None;
        for holder in 0..state.clients.len() {
            let c = &state.clients[holder];
            if c.holding.is_empty() {
                continue;
            }
            // Another client's command matters only when it named a held key (a write to
            // it has cleared the key's verification in `finish_op`).
            if holder != actor
                && (command.is_none()
                    || !c
                        .holding
                        .iter()
                        .any(|h| h.key == state.clients[actor].last_key))
            {
                continue;
            }
            let Some(deadline) = c.deadline() else {
                continue;
            };
            let epoch = state.epoch;
            // Every key seen holding its token since the last fault and write, and for
            // longer than the holder's validity: nothing can have changed it.
            if c.holding.iter().all(|h| {
                h.verified
                    .is_some_and(|(at, until)| at == epoch && until >= deadline)
            }) {
                continue;
            }
            let now = *now.get_or_insert_with(|| self.now_us());
            if now > deadline {
                continue;
            }
            let mut lost = None;
            let mut let_go = Vec::new();
            let mut verified = Vec::new();
            for (i, h) in c.holding.iter().enumerate() {
                if h.verified
                    .is_some_and(|(at, until)| at == epoch && now < until)
                {
                    continue;
                }
                match self.deployment.ownership(&h.key, &h.token) {
                    Ok(live_us) => {
                        // Redlock's nodes give no one expiry: checked again every time.
                        let until = live_us.map_or(i64::MIN, |us| now.saturating_add(us));
                        verified.push((i, (epoch, until)));
                    }
                    Err(_) if holder == actor && command.is_some() && c.last_key == h.key => {
                        let_go.push(i);
                    }
                    Err(what) => {
                        if lost.is_none() {
                            lost = Some((i, what));
                        }
                    }
                }
            }
            for (i, mark) in verified {
                state.clients[holder].holding[i].verified = Some(mark);
            }
            for i in let_go.into_iter().rev() {
                state.clients[holder].holding.remove(i);
            }
            if let Some((i, what)) = lost {
                let h = &state.clients[holder].holding[i];
                let by = match command {
                    Some(kind) if holder != actor => format!(" after client {actor}'s {kind}"),
                    _ => String::new(),
                };
                let detail = format!(
                    "client {holder} holds {:?} with token {:?} and is valid for {:.3} ms more, but the key {what}{by}",
                    String::from_utf8_lossy(&h.key),
                    String::from_utf8_lossy(&h.token[..h.token.len().min(40)]),
                    (deadline - now) as f64 / 1000.0,
                );
                let clients = if holder == actor {
                    vec![holder]
                } else {
                    vec![holder, actor]
                };
                self.violate(state, ViolationKind::LostOwnership, detail, clients);
                return;
            }
        }
    }

    /// The steps that found no place in this run (their anchor never came before
    /// faults stopped).
    pub(crate) fn unplaced(&self) -> Vec<Step> {
        let state = self.state.lock();
        let mut unplaced = state.unplaced.clone();
        unplaced.extend(state.waiting.iter().map(|w| w.step.clone()));
        unplaced
    }

    /// Every client's operations: name and finish time (when recording).
    pub(crate) fn op_logs(&self) -> Vec<Vec<(String, i64)>> {
        let mut state = self.state.lock();
        state
            .clients
            .iter_mut()
            .map(|c| std::mem::take(&mut c.op_log))
            .collect()
    }

    /// A cycle starts: the client's clock offset so far is its reference.
    pub(crate) fn cycle_started(&self, client: usize) {
        let mut state = self.state.lock();
        let c = &mut state.clients[client];
        c.max_offset_us = c.offset_us;
        c.holding.clear();
    }

    /// How many operations each client ran.
    pub(crate) fn ops(&self) -> Vec<u32> {
        self.state.lock().clients.iter().map(|c| c.ops).collect()
    }

    /// The client's cycle was dropped: it is inside nothing any more.
    pub(crate) fn cancelled(&self, client: usize) {
        let at_us = self.trace_now();
        let mut state = self.state.lock();
        state.clients[client].inside.clear();
        state.clients[client].holding.clear();
        Self::push(&mut state, at_us, Some(client), What::Cancelled);
    }

    // -- Checks -------------------------------------------------------------------------

    fn violate(&self, state: &mut State, kind: ViolationKind, detail: String, clients: Vec<usize>) {
        if state.violation.is_some() {
            return;
        }
        let inherent = kind.inherent_reason().map(str::to_owned);
        let violation = Violation {
            kind,
            detail,
            at_us: self.now_us(),
            clients,
            dumps: self.deployment.dumps(),
            inherent,
        };
        if violation.inherent.is_some() {
            // Every TTL lock does this: noted, and the run goes on for the lock's own bugs.
            if state.finding.is_none() {
                state.finding = Some(violation);
            }
            return;
        }
        state.violation = Some(violation);
        self.stop.notify_one();
    }

    /// Reports a violation found outside the monitor (end-of-run checks, liveness).
    pub(crate) fn report(&self, kind: ViolationKind, detail: String, clients: Vec<usize>) {
        let mut state = self.state.lock();
        self.violate(&mut state, kind, detail, clients);
    }

    /// The virtual µs (since the start) until which `client` may hold a lock that its
    /// clock says is valid until `valid_until_ms`: read with the highest offset its clock
    /// had this cycle.
    fn deadline(&self, state: &State, client: usize, valid_until_ms: i64) -> i64 {
        let offset = state.clients[client].max_offset_us;
        valid_until_ms.saturating_mul(1000) - offset - self.start_us
    }

    pub(crate) fn enter(
        &self,
        client: usize,
        resource: &str,
        fence: Option<i64>,
        valid_until_ms: Option<i64>,
    ) {
        let at_us = self.now_us();
        let mut state = self.state.lock();
        let state = &mut *state;
        let deadline_us = valid_until_ms.map(|v| self.deadline(state, client, v));
        Self::push(
            state,
            at_us,
            Some(client),
            What::Enter {
                resource: resource.to_owned(),
                fence,
                valid_for_us: deadline_us.map(|d| d - at_us),
            },
        );
        state.clients[client].progressed = true;
        match fence {
            None => {
                let other = state.clients.iter().enumerate().find_map(|(i, c)| {
                    let inside = c
                        .inside
                        .iter()
                        .find(|s| s.resource == resource && s.fence.is_none())?;
                    (i != client).then_some((i, inside.deadline_us))
                });
                if let Some((other, other_deadline)) = other {
                    let expired = |d: Option<i64>| d.is_some_and(|d| at_us > d);
                    if expired(other_deadline) {
                        let past = at_us - other_deadline.unwrap_or(at_us);
                        self.violate(
                            state,
                            ViolationKind::ExpiredHolder,
                            format!(
                                "client {client} entered {resource:?} while client {other} was still inside, {:.3} ms past the validity its lock promised",
                                past as f64 / 1000.0
                            ),
                            vec![other, client],
                        );
                    } else if expired(deadline_us) {
                        let past = at_us - deadline_us.unwrap_or(at_us);
                        self.violate(
                            state,
                            ViolationKind::ExpiredHolder,
                            format!(
                                "client {client} entered {resource:?} {:.3} ms past the validity its lock promised, while client {other} was inside",
                                past as f64 / 1000.0
                            ),
                            vec![other, client],
                        );
                    } else {
                        let valid = match other_deadline {
                            Some(d) => format!(
                                " within its validity ({:.3} ms left)",
                                (d - at_us) as f64 / 1000.0
                            ),
                            None => String::new(),
                        };
                        self.violate(
                            state,
                            ViolationKind::MutualExclusion,
                            format!(
                                "client {client} entered {resource:?} while client {other} was inside{valid}"
                            ),
                            vec![other, client],
                        );
                    }
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
        state.clients[client].inside.push(Inside {
            resource: resource.to_owned(),
            fence,
            deadline_us,
        });
    }

    /// The client's section on `resource` is valid until `valid_until_ms` now (its lock
    /// was extended).
    pub(crate) fn extend(&self, client: usize, resource: &str, valid_until_ms: i64) {
        let at_us = self.now_us();
        let mut state = self.state.lock();
        let state = &mut *state;
        let deadline = self.deadline(state, client, valid_until_ms);
        Self::push(
            state,
            at_us,
            Some(client),
            What::Extended {
                resource: resource.to_owned(),
                valid_for_us: deadline - at_us,
            },
        );
        if let Some(inside) = state.clients[client]
            .inside
            .iter_mut()
            .rev()
            .find(|i| i.resource == resource)
        {
            inside.deadline_us = Some(deadline);
        }
    }

    /// The client holds `key` with `token` until it leaves its sections.
    pub(crate) fn holds(&self, client: usize, key: &[u8], token: &[u8]) {
        let mut state = self.state.lock();
        if state.recording {
            let at_us = self.now_us();
            Self::push(
                &mut state,
                at_us,
                Some(client),
                What::Holds {
                    key: String::from_utf8_lossy(key).into_owned(),
                    token: String::from_utf8_lossy(token).into_owned(),
                },
            );
        }
        let holding = &mut state.clients[client].holding;
        holding.retain(|h| h.key != key);
        holding.push(Holding {
            key: key.to_vec(),
            token: token.to_vec(),
            verified: None,
        });
    }

    pub(crate) fn exit(&self, client: usize, resource: &str) {
        let at_us = self.trace_now();
        let mut state = self.state.lock();
        Self::push(
            &mut state,
            at_us,
            Some(client),
            What::Exit {
                resource: resource.to_owned(),
            },
        );
        let c = &mut state.clients[client];
        if let Some(i) = c.inside.iter().rposition(|s| s.resource == resource) {
            c.inside.remove(i);
        }
        if c.inside.is_empty() {
            c.holding.clear();
        }
    }

    pub(crate) fn write(
        &self,
        client: usize,
        resource: &str,
        fence: i64,
    ) -> Result<(), StaleWrite> {
        let at_us = self.trace_now();
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
                // The writer's token is in its lock key now, yet a higher fence came
                // first: a stale client took its fence out of lock order.
                let current = state.clients[client]
                    .holding
                    .iter()
                    .find(|h| self.deployment.ownership(&h.key, &h.token).is_ok());
                if let Some(h) = current
                    && by != client
                {
                    let detail = format!(
                        "{resource:?} refused fence {fence} from client {client}, whose token is in {:?} now, because client {by} wrote fence {highest} first: fence order disagrees with lock order",
                        String::from_utf8_lossy(&h.key)
                    );
                    self.violate(state, ViolationKind::FenceOrder, detail, vec![client, by]);
                }
                return Err(StaleWrite { fence, highest });
            }
        }
        Ok(())
    }

    pub(crate) fn counter_read(&self, client: usize, counter: &str) -> i64 {
        let at_us = self.trace_now();
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
        let at_us = self.trace_now();
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
        let at_us = self.trace_now();
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

    /// The run's verdict: its first violation of the lock's own, else its first finding
    /// inherent to TTL locks.
    pub(crate) fn violation(&self) -> Option<Violation> {
        let state = self.state.lock();
        state.violation.clone().or_else(|| state.finding.clone())
    }

    pub(crate) fn has_violation(&self) -> bool {
        self.state.lock().violation.is_some()
    }

    pub(crate) fn take_trace(&self) -> Trace {
        std::mem::take(&mut self.state.lock().trace)
    }
}
