//! [`ServerOptions`]: how to run a [`Server`](crate::Server).

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use lock_core::RedisVersion;
use lock_memory::{MemoryBackend, MemoryReplicaSet};

use super::cluster_layout::ClusterLayout;
use super::observer::Observer;

/// Redis's 16 databases (`SELECT 0` … `SELECT 15`).
pub const DATABASES: usize = 16;

/// Redis's `tcp-backlog`: connections the kernel queues before they are accepted.
pub(crate) const TCP_BACKLOG: u32 = 511;

/// How to run a [`Server`](crate::Server).
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Address to listen on. Default 127.0.0.1: the double is for tests, not networks.
    pub bind: IpAddr,
    /// Port; 0 (the default) picks a free one.
    pub port: u16,
    /// Password clients must AUTH with; `None` (default) lets everyone in.
    pub requirepass: Option<String>,
    /// Redis's protected mode: with no password, refuse clients that are not on the
    /// loopback interface (127.0.0.1 or ::1) with Redis's `DENIED` text. Default on, as
    /// in Redis; `CONFIG SET protected-mode` changes it.
    pub protected_mode: bool,
    /// Connections served at once; more are refused with Redis's error. Default 10,000.
    pub max_clients: usize,
    /// A Lua script running longer is stopped with an error reply (Redis would keep it
    /// running and answer BUSY to others). Default 5 s, Redis's `lua-time-limit`.
    pub script_time_limit: Duration,
    /// Answer as a one-node Redis Cluster that serves every slot (`CLUSTER SLOTS`,
    /// `SHARDS`, `NODES`, `INFO`…), and hold to a cluster's rules: `CROSSSLOT` for one
    /// command's (or one transaction's) keys in two slots, a script's command spanning
    /// slots refused, `SELECT` of another database refused. Default off. With
    /// [`cluster_layout`](Self::cluster_layout), one shard of several instead.
    pub cluster: bool,
    /// The Redis version the server answers as: which commands exist (`WAITAOF` from
    /// 7.2), which scripts may call, the version `INFO`, `HELLO` and scripts report, and
    /// the texts that changed ([`RedisVersion`] lists every difference). Default: the
    /// newest.
    pub redis_version: RedisVersion,
    /// Who explores the clients behind [`Server::listen_as`](crate::Server::listen_as)'s
    /// ports: it steers their commands and hears their markers ([`Observer`]). Default
    /// none: every connection is served as it comes, and markers are ignored.
    pub observer: Option<Arc<dyn Observer>>,
    /// The backend database 0 serves, where an explorer made it (its deployment's
    /// server); default a fresh one. Its clock becomes every database's.
    pub db: Option<MemoryBackend>,
    /// The replica set whose node [`db`](Self::db) is. `WAIT` and `WAITAOF` then count
    /// the set's replicas that have applied the connection's last write, and block until
    /// enough have, as on a Redis primary; a failover while one blocks closes its
    /// connection, as the old primary's death does. Default none: a lone primary, whose
    /// `WAIT` counts no replica.
    pub replication: Option<MemoryReplicaSet>,
    /// The cluster this server is one node of, as an explorer deploys it: keys of other
    /// shards' slots are answered `MOVED`, and `CLUSTER SLOTS` and its kin describe every
    /// shard, each at the asking client's own address. Implies
    /// [`cluster`](Self::cluster). Default none.
    pub cluster_layout: Option<Arc<dyn ClusterLayout>>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            requirepass: None,
            protected_mode: true,
            max_clients: 10_000,
            script_time_limit: Duration::from_secs(5),
            cluster: false,
            redis_version: RedisVersion::default(),
            observer: None,
            db: None,
            replication: None,
            cluster_layout: None,
        }
    }
}
