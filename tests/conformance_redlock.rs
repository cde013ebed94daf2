//! The whole conformance suite with the Redlock cases, on independent in-memory nodes
//! with their own clocks (virtual time).

use nxlock::RedlockHarness;

nxlock::conformance::conformance_tests!(RedlockHarness);
