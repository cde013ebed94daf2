//! One connection's subscriptions: its channels and patterns, and the one [`Inbox`]
//! all of its messages arrive in, as a Redis client's messages all go to its one output
//! buffer. Reading costs O(1) per message however many channels it subscribes to, and
//! nothing is dropped. A publish delivers before it returns, so right after a command the
//! connection can write the events it caused before that command's reply, as Redis does.

use std::collections::BTreeSet;

use lock_core::Value;
use lock_memory::{Delivery, Inbox, InboxAddress, OverflowSignal};

use super::shared::Shared;
use crate::protocol::args::wrong_arity;
use crate::protocol::reply::Protocol;

/// One connection's subscriptions.
#[derive(Debug, Default)]
pub(crate) struct Subscriptions {
    channels: BTreeSet<Vec<u8>>,
    patterns: BTreeSet<Vec<u8>>,
    inbox: Inbox,
    /// The connection's protocol, which decides how a tracking invalidation arrives.
    pub(crate) protocol: Protocol,
}

impl Subscriptions {
    /// Where this connection's deliveries go: pub/sub messages, and client-side caching's
    /// invalidations.
    pub(crate) fn address(&self) -> &InboxAddress {
        self.inbox.address()
    }

    /// Whether the connection is in subscribed mode.
    pub(crate) fn active(&self) -> bool {
        self.count() > 0
    }

    /// How many channels and patterns (CLIENT LIST's `sub` and `psub`).
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.channels.len(), self.patterns.len())
    }

    /// Channels and patterns together: the count Redis reports in every confirmation.
    fn count(&self) -> i64 {
        (self.channels.len() + self.patterns.len()) as i64
    }

    /// `(P)SUBSCRIBE name [name ...]`: one confirmation per name.
    pub(crate) async fn join(
        &mut self,
        shared: &Shared,
        args: &[Vec<u8>],
        patterns: bool,
    ) -> Vec<Value> {
        let kind = if patterns { "psubscribe" } else { "subscribe" };
        if args.len() < 2 {
            return vec![wrong_arity(kind)];
        }
        let mut replies = Vec::new();
        for name in &args[1..] {
            let known = if patterns {
                self.patterns.contains(name)
            } else {
                self.channels.contains(name)
            };
            if !known {
                // Database 0's table is every database's: they share pub/sub.
                let address = self.inbox.address();
                let joined = if patterns {
                    shared.db(0).psubscribe_inbox(name, address).await
                } else {
                    shared.db(0).subscribe_inbox(name, address).await
                };
                if let Err(error) = joined {
                    replies.push(Value::Error(error.message().to_string()));
                    continue;
                }
                if patterns {
                    self.patterns.insert(name.clone());
                } else {
                    self.channels.insert(name.clone());
                }
            }
            replies.push(event(kind, Some(name), self.count()));
        }
        // A subscribed client is of Redis's pub/sub class: its queue is bounded by that
        // class's output-buffer limit.
        if self.active() {
            self.inbox.set_limit(Some(shared.config.pubsub_limit()));
        }
        replies
    }

    /// `(P)UNSUBSCRIBE [name ...]`: all of them when none is named.
    pub(crate) fn leave(
        &mut self,
        shared: &Shared,
        args: &[Vec<u8>],
        kind: &str,
        patterns: bool,
    ) -> Vec<Value> {
        let named: Vec<Vec<u8>> = if args.len() > 1 {
            args[1..].to_vec()
        } else if patterns {
            self.patterns.iter().cloned().collect()
        } else {
            self.channels.iter().cloned().collect()
        };
        if named.is_empty() {
            return vec![event(kind, None, self.count())];
        }
        let address = self.inbox.address().clone();
        let replies = named
            .into_iter()
            .map(|name| {
                if patterns {
                    if self.patterns.remove(&name) {
                        shared.db(0).punsubscribe_inbox(&name, &address);
                    }
                } else if self.channels.remove(&name) {
                    shared.db(0).unsubscribe_inbox(&name, &address);
                }
                event(kind, Some(&name), self.count())
            })
            .collect();
        if !self.active() {
            self.inbox.set_limit(None);
        }
        replies
    }

    /// What says when the queue passes the pub/sub output-buffer limit: the connection
    /// must then close, as Redis closes it.
    pub(crate) fn overflow_signal(&self) -> OverflowSignal {
        self.inbox.overflow_signal()
    }

    /// Ends every subscription (RESET, or the connection closing).
    pub(crate) fn clear(&mut self, shared: &Shared) {
        self.leave(shared, &[b"punsubscribe".to_vec()], "punsubscribe", true);
        self.leave(shared, &[b"unsubscribe".to_vec()], "unsubscribe", false);
    }

    /// Every event already delivered, in publication order.
    pub(crate) fn drain(&mut self) -> Vec<Value> {
        self.delivered_now().collect()
    }

    /// [`Subscriptions::drain`], each event marked with `index`: the reply it goes before.
    pub(crate) fn drain_into(&mut self, index: usize, events: &mut Vec<(usize, Value)>) {
        events.extend(self.delivered_now().map(|event| (index, event)));
    }

    /// The events among the first `count` deliveries the inbox ever took that are still
    /// unread: those made before a given moment ([`InboxAddress::delivered`] then).
    pub(crate) fn drain_before(&mut self, count: u64) -> Vec<Value> {
        let (protocol, subscribed) = (self.protocol, self.active());
        let mut events = Vec::new();
        while self.inbox.received() < count {
            let Some(delivery) = self.inbox.try_recv() else {
                break;
            };
            events.extend(delivered(delivery, protocol, subscribed));
        }
        events
    }

    fn delivered_now(&mut self) -> impl Iterator<Item = Value> + '_ {
        let (protocol, subscribed) = (self.protocol, self.active());
        std::iter::from_fn(|| self.inbox.try_recv())
            .filter_map(move |delivery| delivered(delivery, protocol, subscribed))
    }

    /// Waits for the next event (forever without a subscription); it and every other
    /// event already delivered, in publication order. Cancel-safe.
    pub(crate) async fn next_events(&mut self) -> Vec<Value> {
        let delivery = self.inbox.recv().await;
        let mut events: Vec<Value> = delivered(delivery, self.protocol, self.active())
            .into_iter()
            .collect();
        events.extend(self.drain());
        events
    }
}

