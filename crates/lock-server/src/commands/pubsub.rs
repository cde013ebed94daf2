//! SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE and PUNSUBSCRIBE, and what a subscribed connection
//! may still do.
//!
//! The connection reads its subscriptions itself. A publish is delivered before it
//! returns, so right after a command the connection can write the events it caused before
//! that command's reply, as Redis does (a RESP3 client publishing to its own channel sees
//! the push first). Publication numbers put the events of several subscriptions back in
//! order.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use lock_core::{KvBackend, Missed, Numbered, PatternSubscription, Subscription, Value};

use super::wrong_arity;
use crate::server::Shared;

/// One connection's subscriptions.
#[derive(Debug, Default)]
pub(crate) struct Subscriptions {
    channels: BTreeMap<Vec<u8>, Subscription>,
    patterns: BTreeMap<Vec<u8>, PatternSubscription>,
}

/// An event with what orders it: its publication's number, then channel before patterns
/// (Redis's order within one publication).
type Ordered = (u64, usize, Value);

/// A pending wait for one subscription's next event.
type Wait<'a> = Pin<Box<dyn Future<Output = Ordered> + Send + 'a>>;

impl Subscriptions {
    /// Whether the connection is in subscribed mode.
    pub(crate) fn active(&self) -> bool {
        self.count() > 0
    }

    /// Channels and patterns together: the count Redis reports in every confirmation.
    fn count(&self) -> i64 {
        (self.channels.len() + self.patterns.len()) as i64
    }

    /// `SUBSCRIBE channel [channel ...]`: one confirmation per channel.
    pub(crate) async fn subscribe(&mut self, shared: &Shared, args: &[Vec<u8>]) -> Vec<Value> {
        self.join(shared, args, false).await
    }

    /// `PSUBSCRIBE pattern [pattern ...]`: one confirmation per pattern.
    pub(crate) async fn psubscribe(&mut self, shared: &Shared, args: &[Vec<u8>]) -> Vec<Value> {
        self.join(shared, args, true).await
    }

    async fn join(&mut self, shared: &Shared, args: &[Vec<u8>], patterns: bool) -> Vec<Value> {
        let kind = if patterns { "psubscribe" } else { "subscribe" };
        if args.len() < 2 {
            return vec![wrong_arity(kind)];
        }
        let mut replies = Vec::new();
        for name in &args[1..] {
            let known = if patterns {
                self.patterns.contains_key(name)
            } else {
                self.channels.contains_key(name)
            };
            if !known {
                // Database 0's table is every database's: they share pub/sub.
                let joined = if patterns {
                    let subscription = shared.db(0).psubscribe(name).await;
                    subscription.map(|s| drop(self.patterns.insert(name.clone(), s)))
                } else {
                    let subscription = shared.db(0).subscribe(name).await;
                    subscription.map(|s| drop(self.channels.insert(name.clone(), s)))
                };
                if let Err(error) = joined {
                    replies.push(Value::Error(error.message().to_string()));
                    continue;
                }
            }
            replies.push(event(kind, Some(name), self.count()));
        }
        replies
    }

    /// `UNSUBSCRIBE [channel ...]`: all channels when none is named.
    pub(crate) fn unsubscribe(&mut self, args: &[Vec<u8>]) -> Vec<Value> {
        self.leave(args, "unsubscribe", false)
    }

    /// `PUNSUBSCRIBE [pattern ...]`: all patterns when none is named.
    pub(crate) fn punsubscribe(&mut self, args: &[Vec<u8>]) -> Vec<Value> {
        self.leave(args, "punsubscribe", true)
    }

    fn leave(&mut self, args: &[Vec<u8>], kind: &str, patterns: bool) -> Vec<Value> {
        let named: Vec<Vec<u8>> = if args.len() > 1 {
            args[1..].to_vec()
        } else if patterns {
            self.patterns.keys().cloned().collect()
        } else {
            self.channels.keys().cloned().collect()
        };
        if named.is_empty() {
            return vec![event(kind, None, self.count())];
        }
        named
            .into_iter()
            .map(|name| {
                if patterns {
                    self.patterns.remove(&name);
                } else {
                    self.channels.remove(&name);
                }
                event(kind, Some(&name), self.count())
            })
            .collect()
    }

    /// Ends every subscription (RESET, or the connection closing).
    pub(crate) fn clear(&mut self) {
        self.channels.clear();
        self.patterns.clear();
    }

    /// Every event already delivered, in publication order.
    pub(crate) fn drain(&mut self) -> Vec<Value> {
        in_order(self.delivered())
    }

    /// [`Subscriptions::drain`], each event marked with `index`: the reply it goes before.
    pub(crate) fn drain_into(&mut self, index: usize, events: &mut Vec<(usize, Value)>) {
        events.extend(self.drain().into_iter().map(|event| (index, event)));
    }

    /// Waits for the next event (forever without a subscription); it and every other
    /// event already delivered, in publication order. Cancel-safe: an event is taken only
    /// in the poll that completes the wait.
    pub(crate) async fn next_events(&mut self) -> Vec<Value> {
        let first = self.first().await;
        let mut events = self.delivered();
        events.push(first);
        in_order(events)
    }

