//! The integration tests of nxlock: the CLI, the suite on every backend and topology,
//! serve against real Redis, and other libraries' clients.
//!
//! One binary with a module per subject, because each test binary links the whole
//! dependency graph again.

mod cli_bench;
mod cli_check;
mod cli_closed_stdout;
mod cli_explore;
mod cli_junit;
mod cli_serve;
mod clients;
mod cluster_redis;
mod conformance_memory;
mod conformance_memory_cluster;
mod conformance_redis;
mod conformance_redis_redlock;
mod conformance_redis_replicated;
mod conformance_redis_sentinel;
mod conformance_redlock;
mod conformance_replica_set;
mod conformance_serve;
mod differential_proptest;
mod differential_scripts;
mod explore_exec;
mod failover_sentinel;
mod interleavings;
mod negative_control;
mod redis_faults;
mod redlock_redis;
mod replication_fsync;
mod serve_admin;
mod serve_cluster;
mod serve_commands;
mod serve_descriptors;
mod serve_differential;
mod serve_functions;
mod serve_fuzz;
mod serve_keyspace_events;
mod serve_memory;
mod serve_output_limits;
mod serve_protected_mode;
mod serve_scripts;
mod serve_versions;
mod spawned_servers;
mod suite_detects_broken_backends;
mod suite_on_every_backend;
mod suite_verdicts_are_stable;
mod support;
mod versions;
