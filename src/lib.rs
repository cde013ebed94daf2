//! # nxlock
//!
//! Test, validate and benchmark Redis-style (SETNX family) distributed locks.
//!
//! - [`lock_core`] (re-exported at the top level): the [`KvBackend`] trait, [`Script`]s,
//!   the [`Clock`], and the lock algorithms of the seed documents.
//! - [`MemoryBackend`]: an in-process Redis double with virtual time and fault injection.
//! - [`RedisBackend`]: the same trait on a real Redis-protocol server (redis-rs).
//! - [`conformance`]: the suite every backend runs; [`MemoryHarness`] and [`RedisHarness`]
//!   run it on the double and on a real server.
//!
//! ```
//! use std::time::Duration;
//! use nxlock::{LockAlgorithm, LockGuard, LockName, MemoryBackend, TokenLock};
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

pub mod bench;
mod memory_harness;
mod redis_harness;

pub use lock_conformance as conformance;
pub use lock_core::*;
pub use lock_memory::{Dump, Faults, KeyDump, MemoryBackend, MemoryStats};
pub use lock_redis::server::announce_skip;
pub use lock_redis::{RedisBackend, RedisOptions, RedisServer, RedisTarget, redis};
pub use lock_server as server;
pub use memory_harness::MemoryHarness;
pub use redis_harness::RedisHarness;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
