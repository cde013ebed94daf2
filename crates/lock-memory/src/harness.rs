//! The conformance harnesses for [`MemoryBackend`], [`MemoryReplicaSet`] and
//! [`MemoryInstances`].

use std::time::Duration;

use lock_conformance::{
    Answer, Capabilities, Capability, Cluster, Deployment, Failover, Harness, Instances, Step,
    check_instance_count,
};
use lock_core::{Clock, RedisVersion, SlotLayout};

use crate::{MemoryBackend, MemoryInstances, MemoryReplicaSet, Persistence, ReplicaSetClient};

/// Runs the conformance suite on a fresh [`MemoryBackend`] per case; time advances
/// virtually (instantly) through [`MemoryBackend::advance`].
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryHarness;

impl Harness for MemoryHarness {
    type Backend = MemoryBackend;

    fn name(&self) -> String {
        "memory (embedded MemoryBackend)".into()
    }

    async fn backend(&self) -> Result<MemoryBackend, String> {
        Ok(MemoryBackend::new())
    }

    async fn advance(&self, backend: &MemoryBackend, by: Duration) {
        backend.advance(by);
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::none()
            .with(Capability::PubSub)
            .with(Capability::TimeControl)
            .with(Capability::Transactions)
    }
}

/// Runs the conformance suite on a fresh [`MemoryBackend`] per case in cluster mode
/// ([`MemoryBackend::with_cluster_rules`]), standing for a cluster of `shards` primaries
/// split as `redis-cli --cluster create` splits them: the cross-slot cases run, and every
/// other case shows its commands legal on a cluster. Slots cannot move (one store holds
/// them all), so the migration and failover cases are skipped.
#[derive(Clone, Debug)]
pub struct MemoryClusterHarness {
    layout: SlotLayout,
    version: RedisVersion,
}

impl MemoryClusterHarness {
    /// A cluster of `shards` primaries (at least 1), answering as the newest Redis.
    pub fn new(shards: usize) -> Self {
        Self {
            layout: SlotLayout::even(shards),
            version: RedisVersion::default(),
        }
    }

    /// Its doubles answer as Redis `version` does ([`MemoryBackend::with_redis_version`]),
    /// and are judged against it.
    pub fn with_redis_version(mut self, version: RedisVersion) -> Self {
        self.version = version;
        self
    }
}

impl Default for MemoryClusterHarness {
    /// Three primaries, as the smallest real cluster.
    fn default() -> Self {
        Self::new(3)
    }
}

impl Harness for MemoryClusterHarness {
    type Backend = MemoryBackend;

    fn name(&self) -> String {
        format!(
            "memory cluster (MemoryBackend with the cluster rules of {} primaries)",
            self.layout.primaries()
        )
    }

    fn topology(&self) -> String {
        "cluster".into()
    }

    async fn backend(&self) -> Result<MemoryBackend, String> {
        Ok(MemoryBackend::new()
            .with_cluster_rules(self.layout.clone())
            .with_redis_version(self.version))
    }

    fn redis_version(&self) -> RedisVersion {
        self.version
    }

    async fn advance(&self, backend: &MemoryBackend, by: Duration) {
        backend.advance(by);
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::none()
            .with(Capability::PubSub)
            .with(Capability::TimeControl)
            .with(Capability::Transactions)
            .with(Capability::Cluster)
    }

    async fn cluster(&self) -> Result<Box<dyn Cluster>, String> {
        Ok(Box::new(FixedSlots(self.layout.clone())))
    }
}

/// The double's slots: where they are, never moving.
struct FixedSlots(SlotLayout);

impl Cluster for FixedSlots {
    fn shards(&self) -> usize {
        self.0.primaries()
    }
    fn shard_of(&self, slot: u16) -> Answer<'_, usize> {
        let shard = self.0.node_of(slot);
        Box::pin(async move { Ok(shard) })
    }
}

/// Runs the conformance suite on a fresh [`MemoryReplicaSet`] per case (a primary and one
/// replica, replicating without delay): every case through its [`ReplicaSetClient`], and
/// the failover cases stalling and failing it over.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryReplicaSetHarness;

impl Harness for MemoryReplicaSetHarness {
    type Backend = ReplicaSetClient;

    fn name(&self) -> String {
        "memory replica set (a primary and one replica)".into()
    }

