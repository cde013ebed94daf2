//! Sharded pub/sub on a Redis Cluster: one RESP3 cluster connection whose `SSUBSCRIBE`s
//! redis-rs sends to each channel's slot's primary (and makes again after a failover or a
//! migration), its `smessage` pushes fanned out to any number of [`Subscription`]s.
//!
//! Each channel is subscribed once and stays subscribed, as in [`crate::pubsub`]. When a
//! node's connection drops, every subscription ends ([`Missed::Closed`]) so waiters
//! re-check their lock instead of waiting for a message sent while nobody listened.
//!
//! [`Missed::Closed`]: lock_core::Missed::Closed

use std::sync::Arc;

use lock_core::{Result, Subscription};
use redis::cluster_async::ClusterConnection;
use redis::{ProtocolVersion, PushInfo, PushKind};
use tokio::sync::OnceCell;

use super::ClusterOptions;
use super::routing::client_builder;
use crate::errors;
use crate::pubsub::Channels;

/// The lazily opened sharded pub/sub connection of one [`ClusterBackend`](crate::ClusterBackend).
pub(crate) struct ShardedNotifier {
    nodes: Vec<String>,
    options: ClusterOptions,
    channels: Arc<Channels>,
    connection: OnceCell<ClusterConnection>,
}

impl ShardedNotifier {
    /// For the cluster `nodes` belong to, configured as the backend is.
    pub(crate) fn new(nodes: Vec<String>, options: ClusterOptions) -> Self {
        Self {
            nodes,
            options,
            channels: Arc::default(),
            connection: OnceCell::new(),
        }
    }

    pub(crate) async fn subscribe(&self, channel: &[u8]) -> Result<Subscription> {
        let mut connection = self
            .connection
            .get_or_try_init(|| self.connect())
            .await?
            .clone();
        self.channels
            .subscribe(channel, self.options.command_timeout, || {
                connection.ssubscribe(channel)
            })
            .await
    }

    async fn connect(&self) -> Result<ClusterConnection> {
        let channels = self.channels.clone();
        let deliver = move |push: PushInfo| -> std::result::Result<(), ()> {
            match (push.kind, push.data.as_slice()) {
                (
                    PushKind::SMessage,
                    [
                        redis::Value::BulkString(channel),
                        redis::Value::BulkString(payload),
                    ],
                ) => channels.deliver(channel, payload),
                (PushKind::Disconnection, _) => channels.close_all(),
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
