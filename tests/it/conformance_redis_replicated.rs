//! The whole conformance suite on spawned redis-server processes, a primary and a
//! replica, with the failover cases: the lock lost in a real failover, and the mitigations.

use nxlock::harness::RedisReplicatedHarness;

nxlock::conformance::conformance_tests!(RedisReplicatedHarness::spawn().await);
