//! SUBSCRIBE and UNSUBSCRIBE, and what a subscribed connection may still do.
//!
//! Each subscribed channel gets a small task that forwards its messages to the
//! connection, which writes them between replies, in order.

use std::collections::BTreeMap;

use lock_core::{KvBackend, Message, Missed, Value};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::wrong_arity;
use crate::server::Shared;

/// One connection's subscriptions.
#[derive(Debug)]
pub(crate) struct Subscriptions {
    forwarders: BTreeMap<Vec<u8>, AbortHandle>,
    messages: mpsc::UnboundedSender<(Vec<u8>, Message)>,
}

impl Subscriptions {
    pub(crate) fn new(messages: mpsc::UnboundedSender<(Vec<u8>, Message)>) -> Self {
        Self {
            forwarders: BTreeMap::new(),
            messages,
        }
    }

    /// Whether the connection is in subscribed mode.
    pub(crate) fn active(&self) -> bool {
        !self.forwarders.is_empty()
    }

    fn count(&self) -> i64 {
        self.forwarders.len() as i64
    }

    /// `SUBSCRIBE channel [channel ...]`: one confirmation per channel.
    pub(crate) async fn subscribe(&mut self, shared: &Shared, args: &[Vec<u8>]) -> Vec<Value> {
        if args.len() < 2 {
            return vec![wrong_arity("subscribe")];
        }
        let mut replies = Vec::new();
        for channel in &args[1..] {
            if !self.forwarders.contains_key(channel) {
                // Database 0's table is every database's: they share pub/sub.
                let mut subscription = match shared.db(0).subscribe(channel).await {
                    Ok(subscription) => subscription,
                    Err(error) => {
                        replies.push(Value::Error(error.message().to_string()));
                        continue;
                    }
                };
                let (sender, name) = (self.messages.clone(), channel.clone());
                let task = tokio::spawn(async move {
                    loop {
                        match subscription.recv().await {
                            Ok(message) => {
                                if sender.send((name.clone(), message)).is_err() {
                                    return;
                                }
                            }
                            Err(Missed::Lagged(_)) => {}
                            Err(Missed::Closed) => return,
                        }
                    }
                });
                self.forwarders.insert(channel.clone(), task.abort_handle());
            }
            replies.push(event("subscribe", Some(channel), self.count()));
        }
        replies
    }

    /// `UNSUBSCRIBE [channel ...]`: all channels when none is named.
    pub(crate) fn unsubscribe(&mut self, args: &[Vec<u8>]) -> Vec<Value> {
        let channels: Vec<Vec<u8>> = if args.len() > 1 {
            args[1..].to_vec()
        } else {
            self.forwarders.keys().cloned().collect()
        };
        if channels.is_empty() {
            return vec![event("unsubscribe", None, 0)];
        }
        channels
            .into_iter()
            .map(|channel| {
                if let Some(forwarder) = self.forwarders.remove(&channel) {
                    forwarder.abort();
                }
                event("unsubscribe", Some(&channel), self.count())
            })
            .collect()
    }

    /// Ends every subscription (RESET, or the connection closing).
    pub(crate) fn clear(&mut self) {
        for (_, forwarder) in std::mem::take(&mut self.forwarders) {
            forwarder.abort();
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
pub(crate) fn message(channel: &[u8], payload: &[u8]) -> Value {
    Value::Array(vec![
        Value::Data(b"message".to_vec()),
        Value::Data(channel.to_vec()),
        Value::Data(payload.to_vec()),
    ])
}

/// Whether a reply is a pub/sub event (a RESP3 push, not a reply).
pub(crate) fn is_event(value: &Value) -> bool {
    matches!(value, Value::Array(items) if matches!(
        items.first(),
        Some(Value::Data(kind)) if matches!(kind.as_slice(), b"subscribe" | b"unsubscribe" | b"message")
    ) && items.len() == 3)
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
