//! The whole conformance suite through a Sentinel-aware `RedisBackend` on spawned
//! processes (a primary, a replica and a sentinel): in the failover cases the sentinel
//! notices the killed primary and promotes the replica, and the backend follows it.

use nxlock::harness::RedisReplicatedHarness;

nxlock::conformance::conformance_tests!(RedisReplicatedHarness::spawn_with_sentinel().await);
