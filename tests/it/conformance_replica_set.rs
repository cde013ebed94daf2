//! The whole conformance suite against the in-memory replica set (a primary and one
//! replica): every case through a client that follows failovers, and the failover cases.

use nxlock::harness::MemoryReplicaSetHarness;

nxlock::conformance::conformance_tests!(MemoryReplicaSetHarness);
