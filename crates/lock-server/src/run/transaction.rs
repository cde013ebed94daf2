//! MULTI, EXEC, DISCARD, WATCH and UNWATCH.
//!
//! A block of keyspace commands runs in one atomic section together with the check of
//! this database's watched keys; a block that also holds other commands runs them in
//! order, each atomic on its own. The store stamps every write to a watched key, so EXEC
//! sees any write, expiry or FLUSHDB since WATCH.

use lock_core::Value;
use lock_memory::WatchMark;

use super::{caching, dispatch, keyspace};
use crate::protocol::args::ok;
use crate::protocol::reply::{Hangup, Reply};
use crate::protocol::request::Request;
use crate::state::client::{Client, Queued, Watched};
use crate::state::options::DATABASES;
use crate::state::shared::Shared;
use crate::table::{self, Transaction, command_keys};

/// Runs `which` for `client` (its arity already checked).
pub(crate) async fn run(
    shared: &Shared,
    client: &mut Client,
    which: Transaction,
    args: &[Vec<u8>],
) -> Result<Reply, Hangup> {
    let in_multi = client.transaction.is_some();
    Ok(match which {
        Transaction::Multi if in_multi => {
            Value::Error("ERR MULTI calls can not be nested".into()).into()
        }
        Transaction::Multi => {
            client.transaction = Some(Queued::default());
            ok().into()
        }
        Transaction::Discard => match client.transaction.take() {
            Some(_) => {
                release_watches(shared, client, None).await?;
                ok().into()
            }
            None => Value::Error("ERR DISCARD without MULTI".into()).into(),
        },
        Transaction::Exec => match client.transaction.take() {
            Some(queued) => exec(shared, client, queued).await?,
            None => Value::Error("ERR EXEC without MULTI".into()).into(),
        },
        Transaction::Watch if in_multi => {
            Value::Error("ERR WATCH inside MULTI is not allowed".into()).into()
        }
        Transaction::Watch => watch(shared, client, &args[1..]).await?.into(),
        Transaction::Unwatch => {
            release_watches(shared, client, None).await?;
            ok().into()
        }
    })
}

/// Queues `request` (a known command of the right arity) in the open transaction.
pub(crate) fn queue(client: &mut Client, request: Request) -> Value {
    if let Some(queued) = client.transaction.as_mut() {
        queued.commands.push(request);
    }
    Value::Status("QUEUED".into())
}

/// `EXEC`: the queued commands' replies, a null array when a watched key changed, or
/// EXECABORT when one was refused while queueing. Pub/sub events the commands caused go
/// inside the reply, before the element of the command that caused them.
async fn exec(shared: &Shared, client: &mut Client, mut queued: Queued) -> Result<Reply, Hangup> {
    // Watches of other databases are checked first; this database's atomically with the
    // block.
    let db = client.db;
    let broken_elsewhere = release_watches(shared, client, Some(db)).await?;
    let here = std::mem::take(&mut client.watched);
    let watches = marks_of(&here, db);
    // A cluster node runs a transaction only if all of it is in one slot; otherwise it
    // discards it whole.
    if shared.options.cluster && command_keys::transaction_spans_slots(&queued.commands) {
        if !watches.is_empty() {
            keyspace::batch(shared, db, &watches, &mut [], client.protocol, &mut |_| {}).await?;
        }
        return Ok(Value::Error(command_keys::CROSSSLOT.into()).into());
    }
    if queued.refused || broken_elsewhere {
        if !watches.is_empty() {
            keyspace::batch(shared, db, &watches, &mut [], client.protocol, &mut |_| {}).await?;
        }
        return Ok(if queued.refused {
            Value::Error("EXECABORT Transaction discarded because of previous errors.".into())
        } else {
            Value::NilArray
        }
        .into());
    }
    // Redis 7.0 writes what a queued command published to this client inside the EXEC
    // reply, before that command's reply; from 7.2 it follows the whole reply (the
    // connection writes what is left undrained).
    let inside = !shared.options.redis_version.pushes_after_reply();
    let mut events = Vec::new();
    let all_keyspace = queued
        .commands
        .iter()
        .all(|request| table::command(request.command).on_keyspace());
    if all_keyspace {
        let subscriptions = &mut client.subscriptions;
        let mut observe = |index: usize| {
            if inside {
                subscriptions.drain_into(index, &mut events);
            }
        };
        let reply = keyspace::batch(
            shared,
            db,
            &watches,
            &mut queued.commands,
            client.protocol,
            &mut observe,
        )
        .await?;
        if reply != Value::NilArray {
            remember_reads(shared, client, &queued.commands);
        }
        return Ok(with_events(reply, events));
    }
    if !watches.is_empty()
        && keyspace::batch(shared, db, &watches, &mut [], client.protocol, &mut |_| {}).await?
            == Value::NilArray
    {
        return Ok(Value::NilArray.into());
    }
    remember_reads(shared, client, &queued.commands);
    let mut replies = Vec::new();
    for request in queued.commands {
        let ran = Box::pin(dispatch::execute(
            shared,
            client,
            Some(request.command),
            request.args,
            false,
        ))
        .await?;
        if inside {
            client.subscriptions.drain_into(replies.len(), &mut events);
        }
        replies.extend(ran.into_iter().map(|reply| match reply {
            Reply::Value(value) => value,
            Reply::Push(items) | Reply::WithEvents(items, _) => Value::Array(items),
            Reply::Block(_) => Value::NilArray,
            Reply::ErrorBytes(text) => Value::Error(String::from_utf8_lossy(&text).into()),
        }));
    }
    Ok(with_events(Value::Array(replies), events))
}

