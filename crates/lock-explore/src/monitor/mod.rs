//! One run's shared state, and the checkers fed by its events. Client views and the
//! context (or, for processes, [`ExternalRun`](crate::ExternalRun)) report every
//! operation here; the [`FaultPlan`] says what happens to it, the [`Recorder`] keeps it,
//! and the checkers (exclusion in `sections`, `ownership`, `fences`, `counters`) judge
//! it as it happens, so a violation carries the nodes' keys of that moment.
//!
//! Everything sits behind one lock: a run is one thread (in process), or a server whose
//! connections report one operation at a time.

mod counters;
mod fault_plan;
mod fences;
mod lock_states;
mod ownership;
mod recorder;
mod sections;

use std::sync::atomic::{AtomicUsize, Ordering};

use lock_core::Clock;
use parking_lot::Mutex;
use tokio::sync::Notify;

pub(crate) use fault_plan::{After, Before};
pub use fences::StaleWrite;

use crate::options::Options;
use crate::step::{Fault, Step};
use crate::topology::{Deployment, Recovery};
use crate::trace::{Trace, What};
use crate::violation::{Violation, ViolationKind};
use counters::Counters;
use fault_plan::FaultPlan;
use fences::Fences;
pub(crate) use lock_states::without_others;
use lock_states::{KeyState, LockState, Phase, Reached, operation};
use ownership::Holding;
use recorder::Recorder;
use sections::{Claim, Inside};

/// What a checker found: the property, in a sentence, and the clients involved.
#[derive(Debug)]
pub(crate) struct Finding {
    pub(crate) kind: ViolationKind,
    pub(crate) detail: String,
    pub(crate) clients: Vec<usize>,
    /// How much of the validity it was judged against was left, µs.
    pub(crate) margin_us: Option<i64>,
}

/// How long a client says its lock keeps it alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Validity {
    /// Until this Unix ms on the client's own clock (in process, where client clocks
    /// jump).
    UntilMs(i64),
    /// For this many µs from now (a process's marker, already turned from its host's
    /// monotonic clock).
    ForUs(i64),
}

/// What a client's operation may start with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Started {
    /// A command must fail before it runs.
    pub(crate) refuse: bool,
    /// When it left the client (after a pause, before latency), µs into the run.
    pub(crate) sent_us: i64,
    /// How long the command takes to reach the server (the caller waits it out, so
    /// that a command dropped meanwhile counts as sent).
    pub(crate) latency_ms: u64,
}

/// One client as the checkers see it.
#[derive(Debug)]
pub(crate) struct Client {
    clock: Clock,
    /// The client clock's offset from true time, µs: only client clock jumps move it.
    offset_us: i64,
    /// The highest offset the client's clock had in this cycle: a validity is read with
    /// it, so a clock that jumped back mid-cycle never lengthens what the holder is
    /// entitled to.
    max_offset_us: i64,
    /// Set when the client's cycle must be dropped. Only an operation of the client's
    /// own cycle sets it, while that cycle is being polled, so the runner reads it when
    /// that poll returns pending: no waker is needed.
    cancel_requested: bool,
    /// Sections this client is inside.
    pub(crate) inside: Vec<Inside>,
    /// Keys it holds while inside them.
    pub(crate) holding: Vec<Holding>,
    /// The first key of its last command.
    pub(crate) last_key: Vec<u8>,
    /// Whether the client made progress (entered, wrote, counted) since the mark.
    progressed: bool,
    /// Whether it sent a checking marker in this run at all.
    checked: bool,
    /// How many generators [`Context::rng`](crate::Context::rng) handed out this cycle.
    rng_draws: u64,
    /// Whether it left a section this cycle (for its abstract phase).
    exited: bool,
    /// Its last operation's name, hashed (for the abstract states).
    last_op: u16,
}

impl Client {
    /// The deadline of the client's latest section with a validity, if it is inside one.
    pub(crate) fn deadline(&self) -> Option<i64> {
        self.inside.iter().rev().find_map(|i| i.deadline_us)
    }
}

/// Keys the checkers must know about beyond the options': declared during the run by
/// the lock code itself (`NXLOCK.PERMANENT`, `NXLOCK.COUNTER`).
#[derive(Debug, Default)]
struct Declared {
    /// Key prefixes that may outlive the run without a TTL.
    permanent: Vec<String>,
    /// Counters kept in a key: (counter, key).
    counter_keys: Vec<(String, String)>,
}

