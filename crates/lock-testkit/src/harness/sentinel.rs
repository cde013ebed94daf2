//! [`RedisSentinelHarness`]: the conformance suite on the master an existing Sentinel
//! deployment names.

use std::time::Duration;

use lock_conformance::{Capabilities, Capability, Harness};
use lock_redis::{RedisBackend, RedisOptions};
/// Runs the conformance suite through [`RedisBackend::connect_sentinel`]: on the master
/// that an existing Sentinel deployment names (for `nxlock check --sentinel`).
#[derive(Clone, Debug)]
pub struct RedisSentinelHarness {
    sentinels: Vec<String>,
    master: String,
}

impl RedisSentinelHarness {
    /// The master the sentinels at `sentinels` (`host:port` each) know as `master`.
    pub fn new(sentinels: Vec<String>, master: impl Into<String>) -> Self {
        Self {
            sentinels,
            master: master.into(),
        }
    }
}

impl Harness for RedisSentinelHarness {
    type Backend = RedisBackend;

    fn name(&self) -> String {
        format!(
            "master {:?} of sentinels {}",
            self.master,
            self.sentinels.join(", ")
        )
    }

    fn topology(&self) -> String {
        "sentinel".into()
    }

    async fn backend(&self) -> Result<RedisBackend, String> {
        let sentinels: Vec<&str> = self.sentinels.iter().map(String::as_str).collect();
        RedisBackend::connect_sentinel(&sentinels, &self.master, RedisOptions::default())
            .await
            .map_err(|e| e.to_string())
    }

    async fn advance(&self, _backend: &RedisBackend, by: Duration) {
        tokio::time::sleep(by).await;
    }

    /// The `redis-server` on PATH's version (`--version`); `nxlock check` reads a
    /// server's own from `INFO server` instead.
    fn redis_version(&self) -> lock_core::RedisVersion {
        crate::spawn::installed_version().unwrap_or_default()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::none()
            .with(Capability::PubSub)
            .with(Capability::Transactions)
    }
}
