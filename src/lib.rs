//! # nxlock
//!
//! Test, validate and benchmark Redis-style (SETNX family) distributed locks.
//!
//! - The lock algorithms of the seed documents ([`TokenLock`], [`LegacyLock`],
//!   [`ScriptedLock`], [`ReentrantLock`], [`FencedLock`], [`FairLock`], and [`Redlock`] over
//!   N nodes), generic over any
//!   [`KvBackend`], with [`Lease`] watchdogs.
//! - [`MemoryBackend`]: an in-process Redis double with virtual time and fault injection;
//!   [`MemoryReplicaSet`]: a primary and replicas of it, to reproduce failovers;
//!   [`MemoryInstances`]: independent nodes with their own clocks, for [`Redlock`].
//! - [`conformance`]: the suite every backend runs; [`MemoryHarness`] runs it on the
//!   double, `RedisHarness` (feature `redis`) on a real server.
//! - With features: `RedisBackend` (`redis`), `ClusterBackend` for Redis Cluster
//!   (`cluster`), `nxlock serve` as a library ([`server`],
//!   feature `server`), the contention benchmark ([`bench`](mod@bench), feature `bench`). The default
//!   feature `cli` turns all of them on and builds the `nxlock` binary; a project that
//!   unit-tests its lock code needs none of them:
//!
//! ```toml
//! [dev-dependencies]
//! nxlock = { version = "0.1", default-features = false }
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
pub use lock_core::lock_name;
pub use lock_core::{
    AcquirePolicy, Attempt, Backoff, Clock, CountingBackend, DEFAULT_PATIENCE, Either, Error,
    ErrorKind, ExpireCondition, FairGuard, FairLock, FencedGuard, FencedLock, KvBackend, Lease,
    LeaseOptions, LegacyGuard, LegacyLock, LockAlgorithm, LockError, LockGuard, LockName,
    LockOptions, LockOwner, LostReason, MAX_TTL, Message, Missed, Redlock, RedlockGuard,
    RedlockOptions, ReentrantGuard, ReentrantLock, ReleaseError, Replicated, Replication, Result,
    Retry, Script, ScriptContext, ScriptedGuard, ScriptedLock, SetCondition, SetExpiry, SetOptions,
    SetReply, SlotLayout, Snapshot, Subscription, TokenGuard, TokenLock, Transaction, TxWrite,
    Updated, Value, Versioned, Wait, hash_slot, scripts,
};
pub use lock_memory::{
    Dump, Faults, KeyDump, Link, MemoryBackend, MemoryClusterHarness, MemoryHarness,
    MemoryInstances, MemoryReplicaSet, MemoryStats, NoSuchNode, Persistence, RedlockHarness,
    ReplicaSetClient, ReplicaSetHarness, Role,
};
#[cfg(feature = "cluster")]
pub use lock_redis::{ClusterBackend, ClusterOptions, RedisClusterHarness};
#[cfg(feature = "redis")]
pub use lock_redis::{
    RedisBackend, RedisHarness, RedisOptions, RedlockRedisHarness, ReplicatedRedisHarness,
    SentinelHarness, redis,
};
#[cfg(feature = "server")]
pub use lock_server as server;

/// The traits a test needs in scope to acquire, release and run commands:
/// `use nxlock::prelude::*;`.
pub mod prelude {
    pub use lock_core::{KvBackend, LockAlgorithm, LockGuard};
}

/// Real `redis-server` processes for tests: spawned on a free loopback port and killed on
/// drop, or skipped loudly when none is available (a failure under
/// `NXLOCK_REQUIRE_REDIS=1`).
#[cfg(feature = "redis")]
pub mod testing {
    pub use lock_redis::replicated::MASTER_NAME;
    pub use lock_redis::server::{URL_VAR, announce_skip};
    pub use lock_redis::{
        Durability, Proxy, RedisCluster, RedisInstances, RedisServer, RedisTarget, ReplicatedRedis,
        redis_required, skip_or_fail,
    };
}

/// The building blocks under the facade, for backend authors who write their own native
/// scripts (`lock_core::nth`, `lock_core::integer_arg`) or need the whole core.
pub use lock_core;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
