//! The conformance harnesses for [`RedisBackend`] on real servers: one server, or a
//! spawned primary with a replica.

use std::sync::Arc;
use std::time::Duration;

use lock_conformance::{Capabilities, Capability, Failover, Harness, Step};

use crate::{RedisBackend, RedisTarget, ReplicatedRedis};

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

    /// `NXLOCK_REDIS_URL`, or a `redis-server` spawned from PATH for this harness; when
    /// neither is available the harness reports a skip reason (and panics instead when
    /// Redis is required, see [`RedisTarget::from_env`]).
    pub fn from_env() -> Self {
        match RedisTarget::from_env() {
            Ok(target) => Self {
                url: target.url(),
                _server: Some(Arc::new(target)),
                skip: None,
            },
            Err(why) => Self {
                url: String::new(),
                _server: None,
                skip: Some(format!("no Redis server: {why}")),
            },
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

    fn capabilities(&self) -> Capabilities {
        Capabilities::none().with(Capability::PubSub)
    }

    fn skip_reason(&self) -> Option<String> {
        self.skip.clone()
    }
}

/// Runs the conformance suite through [`RedisBackend`] on spawned `redis-server`
/// processes: a primary with one replica, each replica's link through a [`Proxy`], and
/// clients through a front proxy that follows a failover. Every case runs on one shared
/// deployment; each failover case spawns a fresh one of its own.
#[derive(Clone, Debug)]
pub struct ReplicatedRedisHarness {
    url: String,
    /// Keeps the shared deployment alive as long as any clone of the harness.
    _shared: Option<Arc<ReplicatedRedis>>,
    skip: Option<String>,
}

impl ReplicatedRedisHarness {
    /// Spawns the shared deployment; when that is impossible (no redis-server), the
    /// harness reports why and its cases skip (or panics when Redis is required).
    pub async fn spawn() -> Self {
        match ReplicatedRedis::spawn(1).await {
            Ok(deployment) => Self {
                url: deployment.url(),
                _shared: Some(Arc::new(deployment)),
                skip: None,
            },
            Err(why) if crate::redis_required() => {
                panic!("NXLOCK_REQUIRE_REDIS=1 but no replicated Redis could be spawned: {why}")
            }
            Err(why) => Self {
                url: String::new(),
                _shared: None,
                skip: Some(format!("no replicated Redis: {why}")),
            },
        }
    }
}

impl Harness for ReplicatedRedisHarness {
    type Backend = RedisBackend;

    fn name(&self) -> String {
        format!("spawned redis-server primary + 1 replica ({})", self.url)
    }

    fn topology(&self) -> String {
        "replicated".into()
    }

    async fn backend(&self) -> Result<RedisBackend, String> {
        RedisBackend::connect(&self.url)
            .await
            .map_err(|e| e.to_string())
    }

    async fn advance(&self, _backend: &RedisBackend, by: Duration) {
        tokio::time::sleep(by).await;
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::none()
            .with(Capability::PubSub)
            .with(Capability::Replication)
    }

    fn skip_reason(&self) -> Option<String> {
        self.skip.clone()
    }

    async fn replicated(&self) -> Result<(RedisBackend, Box<dyn Failover>), String> {
        let deployment = ReplicatedRedis::spawn(1).await?;
        let backend = RedisBackend::connect(&deployment.url())
            .await
            .map_err(|e| e.to_string())?;
        Ok((
            backend,
            Box::new(ProcessFailover(tokio::sync::Mutex::new(deployment))),
        ))
    }
}

/// [`Failover`] on spawned processes.
struct ProcessFailover(tokio::sync::Mutex<ReplicatedRedis>);

impl Failover for ProcessFailover {
    fn pause(&self) -> Step<'_> {
        Box::pin(async {
            self.0.lock().await.pause();
            Ok(())
        })
    }
    fn resume(&self) -> Step<'_> {
        Box::pin(async {
            self.0.lock().await.resume();
            Ok(())
        })
    }
    fn crash_primary(&self) -> Step<'_> {
        Box::pin(async {
            self.0.lock().await.crash_primary();
            Ok(())
        })
    }
    fn promote(&self) -> Step<'_> {
        Box::pin(async { self.0.lock().await.promote().await.map(|_| ()) })
    }
}
