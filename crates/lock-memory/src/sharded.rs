//! [`MemoryCluster`]: a sharded double of a Redis Cluster. Each shard is a
//! [`MemoryReplicaSet`] that fails over on its own; a [`ClusterClient`] routes every
//! command to the shard serving its key's slot; slots migrate between shards.

use std::sync::Arc;
use std::time::Duration;

use lock_core::{
    Clock, ExpireCondition, KvBackend, Replicated, Replication, Result, Script, SetOptions,
    SetReply, SlotLayout, Subscription, Transaction, Value, common_slot, hash_slot,
};
use parking_lot::Mutex;

use crate::{MemoryBackend, MemoryReplicaSet, ReplicaSetClient};

/// A Redis Cluster on the double: `shards` primaries splitting the slots evenly, each with
/// its replicas. Every node holds to the cluster's key rules (`CROSSSLOT`, scripts that
/// reach into another shard's slots), and a [`ClusterClient`] routes each command by its
/// key's slot, as a cluster-aware client does. Clones share the cluster.
///
/// What it models beyond [`MemoryBackend::with_cluster_rules`] (one keyspace standing for
/// the whole cluster): each shard's own replication and failover, so a shard's failover
/// loses what its replicas had not received, and slot migration
/// ([`MemoryCluster::migrate`]), which moves a slot's keys with their TTLs in one step
/// (there is no window in which a client meets `ASK` or `TRYAGAIN`).
///
/// ```
/// use lock_core::{KvBackend, SetOptions, hash_slot};
/// use lock_memory::MemoryCluster;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let cluster = MemoryCluster::new(3, 1);
/// let client = cluster.client();
/// client.set(b"{orders}:lock", b"me", SetOptions::new().px(30_000)).await.unwrap();
/// let slot = hash_slot(b"{orders}:lock");
/// let from = cluster.shard_of(slot);
/// cluster.migrate(slot, (from + 1) % 3);
/// assert_eq!(cluster.shard_of(slot), (from + 1) % 3);
/// // The key moved with its TTL; the client follows the slot.
/// assert_eq!(client.get(b"{orders}:lock").await.unwrap(), Some(b"me".to_vec()));
/// assert!(client.pttl(b"{orders}:lock").await.unwrap() > 29_000);
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct MemoryCluster {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    shards: Vec<MemoryReplicaSet>,
    layout: Mutex<SlotLayout>,
    clock: Clock,
    /// One migration at a time: it locks two shards' stores.
    migrating: Mutex<()>,
}

impl MemoryCluster {
    /// `shards` shards (at least 1) of a primary and `replicas` replicas each, on
    /// [`Clock::tokio`].
    pub fn new(shards: usize, replicas: usize) -> Self {
        Self::with_clock(shards, replicas, Clock::tokio())
    }

    /// The same on `clock`.
    pub fn with_clock(shards: usize, replicas: usize, clock: Clock) -> Self {
        let shards = shards.max(1);
        let layout = SlotLayout::even(shards);
        let sets: Vec<_> = (0..shards)
            .map(|_| MemoryReplicaSet::with_clock(replicas, clock.clone()))
            .collect();
        let cluster = Self {
            inner: Arc::new(Inner {
                shards: sets,
                layout: Mutex::new(layout),
                clock,
                migrating: Mutex::new(()),
            }),
        };
        cluster.apply_layout();
        cluster
    }

    /// Gives every node the current layout, whose rules it enforces.
    fn apply_layout(&self) {
        let layout = self.layout();
        for set in &self.inner.shards {
            for node in 0..set.len() {
                let _ = set.node(node).with_cluster_rules(layout.clone());
            }
        }
    }

    /// A client that routes each command to its slot's shard.
    pub fn client(&self) -> ClusterClient {
        ClusterClient {
            cluster: self.clone(),
        }
    }

    /// How many shards.
    pub fn shards(&self) -> usize {
        self.inner.shards.len()
    }

    /// Shard `index`'s replica set (`None` past the last), to fail it over or look inside.
    pub fn shard(&self, index: usize) -> Option<&MemoryReplicaSet> {
        self.inner.shards.get(index)
    }

    /// The slots each shard serves now.
    pub fn layout(&self) -> SlotLayout {
        self.inner.layout.lock().clone()
    }

    /// The shard that serves `slot` now.
    pub fn shard_of(&self, slot: u16) -> usize {
        self.inner.layout.lock().node_of(slot)
    }

    /// The cluster's clock.
    pub fn clock(&self) -> Clock {
        self.inner.clock.clone()
    }

