//! Pub/sub for wake-ups: [`Subscription`] is what [`KvBackend::subscribe`] returns, and
//! [`Fanout`] is the table of channels a backend builds subscriptions from.
//!
//! [`KvBackend::subscribe`]: crate::KvBackend::subscribe

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::broadcast;

/// Messages a subscriber may fall behind by before it is told it missed some. Waiters
/// only need the latest few: a gap makes them re-check the lock, never hang. Every
/// channel allocates this many slots up front, so it stays small.
const BACKLOG: usize = 64;

/// Below this many channels, forgetting the unheard ones is not worth a scan.
const MIN_SWEEP: usize = 64;

/// One published message's payload.
pub type Message = Arc<[u8]>;

/// Why [`Subscription::recv`] returned no message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missed {
    /// The subscriber fell behind and this many messages were dropped.
    Lagged(u64),
    /// The channel is gone (for a server: the pub/sub connection was lost). Nothing more
    /// will arrive on this subscription; subscribe again.
    Closed,
}

/// A live subscription to one channel. Messages published after
/// [`KvBackend::subscribe`](crate::KvBackend::subscribe) returned are delivered in order.
/// Dropping it ends the subscription.
#[derive(Debug)]
pub struct Subscription {
    receiver: broadcast::Receiver<Message>,
}

impl Subscription {
    /// The next message, or why there is none.
    pub async fn recv(&mut self) -> Result<Message, Missed> {
        self.receiver.recv().await.map_err(|error| match error {
            broadcast::error::RecvError::Lagged(n) => Missed::Lagged(n),
            broadcast::error::RecvError::Closed => Missed::Closed,
        })
    }

    /// Drops every message received but not yet read, so the next [`Subscription::recv`]
    /// only sees messages published from now on.
    pub fn skip_backlog(&mut self) {
        self.receiver = self.receiver.resubscribe();
    }
}

/// Channels and their subscribers: how a backend fans one published message out to every
/// [`Subscription`] of its channel (in process for a double, behind one pub/sub
/// connection for a client of a server).
#[derive(Debug, Default)]
pub struct Fanout {
    senders: HashMap<Vec<u8>, broadcast::Sender<Message>>,
    /// The table size at which the next subscription first forgets the channels nobody
    /// listens to any more.
    sweep_at: usize,
}

impl Fanout {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Subscribes to `channel`.
    pub fn subscribe(&mut self, channel: &[u8]) -> Subscription {
        self.forget_unheard();
        if let Some(sender) = self.senders.get(channel) {
            return Subscription {
                receiver: sender.subscribe(),
            };
        }
        let (sender, receiver) = broadcast::channel(BACKLOG);
        self.senders.insert(channel.to_vec(), sender);
        Subscription { receiver }
    }

    /// Delivers `message` to every subscription of `channel`; how many received it. A
    /// channel whose subscriptions were all dropped is forgotten.
    pub fn publish(&mut self, channel: &[u8], message: &Message) -> usize {
        let Some(sender) = self.senders.get(channel) else {
            return 0;
        };
        match sender.send(message.clone()) {
            Ok(receivers) => receivers,
            Err(_) => {
                self.senders.remove(channel);
                0
            }
        }
    }

    /// Ends every subscription: each receives [`Missed::Closed`] once its backlog is read.
    pub fn close_all(&mut self) {
        self.senders.clear();
    }

    /// Drops the senders whose subscriptions were all dropped, once the table has doubled
    /// since the last time: each holds a [`BACKLOG`]-slot buffer, and without this a
    /// channel subscribed once and never published to again would keep it for good. The
    /// scan costs O(1) per subscription, amortised.
    fn forget_unheard(&mut self) {
        if self.senders.len() < self.sweep_at {
            return;
        }
        self.senders.retain(|_, sender| sender.receiver_count() > 0);
        self.sweep_at = (2 * self.senders.len()).max(MIN_SWEEP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str) -> Message {
        Message::from(text.as_bytes())
    }

    #[tokio::test]
    async fn a_message_reaches_every_subscriber_and_counts_them() {
        let mut fanout = Fanout::new();
        let mut a = fanout.subscribe(b"wake");
        let mut b = fanout.subscribe(b"wake");
        assert_eq!(fanout.publish(b"wake", &message("hi")), 2);
        assert_eq!(&*a.recv().await.unwrap(), b"hi");
        assert_eq!(&*b.recv().await.unwrap(), b"hi");
        assert_eq!(fanout.publish(b"other", &message("hi")), 0);
    }

    #[tokio::test]
    async fn dropped_subscriptions_are_forgotten_and_close_all_ends_the_rest() {
        let mut fanout = Fanout::new();
        drop(fanout.subscribe(b"gone"));
        assert_eq!(fanout.publish(b"gone", &message("x")), 0);
        assert!(fanout.senders.is_empty());
        let mut kept = fanout.subscribe(b"kept");
        fanout.close_all();
        assert_eq!(kept.recv().await, Err(Missed::Closed));
    }

    #[test]
    fn channels_nobody_listens_to_are_forgotten_without_a_publish() {
        let mut fanout = Fanout::new();
        let kept: Vec<_> = (0..100)
            .map(|i| fanout.subscribe(format!("kept{i}").as_bytes()))
            .collect();
        for i in 0..1_000 {
            drop(fanout.subscribe(format!("gone{i}").as_bytes()));
        }
        assert!(fanout.senders.len() <= 2 * 101, "{}", fanout.senders.len());
        assert_eq!(fanout.publish(b"kept7", &message("x")), 1);
        drop(kept);
    }

    #[tokio::test]
    async fn skip_backlog_drops_what_was_not_read() {
        let mut fanout = Fanout::new();
        let mut sub = fanout.subscribe(b"c");
        fanout.publish(b"c", &message("old"));
        sub.skip_backlog();
        fanout.publish(b"c", &message("new"));
        assert_eq!(&*sub.recv().await.unwrap(), b"new");
    }
}
