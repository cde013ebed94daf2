//! [`Runner`]: the seam where a schedule is run. The explorer draws schedules, judges
//! outcomes, classifies, confirms and shrinks findings, and reports them; a runner only
//! turns one [`Schedule`] into one [`Outcome`].
//!
//! Two runners exist. [`InProcess`](crate::InProcess) runs a Rust workload on the
//! double under virtual time: its runs are deterministic, so a finding is proved by one
//! run and a replay is exact. `lock-wire-explore`'s runner drives real processes against
//! `nxlock serve` in real time: its runs are not deterministic, so a finding counts only
//! once it reproduces ([`Confirmation`]), and a run the machine disturbed is voided
//! ([`Void`]) rather than judged.

use std::fmt;
use std::time::Duration;

use crate::options::Options;
use crate::schedule::Schedule;
use crate::step::{FaultKind, Step};
use crate::trace::Trace;
use crate::violation::Violation;

/// Whether a run keeps its trace. The search's runs need only their verdict, and
/// formatting every command is a large share of an in-process run; runs whose trace is
/// compared or shown keep it. A runner may keep it always.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recording {
    /// Every event is kept.
    Kept,
    /// Only the verdict (and the operation counts) matter.
    Dropped,
}

/// Why a run proves nothing either way, so that it is neither a finding nor a clean run:
/// the machine, not the lock, decided it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Void {
    /// A process (a client, or the server) was not scheduled for longer than the slack a
    /// stated validity allows: a stall acts like a pause nobody asked for.
    Stall {
        /// Who stalled: `client 2`, `the server`.
        who: String,
        /// For how long, in milliseconds.
        ms: u64,
    },
    /// A client sent no command within the start-up bound: a harness error (the
    /// program does not start, or waits for something else), not the lock's.
    Startup {
        /// The client.
        client: usize,
        /// The bound it missed.
        bound: Duration,
    },
}

impl Void {
    /// A short name for counting voided runs by cause.
    pub fn cause(&self) -> &'static str {
        match self {
            Void::Stall { .. } => "stall",
            Void::Startup { .. } => "start-up",
        }
    }
}

impl fmt::Display for Void {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Void::Stall { who, ms } => write!(
                f,
                "{who} was not scheduled for {ms} ms, longer than the slack a validity allows"
            ),
            Void::Startup { client, bound } => write!(
                f,
                "harness: client {client} sent no command within {} ms of being started",
                bound.as_millis()
            ),
        }
    }
}

/// What one run gave.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Its first violation of the lock's own, else its first finding inherent to TTL
    /// locks.
    pub violation: Option<Violation>,
    /// What happened, when recorded (a runner may record always).
    pub trace: Trace,
    /// How many operations (commands and markers) each client made.
    pub ops: Vec<u32>,
    /// Each client's operations by name, with the µs they finished at (recorded runs).
    pub op_logs: Vec<Vec<(String, i64)>>,
    /// Per client, which of those operations were commands rather than markers (their
    /// indices; recorded runs). Empty: unknown, and every operation may be one.
    pub commands: Vec<Vec<u32>>,
    /// µs the planned cycles took.
    pub main_us: i64,
    /// Steps that found no place: the operation they wait for never came.
    pub unplaced: Vec<Step>,
    /// Clients that exited with a failure, with the last lines they wrote to stderr.
    pub failures: Vec<String>,
    /// Set when the run proves nothing (see [`Void`]).
    pub void: Option<Void>,
    /// Per client, whether it sent a checking marker (entered a section, wrote a
    /// fenced resource, counted an increment): a client that sent none was not checked.
    pub checked: Vec<bool>,
    /// The abstract lock states the run reached, sorted: what coverage feedback steers
    /// by (see docs/EXPLORE.md, "Coverage feedback"). Empty: not known.
    pub states: Vec<u64>,
    /// Per client, the abstract lock state after each of its operations (recorded runs
    /// that track states; empty otherwise): what a step anchored there strikes.
    pub op_states: Vec<Vec<u64>>,
}

impl Outcome {
    /// The clients that sent no checking marker in this run.
    pub fn unchecked(&self) -> Vec<usize> {
        self.checked
            .iter()
            .enumerate()
            .filter(|(_, checked)| !**checked)
            .map(|(client, _)| client)
            .collect()
    }
}

/// A runner that could not make a run at all (a port that would not bind, a command
/// that would not start): the search stops with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RunnerError(pub String);

/// Runs schedules: the one thing the two explorers do differently.
///
/// # Contract
///
/// - [`run`](Runner::run) makes one run of `schedule` under `options` (its topology,
///   TTL, fencing, liveness bound, permanent keys) with `schedule.clients` clients of
///   `schedule.cycles` cycles, applies each step when its time or anchor comes, and
///   feeds every command and marker to the checkers of [`ExternalRun`](crate::ExternalRun)
///   or of the in-process monitor.
/// - A [`deterministic`](Runner::deterministic) runner gives the same trace for the same
///   schedule every time; the explorer then proves a finding with one run. Otherwise a
///   finding is confirmed by replays, and steps are anchored to operations by name.
/// - [`applies`](Runner::applies) says which fault kinds it can apply at all; the
///   explorer refuses the others before a search starts, with the same error on every
///   runner.
pub trait Runner: Send + Sync {
    /// The code under test, for reports: `in process`, or the command line.
    fn describe(&self) -> String;

    /// The command line run per client, for runners of processes (saved in replay
    /// files so that a replay can run it again).
    fn command(&self) -> Option<String> {
        None
    }

    /// Whether two runs of one schedule give the same trace.
    fn deterministic(&self) -> bool;

    /// Whether this runner can apply faults of `kind` (the topology decides the rest).
    fn applies(&self, kind: FaultKind) -> bool;

    /// Where faults are applied, for the error that refuses one: `on the double`,
    /// `through serve`.
    fn place(&self) -> &'static str;

    /// How many runs it makes well at once: the search's default thread count.
    fn parallelism(&self) -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }

    /// Makes one run of `schedule`.
    fn run(
        &self,
        options: &Options,
        schedule: &Schedule,
        recording: Recording,
    ) -> Result<Outcome, RunnerError>;
}

/// How a finding of a runner whose runs are not deterministic is confirmed: it counts
/// as the lock's own only when `needed` of `replays` replays of its schedule break the
/// lock in the same way. A finding short of that is listed with its count, and never
/// stops a search or fails it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Confirmation {
    /// Replays made (at most: they stop once the verdict is settled either way).
    pub replays: u32,
    /// Replays that must reproduce it.
    pub needed: u32,
}

impl Confirmation {
    /// 5 of 10: a finding must reproduce more often than not.
    ///
    /// Why: with runs voided for stalls, a finding the machine made (a process
    /// descheduled at the wrong moment) reproduces in about 1 replay of 10 at worst, and
    /// the chance that it does so in 5 of 10 is under 0.2%; a real bug that reproduces
    /// half the time is confirmed 62% of the time on its first sighting, and its later
    /// sightings get their own chance. A finding that falls short is not lost: it is
    /// listed with its count.
    pub const DEFAULT: Confirmation = Confirmation {
        replays: 10,
        needed: 5,
    };
}

impl Default for Confirmation {
    fn default() -> Self {
        Confirmation::DEFAULT
    }
}
