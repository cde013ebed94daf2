//! # lock-wire-explore
//!
//! `nxlock explore --exec`: the explorer for lock code in any language. Each run starts
//! a fresh `nxlock serve` on loopback ports, one per client, and the user's command
//! once per client; the server applies the run's faults to each client's connection
//! (a command held, refused, its reply late or lost) and passes every command and
//! marker (`NXLOCK.ENTER`, `NXLOCK.HOLDS`, …) to the in-process explorer's checkers.
//!
//! It is a layer above both: [`lock_server`] knows nothing of exploring (its
//! [`Observer`](lock_server::Observer) is the hook), and [`lock_explore`] knows nothing
//! of sockets ([`ExternalRun`](lock_explore::ExternalRun) is its door).
//!
//! Processes run in real time, so a run takes about as long as the clients' cycles do
//! (the TTL is short: 200 ms by default), and runs are not deterministic: a finding is
//! replayed and reported with how often it reproduced.
//!
//! What runs today: one server (the `single` topology), the faults that act on one
//! client's connection ([`WIRE_FAULTS`]), mutual exclusion within the validity a client
//! states, lost ownership, fence order and counters.

mod explorer;
mod observer;
mod processes;
mod replay;
mod run;

pub use explorer::{WIRE_FAULTS_ALL, WireExplorer, WireFinding, WireReport, supports, wire_faults};
pub use replay::{WIRE_REPLAY_FORMAT, WireReplay, WireReplayError};
pub use run::{Outcome, RunError};
