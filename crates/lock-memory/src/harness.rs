//! The conformance harnesses for [`MemoryBackend`] and [`MemoryReplicaSet`].

use std::time::Duration;

use lock_conformance::{Capabilities, Capability, Failover, Harness, Step};

use crate::{MemoryBackend, MemoryReplicaSet, ReplicaSetClient};

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
    }
}

/// Runs the conformance suite on a fresh [`MemoryReplicaSet`] per case (a primary and one
/// replica, replicating without delay): every case through its [`ReplicaSetClient`], and
/// the failover cases stalling and failing it over.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReplicaSetHarness;

impl Harness for ReplicaSetHarness {
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
