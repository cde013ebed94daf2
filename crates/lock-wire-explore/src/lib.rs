//! # lock-wire-explore
//!
//! `nxlock explore --exec`: the explorer's runner for lock code in any language. The
//! search, the checkers, the classification of findings, their confirmation, shrinking,
//! reports and replay files are `lock_explore`'s, the same as in process; this crate
//! runs one schedule at a time as processes ([`WireRunner`], behind
//! [`lock_explore::Runner`]).
//!
//! Each run starts a fresh `nxlock serve` on loopback ports, one per client, and the
//! user's command once per client; the server applies the run's faults to each client's
//! connection (a command held, refused, its reply late or lost) and passes every command
//! and marker (`NXLOCK.ENTER`, `NXLOCK.HOLDS`, …) to the explorer's checkers through
//! [`ExternalRun`](lock_explore::ExternalRun).
//!
//! It is a layer above both: [`lock_server`] knows nothing of exploring (its
//! [`Observer`](lock_server::Observer) is the hook), and [`lock_explore`] knows nothing
//! of sockets or processes.
//!
//! Processes run in real time, so a run takes about as long as the clients' cycles do
//! (the TTL is short: 200 ms by default), and runs are not deterministic. So that a
//! finding is a claim: it counts only once it reproduces in most of its replays; a run
//! in which a process was not scheduled for longer than the slack a validity allows is
//! voided ([`lock_explore::Void`]); liveness counts from each client's first command;
//! and connection set-up is no fault anchor.
//!
//! With [`WireRunner::long_lived`], each client's process serves run after run, told on
//! its stdin where each run is (the protocol is in EXPLORE.md, "Lock code in any
//! language", and the helpers in `clients/` speak it).
//!
//! What runs: one server; a replicated set (a server per node, and per client one
//! address that reaches whichever node is primary, so a failover keeps the client's
//! address, as a managed Redis's primary endpoint does); a cluster (likewise, one
//! address per client and shard, and servers that describe the whole cluster at the
//! client's addresses and answer `MOVED` for other shards' slots); Redlock's nodes (one
//! server each). The faults are [`WIRE_FAULTS_ALL`].

mod observer;
mod primary_endpoint;
mod processes;
mod run;
mod runner;
mod shard_layout;
mod stalls;
mod starts;

pub use runner::{DEFAULT_TTL, WIRE_FAULTS_ALL, WireRunner, explorer, wire};
