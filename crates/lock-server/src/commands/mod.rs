//! The fourth layer: the command bodies, one file per kind of command, as in miniredis.
//! A keyspace command is a function of the store, its arguments and a
//! [`Context`](crate::state::context::Context); the others act on a client's or the
//! server's state.
//! None of them knows the command table or how a request reaches it: the table
//! ([`crate::table`]) names them, and the runners ([`crate::run`]) call them.

pub(crate) mod admin;
pub(crate) mod bits;
pub(crate) mod client_command;
pub(crate) mod client_fault;
pub(crate) mod cluster;
pub(crate) mod config_command;
pub(crate) mod connection;
pub(crate) mod expiry;
pub(crate) mod hashes;
pub(crate) mod info;
pub(crate) mod keys;
pub(crate) mod lists;
pub(crate) mod markers;
pub(crate) mod memory;
pub(crate) mod pubsub;
pub(crate) mod pubsub_command;
pub(crate) mod replication;
pub(crate) mod sampling;
pub(crate) mod sets;
pub(crate) mod sorted_set_ops;
pub(crate) mod sorted_set_pops;
pub(crate) mod sorted_sets;
pub(crate) mod strings;
pub(crate) mod values;
