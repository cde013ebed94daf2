//! # nxlock
//!
//! Test, validate and benchmark Redis-style (SETNX family) distributed locks.
//!
//! - At the root, the lock API: the lock algorithms ([`TokenLock`], [`LegacyLock`],
//!   [`ScriptedLock`], [`ReentrantLock`], [`FencedLock`], [`FairLock`], and [`Redlock`] over
//!   N nodes), generic over any [`KvBackend`], with [`Lease`] watchdogs.
//! - [`MemoryBackend`]: an in-process Redis double with virtual time and fault injection;
//!   [`memory`] has its replicated and multi-instance deployments, to reproduce failovers
//!   and run Redlock.
//! - [`explore`]: searches fault schedules for the bugs nobody scripted in your own lock
//!   code, and shrinks each to a counterexample that replays exactly.
//! - [`conformance`]: the suite every backend runs, with the [`harness`]es that run it on
//!   the double and on real servers; [`testing`] spawns those servers (feature `redis`).
//! - [`backend`], [`script`], [`cluster`], [`pubsub`], [`optimistic`]: what backend authors
//!   and advanced users need below the lock API.
//! - The "seeds" cited throughout are the five documents the algorithms come from;
//!   `docs/SEEDS.md` summarises each and points to its code.
//! - With features: `RedisBackend` (`redis`), `cluster::ClusterBackend` for Redis Cluster
//!   (`cluster`), `nxlock serve` as a library (`server`), your own Lua scripts on the
//!   double (`lua`: serve's sealed Lua 5.1 engine), the contention benchmark (`bench`).
//!   The default feature `cli` turns all of them on and builds the `nxlock` binary; a
//!   project that unit-tests its lock code needs none of them:
//!
//! ```toml
//! [dev-dependencies]
//! # Until nxlock is published: a path to a checkout (or `git = "…"`).
//! nxlock = { path = "../nxlock", default-features = false }
//! ```
//!
//! ```
//! use nxlock::prelude::*;
//! use nxlock::{LockName, MemoryBackend, TokenLock};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), nxlock::LockError> {
//! let redis = MemoryBackend::new();
//! let lock = TokenLock::new(redis.clone(), &LockName::new("jobs:nightly")?);
//! let guard = lock.acquire().await?;
//! assert!(lock.try_acquire().await?.acquired().is_none());
//! assert!(guard.release().await?);
//! # Ok(()) }
//! ```

#[cfg(feature = "bench")]
pub mod bench;

pub use lock_conformance as conformance;
/// `nxlock explore` as a library: seeded fault schedules against your lock code on the
/// double, checked for mutual exclusion, stale fences, lost updates, keys without a TTL
/// and liveness, each violation shrunk to a replayable counterexample. `docs/EXPLORE.md`
/// explains the model.
pub use lock_explore as explore;
#[cfg(feature = "server")]
pub use lock_server as server;
/// `nxlock explore --exec` as a library: lock code in any language, run as processes
/// against `nxlock serve`, under the explorer's faults and checkers.
#[cfg(feature = "server")]
pub use lock_wire_explore as wire_explore;

// The lock API: the locks and their guards, the traits that use them, names, options,
// leases, and what acquiring and releasing can answer.
pub use lock_core::lock_name;
pub use lock_core::{
    AcquirePolicy, AlgorithmKind, Attempt, Backoff, Clock, DEFAULT_PATIENCE, Error, ErrorKind,
    FairGuard, FairLock, FencedGuard, FencedLock, KvBackend, Lease, LeaseOptions, LegacyGuard,
    LegacyLock, LockAlgorithm, LockBinding, LockError, LockGuard, LockName, LockOptions, LockOwner,
    LostReason, MAX_TTL, NamedLock, Redlock, RedlockGuard, RedlockOptions, ReentrantGuard,
    ReentrantLock, ReleaseError, Retry, ScriptedGuard, ScriptedLock, TokenGuard, TokenLock,
    TopologyKind,
};
pub use lock_memory::MemoryBackend;
#[cfg(feature = "redis")]
pub use lock_redis::{RedisBackend, RedisOptions};

