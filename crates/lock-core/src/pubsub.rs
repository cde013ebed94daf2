//! Pub/sub for wake-ups: [`Subscription`] is what [`KvBackend::subscribe`] returns, and
//! [`Channels`] is the fan-out table every backend can build it from. A subscriber of
//! many channels (a server connection) uses one [`Inbox`](crate::Inbox) instead.
//!
//! [`KvBackend::subscribe`]: crate::KvBackend::subscribe

use std::cell::LazyCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use tokio::sync::broadcast;

use crate::{Delivery, InboxAddress};

/// Messages a subscriber may fall behind by before it is told it missed some. Waiters
/// only need the latest few: a gap makes them re-check the lock, never hang. Every
/// channel allocates this many slots up front, so it stays small; subscribers that must
/// not miss anything use an [`Inbox`](crate::Inbox).
const BACKLOG: usize = 64;

/// Below this many channels and patterns, forgetting the unheard ones is not worth a scan.
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

fn missed(error: broadcast::error::RecvError) -> Missed {
    match error {
        broadcast::error::RecvError::Lagged(n) => Missed::Lagged(n),
        broadcast::error::RecvError::Closed => Missed::Closed,
    }
}

/// A message with its publication number: [`Channels`] numbers every `PUBLISH`, so that
/// whoever reads several subscriptions can put their messages back in publication order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Numbered<T> {
    /// Counts publications on one [`Channels`], from 1.
    pub number: u64,
    /// What was delivered.
    pub payload: T,
}

/// The next message already delivered to `receiver`, without waiting.
fn try_next<T: Clone>(receiver: &mut broadcast::Receiver<T>) -> Result<Option<T>, Missed> {
    match receiver.try_recv() {
        Ok(payload) => Ok(Some(payload)),
        Err(broadcast::error::TryRecvError::Empty) => Ok(None),
        Err(broadcast::error::TryRecvError::Lagged(n)) => Err(Missed::Lagged(n)),
        Err(broadcast::error::TryRecvError::Closed) => Err(Missed::Closed),
    }
}

/// A live subscription to one channel. Messages published after
/// [`KvBackend::subscribe`](crate::KvBackend::subscribe) returned are delivered in order.
#[derive(Debug)]
pub struct Subscription {
    receiver: broadcast::Receiver<Numbered<Message>>,
}

impl Subscription {
    /// The next message, or why there is none.
    pub async fn recv(&mut self) -> Result<Message, Missed> {
        self.recv_numbered().await.map(|m| m.payload)
    }

    /// The next message with its publication number, or why there is none.
    pub async fn recv_numbered(&mut self) -> Result<Numbered<Message>, Missed> {
        self.receiver.recv().await.map_err(missed)
    }

    /// The next message if one has already been delivered (`Ok(None)` if not), without
    /// waiting: a publish is delivered before it returns.
    pub fn try_recv(&mut self) -> Result<Option<Numbered<Message>>, Missed> {
        try_next(&mut self.receiver)
    }

    /// Drops every message received but not yet read, so the next [`Subscription::recv`]
    /// only sees messages published from now on.
    pub fn skip_backlog(&mut self) {
        self.receiver = self.receiver.resubscribe();
    }
}

/// A live subscription to a glob pattern (`PSUBSCRIBE`): each message comes with the
/// channel it was published on.
#[derive(Debug)]
pub struct PatternSubscription {
    receiver: broadcast::Receiver<Numbered<(Message, Message)>>,
}

impl PatternSubscription {
    /// The next `(channel, message)`, or why there is none.
    pub async fn recv(&mut self) -> Result<(Message, Message), Missed> {
        self.recv_numbered().await.map(|m| m.payload)
    }

    /// The next `(channel, message)` with its publication number, or why there is none.
    pub async fn recv_numbered(&mut self) -> Result<Numbered<(Message, Message)>, Missed> {
        self.receiver.recv().await.map_err(missed)
    }

    /// The next `(channel, message)` if one has already been delivered, without waiting.
    pub fn try_recv(&mut self) -> Result<Option<Numbered<(Message, Message)>>, Missed> {
        try_next(&mut self.receiver)
    }
}

/// A table of channels with their subscribers: in-process fan-out for a double, and the
/// dispatch table behind a server's single pub/sub connection.
#[derive(Debug, Default)]
pub struct Channels {
    senders: HashMap<Vec<u8>, broadcast::Sender<Numbered<Message>>>,
    patterns: HashMap<Vec<u8>, broadcast::Sender<Numbered<(Message, Message)>>>,
    /// [`Inbox`](crate::Inbox) subscriptions by channel, and by pattern in sorted order
    /// (the order an inbox receives one publication's pattern deliveries in).
    inboxes: HashMap<Vec<u8>, Vec<InboxAddress>>,
    pattern_inboxes: BTreeMap<Vec<u8>, Vec<InboxAddress>>,
    /// The number of the last publication.
    published: u64,
    /// The table size at which the next subscription first forgets the channels and
    /// patterns nobody listens to any more.
    sweep_at: usize,
}

