//! PUBLISH, SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE and PUNSUBSCRIBE, and PING in subscribed
//! mode. The subscriptions themselves are the connection's state
//! ([`Subscriptions`](crate::state::subscriptions::Subscriptions)); a RESP3 client
//! publishing to its own channel sees the push before the reply.

use lock_core::Value;
use lock_memory::Keyspace;

use crate::protocol::args::{text, wrong_arity};
use crate::protocol::reply::Reply;
use crate::state::client::Client;
use crate::state::context::Context;
use crate::state::shared::Shared;

/// The subscription commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PubSub {
    Subscribe,
    Unsubscribe,
    PSubscribe,
    PUnsubscribe,
}

/// `PUBLISH channel message`, inside the keyspace's atomic section: a connection that
/// published to its own subscriptions finds the message delivered when the command ends.
pub(crate) fn publish(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    Ok(Value::Int(store.publish(args[1], args[2]).map_err(text)?))
}

/// Runs `which` for `client`: one confirmation (a push under RESP3) per channel.
pub(crate) async fn run(
    shared: &Shared,
    client: &mut Client,
    which: PubSub,
    args: &[Vec<u8>],
) -> Vec<Reply> {
    let subscriptions = &mut client.subscriptions;
    let confirmations = match which {
        PubSub::Subscribe => subscriptions.join(shared, args, false).await,
        PubSub::PSubscribe => subscriptions.join(shared, args, true).await,
        PubSub::Unsubscribe => subscriptions.leave(shared, args, "unsubscribe", false),
        PubSub::PUnsubscribe => subscriptions.leave(shared, args, "punsubscribe", true),
    };
    confirmations
        .into_iter()
        .map(|reply| match reply {
            Value::Array(items) => Reply::Push(items),
            error => Reply::Value(error),
        })
        .collect()
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
