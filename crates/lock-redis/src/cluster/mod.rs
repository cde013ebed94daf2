//! Redis Cluster through redis-rs's `cluster-async` client: the backend, its sharded
//! pub/sub and its transactions, over one routing layer they share.

mod backend;
mod options;
mod pubsub;
mod routing;
mod transaction;

pub use backend::ClusterBackend;
pub use options::ClusterOptions;