/// What the timeline needs of a lock key on one node: who held it, and until when.
#[derive(Debug, Clone, PartialEq, Eq)]
struct KeySeen {
    value: Option<Vec<u8>>,
    expires_us: Option<i64>,
}

#[derive(Debug)]
struct State {
    clients: Vec<Client>,
    plan: FaultPlan,
    recorder: Recorder,
    fences: Fences,
    counters: Counters,
    declared: Declared,
    /// Every key a client declared it holds, and what each node showed of it last
    /// (recorded runs only: the timeline draws who held it).
    watched: Vec<(Vec<u8>, Vec<KeySeen>)>,
    violation: Option<Violation>,
    /// The first finding inherent to TTL locks (a holder past its validity): kept, but
    /// the run goes on looking for a violation of the lock's own.
    finding: Option<Violation>,
    /// The last key a client's command named: its slot is where a cluster's failover
    /// or migration strikes (hashed only then).
    last_key: Option<Vec<u8>>,
    /// Moves on every fault and every recovery: a holding verified at the current epoch,
    /// before its key's expiry and with no write to its key since, still holds.
    epoch: u64,
    /// The first key a client declared it holds: the lock key of the abstract states.
    lock_key: Option<Vec<u8>>,
    /// The abstract lock states reached so far.
    reached: Reached,
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
    /// Whether events are kept.
    pub(crate) recording: bool,
    /// Whether the abstract lock states are collected.
    track_states: bool,
    /// The client whose cycle is being polled right now (`usize::MAX`: none): only its
    /// own operations take a cancellation.
    polling: AtomicUsize,
    /// Woken on the first violation: the run stops there.
    pub(crate) stop: Notify,
    /// Woken when a timed node fault was armed, so the driver schedules its end.
    pub(crate) recovery_armed: Notify,
}

impl Monitor {
    pub(crate) fn new(
        clock: Clock,
        deployment: Deployment,
        clients: usize,
        steps: &[Step],
        options: &Options,
        recording: bool,
        seed: u64,
    ) -> Self {
        let start_us = clock.now_us();
        let clients = (0..clients)
            .map(|_| Client {
                clock: clock.detached(),
                offset_us: 0,
                max_offset_us: 0,
                cancel_requested: false,
                inside: Vec::new(),
                holding: Vec::new(),
                last_key: Vec::new(),
                progressed: false,
                checked: false,
                rng_draws: 0,
                exited: false,
                last_op: 0,
            })
            .collect::<Vec<_>>();
        let count = clients.len();
        Monitor {
            state: Mutex::new(State {
                clients,
                plan: FaultPlan::new(count, steps),
                recorder: Recorder::new(count, recording),
                fences: Fences::new(options.fencing),
                counters: Counters::default(),
                declared: Declared {
                    permanent: options.permanent_keys.clone(),
                    counter_keys: options.counter_keys.clone(),
                },
                watched: Vec::new(),
                violation: None,
                finding: None,
                last_key: None,
                epoch: 0,
                lock_key: None,
                reached: Reached::default(),
            }),
            clock,
            start_us,
            seed,
            deployment,
            recording,
            // A recorded run (the fault-free one, a replay) tracks them too: the
            // exhaustive space's repeats are read off the fault-free run's states.
            track_states: options.track_lock_states || recording,
            polling: AtomicUsize::new(usize::MAX),
            stop: Notify::new(),
            recovery_armed: Notify::new(),
        }
    }

    pub(crate) fn now_us(&self) -> i64 {
        self.clock.now_us() - self.start_us
    }

    /// The time for a trace event: read only when the trace is kept (search runs keep
    /// none, and reading the paused clock is a measurable share of a run).
    fn trace_now(&self) -> i64 {
        if self.recording { self.now_us() } else { 0 }
    }

    pub(crate) fn client_clock(&self, client: usize) -> Clock {
        self.state.lock().clients[client].clock.clone()
    }

