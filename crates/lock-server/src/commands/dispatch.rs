//! Running one request: authentication, the subscribed mode's restrictions, MULTI's
//! queue and arity, then the command's own code by its [`Kind`].

use lock_core::Value;

use super::{
    Flags, Kind, admin, cluster, connection, keyspace, lookup, pubsub, scripting, transaction,
    unknown_command, wrong_arity,
};
use crate::client::Client;
use crate::reply::{Hangup, Reply};
use crate::shared::Shared;

/// Runs one request for `client`: most have one reply, (UN)SUBSCRIBE one per channel.
/// A blocking command that finds nothing answers [`Reply::Block`] when `may_block` (a client's own
/// request, not one inside EXEC) and no MULTI is open.
pub(crate) async fn execute(
    shared: &Shared,
    client: &mut Client,
    args: Vec<Vec<u8>>,
    may_block: bool,
) -> Result<Vec<Reply>, Hangup> {
    let command = lookup(&args[0]);
    if !client.authenticated && !command.is_some_and(|c| c.flags.has(Flags::NO_AUTH)) {
        return one(Value::Error("NOAUTH Authentication required.".into()));
    }
    if client.restricted() && !command.is_some_and(|c| c.flags.has(Flags::PUBSUB)) {
        return one(match command {
            None => unknown_command(&args),
            Some(command) => Value::Error(format!(
                "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                command.name
            )),
        });
    }
    let refusal = match command {
        None => Some(unknown_command(&args)),
        Some(command) if !command.arity_ok(args.len()) => Some(wrong_arity(command.name)),
        Some(command) if shared.options.cluster && cluster::cross_slot(command, &args) => {
            Some(Value::Error(cluster::CROSSSLOT.into()))
        }
        Some(_) => None,
    };
    if let Some(refusal) = refusal {
        // A refused command inside MULTI makes EXEC abort, as in Redis.
        if let Some(queued) = client.transaction.as_mut() {
            queued.refused = true;
        }
        return one(refusal);
    }
    let command = command.expect("refused above when unknown");
    if client.transaction.is_some() && !command.flags.has(Flags::NO_MULTI) {
        return one(transaction::queue(client, args));
    }
    let db = client.db;
    let reply = match command.kind {
        Kind::Reply(_) if client.restricted() => pubsub::subscribed_ping(&args).into(),
        Kind::Keyspace(_) | Kind::Reply(_) => {
            match keyspace::one(shared, db, command, &args, client.protocol).await? {
                reply
                    if may_block
                        && command.flags.has(Flags::BLOCKING)
                        && crate::blocking::found_nothing(&reply) =>
                {
                    Reply::Block(args)
                }
                value => value.into(),
            }
        }
        Kind::Connection(which) => connection::run(shared, client, which, &args).await?,
        Kind::Admin(which) => admin::run(shared, which, &args).into(),
        Kind::Scripting(which) => scripting::run(shared, client, which, &args).await?.into(),
        Kind::PubSub(which) => return Ok(pubsub::run(shared, client, which, &args).await),
        Kind::Transaction(which) => transaction::run(shared, client, which, &args).await?,
    };
    Ok(vec![reply])
}

fn one(value: Value) -> Result<Vec<Reply>, Hangup> {
    Ok(vec![value.into()])
}
