//! [`RedisCluster`]: a real Redis Cluster of `redis-server` processes on loopback, built
//! by hand (slots, `CLUSTER MEET`, `CLUSTER REPLICATE`) so its layout is known: shard `i`
//! serves the `i`-th of [`SlotLayout::even`]'s ranges. Killed on drop.

use std::net::{Ipv4Addr, TcpListener};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use lock_core::SlotLayout;
use redis::aio::MultiplexedConnection;

use super::server::RedisServer;

/// Cluster ports stay below this: a node's bus listens on port + 10000, which must stay
/// below the ephemeral range (32768) where clients' own ports are picked.
const HIGHEST_PORT: u16 = 22_000;
const LOWEST_PORT: u16 = 12_000;
/// How long building the cluster, a failover or a migration may take.
const PATIENCE: Duration = Duration::from_secs(30);

/// A Redis Cluster on loopback: `primaries` shards of one primary and `replicas`
/// replicas each.
#[derive(Debug)]
pub struct RedisCluster {
    /// Primaries first (shard order), then each shard's replicas.
    nodes: Vec<RedisServer>,
    /// Each node's cluster id, in `nodes`' order.
    ids: Vec<String>,
    primaries: usize,
    dir: PathBuf,
}

impl RedisCluster {
    /// Spawns and joins the nodes, and waits until every node reports `cluster_state:ok`
    /// and every replica is in sync.
    pub fn spawn(primaries: usize, replicas: usize) -> Result<Self, String> {
        if primaries == 0 {
            return Err("a cluster needs at least one primary".into());
        }
        let dir = std::env::temp_dir().join(format!(
            "nxlock-cluster-{}-{}",
            std::process::id(),
            random(0)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {dir:?}: {e}"))?;
        let mut cluster = RedisCluster {
            nodes: Vec::new(),
            ids: Vec::new(),
            primaries,
            dir,
        };
        for _ in 0..primaries * (1 + replicas) {
            let node = cluster.spawn_node()?;
            cluster.nodes.push(node);
        }
        cluster.join(replicas)?;
        Ok(cluster)
    }

    fn spawn_node(&self) -> Result<RedisServer, String> {
        let mut last_error = String::new();
        for _ in 0..5 {
            let port = cluster_port()?;
            let config = self.dir.join(format!("nodes-{port}.state"));
            let extra = [
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                &config.to_string_lossy(),
                "--cluster-node-timeout",
                "1000",
                "--repl-diskless-sync-delay",
                "0",
                "--dir",
                &self.dir.to_string_lossy(),
            ]
            .map(String::from);
            match RedisServer::spawn_on(port, &extra) {
                Ok(node) => return Ok(node),
                Err(e) => last_error = e,
            }
        }
        Err(last_error)
    }

    fn join(&mut self, replicas: usize) -> Result<(), String> {
        let mut connections = Vec::new();
        for node in &self.nodes {
            let client = redis::Client::open(node.url()).map_err(|e| e.to_string())?;
            connections.push(client.get_connection().map_err(|e| e.to_string())?);
        }
        for (epoch, connection) in connections.iter_mut().enumerate() {
            let id: String = sync(connection, redis::cmd("CLUSTER").arg("MYID"))?;
            self.ids.push(id);
            let _: () = sync(
                connection,
                redis::cmd("CLUSTER").arg("SET-CONFIG-EPOCH").arg(epoch + 1),
            )?;
        }
        let layout = SlotLayout::even(self.primaries);
        for (shard, connection) in connections.iter_mut().take(self.primaries).enumerate() {
            let slots = layout.slots_of(shard).expect("one range per primary");
            let _: () = sync(
                connection,
                redis::cmd("CLUSTER")
                    .arg("ADDSLOTSRANGE")
                    .arg(*slots.start())
                    .arg(*slots.end()),
            )?;
        }
        for node in &self.nodes[1..] {
            let _: () = sync(
                &mut connections[0],
                redis::cmd("CLUSTER")
                    .arg("MEET")
                    .arg("127.0.0.1")
                    .arg(node.port()),
            )?;
        }
        let everyone = self.nodes.len();
        wait_until("every node knows every other", || {
            connections.iter_mut().try_fold(true, |all, connection| {
                let nodes: String = sync(connection, redis::cmd("CLUSTER").arg("NODES"))?;
                Ok(all
                    && nodes.lines().count() == everyone
                    && !nodes.contains("handshake")
                    && !nodes.contains("noaddr"))
            })
        })?;
        for shard in 0..self.primaries {
            for replica in 0..replicas {
                let index = self.primaries + shard * replicas + replica;
                let _: () = sync(
                    &mut connections[index],
                    redis::cmd("CLUSTER").arg("REPLICATE").arg(&self.ids[shard]),
                )?;
            }
        }
        let primaries = self.primaries;
        wait_until("cluster_state:ok and replicas in sync", || {
            connections
                .iter_mut()
                .enumerate()
                .try_fold(true, |all, (index, connection)| {
                    let info: String = sync(connection, redis::cmd("CLUSTER").arg("INFO"))?;
                    let mut ready = info.contains("cluster_state:ok");
                    if index >= primaries {
                        let replication: String =
                            sync(connection, redis::cmd("INFO").arg("replication"))?;
                        ready &= replication.contains("master_link_status:up");
                    }
                    Ok(all && ready)
                })
        })
    }

    /// The URLs of every node, primaries first.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// Keeps every node on `cpus` from now on (Linux; see
    /// [`CpuPlacement`](super::CpuPlacement)).
    pub fn keep_on_cpus(&mut self, cpus: &[usize]) -> Result<(), String> {
        self.nodes
            .iter_mut()
            .try_for_each(|node| node.keep_on_cpus(cpus))
    }

    /// How many shards (primaries at the start) the cluster has.
    pub fn primaries(&self) -> usize {
        self.primaries
    }

    /// The slot layout the cluster started with.
    pub fn layout(&self) -> SlotLayout {
        SlotLayout::even(self.primaries)
    }

    /// The shard whose primary serves `slot` now, as the first node that answers sees it.
    pub async fn shard_of(&self, slot: u16) -> Result<usize, String> {
        let owner = self.owner_id(slot).await?;
        self.shard_of_id(&owner)
    }

    /// Starts moving `slot` to shard `to`'s primary: `IMPORTING` there and `MIGRATING`
    /// on its owner. Keys stay where they are; clients of the slot's missing keys are sent
    /// on with `ASK`.
    pub async fn start_migration(&self, slot: u16, to: usize) -> Result<(), String> {
        let source = self.owner_id(slot).await?;
        let target = self.primary_of(to).await?;
        let (mut source_node, mut target_node) = (
            self.connect(self.index_of(&source)?).await?,
            self.connect(self.index_of(&target)?).await?,
        );
        let _: () = run(
            &mut target_node,
            redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg("IMPORTING")
                .arg(&source),
        )
        .await?;
        run(
            &mut source_node,
            redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg("MIGRATING")
                .arg(&target),
        )
        .await
    }

    /// Moves every key of `slot` (mid-migration) to the importing node, with `MIGRATE`:
    /// each key arrives with its remaining TTL.
    pub async fn move_keys(&self, slot: u16, to: usize) -> Result<(), String> {
        let source = self.owner_id(slot).await?;
        let target = self.primary_of(to).await?;
        let target_port = self.nodes[self.index_of(&target)?].port();
        let mut source_node = self.connect(self.index_of(&source)?).await?;
        loop {
            let keys: Vec<Vec<u8>> = run(
                &mut source_node,
                redis::cmd("CLUSTER")
                    .arg("GETKEYSINSLOT")
                    .arg(slot)
                    .arg(100),
            )
            .await?;
            if keys.is_empty() {
                return Ok(());
            }
            let mut migrate = redis::cmd("MIGRATE");
            migrate
                .arg("127.0.0.1")
                .arg(target_port)
                .arg("")
                .arg(0)
                .arg(5000)
                .arg("KEYS");
            for key in &keys {
                migrate.arg(key);
            }
            let _: redis::Value = run(&mut source_node, &migrate).await?;
        }
    }

    /// Ends the migration of `slot`: shard `to` owns it, on every primary's word (the
    /// importing one first, as `redis-cli --cluster` does).
    pub async fn finish_migration(&self, slot: u16, to: usize) -> Result<(), String> {
        let target = self.primary_of(to).await?;
        let mut primaries = vec![target.clone()];
        primaries.extend(
            self.primary_ids()
                .await?
                .into_iter()
                .filter(|id| *id != target),
        );
        for id in primaries {
            let mut node = self.connect(self.index_of(&id)?).await?;
            let _: () = run(
                &mut node,
                redis::cmd("CLUSTER")
                    .arg("SETSLOT")
                    .arg(slot)
                    .arg("NODE")
                    .arg(&target),
            )
            .await?;
        }
        Ok(())
    }

    /// A manual failover of the shard that serves `slot` (`CLUSTER FAILOVER` on one of its
    /// replicas: the replica catches up with its primary, then takes over); returns once
    /// every node names the replica as the slot's owner.
    pub async fn fail_over(&self, slot: u16) -> Result<(), String> {
        let primary = self.owner_id(slot).await?;
        let nodes: String = run(
            &mut self.connect(self.index_of(&primary)?).await?,
            redis::cmd("CLUSTER").arg("NODES"),
        )
        .await?;
        let replica = nodes
            .lines()
            .find_map(|line| {
                let fields: Vec<&str> = line.split(' ').collect();
                (fields.len() > 3 && fields[3] == primary).then(|| fields[0].to_string())
            })
            .ok_or_else(|| format!("the primary of slot {slot} has no replica"))?;
        let mut replica_node = self.connect(self.index_of(&replica)?).await?;
        let _: () = run(&mut replica_node, redis::cmd("CLUSTER").arg("FAILOVER")).await?;
        let deadline = Instant::now() + PATIENCE;
        loop {
            let mut agreed = true;
            for index in 0..self.nodes.len() {
                agreed &= self.owner_seen_by(index, slot).await.ok().as_ref() == Some(&replica);
            }
            if agreed {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "the failover of slot {slot} did not finish in {PATIENCE:?}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn connect(&self, index: usize) -> Result<MultiplexedConnection, String> {
        let client = redis::Client::open(self.nodes[index].url()).map_err(|e| e.to_string())?;
        client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| format!("node {}: {e}", self.nodes[index].url()))
    }

    /// The id of the node that serves `slot`, as the first node that answers says.
    async fn owner_id(&self, slot: u16) -> Result<String, String> {
        let mut last_error = String::from("no node");
        for index in 0..self.nodes.len() {
            match self.owner_seen_by(index, slot).await {
                Ok(owner) => return Ok(owner),
                Err(e) => last_error = e,
            }
        }
        Err(last_error)
    }

    async fn owner_seen_by(&self, index: usize, slot: u16) -> Result<String, String> {
        let shards: Vec<redis::Value> = run(
            &mut self.connect(index).await?,
            redis::cmd("CLUSTER").arg("SLOTS"),
        )
        .await?;
        for shard in shards {
            let redis::Value::Array(fields) = shard else {
                continue;
            };
            let (Some(redis::Value::Int(first)), Some(redis::Value::Int(last))) =
                (fields.first(), fields.get(1))
            else {
                continue;
            };
            if (*first..=*last).contains(&i64::from(slot))
                && let Some(redis::Value::Array(primary)) = fields.get(2)
                && let Some(redis::Value::BulkString(id)) = primary.get(2)
            {
                return Ok(String::from_utf8_lossy(id).into_owned());
            }
        }
        Err(format!("no node serves slot {slot}"))
    }

    /// The id of shard `shard`'s primary now (after failovers, one of its replicas).
    async fn primary_of(&self, shard: usize) -> Result<String, String> {
        self.primary_ids()
            .await?
            .into_iter()
            .find(|id| self.shard_of_id(id).ok() == Some(shard))
            .ok_or_else(|| format!("shard {shard} has no primary"))
    }

    /// The ids of the nodes that are primaries now, as node 0 sees it.
    async fn primary_ids(&self) -> Result<Vec<String>, String> {
        let mut node = self.connect(0).await?;
        let nodes: String = run(&mut node, redis::cmd("CLUSTER").arg("NODES")).await?;
        Ok(nodes
            .lines()
            .map(|line| line.split(' ').collect::<Vec<_>>())
            .filter(|fields| {
                fields.len() > 2 && fields[2].contains("master") && !fields[2].contains("fail")
            })
            .map(|fields| fields[0].to_string())
            .collect())
    }

    fn index_of(&self, id: &str) -> Result<usize, String> {
        self.ids
            .iter()
            .position(|known| known == id)
            .ok_or_else(|| format!("unknown node id {id}"))
    }

    /// Shard of a node: primaries are nodes 0..p, then each shard's replicas in turn.
    fn shard_of_id(&self, id: &str) -> Result<usize, String> {
        let index = self.index_of(id)?;
        if index < self.primaries {
            return Ok(index);
        }
        let replicas = (self.nodes.len() - self.primaries) / self.primaries;
        Ok((index - self.primaries) / replicas.max(1))
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A free port below [`HIGHEST_PORT`] whose bus port (+10000) is free too.
fn cluster_port() -> Result<u16, String> {
    for attempt in 0u64..200 {
        let port = LOWEST_PORT + (random(attempt) % u64::from(HIGHEST_PORT - LOWEST_PORT)) as u16;
        let free = |p: u16| TcpListener::bind((Ipv4Addr::LOCALHOST, p)).is_ok();
        if free(port) && free(port + 10_000) {
            return Ok(port);
        }
    }
    Err(format!(
        "no free loopback port pair between {LOWEST_PORT} and {HIGHEST_PORT} (+10000)"
    ))
}

/// A random number (std's per-process random hash keys, mixed with `salt`).
fn random(salt: u64) -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(salt)
}

fn sync<T: redis::FromRedisValue>(
    connection: &mut redis::Connection,
    command: &redis::Cmd,
) -> Result<T, String> {
    command.query(connection).map_err(|e| e.to_string())
}

async fn run<T: redis::FromRedisValue>(
    connection: &mut MultiplexedConnection,
    command: &redis::Cmd,
) -> Result<T, String> {
    command
        .query_async(connection)
        .await
        .map_err(|e| e.to_string())
}

/// Asks `ready` every 20 ms until it says yes, for at most [`PATIENCE`].
fn wait_until(what: &str, mut ready: impl FnMut() -> Result<bool, String>) -> Result<(), String> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if ready()? {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the cluster did not reach \"{what}\" in {PATIENCE:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
