//! [`ReplicatedRedis`]: a real primary with replicas (and optionally Sentinel), spawned
//! from the same `redis-server` binary on free loopback ports, for failover tests.
//!
//! Each replica replicates through its own [`Proxy`], so a test stalls the link on
//! purpose and the primary's acknowledged writes are lost in a failover
//! deterministically. Clients connect through a front proxy that [`ReplicatedRedis::promote`]
//! points at the new primary, or (with Sentinel) through
//! [`RedisBackend::connect_sentinel`](crate::RedisBackend::connect_sentinel).

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use super::proxy::Proxy;
use super::sentinel::{Sentinel, master_port, sentinel_replicas, spawn_sentinel};
use super::server::RedisServer;

/// A primary, its replicas, the proxies between them, and optional sentinels, all
/// stopped when dropped.
#[derive(Debug)]
pub struct ReplicatedRedis {
    /// Every node; the primary is `nodes[primary]`.
    nodes: Vec<RedisServer>,
    primary: usize,
    /// The link proxy of each replica (`None` for the node that started as primary).
    links: Vec<Option<Proxy>>,
    front: Proxy,
    sentinels: Vec<Sentinel>,
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// An `INFO <section>` field of the server on `port`.
async fn info_field(port: u16, section: &str, field: &str) -> Option<String> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).ok()?;
    let mut connection = client.get_multiplexed_async_connection().await.ok()?;
    let info: String = redis::cmd("INFO")
        .arg(section)
        .query_async(&mut connection)
        .await
        .ok()?;
    info.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .map(|value| value.trim().to_string())
}

/// A replication offset from `INFO replication` on `port`.
async fn repl_offset(port: u16, field: &str) -> Option<u64> {
    info_field(port, "replication", field).await?.parse().ok()
}

