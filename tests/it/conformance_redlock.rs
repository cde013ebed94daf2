//! The whole conformance suite with the Redlock cases, on independent in-memory nodes
//! with their own clocks (virtual time): five nodes, and three.

use nxlock::harness::MemoryRedlockHarness;

nxlock::conformance::conformance_tests!(MemoryRedlockHarness::default());

mod three_nodes {
    nxlock::conformance::conformance_tests!(nxlock::harness::MemoryRedlockHarness::new(3));
}
