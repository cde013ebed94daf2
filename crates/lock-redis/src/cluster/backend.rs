//! [`ClusterBackend`]: [`KvBackend`] over a Redis Cluster, through redis-rs's
//! `cluster-async` client.

use std::sync::Arc;
use std::time::Duration;

use lock_core::{
    Error, ErrorKind, KvBackend, Replicated, Replication, Result, Script, Subscription,
    Transaction, Value, common_slot, hash_slot,
};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{Cmd, FromRedisValue};

use super::ClusterOptions;
use super::pubsub::ShardedNotifier;
use super::routing::{client_builder, from_cluster, routed, to_primary};
use super::transaction as cluster_transaction;
use crate::commands::{self, one_command_each};
use crate::pubsub::Notifier;
use crate::route;
use crate::{RedisOptions, errors, value};

/// A [`KvBackend`] on a Redis Cluster.
///
/// - Built from one or more nodes' URLs (`redis://host:port`); the client learns the rest
///   of the cluster from them and follows `MOVED` (refreshing its slot map) and `ASK`.
/// - Every command goes to its key's slot's primary; a script goes to its first key's.
///   One command whose keys span slots (`DEL a b`, a script's `KEYS`) is refused here,
///   without a round trip, with Redis's own `CROSSSLOT` error
///   ([`ErrorKind::CrossSlot`](lock_core::ErrorKind::CrossSlot)), instead of being split
///   across nodes as redis-rs would: a lock's keys must share one hash tag, and every
///   [`LockName`](lock_core::LockName)'s do.
/// - Scripts run with `EVALSHA`, and with `EVAL` on `NOSCRIPT` (each node has its own
///   script cache).
/// - [`eval_replicated`](KvBackend::eval_replicated) runs the script and `WAIT` on a
///   connection of their own, both routed to the script's slot's primary: redis-rs would
///   otherwise send `WAIT` to every primary and answer the smallest count.
/// - Wake-ups use sharded pub/sub ([`KvBackend::sharded_pubsub`]): lock scripts
///   `SPUBLISH` on `{name}:wake`, which stays within the lock's shard, and subscriptions
///   are `SSUBSCRIBE`s on one RESP3 connection that redis-rs sends to each channel's
///   shard and renews after a failover. A cluster without `SPUBLISH` gets classic
///   `PUBLISH`, which it delivers to every node, and one `SUBSCRIBE` connection to the
///   first node given.
/// - Redirections and cluster-down replies that outlast the retries are
///   [`ErrorKind::Connection`]: nothing ran, and a lock's retry policy tries again.
#[derive(Clone)]
pub struct ClusterBackend {
    connection: ClusterConnection,
    options: ClusterOptions,
    wakeups: Arc<Wakeups>,
    /// A second cluster connection for script + WAIT, used by one call at a time.
    replicated: Arc<tokio::sync::Mutex<ClusterConnection>>,
}

impl std::fmt::Debug for ClusterBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterBackend")
            .field("options", &self.options)
            .finish()
    }
}

impl ClusterBackend {
    /// Connects to the cluster that `nodes` (URLs of one or more of its nodes) belong to,
    /// with default [`ClusterOptions`].
    pub async fn connect(nodes: &[&str]) -> Result<Self> {
        Self::connect_with(nodes, ClusterOptions::default()).await
    }

    /// Connects to the cluster that `nodes` belong to.
    pub async fn connect_with(nodes: &[&str], options: ClusterOptions) -> Result<Self> {
        let Some(first) = nodes.first() else {
            return Err(Error::new(
                ErrorKind::InvalidConfig,
                "a cluster needs at least one node URL",
            ));
        };
        crate::tls::prepare(nodes)?;
        let urls: Vec<String> = nodes.iter().map(|url| url.to_string()).collect();
        let client = client_builder(&urls, &options).build().map_err(|e| {
            Error::new(
                ErrorKind::InvalidConfig,
                format!("invalid cluster node URLs {nodes:?}: {e}"),
            )
        })?;
        // `WAIT` and `WAITAOF` block for their own timeout, longer than one answer may
        // take otherwise: their connection waits as long as it must, and each call is
        // bounded by the command timeout plus the WAIT's (`eval_replicated`).
        let blocking = client_builder(&urls, &options)
            .response_timeout(Duration::from_secs(24 * 3600))
            .overall_response_timeout(None)
            .build()
            .map_err(|e| {
                Error::new(
                    ErrorKind::InvalidConfig,
                    format!("invalid cluster node URLs {nodes:?}: {e}"),
                )
            })?;
        let connect = |client: &redis::cluster::ClusterClient| {
            let client = client.clone();
            async move {
                let limit = options.connect_timeout + options.command_timeout;
                tokio::time::timeout(limit, client.get_async_connection())
                    .await
                    .map_err(|_| errors::timed_out(limit))?
                    .map_err(from_cluster)
            }
        };
        let connection = connect(&client).await?;
        let replicated = connect(&blocking).await?;
        let mut backend = Self {
            connection,
            options,
            wakeups: Arc::new(Wakeups::Sharded(ShardedNotifier::new(urls, options))),
            replicated: Arc::new(tokio::sync::Mutex::new(replicated)),
        };
        if !backend.has_sharded_pubsub().await? {
            backend.wakeups = Arc::new(Wakeups::classic(first, options).await?);
        }
        Ok(backend)
    }

