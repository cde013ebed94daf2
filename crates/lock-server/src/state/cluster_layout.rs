//! [`ClusterLayout`]: the cluster a server is one node of, for an explorer that deploys
//! several servers as a Redis Cluster (`ServerOptions::cluster_layout`). Without one, a
//! cluster-mode server is a one-node cluster that serves every slot.

use std::fmt;
use std::net::SocketAddr;

/// Which shard serves which slot, and where each client reaches each shard. The server
/// asks it for every keyed command (a key of another shard's slot is answered `MOVED`
/// to the client's own address of that shard) and for `CLUSTER SLOTS`, `SHARDS`, `NODES`
/// and `INFO`. Slots may move between shards while the server runs (a migration); a
/// shard's address stays the same across its failovers.
pub trait ClusterLayout: Send + Sync + fmt::Debug {
    /// How many shards the cluster has.
    fn shards(&self) -> usize;

    /// The shard this server's node belongs to.
    fn own_shard(&self) -> usize;

    /// The shard that serves `slot` now.
    fn owner(&self, slot: u16) -> usize;

    /// Where client `client` (as [`Server::listen_as`](crate::Server::listen_as) tags
    /// it; `None` for an untagged connection) reaches shard `shard`.
    fn address(&self, client: Option<usize>, shard: usize) -> SocketAddr;
}

/// A shard's node id, the same on every server of the layout: 40 hex digits.
pub(crate) fn shard_id(shard: usize) -> String {
    format!("{:040x}", shard + 1)
}
