//! [`RedisReplicatedHarness`]: the conformance suite's failover cases on spawned
//! processes, a primary and a replica behind proxies, optionally with a real Sentinel.

use std::sync::Arc;
use std::time::Duration;

use lock_conformance::{Capabilities, Capability, Failover, Harness, Step};
use lock_redis::{RedisBackend, RedisOptions};

use crate::spawn::{MASTER_NAME, ReplicatedRedis};
/// Runs the conformance suite through [`RedisBackend`] on spawned `redis-server`
/// processes: a primary with one replica, each replica's link through a
/// [`Proxy`](crate::Proxy). Every case runs on one shared deployment; each failover case
/// spawns a fresh one of its own.
///
/// Clients reach the primary either through a front proxy that the harness points at
/// the replica it promotes ([`RedisReplicatedHarness::spawn`]), or through a sentinel
/// that notices the crash and runs the failover itself
/// ([`RedisReplicatedHarness::spawn_with_sentinel`]).
#[derive(Clone, Debug)]
pub struct RedisReplicatedHarness {
    /// Keeps the shared deployment alive as long as any clone of the harness.
    shared: Option<Arc<ReplicatedRedis>>,
    sentinel: bool,
    skip: Option<String>,
}

impl RedisReplicatedHarness {
    /// Spawns the shared deployment; when that is impossible (no redis-server), the
    /// harness reports why and its cases skip (or panics when Redis is required).
    pub async fn spawn() -> Self {
        Self::spawn_deployment(false).await
    }

    /// Like [`RedisReplicatedHarness::spawn`], plus a sentinel per deployment: clients
    /// connect with [`RedisBackend::connect_sentinel`], and after a failover case kills
    /// the primary, the sentinel (not the harness) promotes the replica.
    pub async fn spawn_with_sentinel() -> Self {
        Self::spawn_deployment(true).await
    }

    async fn spawn_deployment(sentinel: bool) -> Self {
        match deploy(sentinel).await {
            Ok(deployment) => Self {
                shared: Some(Arc::new(deployment)),
                sentinel,
                skip: None,
            },
            Err(why) if crate::spawn::redis_required() => {
                panic!("NXLOCK_REQUIRE_REDIS=1 but no replicated Redis could be spawned: {why}")
            }
            Err(why) => Self {
                shared: None,
                sentinel,
                skip: Some(format!("no replicated Redis: {why}")),
            },
        }
    }

    async fn connect(&self, deployment: &ReplicatedRedis) -> Result<RedisBackend, String> {
        let connected = if self.sentinel {
            let sentinels = deployment.sentinel_addresses();
            let sentinels: Vec<&str> = sentinels.iter().map(String::as_str).collect();
            RedisBackend::connect_sentinel(&sentinels, MASTER_NAME, RedisOptions::default()).await
        } else {
            RedisBackend::connect(&deployment.url()).await
        };
        connected.map_err(|e| e.to_string())
    }
}

async fn deploy(sentinel: bool) -> Result<ReplicatedRedis, String> {
    let deployment = ReplicatedRedis::spawn(1).await?;
    if sentinel {
        deployment.with_sentinels(1).await
    } else {
        Ok(deployment)
    }
}

impl Harness for RedisReplicatedHarness {
    type Backend = RedisBackend;

    fn name(&self) -> String {
        let via = if self.sentinel {
            "a sentinel"
        } else {
            "a proxy"
        };
        let primary = self.shared.as_ref().map(|d| d.port(d.primary()));
        format!("spawned redis-server primary (port {primary:?}) + 1 replica, through {via}")
    }

    fn topology(&self) -> String {
        "replicated".into()
    }

    async fn backend(&self) -> Result<RedisBackend, String> {
        let deployment = self.shared.as_ref().ok_or("no deployment")?;
        self.connect(deployment).await
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
        // Transactions are checked on one server (RedisHarness); here their sixteen writers
        // would only load the machine the failover cases time.
        Capabilities::none()
            .with(Capability::PubSub)
            .with(Capability::Replication)
    }

    fn skip_reason(&self) -> Option<String> {
        self.skip.clone()
    }

    async fn replicated(&self) -> Result<(RedisBackend, Box<dyn Failover>), String> {
        let deployment = deploy(self.sentinel).await?;
        let backend = self.connect(&deployment).await?;
        let failover = ProcessFailover {
            deployment: tokio::sync::Mutex::new(deployment),
            sentinel: self.sentinel,
        };
        Ok((backend, Box::new(failover)))
    }
}

/// [`Failover`] on spawned processes.
struct ProcessFailover {
    deployment: tokio::sync::Mutex<ReplicatedRedis>,
    sentinel: bool,
}

/// How long a sentinel may take to notice a crash and promote: it judges the primary
/// down after 500 ms and promoted within about 1.1 s on loopback.
const SENTINEL_PATIENCE: Duration = Duration::from_secs(15);

impl Failover for ProcessFailover {
    fn pause(&self) -> Step<'_> {
        Box::pin(async {
            self.deployment.lock().await.pause().await?;
            Ok(())
        })
    }
    fn resume(&self) -> Step<'_> {
        Box::pin(async {
            self.deployment.lock().await.resume();
            Ok(())
        })
    }
    fn crash_primary(&self) -> Step<'_> {
        Box::pin(async {
            self.deployment.lock().await.crash_primary();
            Ok(())
        })
    }
    fn promote(&self) -> Step<'_> {
        Box::pin(async {
            let mut deployment = self.deployment.lock().await;
            if self.sentinel {
                deployment
                    .await_sentinel_failover(SENTINEL_PATIENCE)
                    .await?;
            } else {
                deployment.promote().await?;
            }
            Ok(())
        })
    }
}
