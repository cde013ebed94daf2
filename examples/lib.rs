//! nxlock's runnable examples, one file each beside this one, and the Python and Node
//! lock code `nxlock explore --exec` runs (`python/`, `node/`). Run one with
//! `cargo run --release -p nxlock-examples --example NAME`:
//!
//! - `unit_test_a_lock`: a lock under virtual time and faults on the double;
//! - `check_a_backend`: the conformance suite on a backend of your own;
//! - `bench_a_lock`: the contention benchmark on a lock of your choice;
//! - `explore_my_lock`: the explorer finding the bugs planted in a hand-written lock.
