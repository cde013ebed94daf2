//! [`Inbox`]: one subscriber's queue for any number of channels and patterns, the way a
//! Redis client connection receives pub/sub messages.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, mpsc};

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

impl Delivery {
    /// The bytes it holds, with a fixed 32 for the framing around them: what it counts
    /// against an [`OutputLimit`].
    pub fn size(&self) -> u64 {
        let bytes: usize = match self {
            Delivery::Message { channel, payload } => channel.len() + payload.len(),
            Delivery::Pattern {
                pattern,
                channel,
                payload,
            } => pattern.len() + channel.len() + payload.len(),
            Delivery::Invalidate(keys) => keys.iter().flatten().map(|key| key.len() + 8).sum(),
            Delivery::RedirectBroken(_) => 8,
        };
        bytes as u64 + 32
    }
}

/// Redis's `client-output-buffer-limit` for one class of client, in bytes of deliveries
/// waiting to be read: over `hard`, or over `soft` for `soft_for` without a break, the
/// inbox [overflows](Inbox::overflowed) and takes nothing more. A zero disables a bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutputLimit {
    /// Overflow as soon as more than this is queued.
    pub hard: u64,
    /// Overflow once more than this has been queued for `soft_for`.
    pub soft: u64,
    /// How long the soft bound may be passed.
    pub soft_for: Duration,
}

/// An [`OutputLimit`] that can change while inboxes use it (CONFIG SET): shared by
/// every inbox it is [given to](Inbox::set_limit).
#[derive(Debug, Default)]
pub struct SharedOutputLimit(Mutex<OutputLimit>);

impl SharedOutputLimit {
    /// A shared limit, starting at `limit`.
    pub fn new(limit: OutputLimit) -> Self {
        Self(Mutex::new(limit))
    }

    /// The limit now.
    pub fn get(&self) -> OutputLimit {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes it for every inbox that uses it.
    pub fn set(&self, limit: OutputLimit) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = limit;
    }
}

/// What an inbox and its addresses share: the bytes queued and the limit on them.
#[derive(Debug, Default)]
struct Queue {
    bytes: AtomicU64,
    /// How many deliveries were ever accepted.
    delivered: AtomicU64,
    limit: Mutex<Option<Arc<SharedOutputLimit>>>,
    /// Since when the soft bound has been passed, without a break.
    over_soft_since: Mutex<Option<Instant>>,
    overflowed: AtomicBool,
    overflow: Notify,
}

impl Queue {
    /// Counts `size` more bytes queued: false if that overflows the limit (and from
    /// then on).
    fn admit(&self, size: u64) -> bool {
        if self.overflowed.load(Ordering::Acquire) {
            return false;
        }
        let queued = self.bytes.fetch_add(size, Ordering::AcqRel) + size;
        let limit = self
            .limit
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|shared| shared.get());
        let Some(limit) = limit else {
            return true;
        };
        let over_hard = limit.hard > 0 && queued > limit.hard;
        let over_soft = {
            let mut since = self
                .over_soft_since
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if limit.soft > 0 && queued > limit.soft {
                let started = *since.get_or_insert_with(Instant::now);
                started.elapsed() >= limit.soft_for
            } else {
                *since = None;
                false
            }
        };
        if over_hard || over_soft {
            self.overflowed.store(true, Ordering::Release);
            self.overflow.notify_one();
            return false;
        }
        true
    }

    fn taken(&self, size: u64) {
        let _ = self
            .bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |bytes| {
                Some(bytes.saturating_sub(size))
            });
    }
}

/// Where the double's pub/sub delivers for one [`Inbox`]: what
/// [`MemoryBackend::subscribe_inbox`](crate::MemoryBackend::subscribe_inbox) takes.
#[derive(Clone, Debug)]
pub struct InboxAddress {
    id: u64,
    sender: mpsc::UnboundedSender<Delivery>,
    queue: Arc<Queue>,
}

impl InboxAddress {
    /// Delivers `delivery`: false if the inbox is gone, or has
    /// [overflowed](Inbox::overflowed) (this delivery would pass its limit, or one
    /// before it did).
    pub fn deliver(&self, delivery: Delivery) -> bool {
        if self.sender.is_closed() {
            return false;
        }
        let size = delivery.size();
        if !self.queue.admit(size) {
            return false;
        }
        // Counted before the send, so that a reader never sees more received than
        // delivered.
        self.queue.delivered.fetch_add(1, Ordering::AcqRel);
        if self.sender.send(delivery).is_err() {
            self.queue.delivered.fetch_sub(1, Ordering::AcqRel);
            self.queue.taken(size);
            return false;
        }
        true
    }

    /// How many deliveries the inbox has accepted so far: compared with
    /// [`Inbox::received`], it tells which were made before a given moment.
    pub fn delivered(&self) -> u64 {
        self.queue.delivered.load(Ordering::Acquire)
    }

