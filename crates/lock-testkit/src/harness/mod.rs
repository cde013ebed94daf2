//! The conformance suite's harnesses on real processes: one server ([`RedisHarness`]),
//! a replicated deployment with or without Sentinel ([`RedisReplicatedHarness`]), an
//! existing Sentinel deployment ([`RedisSentinelHarness`]), independent instances for
//! Redlock ([`RedisRedlockHarness`]) and a cluster (`RedisClusterHarness`, feature
//! `cluster`).

#[cfg(feature = "cluster")]
mod cluster;
mod redis;
mod redlock;
mod replicated;
mod sentinel;

#[cfg(feature = "cluster")]
pub use cluster::RedisClusterHarness;
pub use redis::RedisHarness;
pub use redlock::RedisRedlockHarness;
pub use replicated::RedisReplicatedHarness;
pub use sentinel::RedisSentinelHarness;