impl Channels {
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

    /// Subscribes to every channel matching the glob `pattern` (see
    /// [`glob_match`](crate::glob_match)).
    pub fn psubscribe(&mut self, pattern: &[u8]) -> PatternSubscription {
        self.forget_unheard();
        let sender = self
            .patterns
            .entry(pattern.to_vec())
            .or_insert_with(|| broadcast::channel(BACKLOG).0);
        PatternSubscription {
            receiver: sender.subscribe(),
        }
    }

    /// Subscribes `inbox` to `channel`; a second subscription of the same inbox to the same
    /// channel changes nothing.
    pub fn subscribe_inbox(&mut self, channel: &[u8], inbox: &InboxAddress) {
        self.forget_unheard();
        join(self.inboxes.entry(channel.to_vec()).or_default(), inbox);
    }

    /// Subscribes `inbox` to every channel matching the glob `pattern`.
    pub fn psubscribe_inbox(&mut self, pattern: &[u8], inbox: &InboxAddress) {
        self.forget_unheard();
        join(
            self.pattern_inboxes.entry(pattern.to_vec()).or_default(),
            inbox,
        );
    }

    /// Ends `inbox`'s subscription to `channel`, if it has one.
    pub fn unsubscribe_inbox(&mut self, channel: &[u8], inbox: &InboxAddress) {
        if self
            .inboxes
            .get_mut(channel)
            .is_some_and(|all| leave(all, inbox))
        {
            self.inboxes.remove(channel);
        }
    }

    /// Ends `inbox`'s subscription to `pattern`, if it has one.
    pub fn punsubscribe_inbox(&mut self, pattern: &[u8], inbox: &InboxAddress) {
        if self
            .pattern_inboxes
            .get_mut(pattern)
            .is_some_and(|all| leave(all, inbox))
        {
            self.pattern_inboxes.remove(pattern);
        }
    }

    /// Delivers `message` to every subscriber of `channel` and of every pattern matching
    /// it, like `PUBLISH`: the reply is how many subscriptions received it. Channels and
    /// patterns whose subscriptions were all dropped are forgotten.
    pub fn publish(&mut self, channel: &[u8], message: &[u8]) -> i64 {
        self.published += 1;
        let number = self.published;
        let message = Message::from(message);
        // Only deliveries that name their channel need it as a Message.
        let name = LazyCell::new(|| Message::from(channel));
        let mut received = 0;
        if let Some(inboxes) = self.inboxes.get_mut(channel) {
            received += deliver_all(inboxes, || Delivery::Message {
                channel: Message::clone(&name),
                payload: message.clone(),
            });
            if inboxes.is_empty() {
                self.inboxes.remove(channel);
            }
        }
        if let Some(sender) = self.senders.get(channel) {
            let delivery = Numbered {
                number,
                payload: message.clone(),
            };
            match sender.send(delivery) {
                Ok(receivers) => received += receivers,
                Err(_) => {
                    self.senders.remove(channel);
                }
            }
        }
        if !self.pattern_inboxes.is_empty() {
            self.pattern_inboxes.retain(|pattern, inboxes| {
                if crate::glob_match(pattern, channel) {
                    let pattern = Message::from(pattern.as_slice());
                    received += deliver_all(inboxes, || Delivery::Pattern {
                        pattern: pattern.clone(),
                        channel: Message::clone(&name),
                        payload: message.clone(),
                    });
                }
                !inboxes.is_empty()
            });
        }
        if !self.patterns.is_empty() {
            self.patterns.retain(|pattern, sender| {
                if !crate::glob_match(pattern, channel) {
                    return sender.receiver_count() > 0;
                }
                let delivery = Numbered {
                    number,
                    payload: (Message::clone(&name), message.clone()),
                };
                match sender.send(delivery) {
                    Ok(receivers) => {
                        received += receivers;
                        true
                    }
                    Err(_) => false,
                }
            });
        }
        i64::try_from(received).unwrap_or(i64::MAX)
    }

    /// Drops the senders whose subscriptions were all dropped, once the table has doubled
    /// since the last time: each sender holds a [`BACKLOG`]-slot buffer, and without this a
    /// channel subscribed once and never published to again would keep it for good. The
    /// scan costs O(1) per subscription, amortised, and the table stays within twice the
    /// live channels.
    fn forget_unheard(&mut self) {
        if self.table_size() < self.sweep_at {
            return;
        }
        self.senders.retain(|_, sender| sender.receiver_count() > 0);
        self.patterns
            .retain(|_, sender| sender.receiver_count() > 0);
        let open = |_: &Vec<u8>, inboxes: &mut Vec<InboxAddress>| {
            inboxes.retain(|inbox| !inbox.is_closed());
            !inboxes.is_empty()
        };
        self.inboxes.retain(open);
        self.pattern_inboxes.retain(open);
        self.sweep_at = (2 * self.table_size()).max(MIN_SWEEP);
    }

