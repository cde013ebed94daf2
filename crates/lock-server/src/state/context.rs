//! What a keyspace command knows besides its arguments.

use lock_core::RedisVersion;

use super::config::Limits;
use crate::protocol::reply::Protocol;

/// The caller's side of a keyspace command: from a client, a pipeline step, EXEC or
/// `redis.call`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Context {
    /// The caller's protocol: as in Redis, a few replies differ in shape between RESP2
    /// and RESP3.
    pub(crate) protocol: Protocol,
    /// The encoding thresholds (`CONFIG SET hash-max-listpack-entries`…).
    pub(crate) limits: Limits,
    /// The caller's database (`SELECT`).
    pub(crate) db: usize,
    /// Whether the server holds to Redis Cluster's rules (scripts check their commands).
    pub(crate) cluster: bool,
    /// The Redis version the server answers as.
    pub(crate) version: RedisVersion,
}
