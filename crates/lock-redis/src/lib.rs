//! # lock-redis
//!
//! [`RedisBackend`]: nxlock's [`KvBackend`](lock_core::KvBackend) over a real
//! Redis-protocol server, through redis-rs; and [`RedisServer`], a `redis-server` spawned
//! on a free loopback port for tests.

mod backend;
pub mod cluster;
#[cfg(feature = "cluster")]
mod cluster_backend;
#[cfg(all(feature = "cluster", feature = "conformance"))]
mod cluster_harness;
#[cfg(feature = "cluster")]
mod cluster_pubsub;
#[cfg(feature = "cluster")]
mod cluster_transaction;
mod commands;
mod errors;
#[cfg(feature = "conformance")]
mod harness;
pub mod instances;
pub mod proxy;
mod pubsub;
#[cfg(feature = "conformance")]
mod redlock_harness;
pub mod replicated;
mod replies;
mod route;
pub mod server;
mod transaction;
mod value;

pub use backend::{RedisBackend, RedisOptions};
pub use cluster::RedisCluster;
#[cfg(feature = "cluster")]
pub use cluster_backend::{ClusterBackend, ClusterOptions};
#[cfg(all(feature = "cluster", feature = "conformance"))]
pub use cluster_harness::RedisClusterHarness;
#[cfg(feature = "conformance")]
pub use harness::{RedisHarness, ReplicatedRedisHarness, SentinelHarness};
pub use instances::{Durability, RedisInstances};
pub use proxy::Proxy;
/// The redis-rs crate this backend is built on, for raw commands through [`RedisBackend::query`].
pub use redis;
#[cfg(feature = "conformance")]
pub use redlock_harness::RedlockRedisHarness;
pub use replicated::ReplicatedRedis;
pub use server::{RedisServer, RedisTarget, redis_required, skip_or_fail};
