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
//! With [`WireExplorer::long_lived`], each client's process serves run after run, told
//! on its stdin where each run is (the protocol is in EXPLORE.md, "Lock code in any
//! language"), so that an interpreter starts once, not once per run.
//!
//! What runs: one server; a replicated set (a server per node, and per client one
//! address that reaches whichever node is primary, so a failover keeps the client's
//! address, as a managed Redis's primary endpoint does); a cluster (likewise, one
//! address per client and shard, and servers that describe the whole cluster at the
//! client's addresses and answer `MOVED` for other shards' slots); Redlock's nodes (one
//! server each). The faults act on one client's connection, on a replicated set or a
//! shard (a failover, a replication stall), on a cluster's slots (a migration), on a
//! Redlock node (dies, restarts with or without its data, stops answering) and on a
//! server's clock ([`WIRE_FAULTS_ALL`], [`wire_faults`] by default); the checkers are
//! mutual exclusion within the validity a client states, lost ownership, fence order,
//! counters and liveness.

mod explorer;
mod observer;
mod primary_endpoint;
mod processes;
mod replay;
mod run;
mod shard_layout;

pub use explorer::{WIRE_FAULTS_ALL, WireExplorer, WireFinding, WireReport, wire_faults};
pub use replay::{WIRE_REPLAY_FORMAT, WireReplay, WireReplayError};
pub use run::{Outcome, RunError};
