//! # lock-explore
//!
//! Finds the bugs nobody scripted in lock code: it runs a [`Workload`] (N clients, each
//! running cycles of the code under test) on nxlock's in-process Redis double, under
//! seeded schedules of faults, checks every run, and shrinks each violation to a
//! minimal schedule that replays exactly.
//!
//! - **The model.** Each run is a fresh deployment ([`Topology`]: one server, a
//!   replicated set with failover, Redlock's nodes, or cluster rules) on a fresh
//!   single-threaded runtime with paused, virtual time. Each client talks through its
//!   own [`ClientView`], so faults can aim at one client; the code under test is any
//!   lock built on [`KvBackend`](lock_core::KvBackend).
//! - **Faults** are typed, serializable [`Step`]s, placed at a virtual time or right
//!   after one client's operation ([`When`]): pauses, clock jumps, lost, refused, late
//!   and delayed replies, dead connections, interrupted scripts, replication stalls,
//!   failovers, node restarts with or without data, black holes, cancellation.
//! - **Checkers**: mutual exclusion within the validity a lock promised
//!   ([`Context::enter_until`]), ownership of the lock key ([`Context::holds`]), fences
//!   and their order ([`Context::enter_fenced`], [`Context::write`]), lost or doubled
//!   updates ([`Context::increment`]), keys left without a TTL, and liveness once faults
//!   stop ([`ViolationKind`]).
//! - **Precision.** What every TTL lock does (a holder working past its validity, a
//!   server clock that jumps) is never blamed on the lock: such findings are labelled
//!   inherent, with the reason and the remedy, and never stop a search. Inherent fault
//!   kinds are opt-in ([`FaultKind::is_inherent`]).
//! - **Search and shrinking**: [`Explorer::explore`] runs seeded schedules on every core;
//!   the first violation in run order is shrunk (fewer steps, shorter faults, fewer
//!   clients and cycles) and replayed [`REPLAYS`] times to show it is deterministic. A
//!   [`Counterexample`] prints as steps, trace and keys, saves as a replay file
//!   ([`Explorer::replay`]) and draws as an HTML timeline.
//!
//! ```
//! use std::time::Duration;
//! use lock_core::{KvBackend, SetOptions, SetReply};
//! use lock_explore::{Context, Explorer, ViolationKind};
//!
//! // A lock whose release GETs, compares, then DELs: between the two commands the key
//! // can expire and pass to another client, whose lock the DEL then deletes.
//! let report = Explorer::new(|ctx: Context| async move {
//!     let (backend, clock) = (ctx.backend(), ctx.clock());
//!     let token = ctx.rng().u64(..).to_string(); // seeded: runs replay exactly
//!     let mut started = clock.now_ms();
//!     loop {
//!         let set = backend.set(b"lock", token.as_bytes(), SetOptions::new().nx().px(500));
//!         if matches!(set.await, Ok(SetReply::Applied)) {
//!             break;
//!         }
//!         clock.sleep(Duration::from_millis(10)).await;
//!         started = clock.now_ms(); // validity counts from before the SET that won
//!     }
//!     ctx.holds(b"lock", token.as_bytes());
//!     ctx.enter_until("jobs", started + 500).await; // alone until then, its lock says
//!     ctx.work(Duration::from_millis(50)).await;
//!     ctx.exit("jobs").await;
//!     if backend.get(b"lock").await.ok().flatten().as_deref() == Some(token.as_bytes()) {
//!         let _ = backend.del(&[b"lock"]).await;
//!     }
//! })
//! .ttl(Duration::from_millis(500))
//! .clients(2)
//! .seed(7)
//! .runs(500)
//! .threads(1)
//! .explore()
//! .unwrap();
//! let found = report.counterexample.expect("the check-then-act release is found");
//! assert_eq!(found.violation.kind, ViolationKind::LostOwnership);
//! assert!(!found.violation.is_inherent());
//! assert!(found.schedule.steps.len() <= 2);
//! //! ```

mod algorithms;
mod client;
mod conclude;
mod context;
mod counterexample;
mod coverage;
mod explorer;
mod external;
mod generate;
mod in_process;
mod monitor;
mod options;
mod replay;
mod report;
mod run;
mod runner;
mod schedule;
mod search;
mod shard;
mod shrink;
mod step;
mod strategy;
mod timeline;
mod topology;
mod trace;
mod verdict;
mod violation;
mod when_woken;
mod workload;

pub use algorithms::{Algorithm, Blame, COUNTER, LOCK, RESOURCE, reference};
pub use client::ClientView;
pub use context::{Context, Increment};
pub use counterexample::Counterexample;
pub use coverage::{Coverage, Exhaustive, Guided};
pub use explorer::{DEFAULT_RUNS, ExploreError, Explorer, REPLAYS};
pub use external::{CommandFate, ExternalRun, ReplyFate};
/// The generator [`Context::rng`] hands out.
pub use fastrand;
pub use generate::random_fault;
pub use in_process::InProcess;
pub use lock_core::UnknownAlgorithm;
pub use lock_core::{TopologyKind, UnknownTopology};
pub use monitor::StaleWrite;
pub use options::{Fencing, Options, is_setup_command};
pub use replay::{REPLAY_FORMAT, ReplayError, ReplayFile, Replayed};
pub use report::{EXIT_FOUND, EXIT_NOTHING_CHECKED, Report, Unconfirmed};
pub use runner::{Confirmation, Outcome, Recording, Runner, RunnerError, Void};
pub use schedule::Schedule;
pub use shard::{MergeError, ShardReport};
pub use step::{Fault, FaultKind, Step, UnknownFault, When};
pub use timeline::{Timeline, timeline_page};
pub use topology::Topology;
pub use trace::{Event, Trace, What};
pub use violation::{Violation, ViolationKind};
pub use workload::{Cycle, Workload};

/// Replays a file saved from `nxlock explore` (a built-in algorithm's counterexample).
pub fn replay(path: impl AsRef<std::path::Path>) -> Result<Replayed, ExploreError> {
    let path = path.as_ref();
    let file = ReplayFile::load(path)?;
    let name = file.workload.clone().ok_or_else(|| {
        ExploreError::Invalid(format!(
            "{}: the file is of a user's workload; replay it with Explorer::replay on that workload",
            path.display()
        ))
    })?;
    let (algorithm, replicas) =
        algorithms::parse_label(&name).map_err(|e| ExploreError::Invalid(e.to_string()))?;
    Explorer::builtin_waiting(
        algorithm,
        file.options.topology,
        file.options.ttl(),
        replicas,
    )
    .replay(path)
}
