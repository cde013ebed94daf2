//! The whole conformance suite through RedisBackend on a real redis-server (spawned per
//! test on a free loopback port, or `NXLOCK_REDIS_URL`): the same cases as on the double.

use nxlock::harness::RedisHarness;

nxlock::conformance::conformance_tests!(RedisHarness::from_env());
