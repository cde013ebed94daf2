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
//! - **Checkers**: mutual exclusion ([`Context::enter`]), fences ([`Context::enter_fenced`],
//!   [`Context::write`]), lost or doubled updates ([`Context::increment`]), keys left
//!   without a TTL, and liveness once faults stop ([`ViolationKind`]).
//! - **Search and shrinking**: [`Explorer::explore`] runs seeded schedules on every core;
//!   the first violation in run order is shrunk (fewer steps, shorter faults, fewer
//!   clients and cycles) and replayed [`REPLAYS`] times to show it is deterministic. A
//!   [`Counterexample`] prints as steps, trace and keys, saves as a replay file
//!   ([`Explorer::replay`]) and draws as an HTML timeline.
//!
//! ```
//! use std::time::Duration;
//! use lock_core::{LockAlgorithm, LockGuard, LockName, LockOptions, TokenLock};
//! use lock_explore::{Context, Explorer, FaultKind, ViolationKind};
//!
//! // A token lock held across a pause: is the resource ever shared?
//! let report = Explorer::new(|ctx: Context| async move {
//!     let name = LockName::new("jobs").unwrap();
//!     let options = LockOptions::new().ttl(Duration::from_millis(500));
//!     let lock = TokenLock::with_options(ctx.backend(), &name, options).unwrap();
//!     if let Ok(guard) = lock.acquire().await {
//!         ctx.enter("jobs").await;
//!         ctx.work(Duration::from_millis(50)).await;
//!         ctx.exit("jobs").await;
//!         let _ = guard.release().await;
//!     }
//! })
//! .ttl(Duration::from_millis(500))
//! .clients(2)
//! .faults(&[FaultKind::Pause])
//! .seed(7)
//! .runs(300)
//! .threads(1)
//! .explore()
//! .unwrap();
//! let found = report.counterexample.expect("a pause past the TTL shares the resource");
//! assert_eq!(found.violation.kind, ViolationKind::MutualExclusion);
//! assert!(found.schedule.steps.len() <= 2);
//! ```

mod algorithms;
mod client;
mod context;
mod counterexample;
mod explorer;
mod generate;
mod monitor;
mod options;
mod run;
mod schedule;
mod shrink;
mod step;
mod timeline;
mod topology;
mod trace;
mod violation;
mod workload;

pub use algorithms::{Algorithm, COUNTER, LOCK, RESOURCE, UnknownAlgorithm};
pub use client::ClientView;
pub use context::{Context, Increment};
pub use counterexample::{Counterexample, REPLAY_FORMAT, ReplayError, ReplayFile};
pub use explorer::{DEFAULT_RUNS, ExploreError, Explorer, REPLAYS, Replayed, Report};
pub use monitor::StaleWrite;
pub use options::{Fencing, Options};
pub use schedule::Schedule;
pub use step::{Fault, FaultKind, Step, UnknownFault, When};
pub use topology::{Topology, UnknownTopology};
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
    algorithm
        .explorer_waiting(file.options.topology, file.options.ttl(), replicas)
        .replay(path)
}