/// A delivery as the connection receives it: `message` or `pmessage`; a tracking
/// invalidation as a RESP3 push, or under RESP2 as a message on `__redis__:invalidate`
/// to a subscribed connection (a RESP2 connection that is not subscribed cannot get one,
/// as in Redis).
pub(crate) fn delivered(delivery: Delivery, protocol: Protocol, subscribed: bool) -> Option<Value> {
    let data = |bytes: &[u8]| Value::Data(bytes.to_vec());
    Some(match delivery {
        Delivery::Invalidate(keys) => {
            let keys = keys.map_or(Value::Nil, |keys| {
                Value::Array(keys.iter().map(|key| data(key)).collect())
            });
            match (protocol, subscribed) {
                (Protocol::Resp3, _) => Value::Array(vec![data(b"invalidate"), keys]),
                (Protocol::Resp2, true) => {
                    Value::Array(vec![data(b"message"), data(b"__redis__:invalidate"), keys])
                }
                (Protocol::Resp2, false) => return None,
            }
        }
        Delivery::RedirectBroken(id) if protocol == Protocol::Resp3 => Value::Array(vec![
            data(b"tracking-redir-broken"),
            Value::Int(i64::try_from(id).unwrap_or(i64::MAX)),
        ]),
        Delivery::RedirectBroken(_) => return None,
        Delivery::Message { channel, payload } => {
            Value::Array(vec![data(b"message"), data(&channel), data(&payload)])
        }
        Delivery::Pattern {
            pattern,
            channel,
            payload,
        } => Value::Array(vec![
            data(b"pmessage"),
            data(&pattern),
            data(&channel),
            data(&payload),
        ]),
    })
}

fn event(kind: &str, channel: Option<&[u8]>, count: i64) -> Value {
    Value::Array(vec![
        Value::Data(kind.as_bytes().to_vec()),
        channel.map_or(Value::Nil, |c| Value::Data(c.to_vec())),
        Value::Int(count),
    ])
}
