//! [`Inbox`]: one subscriber's queue for any number of channels and patterns, the way a
//! Redis client connection receives pub/sub messages.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::mpsc;

use lock_core::Message;

/// One publication as an [`Inbox`] receives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Published on a channel the inbox is subscribed to.
    Message {
        /// The channel.
        channel: Message,
        /// What was published.
        payload: Message,
    },
    /// Published on a channel matching a pattern the inbox is subscribed to.
    Pattern {
        /// The subscribed pattern.
        pattern: Message,
        /// The channel it matched.
        channel: Message,
        /// What was published.
        payload: Message,
    },
    /// Client-side caching: these keys changed (`None`: every key, after a flush).
    Invalidate(Option<Vec<Message>>),
    /// Client-side caching: the client invalidations were redirected to has gone.
    RedirectBroken(u64),
}

/// Where the double's pub/sub delivers for one [`Inbox`]: what
/// [`MemoryBackend::subscribe_inbox`](crate::MemoryBackend::subscribe_inbox) takes.
#[derive(Clone, Debug)]
pub struct InboxAddress {
    id: u64,
    sender: mpsc::UnboundedSender<Delivery>,
}

impl InboxAddress {
    /// Delivers `delivery`: false if the inbox is gone.
    pub fn deliver(&self, delivery: Delivery) -> bool {
        self.sender.send(delivery).is_ok()
    }

    /// Whether the inbox is gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }

    /// Whether both address the same inbox.
    pub(crate) fn same(&self, other: &InboxAddress) -> bool {
        self.id == other.id
    }
}

/// Receives every publication on the channels and patterns its
/// [`address`](Inbox::address) is subscribed to, in publication order; within one
/// publication, the channel's delivery comes before the patterns', and patterns in sorted
/// order.
///
/// Unlike a [`Subscription`](lock_core::Subscription), an inbox serves any number of channels
/// with one queue, so reading it costs O(1) per delivery however many subscriptions it
/// has, and it drops nothing: the queue grows as a Redis client's output buffer does.
/// Dropping the inbox ends all of its subscriptions.
#[derive(Debug)]
pub struct Inbox {
    address: InboxAddress,
    receiver: mpsc::UnboundedReceiver<Delivery>,
}

impl Default for Inbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Inbox {
    /// An inbox with no subscriptions.
    pub fn new() -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        let (sender, receiver) = mpsc::unbounded_channel();
        Self {
            address: InboxAddress {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                sender,
            },
            receiver,
        }
    }

    /// The address to subscribe with.
    pub fn address(&self) -> &InboxAddress {
        &self.address
    }

    /// The next delivery already made, without waiting: a publish delivers before it
    /// returns.
    pub fn try_recv(&mut self) -> Option<Delivery> {
        self.receiver.try_recv().ok()
    }

    /// Waits for the next delivery (forever, with no subscription). Cancel-safe.
    pub async fn recv(&mut self) -> Delivery {
        match self.receiver.recv().await {
            Some(delivery) => delivery,
            // Unreachable while the inbox holds its own sender; never end a wait early.
            None => std::future::pending().await,
        }
    }
}
