//! The double's pub/sub: lock wake-ups ([`Fanout`] subscriptions, what
//! [`KvBackend::subscribe`](lock_core::KvBackend::subscribe) returns), and [`Inbox`]es for
//! server connections, each of which reads every channel and pattern it subscribed to
//! from one queue, as a Redis client's messages all go to its one output buffer.

mod inbox;

use crate::glob_match;
use std::collections::{BTreeMap, HashMap};

use lock_core::{Fanout, Message, Subscription};

pub use inbox::{Delivery, Inbox, InboxAddress, OutputLimit, OverflowSignal, SharedOutputLimit};

/// Below this many inbox entries, forgetting closed inboxes is not worth a scan.
const MIN_SWEEP: usize = 64;

/// Every subscription of one double (all of a server's databases share one).
#[derive(Debug, Default)]
pub(crate) struct Channels {
    fanout: Fanout,
    /// Inbox subscriptions by channel, and by pattern in sorted order (the order an inbox
    /// receives one publication's pattern deliveries in).
    inboxes: HashMap<Vec<u8>, Vec<InboxAddress>>,
    pattern_inboxes: BTreeMap<Vec<u8>, Vec<InboxAddress>>,
    /// The inbox table size at which the next subscription first forgets closed inboxes.
    sweep_at: usize,
}

impl Channels {
    /// A wake-up subscription to `channel`.
    pub(crate) fn subscribe(&mut self, channel: &[u8]) -> Subscription {
        self.fanout.subscribe(channel)
    }

    /// Subscribes `inbox` to `channel`; a second subscription of the same inbox to the same
    /// channel changes nothing.
    pub(crate) fn subscribe_inbox(&mut self, channel: &[u8], inbox: &InboxAddress) {
        self.forget_closed();
        join(self.inboxes.entry(channel.to_vec()).or_default(), inbox);
    }

    /// Subscribes `inbox` to every channel matching the glob `pattern`.
    pub(crate) fn psubscribe_inbox(&mut self, pattern: &[u8], inbox: &InboxAddress) {
        self.forget_closed();
        join(
            self.pattern_inboxes.entry(pattern.to_vec()).or_default(),
            inbox,
        );
    }

    /// Ends `inbox`'s subscription to `channel`, if it has one.
    pub(crate) fn unsubscribe_inbox(&mut self, channel: &[u8], inbox: &InboxAddress) {
        if let Some(all) = self.inboxes.get_mut(channel)
            && leave(all, inbox)
        {
            self.inboxes.remove(channel);
        }
    }

    /// Ends `inbox`'s subscription to `pattern`, if it has one.
    pub(crate) fn punsubscribe_inbox(&mut self, pattern: &[u8], inbox: &InboxAddress) {
        if let Some(all) = self.pattern_inboxes.get_mut(pattern)
            && leave(all, inbox)
        {
            self.pattern_inboxes.remove(pattern);
        }
    }

    /// Delivers `message` to every subscriber of `channel` and of every pattern matching
    /// it, like `PUBLISH`: the reply is how many subscriptions received it.
    pub(crate) fn publish(&mut self, channel: &[u8], message: &[u8]) -> i64 {
        let message = Message::from(message);
        let name = Message::from(channel);
        let mut received = 0;
        if let Some(inboxes) = self.inboxes.get_mut(channel) {
            received += deliver_all(inboxes, || Delivery::Message {
                channel: name.clone(),
                payload: message.clone(),
            });
            if inboxes.is_empty() {
                self.inboxes.remove(channel);
            }
        }
        received += self.fanout.publish(channel, &message);
        self.pattern_inboxes.retain(|pattern, inboxes| {
            if glob_match(pattern, channel) {
                let pattern = Message::from(pattern.as_slice());
                received += deliver_all(inboxes, || Delivery::Pattern {
                    pattern: pattern.clone(),
                    channel: name.clone(),
                    payload: message.clone(),
                });
            }
            !inboxes.is_empty()
        });
        i64::try_from(received).unwrap_or(i64::MAX)
    }

