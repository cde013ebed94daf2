//! [`RedisClusterHarness`]: the conformance suite through [`ClusterBackend`] on a real
//! Redis Cluster, spawned on loopback or already running.

use std::sync::Arc;
use std::time::Duration;

use lock_conformance::{Answer, Capabilities, Capability, Cluster, Harness, Step};
use tokio::sync::OnceCell;

use lock_redis::ClusterBackend;

use crate::spawn::RedisCluster;

/// Runs the conformance suite through one shared [`ClusterBackend`]. On a cluster it
/// spawned ([`RedisClusterHarness::spawn`]) the migration and failover cases run too; on
/// an existing one ([`RedisClusterHarness::at`], `nxlock check --cluster`) they are
/// skipped, since they move slots.
#[derive(Clone)]
pub struct RedisClusterHarness {
    urls: Vec<String>,
    /// Keeps a spawned cluster alive as long as any clone of the harness.
    spawned: Option<Arc<RedisCluster>>,
    backend: Arc<OnceCell<ClusterBackend>>,
    skip: Option<String>,
}

impl std::fmt::Debug for RedisClusterHarness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisClusterHarness")
            .field("urls", &self.urls)
            .field("spawned", &self.spawned.is_some())
            .finish()
    }
}

impl RedisClusterHarness {
    /// Spawns a cluster of `primaries` shards with `replicas` replicas each on loopback
    /// (see [`RedisCluster::spawn`]).
    pub fn spawn(primaries: usize, replicas: usize) -> Result<Self, String> {
        let cluster = RedisCluster::spawn(primaries, replicas)?;
        Ok(Self {
            urls: cluster.urls(),
            spawned: Some(Arc::new(cluster)),
            backend: Arc::default(),
            skip: None,
        })
    }

    /// The existing cluster that `urls` (one or more of its nodes) belong to.
    pub fn at(urls: Vec<String>) -> Self {
        Self {
            urls,
            spawned: None,
            backend: Arc::default(),
            skip: None,
        }
    }

    /// A harness whose cases all skip with `why`.
    pub fn unavailable(why: String) -> Self {
        Self {
            urls: Vec::new(),
            spawned: None,
            backend: Arc::default(),
            skip: Some(why),
        }
    }

    /// The URLs of the nodes it knows.
    pub fn urls(&self) -> &[String] {
        &self.urls
    }

    /// The spawned cluster, if it spawned one.
    pub fn spawned(&self) -> Option<&RedisCluster> {
        self.spawned.as_deref()
    }
}

impl Harness for RedisClusterHarness {
    type Backend = ClusterBackend;

    fn name(&self) -> String {
        format!("cluster {}", self.urls.join(","))
    }

    fn topology(&self) -> String {
        "cluster".into()
    }

    async fn backend(&self) -> Result<ClusterBackend, String> {
        let urls: Vec<&str> = self.urls.iter().map(String::as_str).collect();
        self.backend
            .get_or_try_init(|| ClusterBackend::connect(&urls))
            .await
            .cloned()
            .map_err(|e| e.to_string())
    }

    async fn advance(&self, _backend: &ClusterBackend, by: Duration) {
        tokio::time::sleep(by).await;
    }

    /// The `redis-server` on PATH's version (`--version`); `nxlock check` reads a
    /// server's own from `INFO server` instead.
    fn redis_version(&self) -> lock_core::RedisVersion {
        crate::spawn::installed_version().unwrap_or_default()
    }

    fn capabilities(&self) -> Capabilities {
        let capabilities = Capabilities::none()
            .with(Capability::PubSub)
            .with(Capability::Transactions)
            .with(Capability::Cluster);
        match self.spawned {
            Some(_) => capabilities.with(Capability::ClusterOperations),
            None => capabilities,
        }
    }

    fn skip_reason(&self) -> Option<String> {
        self.skip.clone()
    }

    async fn cluster(&self) -> Result<Box<dyn Cluster>, String> {
        match &self.spawned {
            Some(cluster) => Ok(Box::new(Spawned(cluster.clone()))),
            None => {
                let mut existing = Existing {
                    backend: self.backend().await?,
                    shards: 0,
                };
                existing.shards = Existing::primaries(&existing.ranges().await?).len();
                Ok(Box::new(existing))
            }
        }
    }
}

/// The controls of a cluster this process spawned.
struct Spawned(Arc<RedisCluster>);

impl Cluster for Spawned {
    fn shards(&self) -> usize {
        self.0.primaries()
    }
    fn shard_of(&self, slot: u16) -> Answer<'_, usize> {
        Box::pin(self.0.shard_of(slot))
    }
    fn start_migration(&self, slot: u16, to: usize) -> Step<'_> {
        Box::pin(self.0.start_migration(slot, to))
    }
    fn move_keys(&self, slot: u16, to: usize) -> Step<'_> {
        Box::pin(self.0.move_keys(slot, to))
    }
    fn finish_migration(&self, slot: u16, to: usize) -> Step<'_> {
        Box::pin(self.0.finish_migration(slot, to))
    }
    fn fail_over(&self, slot: u16) -> Step<'_> {
        Box::pin(self.0.fail_over(slot))
    }
}

/// An existing cluster, read through `CLUSTER SLOTS` and never changed. Shards are
/// numbered by their primaries' first slot.
struct Existing {
    backend: ClusterBackend,
    /// How many primaries served slots when the case began.
    shards: usize,
}

impl Existing {
    /// `(first slot, last slot, primary's "host:port")` of every range.
    async fn ranges(&self) -> Result<Vec<(u16, u16, String)>, String> {
        let slots: Vec<redis::Value> = self
            .backend
            .query(redis::cmd("CLUSTER").arg("SLOTS"))
            .await
            .map_err(|e| e.to_string())?;
        let mut ranges = Vec::new();
        for range in slots {
            let redis::Value::Array(fields) = range else {
                continue;
            };
            if let [
                redis::Value::Int(first),
                redis::Value::Int(last),
                redis::Value::Array(primary),
                ..,
            ] = fields.as_slice()
            {
                let host = match primary.first() {
                    Some(redis::Value::BulkString(host)) => String::from_utf8_lossy(host).into(),
                    _ => String::new(),
                };
                let port = match primary.get(1) {
                    Some(redis::Value::Int(port)) => *port,
                    _ => 0,
                };
                ranges.push((*first as u16, *last as u16, format!("{host}:{port}")));
            }
        }
        ranges.sort();
        Ok(ranges)
    }

    /// The primaries in the order of their first slot.
    fn primaries(ranges: &[(u16, u16, String)]) -> Vec<String> {
        let mut primaries: Vec<String> = Vec::new();
        for (_, _, primary) in ranges {
            if !primaries.contains(primary) {
                primaries.push(primary.clone());
            }
        }
        primaries
    }
}

impl Cluster for Existing {
    fn shards(&self) -> usize {
        self.shards
    }
    fn shard_of(&self, slot: u16) -> Answer<'_, usize> {
        Box::pin(async move {
            let ranges = self.ranges().await?;
            let primaries = Self::primaries(&ranges);
            let owner = ranges
                .iter()
                .find(|(first, last, _)| (*first..=*last).contains(&slot))
                .map(|(_, _, primary)| primary)
                .ok_or_else(|| format!("no node serves slot {slot}"))?;
            Ok(primaries.iter().position(|p| p == owner).unwrap_or(0))
        })
    }
}
