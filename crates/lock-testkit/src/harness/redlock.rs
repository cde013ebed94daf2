//! [`RedisRedlockHarness`]: the conformance suite with the Redlock cases, on spawned
//! independent `redis-server` processes.

use std::sync::Arc;
use std::time::Duration;

use lock_conformance::{
    Capabilities, Capability, Deployment, Harness, Instances, Step, check_instance_count,
};
use lock_core::{Clock, KvBackend};

use lock_redis::{RedisBackend, RedisOptions};

use crate::harness::RedisHarness;
use crate::spawn::{Durability, RedisInstances};

/// Runs the suite through [`RedisBackend`] on real servers: the single-node cases on one
/// spawned server, and each Redlock case on `n` fresh instances of its own
/// ([`RedisInstances`] with `appendfsync always`, so a restart can keep or lose its
/// data). Time passes for real.
#[derive(Clone, Debug)]
pub struct RedisRedlockHarness {
    single: RedisHarness,
    nodes: usize,
}

impl RedisRedlockHarness {
    /// Spawns the server for the single-node cases, and `nodes` instances (odd, at least
    /// 3) for each Redlock case; when that is impossible (no redis-server), the harness
    /// reports why and its cases skip (or panics when Redis is required).
    pub fn spawn(nodes: usize) -> Self {
        match RedisHarness::spawned() {
            Ok(single) => Self { single, nodes },
            Err(why) if crate::spawn::redis_required() => {
                panic!("NXLOCK_REQUIRE_REDIS=1 but no redis-server could be spawned: {why}")
            }
            Err(why) => Self {
                single: RedisHarness::unavailable(format!("no Redis server: {why}")),
                nodes,
            },
        }
    }
}

impl Harness for RedisRedlockHarness {
    type Backend = RedisBackend;

    fn name(&self) -> String {
        format!(
            "{} spawned redis-server instances (single-node cases on {})",
            self.nodes,
            self.single.url()
        )
    }

    fn topology(&self) -> String {
        "redlock".into()
    }

    async fn backend(&self) -> Result<RedisBackend, String> {
        self.single.backend().await
    }

    async fn advance(&self, backend: &RedisBackend, by: Duration) {
        self.single.advance(backend, by).await;
    }

    /// The `redis-server` on PATH's version (`--version`); `nxlock check` reads a
    /// server's own from `INFO server` instead.
    fn redis_version(&self) -> lock_core::RedisVersion {
        crate::spawn::installed_version().unwrap_or_default()
    }

    fn capabilities(&self) -> Capabilities {
        self.single.capabilities().with(Capability::MultiInstance)
    }

    fn skip_reason(&self) -> Option<String> {
        self.single.skip_reason()
    }

    async fn instances(&self) -> Result<Deployment<RedisBackend>, String> {
        check_instance_count(self.nodes)?;
        let instances = RedisInstances::spawn(self.nodes, Durability::AppendFsyncAlways).await?;
        let backends = instances.backends(RedisOptions::default()).await?;
        let control = ProcessInstances {
            instances: Arc::new(instances),
            backends: backends.clone(),
        };
        Ok((backends, Box::new(control)))
    }
}

/// [`Instances`] on spawned processes.
struct ProcessInstances {
    instances: Arc<RedisInstances>,
    /// The clients the case got (clones share their connections).
    backends: Vec<RedisBackend>,
}

fn done(result: Result<(), String>) -> Step<'static> {
    Box::pin(async move { result })
}

impl ProcessInstances {
    /// Waits until the case's client of `node` answers again: its first command after a
    /// restart or a heal finds the old connection closed, and reconnects.
    async fn reconnected(&self, node: usize) -> Result<(), String> {
        let backend = self.backends.get(node).ok_or("no such node")?;
        for _ in 0..250 {
            if backend.exists(&[b"nxlock:probe"]).await.is_ok() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Err(format!("node {node}'s client did not reconnect within 5 s"))
    }
}

impl Instances for ProcessInstances {
    fn clock(&self) -> Clock {
        Clock::system()
    }
    fn advance(&self, by: Duration) -> Step<'_> {
        Box::pin(async move {
            tokio::time::sleep(by).await;
            Ok(())
        })
    }
    fn kill(&self, node: usize) -> Step<'_> {
        done(self.instances.kill(node))
    }
    fn restart(&self, node: usize, keep_data: bool) -> Step<'_> {
        Box::pin(async move {
            self.instances.restart(node, keep_data)?;
            self.reconnected(node).await
        })
    }
    fn blackhole(&self, node: usize) -> Step<'_> {
        done(self.instances.blackhole(node))
    }
    fn heal(&self, node: usize) -> Step<'_> {
        Box::pin(async move {
            self.instances.heal(node)?;
            self.reconnected(node).await
        })
    }
    fn jump_clock(&self, node: usize, by: Duration) -> Step<'_> {
        Box::pin(self.instances.jump_clock(node, by))
    }
}