/// Asks until `done` says yes, at most `patience`; never sleeps blindly.
async fn until<F, Fut>(patience: Duration, what: &str, mut done: F) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + patience;
    while Instant::now() < deadline {
        if done().await {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Err(format!("{what} within {patience:?}"))
}

impl ReplicatedRedis {
    /// A primary and `replicas` replicas, replicating, each replica's link through a
    /// proxy. Needs `redis-server` on PATH and a tokio runtime.
    pub async fn spawn(replicas: usize) -> Result<Self, String> {
        let primary = RedisServer::spawn_with(&["--repl-diskless-sync-delay".into(), "0".into()])?;
        let front = Proxy::start(loopback(primary.port()))
            .await
            .map_err(|e| format!("front proxy: {e}"))?;
        let mut set = ReplicatedRedis {
            nodes: vec![primary],
            primary: 0,
            links: vec![None],
            front,
            sentinels: Vec::new(),
        };
        for _ in 0..replicas {
            let link = Proxy::start(loopback(set.nodes[0].port()))
                .await
                .map_err(|e| format!("link proxy: {e}"))?;
            let replica = RedisServer::spawn_with(&[
                "--replicaof".into(),
                "127.0.0.1".into(),
                link.addr().port().to_string(),
                "--repl-diskless-sync-delay".into(),
                "0".into(),
            ])?;
            set.nodes.push(replica);
            set.links.push(Some(link));
        }
        let primary_port = set.nodes[0].port();
        for replica in 1..set.nodes.len() {
            let port = set.nodes[replica].port();
            until(
                Duration::from_secs(15),
                "a replica did not sync",
                || async move {
                    info_field(port, "replication", "master_link_status")
                        .await
                        .as_deref()
                        == Some("up")
                },
            )
            .await?;
        }
        until(
            Duration::from_secs(15),
            "the primary did not see its replicas",
            || async move {
                info_field(primary_port, "replication", "connected_slaves")
                    .await
                    .and_then(|n| n.parse::<usize>().ok())
                    == Some(replicas)
            },
        )
        .await?;
        Ok(set)
    }

    /// Adds `count` sentinels watching the primary as [`MASTER_NAME`](crate::spawn::MASTER_NAME) (quorum 1, the
    /// primary judged down after 500 ms, a failover timeout of 2 s), and waits until each
    /// knows the replicas.
    pub async fn with_sentinels(mut self, count: usize) -> Result<Self, String> {
        let primary = self.nodes[self.primary].port();
        for _ in 0..count {
            let sentinel = spawn_sentinel(primary)?;
            let port = sentinel.port;
            self.sentinels.push(sentinel);
            let replicas = self.nodes.len() - 1;
            until(
                Duration::from_secs(15),
                "a sentinel did not find the replicas",
                || async move { sentinel_replicas(port).await == Some(replicas) },
            )
            .await?;
        }
        Ok(self)
    }

    /// The URL clients use: the front proxy, which [`ReplicatedRedis::promote`] points at
    /// the new primary.
    pub fn url(&self) -> String {
        format!("redis://{}", self.front.addr())
    }

    /// `host:port` of each sentinel.
    pub fn sentinel_addresses(&self) -> Vec<String> {
        self.sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port))
            .collect()
    }

    /// The node that is primary now.
    pub fn primary(&self) -> usize {
        self.primary
    }

    /// The port of node `index`.
    pub fn port(&self, index: usize) -> u16 {
        self.nodes[index].port()
    }

    /// Stalls every replica's link: writes from now on stay on the primary.
    ///
    /// Waits first until every live replica has what the primary wrote so far: a write
    /// acknowledged to its client may still be on its way (in the primary's output
    /// buffer or the link), and stalling it too would lose an earlier write, not only
    /// the ones that follow.
    pub async fn pause(&self) -> Result<(), String> {
        let primary = self.nodes[self.primary].port();
        let written = repl_offset(primary, "master_repl_offset")
            .await
            .ok_or("the primary did not report its replication offset")?;
        for (index, node) in self.nodes.iter().enumerate() {
            if index == self.primary || !node.is_running() {
                continue;
            }
            let port = node.port();
            until(
                Duration::from_secs(5),
                "a replica did not catch up before the pause",
                || async move {
                    repl_offset(port, "slave_repl_offset")
                        .await
                        .is_some_and(|offset| offset >= written)
                },
            )
            .await?;
        }
        self.links.iter().flatten().for_each(Proxy::pause);
        Ok(())
    }

    /// Lets every replica's link move again.
    pub fn resume(&self) {
        self.links.iter().flatten().for_each(Proxy::resume);
    }

    /// Kills the primary (SIGKILL: what it had not replicated is gone).
    pub fn crash_primary(&mut self) {
        self.nodes[self.primary].kill();
    }

    /// Makes the first live replica primary (`REPLICAOF NO ONE`), as Sentinel would, and
    /// points the front proxy at it. For deployments without sentinels.
    pub async fn promote(&mut self) -> Result<usize, String> {
        let chosen = (0..self.nodes.len())
            .find(|i| *i != self.primary)
            .ok_or("no replica to promote")?;
        let port = self.nodes[chosen].port();
        let client =
            redis::Client::open(format!("redis://127.0.0.1:{port}")).map_err(|e| e.to_string())?;
        let mut connection = client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| format!("cannot reach the replica: {e}"))?;
        let _: () = redis::cmd("REPLICAOF")
            .arg("NO")
            .arg("ONE")
            .query_async(&mut connection)
            .await
            .map_err(|e| format!("REPLICAOF NO ONE failed: {e}"))?;
        self.primary = chosen;
        self.front.redirect(loopback(port));
        Ok(chosen)
    }

    /// Waits until the sentinels name another master than node `old`'s port, as after a
    /// failover they ran; the new master's port.
    pub async fn await_sentinel_failover(&mut self, patience: Duration) -> Result<u16, String> {
        let old = self.nodes[self.primary].port();
        let sentinel = self.sentinels.first().ok_or("no sentinel")?.port;
        let deadline = Instant::now() + patience;
        let new = loop {
            match master_port(sentinel).await {
                Some(port) if port != old => break port,
                _ if Instant::now() >= deadline => {
                    return Err(format!(
                        "the sentinels did not fail over within {patience:?}"
                    ));
                }
                _ => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        };
        let port = new;
        if let Some(index) = self.nodes.iter().position(|n| n.port() == port) {
            self.primary = index;
            self.front.redirect(loopback(port));
        }
        Ok(port)
    }
}
