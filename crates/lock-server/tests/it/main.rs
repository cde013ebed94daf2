//! The integration tests of the server behind `nxlock serve`.
//!
//! One binary with a module per subject, because each test binary links the whole
//! dependency graph again.

mod access_time;
mod blocking;
mod cluster_layout;
mod double_scripts;
mod faults;
mod layers;
mod limits;
mod observer;
mod pubsub;
mod replica_set;
mod support;
