//! The integration tests of the in-memory double, on paused (virtual) time.
//!
//! One binary with a module per subject, because each test binary links the whole
//! dependency graph again.

mod api_edges;
mod bad_input;
mod bounded_memory;
mod cancellation;
mod cluster_rules;
mod fair_line;
mod fair_turns;
mod faults;
mod guards;
mod inspection;
mod key_index;
mod keyspace_events;
mod leftovers;
mod redlock;
mod redlock_turns;
mod replication;
mod sharded_cluster;
mod versioned;
mod virtual_time;
