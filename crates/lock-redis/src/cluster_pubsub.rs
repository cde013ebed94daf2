//! Sharded pub/sub on a Redis Cluster: one RESP3 cluster connection whose `SSUBSCRIBE`s
//! redis-rs sends to each channel's slot's primary (and makes again after a failover or a
//! migration), its `smessage` pushes fanned out to any number of [`Subscription`]s.
//!
//! Each channel is subscribed once and stays subscribed, as in [`crate::pubsub`]. When a
//! node's connection drops, every subscription ends ([`Missed::Closed`]) so waiters
//! re-check their lock instead of waiting for a message sent while nobody listened.
//!
//! [`Missed::Closed`]: lock_core::Missed::Closed

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use lock_core::{Fanout, Message, Result, Subscription};
use redis::cluster_async::ClusterConnection;
use redis::{ProtocolVersion, PushInfo, PushKind};
use tokio::sync::OnceCell;

use crate::ClusterOptions;
use crate::cluster_backend::client_builder;
use crate::errors;

#[derive(Default)]
struct Table {
    channels: Fanout,
    /// Set once the channel's SSUBSCRIBE was confirmed (see [`crate::pubsub`]).
    confirmed: HashMap<Vec<u8>, Arc<OnceCell<()>>>,
}

/// The lazily opened sharded pub/sub connection of one [`ClusterBackend`](crate::ClusterBackend).
pub(crate) struct ShardedNotifier {
    nodes: Vec<String>,
    options: ClusterOptions,
    table: Arc<Mutex<Table>>,
    connection: OnceCell<ClusterConnection>,
}

impl ShardedNotifier {
    /// For the cluster `nodes` belong to, configured as the backend is.
    pub(crate) fn new(nodes: Vec<String>, options: ClusterOptions) -> Self {
        Self {
            nodes,
            options,
            table: Arc::default(),
            connection: OnceCell::new(),
        }
    }

    pub(crate) async fn subscribe(&self, channel: &[u8]) -> Result<Subscription> {
        let connection = self
            .connection
            .get_or_try_init(|| self.connect())
            .await?
            .clone();
        let (subscription, confirmed) = {
            let mut table = lock(&self.table);
            let subscription = table.channels.subscribe(channel);
            let confirmed = table.confirmed.entry(channel.to_vec()).or_default();
            (subscription, confirmed.clone())
        };
        let limit = self.options.command_timeout;
        confirmed
            .get_or_try_init(|| async {
                let mut connection = connection;
                match tokio::time::timeout(limit, connection.ssubscribe(channel)).await {
                    Ok(reply) => reply.map_err(errors::from_redis),
                    Err(_) => Err(errors::timed_out(limit)),
                }
            })
            .await?;
        Ok(subscription)
    }

    async fn connect(&self) -> Result<ClusterConnection> {
        let table = self.table.clone();
        let deliver = move |push: PushInfo| -> std::result::Result<(), ()> {
            let mut table = lock(&table);
            match (push.kind, push.data.as_slice()) {
                (
                    PushKind::SMessage,
                    [
                        redis::Value::BulkString(channel),
                        redis::Value::BulkString(payload),
                    ],
                ) => {
                    table
                        .channels
                        .publish(channel, &Message::from(payload.as_slice()));
                }
                (PushKind::Disconnection, _) => {
                    table.channels.close_all();
                    table.confirmed.clear();
                }
                _ => {}
            }
            Ok(())
        };
        let client = client_builder(&self.nodes, &self.options)
            .use_protocol(ProtocolVersion::RESP3)
            .push_sender(deliver)
            .build()
            .map_err(errors::from_redis)?;
        let limit = self.options.connect_timeout + self.options.command_timeout;
        match tokio::time::timeout(limit, client.get_async_connection()).await {
            Ok(connection) => connection.map_err(errors::from_redis),
            Err(_) => Err(errors::timed_out(limit)),
        }
    }
}

/// Held for map operations only, never across an await (see [`crate::pubsub`]).
fn lock(table: &Mutex<Table>) -> MutexGuard<'_, Table> {
    table.lock().unwrap_or_else(PoisonError::into_inner)
}
