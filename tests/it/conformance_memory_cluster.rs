//! The whole conformance suite against the double in cluster mode (three primaries'
//! rules): the cross-slot cases run, and every other case shows that what it sends is
//! legal on a Redis Cluster.

use nxlock::harness::MemoryClusterHarness;

nxlock::conformance::conformance_tests!(MemoryClusterHarness::default());
