//! SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE and PUNSUBSCRIBE, and what a subscribed connection
//! may still do.
//!
//! Each subscribed channel or pattern gets a small task that forwards its messages to the
//! connection, which writes them between replies, in order.

use std::collections::BTreeMap;

use lock_core::{KvBackend, Missed, PatternSubscription, Subscription, Value};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::wrong_arity;
use crate::server::Shared;

/// One connection's subscriptions.
#[derive(Debug)]
pub(crate) struct Subscriptions {
    forwarders: BTreeMap<Vec<u8>, AbortHandle>,
    pattern_forwarders: BTreeMap<Vec<u8>, AbortHandle>,
    /// Where forwarders send the events (`message`, `pmessage`) the connection writes.
    events: mpsc::UnboundedSender<Value>,
}

impl Subscriptions {
    pub(crate) fn new(events: mpsc::UnboundedSender<Value>) -> Self {
        Self {
            forwarders: BTreeMap::new(),
            pattern_forwarders: BTreeMap::new(),
            events,
        }
    }

    /// Whether the connection is in subscribed mode.
    pub(crate) fn active(&self) -> bool {
        self.count() > 0
    }

    /// Channels and patterns together: the count Redis reports in every confirmation.
    fn count(&self) -> i64 {
        (self.forwarders.len() + self.pattern_forwarders.len()) as i64
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
            let forwarders = if patterns {
                &mut self.pattern_forwarders
            } else {
                &mut self.forwarders
            };
            if !forwarders.contains_key(name) {
                // Database 0's table is every database's: they share pub/sub.
                let source = if patterns {
                    shared.db(0).psubscribe(name).await.map(Source::Pattern)
                } else {
                    shared.db(0).subscribe(name).await.map(Source::Channel)
                };
                let source = match source {
                    Ok(source) => source,
                    Err(error) => {
                        replies.push(Value::Error(error.message().to_string()));
                        continue;
                    }
                };
                let task = tokio::spawn(forward(source, name.clone(), self.events.clone()));
                forwarders.insert(name.clone(), task.abort_handle());
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
            self.pattern_forwarders.keys().cloned().collect()
        } else {
            self.forwarders.keys().cloned().collect()
        };
        if named.is_empty() {
            return vec![event(kind, None, self.count())];
        }
        named
            .into_iter()
            .map(|name| {
                let forwarders = if patterns {
                    &mut self.pattern_forwarders
                } else {
                    &mut self.forwarders
                };
                if let Some(forwarder) = forwarders.remove(&name) {
                    forwarder.abort();
                }
                event(kind, Some(&name), self.count())
            })
            .collect()
    }

    /// Ends every subscription (RESET, or the connection closing).
    pub(crate) fn clear(&mut self) {
        let channels = std::mem::take(&mut self.forwarders);
        let patterns = std::mem::take(&mut self.pattern_forwarders);
        for (_, forwarder) in channels.into_iter().chain(patterns) {
            forwarder.abort();
        }
    }
}

/// Where one subscription's messages come from.
enum Source {
    Channel(Subscription),
    Pattern(PatternSubscription),
}

/// Sends each message of `source` (subscribed as `name`) to the connection as its event.
async fn forward(mut source: Source, name: Vec<u8>, events: mpsc::UnboundedSender<Value>) {
    loop {
        let event = match &mut source {
            Source::Channel(s) => s.recv().await.map(|payload| message(&name, &payload)),
            Source::Pattern(s) => s.recv().await.map(|(channel, payload)| {
                Value::Array(vec![
                    Value::Data(b"pmessage".to_vec()),
                    Value::Data(name.clone()),
                    Value::Data(channel.to_vec()),
                    Value::Data(payload.to_vec()),
                ])
            }),
        };
        match event {
            Ok(event) => {
                if events.send(event).is_err() {
                    return;
                }
            }
            Err(Missed::Lagged(_)) => {}
            Err(Missed::Closed) => return,
        }
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        self.clear();
    }
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