    fn topology(&self) -> String {
        "replicated".into()
    }

    async fn backend(&self) -> Result<ReplicaSetClient, String> {
        Ok(MemoryReplicaSet::new(1).client())
    }

    async fn advance(&self, backend: &ReplicaSetClient, by: Duration) {
        backend.replica_set().advance(by);
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::none()
            .with(Capability::PubSub)
            .with(Capability::TimeControl)
            .with(Capability::Transactions)
            .with(Capability::Replication)
    }

    async fn replicated(&self) -> Result<(ReplicaSetClient, Box<dyn Failover>), String> {
        let set = MemoryReplicaSet::new(1);
        Ok((set.client(), Box::new(SetFailover(set))))
    }
}

/// [`Failover`] on a [`MemoryReplicaSet`].
struct SetFailover(MemoryReplicaSet);

impl Failover for SetFailover {
    fn pause(&self) -> Step<'_> {
        self.0.pause_all();
        Box::pin(async { Ok(()) })
    }
    fn resume(&self) -> Step<'_> {
        self.0.resume_all();
        Box::pin(async { Ok(()) })
    }
    fn crash_primary(&self) -> Step<'_> {
        self.0.crash_primary();
        Box::pin(async { Ok(()) })
    }
    fn promote(&self) -> Step<'_> {
        let promoted = self.0.promote();
        Box::pin(async move {
            promoted
                .map(|_| ())
                .ok_or_else(|| "no replica to promote".to_string())
        })
    }
}

/// Runs the conformance suite on fresh [`MemoryBackend`]s, and the Redlock cases on fresh
/// [`MemoryInstances`] (independent nodes with their own clocks, on virtual time): five
/// by default.
#[derive(Clone, Copy, Debug)]
pub struct MemoryRedlockHarness {
    nodes: usize,
}

impl Default for MemoryRedlockHarness {
    fn default() -> Self {
        Self { nodes: 5 }
    }
}

impl MemoryRedlockHarness {
    /// The Redlock cases on `nodes` nodes: odd and at least 3, else every Redlock case
    /// fails its setup with the reason ([`check_instance_count`]).
    pub fn new(nodes: usize) -> Self {
        Self { nodes }
    }
}

impl Harness for MemoryRedlockHarness {
    type Backend = MemoryBackend;

    fn name(&self) -> String {
        format!(
            "{} memory instances (independent MemoryBackends)",
            self.nodes
        )
    }

    fn topology(&self) -> String {
        "redlock".into()
    }

    async fn backend(&self) -> Result<MemoryBackend, String> {
        Ok(MemoryBackend::new())
    }

    async fn advance(&self, backend: &MemoryBackend, by: Duration) {
        backend.advance(by);
    }

    fn capabilities(&self) -> Capabilities {
        MemoryHarness.capabilities().with(Capability::MultiInstance)
    }

    async fn instances(&self) -> Result<Deployment<MemoryBackend>, String> {
        check_instance_count(self.nodes)?;
        let set = MemoryInstances::new(self.nodes);
        Ok((set.nodes(), Box::new(SetInstances(set))))
    }
}

/// [`Instances`] on [`MemoryInstances`].
struct SetInstances(MemoryInstances);

/// A control step that has already happened (or failed for a node that does not exist).
fn done(result: Result<(), crate::NoSuchNode>) -> Step<'static> {
    Box::pin(async move { result.map_err(|e| e.to_string()) })
}

impl Instances for SetInstances {
    fn clock(&self) -> Clock {
        self.0.clock()
    }
    fn advance(&self, by: Duration) -> Step<'_> {
        self.0.advance(by);
        done(Ok(()))
    }
    fn kill(&self, node: usize) -> Step<'_> {
        done(self.0.kill(node))
    }
    fn restart(&self, node: usize, keep_data: bool) -> Step<'_> {
        let persistence = if keep_data {
            Persistence::AppendFsyncAlways
        } else {
            Persistence::None
        };
        done(self.0.restart(node, persistence))
    }
    fn blackhole(&self, node: usize) -> Step<'_> {
        done(self.0.blackhole(node))
    }
    fn heal(&self, node: usize) -> Step<'_> {
        done(self.0.heal(node))
    }
    fn jump_clock(&self, node: usize, by: Duration) -> Step<'_> {
        let by_ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        done(self.0.jump_clock(node, by_ms))
    }
}
