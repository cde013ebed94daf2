//! # lock-redis
//!
//! [`RedisBackend`]: nxlock's [`KvBackend`](lock_core::KvBackend) over a real
//! Redis-protocol server, through redis-rs (one server, or the master a Sentinel
//! deployment names), and with the `cluster` feature [`ClusterBackend`] for Redis
//! Cluster. The processes and harnesses tests run on are in `lock-testkit`.

mod backend;
#[cfg(feature = "cluster")]
mod cluster;
mod commands;
mod errors;
mod pubsub;
mod replies;
mod route;
mod tls;
mod transaction;
mod value;

pub use backend::{RedisBackend, RedisOptions};
#[cfg(feature = "cluster")]
pub use cluster::{ClusterBackend, ClusterOptions};
/// The redis-rs crate this backend is built on, for raw commands through [`RedisBackend::query`].
pub use redis;
