//! # lock-server
//!
//! `nxlock serve`: the in-memory double ([`lock_memory::MemoryBackend`]) behind a
//! Redis-protocol (RESP2) socket, so lock code in any language can be tested without a
//! Redis server, with time you control.
//!
//! - Start it in-process on a free port with [`Server::start`], hand [`Server::url`] to
//!   any client, move time with [`Server::advance`] (or, from another language, the
//!   `NXLOCK.FASTFORWARD <ms>` command), inject faults through [`Server::db`].
//! - Replies and error texts follow Redis 7.0, checked command by command against a real
//!   redis-server by the differential tests.

mod blocking;
mod commands;
mod connection;
mod lua;
mod pipeline;
mod reply;
mod request;
mod server;
mod session;

pub use commands::connection::{FAST_FORWARD, REDIS_VERSION};
pub use server::{DATABASES, Server, ServerOptions};