    fn delivered(&mut self) -> Vec<Ordered> {
        let mut events = Vec::new();
        for (name, subscription) in &mut self.channels {
            while let Some(delivery) = next_delivered(|| subscription.try_recv()) {
                events.push((delivery.number, 0, message(name, &delivery.payload)));
            }
        }
        for (rank, (pattern, subscription)) in self.patterns.iter_mut().enumerate() {
            while let Some(delivery) = next_delivered(|| subscription.try_recv()) {
                let (channel, payload) = delivery.payload;
                events.push((
                    delivery.number,
                    rank + 1,
                    pmessage(pattern, &channel, &payload),
                ));
            }
        }
        events
    }

    async fn first(&mut self) -> Ordered {
        let mut waits: Vec<Wait<'_>> = Vec::new();
        for (name, subscription) in &mut self.channels {
            waits.push(Box::pin(async move {
                let delivery = loop {
                    match subscription.recv_numbered().await {
                        Ok(delivery) => break delivery,
                        Err(missed) => wait_past(missed).await,
                    }
                };
                (delivery.number, 0, message(name, &delivery.payload))
            }));
        }
        for (rank, (pattern, subscription)) in self.patterns.iter_mut().enumerate() {
            waits.push(Box::pin(async move {
                let delivery = loop {
                    match subscription.recv_numbered().await {
                        Ok(delivery) => break delivery,
                        Err(missed) => wait_past(missed).await,
                    }
                };
                let (channel, payload) = delivery.payload;
                (
                    delivery.number,
                    rank + 1,
                    pmessage(pattern, &channel, &payload),
                )
            }));
        }
        std::future::poll_fn(|cx| {
            for wait in &mut waits {
                if let Poll::Ready(event) = wait.as_mut().poll(cx) {
                    return Poll::Ready(event);
                }
            }
            Poll::Pending
        })
        .await
    }
}

/// The next delivery `try_recv` has, skipping a gap from lagging behind; `None` when
/// there is none yet or the subscription has ended.
fn next_delivered<T>(
    mut try_recv: impl FnMut() -> Result<Option<Numbered<T>>, Missed>,
) -> Option<Numbered<T>> {
    loop {
        match try_recv() {
            Ok(delivery) => return delivery,
            Err(Missed::Lagged(_)) => continue,
            Err(Missed::Closed) => return None,
        }
    }
}

/// After a gap from lagging behind, reading goes on at once; an ended subscription never
/// delivers again.
async fn wait_past(missed: Missed) {
    if missed == Missed::Closed {
        std::future::pending::<()>().await;
    }
}

fn in_order(mut events: Vec<Ordered>) -> Vec<Value> {
    events.sort_by_key(|(number, rank, _)| (*number, *rank));
    events.into_iter().map(|(_, _, event)| event).collect()
}

fn event(kind: &str, channel: Option<&[u8]>, count: i64) -> Value {
    Value::Array(vec![
        Value::Data(kind.as_bytes().to_vec()),
        channel.map_or(Value::Nil, |c| Value::Data(c.to_vec())),
        Value::Int(count),
    ])
}

/// A published message as a subscribed connection receives it.
fn message(channel: &[u8], payload: &[u8]) -> Value {
    Value::Array(vec![
        Value::Data(b"message".to_vec()),
        Value::Data(channel.to_vec()),
        Value::Data(payload.to_vec()),
    ])
}

/// A published message as a pattern subscription receives it.
fn pmessage(pattern: &[u8], channel: &[u8], payload: &[u8]) -> Value {
    Value::Array(vec![
        Value::Data(b"pmessage".to_vec()),
        Value::Data(pattern.to_vec()),
        Value::Data(channel.to_vec()),
        Value::Data(payload.to_vec()),
    ])
}

/// Whether a reply is a pub/sub event (a RESP3 push, not a reply).
pub(crate) fn is_event(value: &Value) -> bool {
    let Value::Array(items) = value else {
        return false;
    };
    match (items.first(), items.len()) {
        (Some(Value::Data(kind)), 3) => matches!(
            kind.as_slice(),
            b"subscribe" | b"unsubscribe" | b"psubscribe" | b"punsubscribe" | b"message"
        ),
        (Some(Value::Data(kind)), 4) => kind == b"pmessage",
        _ => false,
    }
}

/// What a subscribed connection may run; anything else gets Redis's refusal.
pub(crate) fn allowed_while_subscribed(name: &[u8]) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_slice(),
        b"subscribe"
            | b"unsubscribe"
            | b"psubscribe"
            | b"punsubscribe"
            | b"ping"
            | b"quit"
            | b"reset"
    )
}

/// PING while subscribed: `["pong", message or ""]`.
pub(crate) fn subscribed_ping(args: &[Vec<u8>]) -> Value {
    if args.len() > 2 {
        return wrong_arity("ping");
    }
    Value::Array(vec![
        Value::Data(b"pong".to_vec()),
        Value::Data(args.get(1).cloned().unwrap_or_default()),
    ])
}
