//! One pub/sub connection per [`RedisBackend`](crate::RedisBackend), fanned out to any
//! number of [`Subscription`]s.
//!
//! A connection in subscribed mode cannot send ordinary commands, so pub/sub gets its own,
//! opened on first use. A background task reads its messages into a [`Fanout`] table.
//! Each channel is SUBSCRIBEd once and stays subscribed for the connection's life:
//! unsubscribing when the last local receiver goes could race a new subscriber's SUBSCRIBE,
//! and a lock process only ever uses a bounded set of lock channels.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::StreamExt;
use lock_core::{Fanout, Message, Result, Subscription};
use redis::aio::PubSubSink;
use tokio::sync::OnceCell;

use crate::route::Route;
use crate::{RedisOptions, errors};

/// The lazily opened pub/sub link of one backend and its clones, to the server the route
/// names when it opens.
pub(crate) struct Notifier {
    route: Arc<Route>,
    options: RedisOptions,
    link: tokio::sync::Mutex<Option<Arc<Link>>>,
}

struct Link {
    sink: PubSubSink,
    table: Arc<std::sync::Mutex<Table>>,
    alive: Arc<AtomicBool>,
}

#[derive(Default)]
struct Table {
    channels: Fanout,
    /// Set once the server confirmed the channel's SUBSCRIBE; later subscribers wait on it
    /// so none of them can miss a message published in between.
    confirmed: HashMap<Vec<u8>, Arc<OnceCell<()>>>,
}

impl Notifier {
    pub(crate) fn new(route: Arc<Route>, options: RedisOptions) -> Self {
        Self {
            route,
            options,
            link: tokio::sync::Mutex::new(None),
        }
    }

    pub(crate) async fn subscribe(&self, channel: &[u8]) -> Result<Subscription> {
        let link = self.link().await?;
        let (subscription, confirmed) = {
            let mut table = lock(&link.table);
            let subscription = table.channels.subscribe(channel);
            let confirmed = table.confirmed.entry(channel.to_vec()).or_default();
            (subscription, confirmed.clone())
        };
        let limit = self.options.command_timeout;
        confirmed
            .get_or_try_init(|| async {
                let mut sink = link.sink.clone();
                match tokio::time::timeout(limit, sink.subscribe(channel)).await {
                    Ok(reply) => reply.map_err(errors::from_redis),
                    Err(_) => Err(errors::timed_out(limit)),
                }
            })
            .await?;
        Ok(subscription)
    }

    /// The live link, opening a new one when there is none or the last one dropped.
    async fn link(&self) -> Result<Arc<Link>> {
        let mut slot = self.link.lock().await;
        if let Some(link) = slot.as_ref().filter(|l| l.alive.load(Ordering::Acquire)) {
            return Ok(link.clone());
        }
        let limit = self.options.connect_timeout;
        let client = self.route.node().client.clone();
        let pubsub = tokio::time::timeout(limit, client.get_async_pubsub())
            .await
            .map_err(|_| errors::timed_out(limit))?
            .map_err(errors::from_redis)?;
        let (sink, mut stream) = pubsub.split();
        let table = Arc::new(std::sync::Mutex::new(Table::default()));
        let alive = Arc::new(AtomicBool::new(true));
        let (task_table, task_alive) = (table.clone(), alive.clone());
        tokio::spawn(async move {
            while let Some(message) = stream.next().await {
                // Binary-safe: `get_channel_name` would turn non-UTF-8 names into "?".
                if let Ok(channel) = message.get_channel::<Vec<u8>>() {
                    let payload = Message::from(message.get_payload_bytes());
                    lock(&task_table).channels.publish(&channel, &payload);
                }
            }
            // The connection is gone: end every subscription so waiters re-check the lock
            // and subscribe again on a new link.
            task_alive.store(false, Ordering::Release);
            let mut table = lock(&task_table);
            table.channels.close_all();
            table.confirmed.clear();
        });
        let link = Arc::new(Link { sink, table, alive });
        *slot = Some(link.clone());
        Ok(link)
    }
}

/// The table is only held for map operations, never across an await; a panic while
/// holding it cannot leave it inconsistent, so a poisoned lock is used as is.
fn lock(table: &std::sync::Mutex<Table>) -> std::sync::MutexGuard<'_, Table> {
    table
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
