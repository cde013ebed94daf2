//! [`RedisHarness`]: the conformance suite through [`RedisBackend`] on one real server.

use std::sync::Arc;
use std::time::Duration;

use lock_conformance::{Capabilities, Capability, Harness};
use lock_redis::RedisBackend;

use crate::spawn::{RedisServer, RedisTarget};
/// Runs the conformance suite through [`RedisBackend`] on a real server. Time passes for
/// real (`advance` sleeps), so cases keep their waits short.
#[derive(Clone, Debug)]
pub struct RedisHarness {
    url: String,
    /// Keeps a spawned server alive as long as any clone of the harness.
    _server: Option<Arc<RedisTarget>>,
    skip: Option<String>,
}

impl RedisHarness {
    /// The server at `url` (for `nxlock check --url`).
    pub fn at(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            _server: None,
            skip: None,
        }
    }

    /// `NXLOCK_REDIS_URL`, or the `redis-server` this process shares between the harnesses
    /// it makes (spawned at the first call, see [`RedisTarget::shared`]): every case
    /// namespaces its keys, so the cases share a server as they would an external one.
    /// When neither is available the harness reports a skip reason (and panics instead
    /// when Redis is required).
    pub fn from_env() -> Self {
        match RedisTarget::shared() {
            Ok(url) => Self {
                url,
                _server: None,
                skip: None,
            },
            Err(why) => Self::unavailable(format!("no Redis server: {why}")),
        }
    }

    /// A `redis-server` spawned from PATH for this harness, whatever `NXLOCK_REDIS_URL`
    /// says (for `nxlock check --spawn`).
    pub fn spawned() -> Result<Self, String> {
        let server = RedisServer::spawn()?;
        Ok(Self {
            url: server.url(),
            _server: Some(Arc::new(RedisTarget::Spawned(server))),
            skip: None,
        })
    }

    /// A harness whose cases all skip with `why` (nothing to run them on).
    pub fn unavailable(why: String) -> Self {
        Self {
            url: String::new(),
            _server: None,
            skip: Some(why),
        }
    }

    /// The server's URL.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Harness for RedisHarness {
    type Backend = RedisBackend;

    fn name(&self) -> String {
        self.url.clone()
    }

    async fn backend(&self) -> Result<RedisBackend, String> {
        RedisBackend::connect(&self.url)
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

    fn skip_reason(&self) -> Option<String> {
        self.skip.clone()
    }
}
