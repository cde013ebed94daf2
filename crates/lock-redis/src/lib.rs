//! # lock-redis
//!
//! [`RedisBackend`]: nxlock's [`KvBackend`](lock_core::KvBackend) over a real
//! Redis-protocol server, through redis-rs; and [`RedisServer`], a `redis-server` spawned
//! on a free loopback port for tests.

mod backend;
mod errors;
pub mod server;
mod value;

pub use backend::{RedisBackend, RedisOptions};
pub use server::{RedisServer, RedisTarget};