    /// Whether the cluster knows `SPUBLISH` (Redis 7 does; `nxlock serve --cluster`, a
    /// one-node cluster, does not need it).
    async fn has_sharded_pubsub(&self) -> Result<bool> {
        let info: Vec<redis::Value> = self
            .query(redis::cmd("COMMAND").arg("INFO").arg("SPUBLISH"))
            .await?;
        Ok(matches!(info.first(), Some(redis::Value::Array(_))))
    }

    /// Sends one command, routed by its key, and converts its reply.
    pub async fn query<T: FromRedisValue>(&self, command: &Cmd) -> Result<T> {
        let mut connection = self.connection.clone();
        command
            .query_async::<T>(&mut connection)
            .await
            .map_err(|error| from_cluster(error).during(&crate::backend::name_of(command)))
    }

    /// One command's keys must share a slot, as every cluster node requires.
    fn check_keys(&self, keys: &[&[u8]]) -> Result<()> {
        common_slot(keys).map(drop)
    }
}

/// How a [`ClusterBackend`] publishes and subscribes.
enum Wakeups {
    /// `SPUBLISH`/`SSUBSCRIBE`: each channel on its slot's shard.
    Sharded(ShardedNotifier),
    /// `PUBLISH`/`SUBSCRIBE` on one connection to one node, `(host, port)`, for clusters
    /// without sharded pub/sub: a cluster carries a classic message to every node.
    Classic {
        notifier: Notifier,
        node: (String, u16),
    },
}

impl Wakeups {
    async fn classic(url: &str, options: ClusterOptions) -> Result<Self> {
        let single = RedisOptions {
            command_timeout: options.command_timeout,
            connect_timeout: options.connect_timeout,
        };
        let route = Arc::new(route::Route::fixed(url, single).await?);
        let address = route.node().address.clone();
        let node = address
            .rsplit_once(':')
            .and_then(|(host, port)| Some((host.to_string(), port.parse().ok()?)))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidConfig,
                    format!("no host:port in {address:?}"),
                )
            })?;
        Ok(Wakeups::Classic {
            notifier: Notifier::new(route, single),
            node,
        })
    }
}

/// `WAIT replicas timeout`, or `WAITAOF 0 replicas timeout`.
fn wait_command(replication: &Replication) -> Cmd {
    let mut wait = if replication.fsync {
        let mut waitaof = redis::cmd("WAITAOF");
        waitaof.arg(0);
        waitaof
    } else {
        redis::cmd("WAIT")
    };
    wait.arg(replication.replicas).arg(replication.timeout_ms());
    wait
}

/// WAIT's count, or WAITAOF's second (`[local fsyncs, replica fsyncs]`).
fn acknowledged_by_replicas(reply: redis::Value) -> i64 {
    match reply {
        redis::Value::Int(n) => n,
        redis::Value::Array(counts) => match counts.as_slice() {
            [_, redis::Value::Int(n)] => *n,
            _ => 0,
        },
        _ => 0,
    }
}

impl KvBackend for ClusterBackend {
    one_command_each!();