    /// Whether the inbox is gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.sender.is_closed() || self.queue.overflowed.load(Ordering::Acquire)
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
/// has, and it drops nothing: the queue grows as a Redis client's output buffer does,
/// up to the [`OutputLimit`] it is given, past which it overflows as Redis disconnects
/// a client over its `client-output-buffer-limit`.
/// Dropping the inbox ends all of its subscriptions.
#[derive(Debug)]
pub struct Inbox {
    address: InboxAddress,
    receiver: mpsc::UnboundedReceiver<Delivery>,
    /// How many deliveries were taken out.
    received: u64,
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
                queue: Arc::new(Queue::default()),
            },
            receiver,
            received: 0,
        }
    }

    /// How many deliveries have been taken out of the inbox so far (see
    /// [`InboxAddress::delivered`]).
    pub fn received(&self) -> u64 {
        self.received
    }

    /// The address to subscribe with.
    pub fn address(&self) -> &InboxAddress {
        &self.address
    }

    /// The next delivery already made, without waiting: a publish delivers before it
    /// returns.
    pub fn try_recv(&mut self) -> Option<Delivery> {
        let delivery = self.receiver.try_recv().ok()?;
        self.address.queue.taken(delivery.size());
        self.received += 1;
        Some(delivery)
    }

    /// Waits for the next delivery (forever, with no subscription). Cancel-safe.
    pub async fn recv(&mut self) -> Delivery {
        match self.receiver.recv().await {
            Some(delivery) => {
                self.address.queue.taken(delivery.size());
                self.received += 1;
                delivery
            }
            // Unreachable while the inbox holds its own sender; never end a wait early.
            None => std::future::pending().await,
        }
    }

    /// Bounds what may wait to be read (`None`: no bound, the default). The limit is
    /// read at every delivery, so a change to the shared limit applies at once.
    pub fn set_limit(&self, limit: Option<Arc<SharedOutputLimit>>) {
        let queue = &self.address.queue;
        if limit.is_none() {
            *queue
                .over_soft_since
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = None;
        }
        *queue.limit.lock().unwrap_or_else(PoisonError::into_inner) = limit;
    }

    /// Bytes delivered and not yet read ([`Delivery::size`] each).
    pub fn queued_bytes(&self) -> u64 {
        self.address.queue.bytes.load(Ordering::Acquire)
    }

    /// Whether a delivery passed the limit: the inbox takes nothing more, and its owner
    /// should let go of it (a server disconnects the client).
    pub fn is_overflowed(&self) -> bool {
        self.address.queue.overflowed.load(Ordering::Acquire)
    }

    /// Waits until the inbox overflows (forever, if it never does). Cancel-safe.
    pub async fn overflowed(&self) {
        self.overflow_signal().wait().await;
    }

    /// What [`Inbox::overflowed`] waits on, apart from the inbox: so one task can wait
    /// for the overflow while it reads the inbox.
    pub fn overflow_signal(&self) -> OverflowSignal {
        OverflowSignal(self.address.queue.clone())
    }
}

/// Says when an [`Inbox`] overflows ([`Inbox::overflow_signal`]).
#[derive(Clone, Debug)]
pub struct OverflowSignal(Arc<Queue>);

impl OverflowSignal {
    /// Waits until the inbox overflows (forever, if it never does). Cancel-safe.
    pub async fn wait(&self) {
        loop {
            let notified = self.0.overflow.notified();
            if self.0.overflowed.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(bytes: usize) -> Delivery {
        Delivery::Message {
            channel: Arc::from(&b"c"[..]),
            payload: Arc::from(vec![b'x'; bytes]),
        }
    }

    #[test]
    fn deliveries_past_the_hard_limit_overflow_the_inbox() {
        let mut inbox = Inbox::new();
        let limit = OutputLimit {
            hard: 1000,
            soft: 0,
            soft_for: Duration::ZERO,
        };
        inbox.set_limit(Some(Arc::new(SharedOutputLimit::new(limit))));
        let address = inbox.address().clone();
        assert!(address.deliver(message(400)));
        assert!(address.deliver(message(400)));
        assert_eq!(inbox.queued_bytes(), 2 * (400 + 1 + 32));
        // Reading makes room.
        assert!(inbox.try_recv().is_some());
        assert!(address.deliver(message(400)));
        assert!(!inbox.is_overflowed());
        assert!(!address.deliver(message(400)), "past 1,000 bytes");
        assert!(inbox.is_overflowed());
        assert!(address.is_closed());
        // Nothing more is taken, however small.
        assert!(!address.deliver(message(0)));
    }

    #[test]
    fn the_soft_limit_overflows_only_once_passed_for_its_time() {
        let mut patient = Inbox::new();
        patient.set_limit(Some(Arc::new(SharedOutputLimit::new(OutputLimit {
            hard: 0,
            soft: 100,
            soft_for: Duration::from_secs(3600),
        }))));
        for _ in 0..10 {
            assert!(patient.address().deliver(message(100)));
        }
        assert!(!patient.is_overflowed());
        let strict = Inbox::new();
        strict.set_limit(Some(Arc::new(SharedOutputLimit::new(OutputLimit {
            hard: 0,
            soft: 100,
            soft_for: Duration::ZERO,
        }))));
        assert!(!strict.address().deliver(message(100)));
        assert!(strict.is_overflowed());
        // Without a limit the queue is unbounded, as before.
        let open = Inbox::new();
        for _ in 0..100 {
            assert!(open.address().deliver(message(1000)));
        }
        let _ = patient.try_recv();
    }

    #[tokio::test]
    async fn overflowed_wakes_its_waiter() {
        let inbox = Inbox::new();
        inbox.set_limit(Some(Arc::new(SharedOutputLimit::new(OutputLimit {
            hard: 10,
            ..OutputLimit::default()
        }))));
        let address = inbox.address().clone();
        let waiter = async { inbox.overflowed().await };
        let (_, delivered) = tokio::join!(waiter, async { address.deliver(message(100)) });
        assert!(!delivered);
    }
}
