//! [`ShardLayout`]: serve's [`ClusterLayout`] for one node of a run's cluster. The
//! run's deployment says which shard serves which slot (slots migrate during a run);
//! each client reaches each shard at its own endpoint, which follows the shard's
//! failovers.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use lock_explore::ExternalRun;
use lock_server::ClusterLayout;

/// Each client's endpoint of each shard: `[client][shard]`, set once the endpoints
/// listen (before any client starts).
pub(crate) type ShardAddresses = Arc<OnceLock<Vec<Vec<SocketAddr>>>>;

/// One node's view of the run's cluster.
#[derive(Debug)]
pub(crate) struct ShardLayout {
    pub(crate) run: Arc<ExternalRun>,
    /// The shard of the node served.
    pub(crate) own: usize,
    pub(crate) shards: usize,
    pub(crate) addresses: ShardAddresses,
}

impl ClusterLayout for ShardLayout {
    fn shards(&self) -> usize {
        self.shards
    }

    fn own_shard(&self) -> usize {
        self.own
    }

    fn owner(&self, slot: u16) -> usize {
        self.run.slot_owner(slot).unwrap_or(self.own)
    }

    /// An untagged connection (none comes in a run) is shown client 0's addresses.
    fn address(&self, client: Option<usize>, shard: usize) -> SocketAddr {
        self.addresses
            .get()
            .and_then(|all| all.get(client.unwrap_or(0))?.get(shard).copied())
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)))
    }
}
