//! The whole conformance suite through `RedisBackend` on real `redis-server` processes,
//! with the Redlock cases on five fresh independent instances each: killed, black-holed,
//! restarted with and without their append-only files, and their keys' TTLs cut short
//! as a clock jump would.

use nxlock::harness::RedisRedlockHarness;

nxlock::conformance::conformance_tests!(RedisRedlockHarness::spawn(5));
