//! The second layer: what the server remembers. The databases and their clock, the
//! connected clients and their subscriptions, the queue of blocked clients, client-side
//! caching's tracking table, CONFIG, INFO's counters, and the script engine's interface
//! ([`scripts`]). It runs no command.

pub(crate) mod blocked;
pub(crate) mod client;
pub(crate) mod client_faults;
pub(crate) mod clients;
pub(crate) mod cluster_layout;
pub(crate) mod config;
pub(crate) mod context;
pub(crate) mod descriptors;
pub(crate) mod observer;
pub(crate) mod options;
pub(crate) mod output_limits;
pub(crate) mod protected_mode;
pub(crate) mod scripts;
pub(crate) mod shared;
pub(crate) mod stats;
pub(crate) mod subscriptions;
pub(crate) mod tracking;