/// The traits a test needs in scope to acquire, release and run commands:
/// `use nxlock::prelude::*;`.
pub mod prelude {
    pub use lock_core::{KvBackend, LockAlgorithm, LockGuard, NamedLock, OwnedCommands};
}

/// What a [`KvBackend`] speaks: the options and replies of its commands, transactions,
/// replication acknowledgements, and the adapters that wrap one backend in another. For
/// authors of backends and of code generic over them.
pub mod backend {
    pub use lock_core::{
        CountingBackend, DynBackend, Either, Error, ErrorKind, ExpireCondition, KvBackend,
        RedisVersion, Replicated, Replication, Result, Session, SetCondition, SetExpiry,
        SetOptions, SetReply, Transaction, TxWrite, UnknownVersion, Value, publish_command,
    };
}

/// The lock scripts, as Lua for a real server and as native bodies for the double, and
/// what a native body is handed ([`ScriptContext`](script::ScriptContext)).
pub mod script {
    pub use lock_core::scripts::*;
    pub use lock_core::{NativeScript, Script, ScriptContext, integer_arg, nth};
}

/// Redis Cluster: hash slots and hash tags, and (feature `cluster`) the cluster client.
pub mod cluster {
    pub use lock_core::{SLOTS, SlotLayout, common_slot, hash_slot};
    #[cfg(feature = "cluster")]
    pub use lock_redis::{ClusterBackend, ClusterOptions};
}

/// Pub/sub as the locks use it to wake waiters: subscriptions, messages, and the notice
/// that messages were missed.
pub mod pubsub {
    pub use lock_core::{Fanout, Message, Missed, Subscription, Wait};
}

/// Optimistic concurrency without a lock: a value with a version, updated with
/// compare-and-set, applied exactly once even when a reply is lost.
pub mod optimistic {
    pub use lock_core::{Snapshot, Updated, Versioned};
}

/// The in-process Redis double and its deployments: one server ([`MemoryBackend`]
/// (memory::MemoryBackend)), a primary with replicas for failovers, independent
/// instances with their own clocks for Redlock, and a sharded cluster whose slots
/// migrate; faults, dumps and statistics. With
/// feature `lua`, [`LuaScripts`](memory::LuaScripts) runs your own Lua on the double.
pub mod memory {
    pub use lock_memory::{
        ClusterClient, Dump, Faults, KeyDump, KeyWrite, Link, MemoryBackend, MemoryCluster,
        MemoryInstances, MemoryReplicaSet, MemoryStats, NoSuchNode, Persistence, ReplicaSetClient,
        Role, ScriptRunner,
    };
    #[cfg(feature = "lua")]
    pub use lock_server::LuaScripts;
}

/// The conformance suite's harnesses: on the double, always; on real `redis-server`
/// processes with feature `redis` (and `cluster` for a cluster).
pub mod harness {
    pub use lock_conformance::Harness;
    pub use lock_memory::{
        MemoryClusterHarness, MemoryHarness, MemoryRedlockHarness, MemoryReplicaSetHarness,
    };
    #[cfg(feature = "cluster")]
    pub use lock_testkit::RedisClusterHarness;
    #[cfg(feature = "redis")]
    pub use lock_testkit::{
        RedisHarness, RedisRedlockHarness, RedisReplicatedHarness, RedisSentinelHarness,
    };
}

/// Real `redis-server` processes for tests: spawned on a free loopback port in a temporary
/// directory of their own and killed on drop, or skipped loudly when none is available (a
/// failure under `NXLOCK_REQUIRE_REDIS=1`).
#[cfg(feature = "redis")]
pub mod testing {
    pub use lock_testkit::spawn::*;
}

/// The redis-rs crate this build's [`RedisBackend`] is made with.
#[cfg(feature = "redis")]
pub use redis;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The explorer guide's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/EXPLORE.md")]
pub struct ExploreDoctests;

/// The guide's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/GUIDE.md")]
pub struct GuideDoctests;
