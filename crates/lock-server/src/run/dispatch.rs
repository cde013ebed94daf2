//! Running one request: authentication, the subscribed mode's restrictions, MULTI's
//! queue and arity, then the command's own code by its [`Kind`].

use std::time::Instant;

use lock_core::Value;

use super::{blocked, keyspace, replicas, scripting, transaction};
use crate::commands::connection::Connection;
use crate::commands::{admin, cluster, connection, markers, pubsub};
use crate::protocol::args::{unknown_command, wrong_arity};
use crate::protocol::reply::{Hangup, Reply};
use crate::protocol::request::{CommandId, Request};
use crate::state::client::Client;
use crate::state::shared::Shared;
use crate::table::{
    self, Command, Flags, Kind, Transaction, command_keys, introspection, subcommands,
};

/// Runs one request for `client`, its command found in the table already (`None`: the
/// server has no command of that name). Most have one reply, (UN)SUBSCRIBE one per
/// channel. A blocking command that finds nothing answers [`Reply::Block`] when
/// `may_block` (a client's own request, not one inside EXEC) and no MULTI is open.
pub(crate) async fn execute(
    shared: &Shared,
    client: &mut Client,
    found: Option<CommandId>,
    args: Vec<Vec<u8>>,
    may_block: bool,
) -> Result<Vec<Reply>, Hangup> {
    let command = found.map(table::command);
    // Redis counts a known command's refusals in its Commandstats.
    let rejected = |command: Option<&'static Command>| {
        if let Some(command) = command {
            shared
                .stats
                .rejected_call(introspection::stat_name(command, &args));
        }
    };
    let refusal: Option<Reply> = match command {
        None => Some(unknown_command(&args)),
        Some(command) if !command.arity_ok(args.len()) => Some(wrong_arity(command.name).into()),
        // A container's subcommand is checked as Redis checks it, before MULTI queues it.
        Some(command)
            if let Some(refused) =
                subcommands::refusal(command.name, &args, shared.options.redis_version) =>
        {
            Some(refused.into())
        }
        // As in Redis's processCommand: a command is looked up and its arity checked
        // before authentication is asked for, so an unauthenticated client is told of an
        // unknown command or a wrong arity first.
        Some(command) if !client.authenticated && !command.flags.has(Flags::NO_AUTH) => {
            Some(Value::Error("NOAUTH Authentication required.".into()).into())
        }
        Some(command) if client.restricted() && !command.flags.has(Flags::PUBSUB) => {
            Some(
                Value::Error(format!(
                    "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                    command.name
                ))
                .into(),
            )
        }
        Some(command) if shared.options.cluster && command_keys::cross_slot(command, &args) => {
            Some(Value::Error(command_keys::CROSSSLOT.into()).into())
        }
        // Only a shard of a larger cluster redirects; the others skip the key lookup.
        Some(command) if shared.options.cluster_layout.is_some() => {
            command_keys::keys_of(command, &args)
                .first()
                .and_then(|key| cluster::moved(shared, client.tag, key))
                .map(Reply::from)
        }
        Some(_) => None,
    };
    if let Some(refusal) = refusal {
        rejected(command);
        // A refused command inside MULTI makes EXEC abort, as in Redis; a refused EXEC
        // is an EXECABORT there and then, with or without a MULTI (Redis's rejectCommand
        // discards the transaction, and its watches, either way).
        let exec = command.is_some_and(|c| matches!(c.kind, Kind::Transaction(Transaction::Exec)));
        if exec {
            client.transaction = None;
            transaction::release_watches(shared, client, None).await?;
            return one(exec_abort(&refusal));
        }
        if let Some(queued) = client.transaction.as_mut() {
            queued.refused = true;
        }
        return Ok(vec![refusal]);
    }
    // Both are known: an unknown name was refused above.
    let (Some(id), Some(command)) = (found, command) else {
        return Ok(vec![unknown_command(&args)]);
    };
    let request = Request { command: id, args };
    if client.transaction.is_some() && !command.flags.has(Flags::NO_MULTI) {
        return one(transaction::queue(client, request));
    }
    let db = client.db;
    let args = &request.args;
    let name = introspection::stat_name(command, args);
    let started = Instant::now();
    let reply = match command.kind {
        Kind::Reply(_) if client.restricted() => pubsub::subscribed_ping(args).into(),
        Kind::Keyspace(_) | Kind::Reply(_)
            if let Some(reply) = replicas::answer(shared, client, &request, may_block) =>
        {
            reply
        }
        Kind::Keyspace(_) | Kind::Reply(_) => {
            match keyspace::one(shared, db, &request, client.protocol).await? {
                reply
                    if may_block
                        && command.flags.has(Flags::BLOCKING)
                        && blocked::waits(
                            &request,
                            &reply,
                            shared.clock.now_ms(),
                            shared.options.redis_version,
                        ) =>
                {
                    Reply::Block(request)
                }
                value => value.into(),
            }
        }
        Kind::Connection(which) => {
            if which == Connection::Reset {
                transaction::release_watches(shared, client, None).await?;
            }
            connection::run(shared, client, which, args).into()
        }
        Kind::Admin(which) => admin::run(shared, client.tag, which, args).into(),
        Kind::Marker(which) => markers::run(shared, client, which, args).into(),
        Kind::Scripting(which) => scripting::run(shared, client, which, args).await?.into(),
        Kind::PubSub(which) => {
            let replies = pubsub::run(shared, client, which, args).await;
            shared.stats.called(name, started.elapsed(), false);
            return Ok(replies);
        }
        Kind::Transaction(which) => transaction::run(shared, client, which, args).await?,
    };
    // A blocked command is counted when it answers (see `connection`).
    if !matches!(reply, Reply::Block(_)) {
        let failed = matches!(reply, Reply::Value(Value::Error(_)) | Reply::ErrorBytes(_));
        shared.stats.called(name, started.elapsed(), failed);
    }
    Ok(vec![reply])
}

/// Redis's `EXECABORT` for an EXEC refused before it ran: the refusal's text, without
/// its `ERR` code.
fn exec_abort(refusal: &Reply) -> Value {
    let text = match refusal {
        Reply::Value(Value::Error(text)) => text.strip_prefix("ERR ").unwrap_or(text),
        _ => "",
    };
    Value::Error(format!(
        "EXECABORT Transaction discarded because of: {text}"
    ))
}

fn one(value: Value) -> Result<Vec<Reply>, Hangup> {
    Ok(vec![value.into()])
}