    /// Moves `slot` to shard `to` (clamped to the last): its keys go from the serving
    /// shard's primary to `to`'s, with their values and expiries, and the slot is `to`'s
    /// from then on. How many keys moved. Nothing moves while either shard has no
    /// primary (mid-failover), as `MIGRATE` fails against a dead node.
    pub fn migrate(&self, slot: u16, to: usize) -> usize {
        let _one_at_a_time = self.inner.migrating.lock();
        let to = to.min(self.shards() - 1);
        let from = self.shard_of(slot);
        if from == to {
            return 0;
        }
        let (Some(source), Some(target)) = (
            self.inner.shards[from].primary_node(),
            self.inner.shards[to].primary_node(),
        ) else {
            return 0;
        };
        let moved = source.migrate_slot(slot, &target);
        self.inner.layout.lock().move_slot(slot, to);
        self.apply_layout();
        moved
    }

    /// Moves time forward for every node (keys expire, clock sleeps wake).
    pub fn advance(&self, by: Duration) {
        self.inner.clock.advance(by);
    }

    /// The client of the shard serving `keys` (which must share a slot: `CROSSSLOT`
    /// otherwise); shard 0 for none, as a script without keys goes to any node.
    fn route(&self, keys: &[&[u8]]) -> Result<ReplicaSetClient> {
        let shard = common_slot(keys)?.map_or(0, |slot| self.shard_of(slot));
        Ok(self.inner.shards[shard].client())
    }

    /// The primary of the shard serving `key`, if it has one.
    pub fn primary_for(&self, key: &[u8]) -> Option<MemoryBackend> {
        self.inner.shards[self.shard_of(hash_slot(key))].primary_node()
    }
}

/// A [`KvBackend`] on a [`MemoryCluster`]: each command goes to the current primary of
/// the shard serving its key's slot. Wake-ups use sharded pub/sub, which stays within
/// the channel's slot's shard.
#[derive(Clone, Debug)]
pub struct ClusterClient {
    cluster: MemoryCluster,
}

impl ClusterClient {
    /// The cluster this client talks to.
    pub fn cluster(&self) -> &MemoryCluster {
        &self.cluster
    }

    fn one(&self, key: &[u8]) -> Result<ReplicaSetClient> {
        self.cluster.route(&[key])
    }
}

impl KvBackend for ClusterClient {
    async fn set(&self, key: &[u8], value: &[u8], options: SetOptions) -> Result<SetReply> {
        self.one(key)?.set(key, value, options).await
    }
    async fn setnx(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.one(key)?.setnx(key, value).await
    }
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.one(key)?.get(key).await
    }
    async fn getset(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        self.one(key)?.getset(key, value).await
    }
    async fn getdel(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.one(key)?.getdel(key).await
    }
    async fn del(&self, keys: &[&[u8]]) -> Result<i64> {
        self.cluster.route(keys)?.del(keys).await
    }
    async fn exists(&self, keys: &[&[u8]]) -> Result<i64> {
        self.cluster.route(keys)?.exists(keys).await
    }
    async fn pexpire(&self, key: &[u8], ms: i64, condition: ExpireCondition) -> Result<bool> {
        self.one(key)?.pexpire(key, ms, condition).await
    }
    async fn pexpireat(
        &self,
        key: &[u8],
        unix_ms: i64,
        condition: ExpireCondition,
    ) -> Result<bool> {
        self.one(key)?.pexpireat(key, unix_ms, condition).await
    }
    async fn pttl(&self, key: &[u8]) -> Result<i64> {
        self.one(key)?.pttl(key).await
    }
    async fn ttl(&self, key: &[u8]) -> Result<i64> {
        self.one(key)?.ttl(key).await
    }
    async fn persist(&self, key: &[u8]) -> Result<bool> {
        self.one(key)?.persist(key).await
    }
    async fn incr(&self, key: &[u8]) -> Result<i64> {
        self.one(key)?.incr(key).await
    }
    async fn eval(&self, script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Result<Value> {
        self.cluster.route(keys)?.eval(script, keys, args).await
    }
    async fn eval_replicated(
        &self,
        script: &Script,
        keys: &[&[u8]],
        args: &[&[u8]],
        replication: &Replication,
    ) -> Result<Replicated<Value>> {
        self.cluster
            .route(keys)?
            .eval_replicated(script, keys, args, replication)
            .await
    }
    async fn publish(&self, channel: &[u8], message: &[u8]) -> Result<i64> {
        self.one(channel)?.publish(channel, message).await
    }
    async fn subscribe(&self, channel: &[u8]) -> Result<Subscription> {
        self.one(channel)?.subscribe(channel).await
    }
    async fn watch(&self, keys: &[&[u8]]) -> Result<Transaction> {
        self.cluster.route(keys)?.watch(keys).await
    }
    fn sharded_pubsub(&self) -> bool {
        true
    }
    fn clock(&self) -> Clock {
        self.cluster.clock()
    }
}