    async fn eval_replicated(
        &self,
        script: &Script,
        keys: &[&[u8]],
        args: &[&[u8]],
        replication: &Replication,
    ) -> Result<Replicated<Value>> {
        let Some(slot) = common_slot(keys)? else {
            return Err(Error::new(
                ErrorKind::InvalidConfig,
                "a replicated script on a cluster needs a key to route it and its WAIT",
            ));
        };
        let mut connection = self.replicated.lock().await;
        let limit = self.options.command_timeout + replication.timeout;
        let run = async {
            if replication.fsync {
                // Asked alone first: a server without WAITAOF (before 7.2) refuses it
                // before the lock is written, not after. Asking for nothing (`WAITAOF 0 0
                // 0`) answers at once on a server that has it, whatever this connection
                // wrote before.
                let mut probe = redis::cmd("WAITAOF");
                probe.arg(0).arg(0).arg(0);
                match routed(&mut connection, probe, to_primary(slot)).await {
                    Err(e) if e.message().starts_with("ERR unknown command") => {
                        return Err(Error::new(ErrorKind::Unsupported, e.message()));
                    }
                    probed => probed?,
                };
            }
            let mut reply = None;
            for (command, body) in [("EVALSHA", script.sha1()), ("EVAL", script.lua())] {
                let cmd = commands::script_command(command, body, keys, args);
                match routed(&mut connection, cmd, to_primary(slot)).await {
                    Err(e) if e.kind() == ErrorKind::NoScript => continue,
                    answered => {
                        reply = Some(answered?);
                        break;
                    }
                }
            }
            let reply = reply.ok_or_else(Error::no_script)?;
            let acknowledged =
                routed(&mut connection, wait_command(replication), to_primary(slot)).await?;
            Ok(Replicated {
                reply: value::from_redis(reply),
                acknowledged: acknowledged_by_replicas(acknowledged),
            })
        };
        tokio::time::timeout(limit, run)
            .await
            .unwrap_or_else(|_| Err(errors::timed_out(limit)))
    }

    /// `SPUBLISH` to the channel's slot's primary; or `PUBLISH` to the node this backend
    /// subscribes on: a cluster delivers a classic message to every node's subscribers,
    /// but counts only the receiving node's in its reply.
    async fn publish(&self, channel: &[u8], message: &[u8]) -> Result<i64> {
        let (command, routing) = match &*self.wakeups {
            Wakeups::Sharded(_) => ("SPUBLISH", to_primary(hash_slot(channel))),
            Wakeups::Classic {
                node: (host, port), ..
            } => (
                "PUBLISH",
                RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress {
                    host: host.clone(),
                    port: *port,
                }),
            ),
        };
        let mut publish = redis::cmd(command);
        publish.arg(channel).arg(message);
        let mut connection = self.connection.clone();
        let reply = routed(&mut connection, publish, routing).await?;
        i64::from_redis_value(reply)
            .map_err(|e| Error::new(ErrorKind::Response, format!("unexpected reply: {e}")))
    }

    fn sharded_pubsub(&self) -> bool {
        matches!(*self.wakeups, Wakeups::Sharded(_))
    }

    /// On the second cluster connection, held until `EXEC` or drop, every command routed
    /// to the primary of the keys' one slot.
    async fn watch(&self, keys: &[&[u8]]) -> Result<Transaction> {
        let Some(slot) = common_slot(keys)? else {
            return Err(Error::new(
                ErrorKind::InvalidConfig,
                "a transaction on a cluster needs a key to route it by",
            ));
        };
        let limit = self.options.command_timeout;
        let mut connection = self.replicated.clone().lock_owned().await;
        let read = async {
            let mut watch = redis::cmd("WATCH");
            watch.arg(keys);
            routed(&mut connection, watch, to_primary(slot)).await?;
            let mut values = Vec::with_capacity(keys.len());
            for key in keys {
                let mut get = redis::cmd("GET");
                get.arg(*key);
                let value = routed(&mut connection, get, to_primary(slot)).await?;
                values.push(Option::<Vec<u8>>::from_redis_value(value).map_err(|e| {
                    Error::new(ErrorKind::Response, format!("unexpected reply: {e}"))
                })?);
            }
            Ok::<_, Error>(values)
        };
        let values = match tokio::time::timeout(limit, read).await {
            Ok(values) => values,
            Err(_) => Err(errors::timed_out(limit)),
        };
        let session = cluster_transaction::Watching {
            connection: Some(connection),
            slot,
            limit,
        };
        // On an error the session's drop still clears the watch.
        Ok(Transaction::new(values?, Box::new(session)))
    }

    async fn subscribe(&self, channel: &[u8]) -> Result<Subscription> {
        match &*self.wakeups {
            Wakeups::Sharded(notifier) => notifier.subscribe(channel).await,
            Wakeups::Classic { notifier, .. } => notifier.subscribe(channel).await,
        }
    }
}
