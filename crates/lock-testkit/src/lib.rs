//! # lock-testkit
//!
//! Real processes for tests of nxlock and of lock code built on it: `redis-server`
//! spawned on free loopback ports, each in a temporary directory of its own and killed
//! when dropped ([`spawn`]), and the conformance harnesses that run the suite on them
//! ([`harness`]). Without a `redis-server` on PATH, tests say so loudly and skip; with
//! `NXLOCK_REQUIRE_REDIS=1` that is a failure ([`spawn::skip_or_fail`]).
//!
//! Layers: `spawn` (processes and proxies) knows nothing of the harnesses; `harness`
//! builds on `spawn`, the `lock-redis` client and the `lock-conformance` suite.

pub mod harness;
pub mod spawn;

#[cfg(feature = "cluster")]
pub use harness::RedisClusterHarness;
pub use harness::{
    RedisHarness, RedisRedlockHarness, RedisReplicatedHarness, RedisSentinelHarness,
};
pub use spawn::{
    Durability, Proxy, RedisCluster, RedisInstances, RedisServer, RedisTarget, ReplicatedRedis,
    announce_skip, installed_server, installed_version, redis_required, skip_or_fail,
};