    /// The seed of the next generator `client`'s cycle `cycle` asks for: each call gets a
    /// stream of its own, the same in every run of the schedule.
    pub(crate) fn rng_seed(&self, client: usize, cycle: u32) -> u64 {
        let draw = {
            let mut state = self.state.lock();
            let c = &mut state.clients[client];
            c.rng_draws += 1;
            c.rng_draws - 1
        };
        self.seed
            ^ (client as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ u64::from(cycle).wrapping_mul(0xBF58_476D_1CE4_E5B9)
            ^ draw.wrapping_mul(0x94D0_49BB_1331_11EB)
    }

    /// `client`'s cycle is being polled (`Some`), or none is (`None`).
    pub(crate) fn polling(&self, client: Option<usize>) {
        self.polling
            .store(client.unwrap_or(usize::MAX), Ordering::Relaxed);
    }

    /// Whether `client`'s cycle must be dropped now, clearing the request.
    pub(crate) fn take_cancel_request(&self, client: usize) -> bool {
        std::mem::take(&mut self.state.lock().clients[client].cancel_requested)
    }

    pub(crate) fn record(&self, client: Option<usize>, what: What) {
        if !self.recording {
            return;
        }
        let at_us = self.now_us();
        self.state.lock().recorder.push(at_us, client, what);
    }

    // -- Faults -------------------------------------------------------------------------

    /// Applies `step` now (its time has come).
    pub(crate) fn apply(&self, step: &Step) {
        let mut state = self.state.lock();
        self.apply_locked(&mut state, step, None);
    }

    /// Applies `step`, armed by an operation of `anchor` (`None`: by its time).
    fn apply_locked(&self, state: &mut State, step: &Step, anchor: Option<usize>) {
        if state.plan.healed {
            return;
        }
        if self.track_states {
            let struck = self
                .lock_state(state, step.fault.client().or(anchor))
                .struck_by(step.fault.kind());
            state.reached.push(struck);
        }
        state.epoch += 1;
        let at_us = self.now_us();
        state
            .recorder
            .push(at_us, None, What::Fault { fault: step.fault });
        let fault = step.fault;
        if let Some(client) = fault.client() {
            if let Fault::ClientClock { ms, .. } = fault {
                if let Some(c) = state.clients.get_mut(client) {
                    c.clock.jump(ms);
                    c.offset_us = c.offset_us.saturating_add(ms.saturating_mul(1000));
                    c.max_offset_us = c.max_offset_us.max(c.offset_us);
                }
                return;
            }
            state.plan.arm(client, fault);
        } else if let Some((ms, recovery)) = self
            .deployment
            .apply(&fault, state.last_key.as_deref().map(lock_core::hash_slot))
        {
            let due = at_us + i64::try_from(ms).unwrap_or(i64::MAX / 4) * 1000;
            state.plan.recoveries.push((due, recovery));
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
        state.plan.recoveries.iter().map(|(due, _)| *due).min()
    }

    /// When the timed node faults still in force end (µs into the run), and what ends them.
    pub(crate) fn pending_recoveries(&self) -> Vec<(i64, Recovery)> {
        self.state.lock().plan.recoveries.clone()
    }

    /// Ends every timed node fault that is due.
    pub(crate) fn recover_due(&self) {
        let now = self.now_us();
        let mut state = self.state.lock();
        state.epoch += 1;
        let (due, later): (Vec<_>, Vec<_>) = state
            .plan
            .recoveries
            .drain(..)
            .partition(|(at, _)| *at <= now);
        state.plan.recoveries = later;
        for (_, recovery) in due {
            match self.deployment.recover(recovery) {
                // A drift goes on: its next step is due later, and is no event.
                Some((ms, next)) => {
                    let at = now + i64::try_from(ms).unwrap_or(i64::MAX / 4) * 1000;
                    state.plan.recoveries.push((at, next));
                }
                None => state.recorder.push(
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
        state.plan.heal();
        for client in &mut state.clients {
            client.progressed = false;
        }
        self.deployment.heal_all();
        state.recorder.push(now, None, What::Healed);
    }

    /// What `client`'s next operation waits for, or whether it is cancelled.
    pub(crate) fn before(&self, client: usize, command: bool) -> Before {
        let own_cycle = self.polling.load(Ordering::Relaxed) == client;
        let mut state = self.state.lock();
        let inside = !state.clients[client].inside.is_empty();
        state.plan.before(client, inside, command, own_cycle)
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
        self.state.lock().plan.after(client)
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
            state.recorder.push(at_us, Some(client), what);
            self.watch_keys(&mut state);
        }
        self.check_ownership(&mut state, client, Some(kind), wrote);
        self.count_op(&mut state, client, kind, true);
    }

    /// `client` finished a marker named `kind` the monitor already recorded: check its
    /// holdings, count it.
    pub(crate) fn finish_marker(&self, client: usize, kind: &str) {
        let mut state = self.state.lock();
        self.check_ownership(&mut state, client, None, false);
        self.count_op(&mut state, client, kind, false);
    }

    fn count_op(&self, state: &mut State, client: usize, kind: &str, command: bool) {
        let reached = self.track_states.then(|| {
            state.clients[client].last_op = operation(kind);
            let reached = self.lock_state(state, Some(client)).packed();
            state.reached.push(reached);
            reached
        });
        let op = state
            .recorder
            .count(client, kind, command, reached, || self.now_us());
        let due = state.plan.fired(client, op, kind, || self.now_us());
        for step in due {
            self.apply_locked(state, &step, Some(client));
        }
    }

    /// The abstract lock state as `actor` sees it after its last operation (`None`: as
    /// no client sees it, every client among the others); see `lock_states`.
    fn lock_state(&self, state: &State, actor: Option<usize>) -> LockState {
        let now_us = self.now_us();
        let phase = |c: &Client| match (c.inside.is_empty(), c.deadline()) {
            (false, Some(deadline)) if now_us > deadline => Phase::Late,
            (false, _) => Phase::Inside,
            (true, _) if c.exited => Phase::Released,
            (true, _) => Phase::Acquiring,
        };
        let mut others = [0; 4];
        for (i, c) in state.clients.iter().enumerate() {
            if Some(i) != actor {
                others[phase(c) as usize] += 1;
            }
        }
        let (key, key_without_ttl) = match &state.lock_key {
            None => (KeyState::Unknown, false),
            Some(key) => self.key_state(state, actor, key),
        };
        let acting = actor.and_then(|a| state.clients.get(a));
        LockState {
            operation: acting.map_or(0, |c| c.last_op),
            actor: acting.map_or(Phase::Acquiring, phase),
            others,
            key,
            key_without_ttl,
        }
    }

    /// Whose token `key` holds where clients read it, and whether it has no TTL.
    fn key_state(&self, state: &State, actor: Option<usize>, key: &[u8]) -> (KeyState, bool) {
        for (i, c) in state.clients.iter().enumerate() {
            for h in c.holding.iter().filter(|h| h.key == key) {
                if let Some(live) = self.deployment.holding_us(key, &h.token) {
                    let whose = if Some(i) == actor {
                        KeyState::Own
                    } else {
                        KeyState::Another
                    };
                    return (whose, live == i64::MAX);
                }
            }
        }
        match self.deployment.read(key) {
            Some(_) => (KeyState::Unclaimed, false),
            None => (KeyState::Absent, false),
        }
    }

    /// The abstract lock states the run reached, sorted (taken once).
    pub(crate) fn take_states(&self) -> Vec<u64> {
        self.state.lock().reached.take()
    }

    /// Every watched key's holder on every node, as a trace event where it changed.
    fn watch_keys(&self, state: &mut State) {
        if state.watched.is_empty() || !self.recording {
            return;
        }
        let at_us = self.now_us();
        let nodes = self.deployment.node_backends();
        let mut events = Vec::new();
        for (key, seen) in &mut state.watched {
            seen.resize_with(nodes.len(), || KeySeen {
                value: None,
                expires_us: None,
            });
            for (node, backend) in nodes.iter().enumerate() {
                let now = match backend.peek(key) {
                    Some(k) => KeySeen {
                        value: Some(k.value),
                        expires_us: (k.pttl >= 0).then(|| at_us + k.pttl * 1000),
                    },
                    None => KeySeen {
                        value: None,
                        expires_us: None,
                    },
                };
                if seen[node] != now {
                    events.push(What::KeyHeld {
                        node,
                        key: String::from_utf8_lossy(key).into_owned(),
                        value: now
                            .value
                            .as_ref()
                            .map(|v| String::from_utf8_lossy(v).into_owned()),
                        expires_us: now.expires_us,
                    });
                    seen[node] = now;
                }
            }
        }
        for event in events {
            state.recorder.push(at_us, None, event);
        }
    }

    /// Lost ownership: a holder within its entitlement whose key no longer holds its
    /// token. Checked at each of the holder's operations and after every command of
    /// anyone that named a held key. The holder's own command that wrote its key (a
    /// release, an extend) lets go of it, or renews its lease.
    fn check_ownership(&self, state: &mut State, actor: usize, command: Option<&str>, wrote: bool) {
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
            let section_deadline = c.deadline();
            let epoch = state.epoch;
            // Every key seen holding its token since the last fault and write, for longer
            // than the holder is entitled to it: nothing can have changed it.
            if c.holding.iter().all(|h| {
                section_deadline.or(h.lease_until).is_none_or(|deadline| {
                    h.verified
                        .is_some_and(|(at, until)| at == epoch && until >= deadline)
                })
            }) {
                continue;
            }
            let now = *now.get_or_insert_with(|| self.now_us());
            let checked = ownership::check(
                &self.deployment,
                &state.clients,
                holder,
                ownership::After {
                    actor,
                    command,
                    wrote,
                },
                epoch,
                now,
            );
            let holding = &mut state.clients[holder].holding;
            for (i, mark) in checked.verified {
                holding[i].verified = Some(mark);
            }
            for (i, lease) in checked.leases {
                holding[i].lease_until = Some(lease);
            }
            for i in checked.let_go.into_iter().rev() {
                holding.remove(i);
            }
            if let Some(lost) = checked.lost {
                self.violate(state, lost);
                return;
            }
        }
    }

    /// The steps that found no place in this run (their anchor never came before
    /// faults stopped).
    pub(crate) fn unplaced(&self) -> Vec<Step> {
        self.state.lock().plan.unplaced()
    }

    /// Every client's operations: name and finish time (when recording).
    pub(crate) fn op_logs(&self) -> Vec<Vec<(String, i64)>> {
        self.state.lock().recorder.take_op_logs()
    }

    /// Per client, which operations were commands (when recording).
    pub(crate) fn commands(&self) -> Vec<Vec<u32>> {
        self.state.lock().recorder.take_commands()
    }

    /// Per client, the abstract lock state after each operation (when recording and
    /// tracking states).
    pub(crate) fn op_states(&self) -> Vec<Vec<u64>> {
        self.state.lock().recorder.take_op_states()
    }

    /// A cycle starts: the client's clock offset so far is its reference.
    pub(crate) fn cycle_started(&self, client: usize) {
        let mut state = self.state.lock();
        let c = &mut state.clients[client];
        c.max_offset_us = c.offset_us;
        c.holding.clear();
        c.rng_draws = 0;
        c.exited = false;
    }

    /// How many operations each client ran.
    pub(crate) fn ops(&self) -> Vec<u32> {
        self.state.lock().recorder.ops()
    }

    /// Per client, whether it sent a checking marker in this run.
    pub(crate) fn checked(&self) -> Vec<bool> {
        self.state
            .lock()
            .clients
            .iter()
            .map(|c| c.checked)
            .collect()
    }

    /// The client's cycle was dropped: it is inside nothing any more.
    pub(crate) fn cancelled(&self, client: usize) {
        let at_us = self.trace_now();
        let mut state = self.state.lock();
        state.clients[client].inside.clear();
        state.clients[client].holding.clear();
        state.recorder.push(at_us, Some(client), What::Cancelled);
    }

    // -- Checks -------------------------------------------------------------------------

    fn violate(&self, state: &mut State, found: Finding) {
        if state.violation.is_some() {
            return;
        }
        let inherent = found.kind.inherent_reason().map(str::to_owned);
        let violation = Violation {
            kind: found.kind,
            detail: found.detail,
            at_us: self.now_us(),
            clients: found.clients,
            dumps: self.deployment.dumps(),
            inherent,
            margin_us: found.margin_us,
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
        self.violate(
            &mut state,
            Finding {
                kind,
                detail,
                clients,
                margin_us: None,
            },
        );
    }

    /// µs into the run until which `client` may hold a lock of `validity` at `at_us`: a
    /// validity on the client's clock is read with the highest offset its clock had this
    /// cycle.
    fn deadline(&self, state: &State, client: usize, validity: Validity, at_us: i64) -> i64 {
        match validity {
            Validity::UntilMs(ms) => {
                let offset = state.clients[client].max_offset_us;
                ms.saturating_mul(1000) - offset - self.start_us
            }
            Validity::ForUs(us) => at_us.saturating_add(us),
        }
    }

    /// `client` enters `resource` (with `fence`, for a fenced section), its lock of
    /// `validity` (`None`: not said). A client already inside
    /// `resource` does not nest: the section is re-stated with the new fence and
    /// validity, and one exit leaves it.
    pub(crate) fn enter(
        &self,
        client: usize,
        resource: &str,
        fence: Option<i64>,
        validity: Option<Validity>,
    ) {
        let at_us = self.now_us();
        let mut state = self.state.lock();
        let state = &mut *state;
        let deadline_us = validity.map(|v| self.deadline(state, client, v, at_us));
        state.recorder.push(
            at_us,
            Some(client),
            What::Enter {
                resource: resource.to_owned(),
                fence,
                valid_for_us: deadline_us.map(|d| d - at_us),
            },
        );
        let c = &mut state.clients[client];
        c.progressed = true;
        c.checked = true;
        let found = match fence {
            None => sections::overlap(
                &state.clients,
                client,
                resource,
                deadline_us,
                at_us,
                Claim::Enter,
            ),
            Some(fence) => state.fences.entered(client, resource, fence),
        };
        if let Some(found) = found {
            self.violate(state, found);
        }
        let c = &mut state.clients[client];
        c.inside.retain(|s| s.resource != resource);
        c.inside.push(Inside {
            resource: resource.to_owned(),
            fence,
            deadline_us,
        });
        if deadline_us.is_none() {
            for h in c.holding.iter_mut().filter(|h| h.lease_until.is_none()) {
                h.lease_until = ownership::lease(&self.deployment, &h.key, &h.token, at_us);
            }
        }
    }

    /// The client's section on `resource` has `validity` now (its lock was extended).
    /// Another client inside the resource meanwhile is judged as if this one had entered
    /// now.
    pub(crate) fn extend(&self, client: usize, resource: &str, validity: Validity) {
        let at_us = self.now_us();
        let mut state = self.state.lock();
        let state = &mut *state;
        let deadline = self.deadline(state, client, validity, at_us);
        state.recorder.push(
            at_us,
            Some(client),
            What::Extended {
                resource: resource.to_owned(),
                valid_for_us: deadline - at_us,
            },
        );
        let Some(inside) = state.clients[client]
            .inside
            .iter_mut()
            .rev()
            .find(|i| i.resource == resource)
        else {
            return;
        };
        inside.deadline_us = Some(deadline);
        if inside.fence.is_none()
            && let Some(found) = sections::overlap(
                &state.clients,
                client,
                resource,
                Some(deadline),
                at_us,
                Claim::Extend,
            )
        {
            self.violate(state, found);
        }
    }

    /// The client holds `key` with `token` until it leaves its sections.
    pub(crate) fn holds(&self, client: usize, key: &[u8], token: &[u8]) {
        let mut state = self.state.lock();
        let state = &mut *state;
        let c = &state.clients[client];
        let needs_lease = !c.inside.is_empty() && c.deadline().is_none();
        // The clock is read only where it is needed: a measurable share of a run.
        let at_us = if state.recorder.recording || needs_lease {
            self.now_us()
        } else {
            0
        };
        if state.recorder.recording {
            state.recorder.push(
                at_us,
                Some(client),
                What::Holds {
                    key: String::from_utf8_lossy(key).into_owned(),
                    token: String::from_utf8_lossy(token).into_owned(),
                },
            );
            if !state.watched.iter().any(|(k, _)| k == key) {
                state.watched.push((key.to_vec(), Vec::new()));
            }
        }
        // The key's own lease is the entitlement only inside a section without a
        // validity: read then (here, or when such a section is entered).
        let lease_until = needs_lease
            .then(|| ownership::lease(&self.deployment, key, token, at_us))
            .flatten();
        if state.lock_key.is_none() {
            state.lock_key = Some(key.to_vec());
        }
        let holding = &mut state.clients[client].holding;
        holding.retain(|h| h.key != key);
        holding.push(Holding {
            key: key.to_vec(),
            token: token.to_vec(),
            verified: None,
            lease_until,
        });
        self.watch_keys(state);
    }

    pub(crate) fn exit(&self, client: usize, resource: &str) {
        let at_us = self.trace_now();
        let mut state = self.state.lock();
        state.recorder.push(
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
        c.exited = true;
        if c.inside.is_empty() {
            c.holding.clear();
        }
    }

    /// Keys starting with `prefix` may outlive the run without a TTL.
    pub(crate) fn permanent(&self, prefix: &str) {
        let mut state = self.state.lock();
        if !state.declared.permanent.iter().any(|p| p == prefix) {
            state.declared.permanent.push(prefix.to_owned());
        }
    }

    /// The counter `counter` lives in the key `key`.
    pub(crate) fn counter_key(&self, counter: &str, key: &str) {
        let mut state = self.state.lock();
        let declared = &mut state.declared;
        declared.counter_keys.retain(|(c, _)| c != counter);
        declared
            .counter_keys
            .push((counter.to_owned(), key.to_owned()));
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
        let c = &mut state.clients[client];
        c.progressed = true;
        c.checked = true;
        let judged = state.fences.write(client, resource, fence);
        state.recorder.push(
            at_us,
            Some(client),
            What::Write {
                resource: resource.to_owned(),
                fence,
                accepted: judged.accepted,
            },
        );
        if let Some(found) = judged.stale_accepted {
            self.violate(state, found);
        }
        if judged.accepted {
            return Ok(());
        }
        let Some((highest, by)) = judged.previous else {
            return Ok(());
        };
        // The writer's token is in its lock key now, yet a higher fence came first: a
        // stale client took its fence out of lock order.
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
            self.violate(
                state,
                Finding {
                    kind: ViolationKind::FenceOrder,
                    detail,
                    clients: vec![client, by],
                    margin_us: None,
                },
            );
        }
        Err(StaleWrite { fence, highest })
    }

    pub(crate) fn counter_read(&self, client: usize, counter: &str) -> i64 {
        let at_us = self.trace_now();
        let mut state = self.state.lock();
        state.clients[client].checked = true;
        let value = state.counters.read(counter);
        state.recorder.push(
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
        state.clients[client].checked = true;
        state.counters.write(counter, value);
        state.recorder.push(
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
        let c = &mut state.clients[client];
        c.checked = true;
        if applied == Some(true) {
            c.progressed = true;
        }
        state.counters.counted(counter, applied);
        state.recorder.push(
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

    /// The keys, on the nodes clients use, left without a TTL that neither the options
    /// nor the run's declarations allow.
    pub(crate) fn keys_without_ttl(&self) -> Vec<String> {
        let (permanent, counter_keys) = {
            let state = self.state.lock();
            (
                state.declared.permanent.clone(),
                state.declared.counter_keys.clone(),
            )
        };
        let mut found = Vec::new();
        for dump in self.deployment.serving_dumps() {
            for key in dump.keys.iter().filter(|k| k.pttl < 0) {
                let name = String::from_utf8_lossy(&key.key).into_owned();
                let allowed = permanent.iter().any(|p| name.starts_with(p.as_str()))
                    || counter_keys.iter().any(|(_, k)| *k == name);
                if !allowed && !found.contains(&name) {
                    found.push(name);
                }
            }
        }
        found
    }

    /// The end of the run: counters, then keys left without a TTL.
    pub(crate) fn check_end(&self) {
        let found = {
            let state = self.state.lock();
            let counter_keys = &state.declared.counter_keys;
            state.counters.check(|name| {
                let (_, key) = counter_keys.iter().find(|(c, _)| c == name)?;
                Some(
                    self.deployment
                        .read(key.as_bytes())
                        .and_then(|v| counter_value(&v))
                        .unwrap_or(0),
                )
            })
        };
        if let Some(found) = found {
            let mut state = self.state.lock();
            // A holder that wrote past its validity (an expired-holder finding, what every
            // TTL lock allows) explains an update lost in the same run: the run's verdict
            // stays that inherent finding.
            let overran = state
                .finding
                .as_ref()
                .is_some_and(|f| f.kind == ViolationKind::ExpiredHolder);
            if !(overran && found.kind == ViolationKind::LostUpdate) {
                self.violate(&mut state, found);
            }
            return;
        }
        if let Some(name) = self.keys_without_ttl().first() {
            self.report(
                ViolationKind::KeyWithoutTtl,
                format!(
                    "{name:?} has no TTL once every client is done (a key kept by design is declared permanent: --permanent-keys, NXLOCK.PERMANENT)"
                ),
                Vec::new(),
            );
        }
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
        self.state.lock().recorder.take_trace()
    }
}

/// A counter kept in a key: a decimal integer, or a [`Versioned`](lock_core::Versioned)
/// value (`<version>:<payload>`) whose payload is one.
fn counter_value(stored: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(stored).ok()?;
    let payload = match text.split_once(':') {
        Some((version, payload)) if version.bytes().all(|b| b.is_ascii_digit()) => payload,
        _ => text,
    };
    payload.parse().ok()
}
