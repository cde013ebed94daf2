//! The whole conformance suite against the in-memory double: one named test per case,
//! e.g. `token::mutual_exclusion`.

use nxlock::harness::MemoryHarness;

nxlock::conformance::conformance_tests!(MemoryHarness);