/// Client-side caching remembers the keys a transaction's commands read, as if each had
/// been sent alone.
fn remember_reads(shared: &Shared, client: &Client, requests: &[Request]) {
    for request in requests {
        caching::remember_reads(shared, client, request.command, &request.args);
    }
}

fn with_events(reply: Value, events: Vec<(usize, Value)>) -> Reply {
    match reply {
        Value::Array(items) if !events.is_empty() => Reply::WithEvents(items, events),
        other => other.into(),
    }
}

/// `WATCH key [key ...]`. A key already watched in the same database keeps its first mark.
async fn watch(shared: &Shared, client: &mut Client, keys: &[Vec<u8>]) -> Result<Value, Hangup> {
    let db = client.db;
    let mut fresh: Vec<Vec<u8>> = Vec::new();
    for key in keys {
        let known = client.watched.iter().any(|w| w.db == db && &w.key == key);
        if !known && !fresh.contains(key) {
            fresh.push(key.clone());
        }
    }
    let marks = match keyspace::watch(shared, db, &fresh).await? {
        Ok(marks) => marks,
        Err(refused) => return Ok(refused),
    };
    for (key, mark) in fresh.into_iter().zip(marks) {
        client.watched.push(Watched { db, key, mark });
    }
    Ok(ok())
}

/// Ends every watch of `client`: true if any watched key changed meanwhile. Keys of
/// database `keep_db` are left for the caller, who checks them atomically with EXEC.
pub(crate) async fn release_watches(
    shared: &Shared,
    client: &mut Client,
    keep_db: Option<usize>,
) -> Result<bool, Hangup> {
    let mut released = Ok(false);
    for db in 0..DATABASES {
        if Some(db) == keep_db {
            continue;
        }
        let watches = marks_of(&client.watched, db);
        if watches.is_empty() {
            continue;
        }
        // Each batch ends its watches even when a fault fails it: go on with the others.
        match keyspace::batch(shared, db, &watches, &mut [], client.protocol, &mut |_| {}).await {
            Ok(Value::NilArray) => released = released.map(|_| true),
            Ok(_) => {}
            Err(hangup) => released = Err(hangup),
        }
    }
    client.watched.retain(|w| Some(w.db) == keep_db);
    released
}

/// The watches of database `db`, as [`keyspace::batch`] takes them.
fn marks_of(watched: &[Watched], db: usize) -> Vec<(&[u8], WatchMark)> {
    watched
        .iter()
        .filter(|w| w.db == db)
        .map(|w| (w.key.as_slice(), w.mark))
        .collect()
}