    /// The channels at least one open inbox subscribes to, matching the glob `pattern`
    /// when one is given (`PUBSUB CHANNELS`), sorted.
    pub(crate) fn active_channels(&self, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        let mut channels: Vec<Vec<u8>> = self
            .inboxes
            .iter()
            .filter(|(channel, inboxes)| {
                open(inboxes) > 0 && pattern.is_none_or(|p| glob_match(p, channel))
            })
            .map(|(channel, _)| channel.clone())
            .collect();
        channels.sort_unstable();
        channels
    }

    /// How many open inboxes subscribe to `channel` itself (`PUBSUB NUMSUB`; pattern
    /// subscriptions are not counted).
    pub(crate) fn subscribers(&self, channel: &[u8]) -> usize {
        self.inboxes.get(channel).map_or(0, |inboxes| open(inboxes))
    }

    /// How many patterns at least one open inbox subscribes to (`PUBSUB NUMPAT`).
    pub(crate) fn patterns(&self) -> usize {
        self.pattern_inboxes
            .values()
            .filter(|inboxes| open(inboxes) > 0)
            .count()
    }

    /// Forgets closed inboxes once the table has doubled since the last time: O(1) per
    /// subscription, amortised, and the table stays within twice the live entries.
    fn forget_closed(&mut self) {
        if self.inboxes.len() + self.pattern_inboxes.len() < self.sweep_at {
            return;
        }
        let open = |_: &Vec<u8>, inboxes: &mut Vec<InboxAddress>| {
            inboxes.retain(|inbox| !inbox.is_closed());
            !inboxes.is_empty()
        };
        self.inboxes.retain(open);
        self.pattern_inboxes.retain(open);
        self.sweep_at = (2 * (self.inboxes.len() + self.pattern_inboxes.len())).max(MIN_SWEEP);
    }
}

/// How many of `inboxes` are still open (closed ones are forgotten lazily).
fn open(inboxes: &[InboxAddress]) -> usize {
    inboxes.iter().filter(|inbox| !inbox.is_closed()).count()
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
        let mut channels = Channels::default();
        let mut inbox = Inbox::new();
        let address = inbox.address().clone();
        channels.psubscribe_inbox(b"c*", &address);
        channels.subscribe_inbox(b"c", &address);
        channels.subscribe_inbox(b"c", &address);
        channels.psubscribe_inbox(b"*", &address);
        let _wake = channels.subscribe(b"c");
        assert_eq!(
            channels.publish(b"c", b"1"),
            4,
            "three inbox deliveries and one wake-up"
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
        channels.unsubscribe_inbox(b"c", &address);
        channels.punsubscribe_inbox(b"*", &address);
        assert_eq!(channels.publish(b"c", b"3"), 2);
        assert_eq!(inbox.try_recv(), Some(pattern_message("c*", "c", "3")));
        assert_eq!(inbox.try_recv(), None);
    }

    #[tokio::test]
    async fn an_inbox_waits_for_its_next_delivery() {
        let channels = std::sync::Arc::new(std::sync::Mutex::new(Channels::default()));
        let mut inbox = Inbox::new();
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
        let mut channels = Channels::default();
        let kept = Inbox::new();
        channels.subscribe_inbox(b"kept", kept.address());
        for i in 0..1_000 {
            let gone = Inbox::new();
            channels.subscribe_inbox(format!("gone{i}").as_bytes(), gone.address());
            channels.psubscribe_inbox(format!("gone{i}*").as_bytes(), gone.address());
        }
        let size = channels.inboxes.len() + channels.pattern_inboxes.len();
        assert!(size <= 64, "{size}");
        let gone = Inbox::new();
        channels.subscribe_inbox(b"kept", gone.address());
        drop(gone);
        assert_eq!(channels.publish(b"kept", b"x"), 1);
    }
}
