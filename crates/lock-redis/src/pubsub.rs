//! One pub/sub connection per [`RedisBackend`](crate::RedisBackend), fanned out to any
//! number of [`Subscription`]s.
//!
//! A connection in subscribed mode cannot send ordinary commands, so pub/sub gets its own,
//! opened on first use. A background task reads its messages into a [`Fanout`] table.
//! Each channel is SUBSCRIBEd once and stays subscribed for the connection's life:
//! unsubscribing when the last local receiver goes could race a new subscriber's SUBSCRIBE,
//! and a lock process only ever uses a bounded set of lock channels.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

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
    channels: Arc<Channels>,
    alive: Arc<AtomicBool>,
}

/// The channels one pub/sub connection serves, and their local subscribers; shared by
/// the classic and the sharded (cluster) links.
#[derive(Default)]
pub(crate) struct Channels(std::sync::Mutex<Table>);

#[derive(Default)]
struct Table {
    channels: Fanout,
    /// Set once the server confirmed the channel's SUBSCRIBE; later subscribers wait on it
    /// so none of them can miss a message published in between.
    confirmed: HashMap<Vec<u8>, Arc<OnceCell<()>>>,
}

impl Channels {
    /// A subscription to `channel`, once `confirm` (the server's (S)SUBSCRIBE, sent once
    /// per channel) has succeeded within `limit`.
    pub(crate) async fn subscribe<F, Fut>(
        &self,
        channel: &[u8],
        limit: Duration,
        confirm: F,
    ) -> Result<Subscription>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = redis::RedisResult<()>>,
    {
        let (subscription, confirmed) = {
            let mut table = self.lock();
            let subscription = table.channels.subscribe(channel);
            let confirmed = table.confirmed.entry(channel.to_vec()).or_default();
            (subscription, confirmed.clone())
        };
        confirmed
            .get_or_try_init(|| async {
                match tokio::time::timeout(limit, confirm()).await {
                    Ok(reply) => reply.map_err(errors::from_redis),
                    Err(_) => Err(errors::timed_out(limit)),
                }
            })
            .await?;
        Ok(subscription)
    }

    /// Hands a message to `channel`'s subscribers.
    pub(crate) fn deliver(&self, channel: &[u8], payload: &[u8]) {
        self.lock()
            .channels
            .publish(channel, &Message::from(payload));
    }

    /// The connection is gone: every subscription ends, so waiters re-check their lock
    /// and subscribe again.
    pub(crate) fn close_all(&self) {
        let mut table = self.lock();
        table.channels.close_all();
        table.confirmed.clear();
    }

    /// The table is only held for map operations, never across an await; a panic while
    /// holding it cannot leave it inconsistent, so a poisoned lock is used as is.
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
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
        let mut sink = link.sink.clone();
        link.channels
            .subscribe(channel, self.options.command_timeout, || {
                sink.subscribe(channel)
            })
            .await
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
        let channels = Arc::new(Channels::default());
        let alive = Arc::new(AtomicBool::new(true));
        let (task_channels, task_alive) = (channels.clone(), alive.clone());
        tokio::spawn(async move {
            while let Some(message) = stream.next().await {
                // Binary-safe: `get_channel_name` would turn non-UTF-8 names into "?".
                if let Ok(channel) = message.get_channel::<Vec<u8>>() {
                    task_channels.deliver(&channel, message.get_payload_bytes());
                }
            }
            task_alive.store(false, Ordering::Release);
            task_channels.close_all();
        });
        let link = Arc::new(Link {
            sink,
            channels,
            alive,
        });
        *slot = Some(link.clone());
        Ok(link)
    }
}
