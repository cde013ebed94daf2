//! # lock-server
//!
//! `nxlock serve`: the in-memory double ([`lock_memory::MemoryBackend`]) behind a
//! Redis-protocol (RESP2, RESP3) socket, so lock code in any language can be tested
//! without a Redis server, with time you control.
//!
//! - Start it in-process on a free port with [`Server::start`], hand [`Server::url`] to
//!   any client, move time with [`Server::advance`] (or, from another language, the
//!   `NXLOCK.FASTFORWARD <ms>` command), inject faults through [`Server::db`].
//! - Replies and error texts follow Redis 7.0, checked command by command against a real
//!   redis-server by the differential tests.
//!
//! Layout: [`Server`] listens; each connection (`connection`) reads requests and writes
//! replies; `commands` holds the one command table and one file per kind of command,
//! which run against the state every connection shares (`shared`).

mod blocking;
mod client;
mod clients;
mod commands;
mod config;
mod connection;
mod lua;
mod options;
mod pipeline;
mod reply;
mod request;
mod server;
mod shared;
mod stats;
mod tracking;

pub use commands::FAST_FORWARD;
pub use commands::admin::REDIS_VERSION;
pub use options::{DATABASES, ServerOptions};
pub use server::Server;
