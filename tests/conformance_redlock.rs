//! The whole conformance suite with the Redlock cases, on independent in-memory nodes
//! with their own clocks (virtual time): five nodes, and three.

use nxlock::RedlockHarness;

nxlock::conformance::conformance_tests!(RedlockHarness::default());

mod three_nodes {
    nxlock::conformance::conformance_tests!(nxlock::RedlockHarness::new(3));
}
