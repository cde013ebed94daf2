//! [`JudgedAs`]: any harness, judged against a given Redis version.

use std::time::Duration;

use lock_core::RedisVersion;

use crate::{Capabilities, Cluster, Deployment, Failover, Harness};

/// `harness`, with its answers judged against Redis `version` instead of the version it
/// reports ([`Harness::redis_version`]): what `nxlock check` runs once it has read the
/// server's version from `INFO server`, or been told one with `--redis-version`.
#[derive(Clone, Debug)]
pub struct JudgedAs<H> {
    harness: H,
    version: RedisVersion,
}

impl<H: Harness> JudgedAs<H> {
    /// `harness`, judged against `version`.
    pub fn new(harness: H, version: RedisVersion) -> Self {
        Self { harness, version }
    }

    /// The harness inside.
    pub fn inner(&self) -> &H {
        &self.harness
    }
}

impl<H: Harness> Harness for JudgedAs<H> {
    type Backend = H::Backend;

    fn name(&self) -> String {
        self.harness.name()
    }
    async fn backend(&self) -> Result<H::Backend, String> {
        self.harness.backend().await
    }
    async fn advance(&self, backend: &H::Backend, by: Duration) {
        self.harness.advance(backend, by).await;
    }
    fn topology(&self) -> String {
        self.harness.topology()
    }
    fn capabilities(&self) -> Capabilities {
        self.harness.capabilities()
    }
    fn redis_version(&self) -> RedisVersion {
        self.version
    }
    fn skip_reason(&self) -> Option<String> {
        self.harness.skip_reason()
    }
    async fn replicated(&self) -> Result<(H::Backend, Box<dyn Failover>), String> {
        self.harness.replicated().await
    }
    async fn instances(&self) -> Result<Deployment<H::Backend>, String> {
        self.harness.instances().await
    }
    async fn cluster(&self) -> Result<Box<dyn Cluster>, String> {
        self.harness.cluster().await
    }
}
