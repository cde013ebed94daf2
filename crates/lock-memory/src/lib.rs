//! # lock-memory
//!
//! [`MemoryBackend`]: an in-process double of Redis for unit-testing lock code without a
//! server. It implements [`lock_core::KvBackend`] with Redis 7.0's exact observable
//! behaviour (lazy expiry, PTTL -2/-1, error texts byte for byte), runs
//! [`Script`](lock_core::Script)s atomically through their native bodies, follows a
//! [`Clock`](lock_core::Clock) that can be virtual, injects [`Faults`], and can
//! [`dump`](MemoryBackend::dump) its keyspace when a test fails.
//!
//! ```
//! use std::time::Duration;
//! use lock_core::{LockAlgorithm, LockGuard, LockName, NamedLock, TokenLock};
//! use lock_memory::MemoryBackend;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), lock_core::LockError> {
//! let backend = MemoryBackend::new();
//! let lock = TokenLock::new(backend.clone(), &LockName::new("orders:42")?);
//! let guard = lock.acquire().await?;
//! // The holder crashes; 30 virtual seconds later its lock has expired.
//! guard.abandon();
//! tokio::time::advance(Duration::from_secs(31)).await;
//! assert!(lock.try_acquire().await?.acquired().is_some());
//! # Ok(()) }
//! ```

mod backend;
mod cluster;
mod commands;
mod data;
mod databases;
mod dump;
mod entry;
mod faults;
mod glob;
#[cfg(feature = "conformance")]
mod harness;
mod instances;
mod interrupted;
mod keyspace;
mod notifications;
mod pubsub;
mod replication;
mod script_context;
mod script_runner;
mod sharded;
mod store;
mod transaction;

pub use backend::{MemoryBackend, MemoryStats};
pub use data::{Data, Hash, List, Set, SortedSet};
pub use databases::Databases;
pub use dump::{Dump, KeyDump};
pub use faults::{COMMANDS, Faults, injected_error};
pub use glob::glob_match;
#[cfg(feature = "conformance")]
pub use harness::{
    MemoryClusterHarness, MemoryHarness, MemoryRedlockHarness, MemoryReplicaSetHarness,
};
pub use instances::{MemoryInstances, NoSuchNode, Persistence};
pub use keyspace::{Keyspace, WatchMark};
pub use notifications::{InvalidEventClass, KeyspaceEvents};
pub use pubsub::{Delivery, Inbox, InboxAddress, OutputLimit, OverflowSignal, SharedOutputLimit};
pub use replication::{Link, MemoryReplicaSet, ReplicaSetClient, Role, WriteOffset};
pub use script_runner::ScriptRunner;
pub use sharded::{ClusterClient, MemoryCluster};
pub use store::{KeyWrite, Writes};
