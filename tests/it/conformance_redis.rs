//! The whole conformance suite through RedisBackend on a real redis-server (one per test
//! process on a free loopback port, shared by the cases, which namespace their keys; or
//! `NXLOCK_REDIS_URL`): the same cases as on the double.

use nxlock::harness::RedisHarness;

nxlock::conformance::conformance_tests!(RedisHarness::from_env());