    fn table_size(&self) -> usize {
        self.senders.len() + self.patterns.len() + self.inboxes.len() + self.pattern_inboxes.len()
    }

    /// Channels with at least one live subscription.
    pub fn active(&self) -> Vec<Vec<u8>> {
        let mut names: Vec<_> = self
            .senders
            .iter()
            .filter(|(_, s)| s.receiver_count() > 0)
            .map(|(name, _)| name)
            .chain(
                self.inboxes
                    .iter()
                    .filter(|(_, inboxes)| inboxes.iter().any(|inbox| !inbox.is_closed()))
                    .map(|(name, _)| name),
            )
            .cloned()
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Ends every subscription: each receives [`Missed::Closed`] once its backlog is read,
    /// and inboxes receive nothing more.
    pub fn close_all(&mut self) {
        self.senders.clear();
        self.patterns.clear();
        self.inboxes.clear();
        self.pattern_inboxes.clear();
    }
}

fn join(inboxes: &mut Vec<InboxAddress>, inbox: &InboxAddress) {
    if !inboxes.iter().any(|other| other.same(inbox)) {
        inboxes.push(inbox.clone());
    }
}

/// Removes `inbox` from `inboxes`: true if none is left.
fn leave(inboxes: &mut Vec<InboxAddress>, inbox: &InboxAddress) -> bool {
    inboxes.retain(|other| !other.same(inbox));
    inboxes.is_empty()
}

/// Delivers to each of `inboxes`, forgetting those that are gone; how many received it.
fn deliver_all(inboxes: &mut Vec<InboxAddress>, delivery: impl Fn() -> Delivery) -> usize {
    inboxes.retain(|inbox| inbox.deliver(delivery()));
    inboxes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_message_reaches_every_subscriber_and_counts_them() {
        let mut channels = Channels::new();
        let mut a = channels.subscribe(b"wake");
        let mut b = channels.subscribe(b"wake");
        assert_eq!(channels.publish(b"wake", b"hi"), 2);
        assert_eq!(&*a.recv().await.unwrap(), b"hi");
        assert_eq!(&*b.recv().await.unwrap(), b"hi");
        assert_eq!(channels.publish(b"other", b"hi"), 0);
    }

    #[tokio::test]
    async fn dropped_subscriptions_are_forgotten_and_close_all_ends_the_rest() {
        let mut channels = Channels::new();
        drop(channels.subscribe(b"gone"));
        assert_eq!(channels.publish(b"gone", b"x"), 0);
        assert!(channels.active().is_empty());
        let mut kept = channels.subscribe(b"kept");
        channels.close_all();
        assert_eq!(kept.recv().await, Err(Missed::Closed));
    }

    #[tokio::test]
    async fn pattern_subscribers_get_matching_channels_and_are_counted() {
        let mut channels = Channels::new();
        let mut exact = channels.subscribe(b"lock:a:wake");
        let mut pattern = channels.psubscribe(b"lock:*:wake");
        assert_eq!(channels.publish(b"lock:a:wake", b"x"), 2);
        assert_eq!(channels.publish(b"lock:b:wake", b"y"), 1);
        assert_eq!(channels.publish(b"other", b"z"), 0);
        assert_eq!(&*exact.recv().await.unwrap(), b"x");
        let (channel, message) = pattern.recv().await.unwrap();
        assert_eq!((&*channel, &*message), (&b"lock:a:wake"[..], &b"x"[..]));
        let (channel, _) = pattern.recv().await.unwrap();
        assert_eq!(&*channel, b"lock:b:wake");
        drop(pattern);
        assert_eq!(channels.publish(b"lock:b:wake", b"y"), 0);
    }

    #[tokio::test]
    async fn publications_are_numbered_and_readable_without_waiting() {
        let mut channels = Channels::new();
        let mut exact = channels.subscribe(b"c");
        let mut pattern = channels.psubscribe(b"c*");
        assert_eq!(exact.try_recv(), Ok(None));
        channels.publish(b"c", b"first");
        channels.publish(b"cc", b"second");
        channels.publish(b"c", b"third");
        let numbers = |n: Option<Numbered<Message>>| n.map(|m| (m.number, m.payload));
        assert_eq!(
            numbers(exact.try_recv().unwrap()),
            Some((1, Message::from(&b"first"[..])))
        );
        assert_eq!(
            numbers(exact.try_recv().unwrap()),
            Some((3, Message::from(&b"third"[..])))
        );
        assert_eq!(exact.try_recv(), Ok(None));
        let seen: Vec<u64> = std::iter::from_fn(|| pattern.try_recv().unwrap())
            .map(|m| m.number)
            .collect();
        assert_eq!(seen, [1, 2, 3]);
        channels.close_all();
        assert_eq!(exact.try_recv(), Err(Missed::Closed));
    }

    #[test]
    fn channels_nobody_listens_to_are_forgotten_without_a_publish() {
        let mut channels = Channels::new();
        let kept: Vec<_> = (0..100)
            .map(|i| channels.subscribe(format!("kept{i}").as_bytes()))
            .collect();
        let _kept_pattern = channels.psubscribe(b"kept*");
        for i in 0..1_000 {
            drop(channels.subscribe(format!("gone{i}").as_bytes()));
            drop(channels.psubscribe(format!("gone{i}*").as_bytes()));
        }
        let retained = channels.senders.len() + channels.patterns.len();
        assert!(retained <= 2 * 101 + 2, "{retained} senders retained");
        assert_eq!(channels.active().len(), 100);
        assert_eq!(channels.publish(b"kept7", b"x"), 2);
        drop(kept);
    }

    fn message(channel: &str, payload: &str) -> Delivery {
        Delivery::Message {
            channel: channel.as_bytes().into(),
            payload: payload.as_bytes().into(),
        }
    }

    fn pattern_message(pattern: &str, channel: &str, payload: &str) -> Delivery {
        Delivery::Pattern {
            pattern: pattern.as_bytes().into(),
            channel: channel.as_bytes().into(),
            payload: payload.as_bytes().into(),
        }
    }

    #[test]
    fn an_inbox_receives_in_publication_order_channel_before_sorted_patterns() {
        let mut channels = Channels::new();
        let mut inbox = crate::Inbox::new();
        let address = inbox.address().clone();
        channels.psubscribe_inbox(b"c*", &address);
        channels.subscribe_inbox(b"c", &address);
        channels.subscribe_inbox(b"c", &address);
        channels.psubscribe_inbox(b"*", &address);
        let _plain = channels.subscribe(b"c");
        assert_eq!(
            channels.publish(b"c", b"1"),
            4,
            "three inbox deliveries and one plain"
        );
        assert_eq!(channels.publish(b"d", b"2"), 1);
        let received: Vec<_> = std::iter::from_fn(|| inbox.try_recv()).collect();
        assert_eq!(
            received,
            [
                message("c", "1"),
                pattern_message("*", "c", "1"),
                pattern_message("c*", "c", "1"),
                pattern_message("*", "d", "2"),
            ]
        );
        assert_eq!(channels.active(), [b"c".to_vec()]);
        channels.unsubscribe_inbox(b"c", &address);
        channels.punsubscribe_inbox(b"*", &address);
        assert_eq!(channels.publish(b"c", b"3"), 2);
        assert_eq!(inbox.try_recv(), Some(pattern_message("c*", "c", "3")));
        assert_eq!(inbox.try_recv(), None);
    }

    #[tokio::test]
    async fn an_inbox_waits_for_its_next_delivery() {
        let channels = Arc::new(std::sync::Mutex::new(Channels::new()));
        let mut inbox = crate::Inbox::new();
        channels
            .lock()
            .unwrap()
            .subscribe_inbox(b"c", inbox.address());
        let publisher = {
            let channels = channels.clone();
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                channels.lock().unwrap().publish(b"c", b"late")
            })
        };
        assert_eq!(inbox.recv().await, message("c", "late"));
        assert_eq!(publisher.await.unwrap(), 1);
    }

    #[test]
    fn dropped_inboxes_are_not_counted_and_are_forgotten() {
        let mut channels = Channels::new();
        let kept = crate::Inbox::new();
        channels.subscribe_inbox(b"kept", kept.address());
        for i in 0..1_000 {
            let gone = crate::Inbox::new();
            channels.subscribe_inbox(format!("gone{i}").as_bytes(), gone.address());
            channels.psubscribe_inbox(format!("gone{i}*").as_bytes(), gone.address());
        }
        assert!(channels.table_size() <= 64, "{}", channels.table_size());
        let gone = crate::Inbox::new();
        channels.subscribe_inbox(b"kept", gone.address());
        drop(gone);
        assert_eq!(channels.publish(b"kept", b"x"), 1);
        assert_eq!(channels.active(), [b"kept".to_vec()]);
    }

    #[tokio::test]
    async fn skip_backlog_drops_what_was_not_read() {
        let mut channels = Channels::new();
        let mut sub = channels.subscribe(b"c");
        channels.publish(b"c", b"old");
        sub.skip_backlog();
        channels.publish(b"c", b"new");
        assert_eq!(&*sub.recv().await.unwrap(), b"new");
    }
}
