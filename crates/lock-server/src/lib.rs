//! # lock-server
//!
//! `nxlock serve`: the in-memory double ([`lock_memory::MemoryBackend`]) behind a
//! Redis-protocol (RESP2, RESP3) socket, so lock code in any language can be tested
//! without a Redis server, with time you control.
//!
//! - Start it in-process on a free port with [`Server::start`], hand [`Server::url`] to
//!   any client, move time with [`Server::advance`] (or, from another language, the
//!   `NXLOCK.FASTFORWARD <ms>` command), inject faults through [`Server::db`].
//! - Replies and error texts follow Redis 7.0, 7.2 or 7.4 ([`ServerOptions::redis_version`],
//!   the newest by default), checked command by command against a real redis-server 7.0
//!   and Valkey 8 by the differential tests.
//!
//! # Layout
//!
//! The modules are layers; each uses only the layers below it (a test reads the `use`
//! lines and holds them to it). From the bottom up:
//!
//! 1. `protocol`: requests, replies, and the arguments and numbers every command reads;
//! 2. `state`: the databases, clients, subscriptions, blocked clients, CONFIG, and the
//!    script engine's interface;
//! 3. `lua`: the Lua engine, which reaches commands only through a callback;
//! 4. `commands`: the command bodies, one file per kind;
//! 5. `table`: the one command table, looked up once per request;
//! 6. `run`: the runners (dispatch, keyspace, transaction, scripting, pipeline, blocked
//!    clients);
//! 7. `connection` and `server`: the socket.

mod commands;
mod connection;
mod double;
mod lua;
mod protocol;
mod run;
mod server;
mod state;
mod table;

pub use double::LuaScripts;
pub use lock_core::RedisVersion;
pub use server::Server;
pub use state::cluster_layout::ClusterLayout;
pub use state::observer::{After, Before, Marker, Observer, Validity};
pub use state::options::{DATABASES, ServerOptions};
pub use table::FAST_FORWARD;
