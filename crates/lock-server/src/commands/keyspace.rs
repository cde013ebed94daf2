//! Running keyspace commands against a database: one from a client, a pipeline step, or
//! an EXEC block, each in one atomic section; and what `redis.call` runs.

use lock_core::Value;
use lock_memory::{Databases, Keyspace, MemoryBackend, WatchMark};

use super::{Command, Context, Flags, Kind, lookup, wrong_arity};
use crate::reply::{Hangup, Protocol, from_store};
use crate::shared::Shared;

/// Runs the keyspace command `command` (its name is `args[0]`) on `store`: its reply.
pub(crate) fn run(
    store: &mut dyn Keyspace,
    command: &Command,
    args: &[&[u8]],
    context: Context,
) -> Value {
    if !command.arity_ok(args.len()) {
        return wrong_arity(command.name);
    }
    let reply = match command.kind {
        Kind::Keyspace(execute) => execute(store, args, context),
        Kind::Reply(answer) => answer(args),
        _ => return Value::Error("ERR unknown command".into()),
    };
    if touches(command) {
        for key in super::cluster::keys_of(command, args) {
            store.access(key);
        }
    }
    reply.unwrap_or_else(Value::Error)
}

/// Whether a command counts as a use of its keys for `OBJECT IDLETIME`: all do but those
/// Redis looks keys up for without touching them.
fn touches(command: &Command) -> bool {
    !matches!(
        command.name,
        "ttl" | "pttl" | "expiretime" | "pexpiretime" | "type" | "exists" | "object"
    )
}

/// [`run`] for a command given by its arguments alone.
fn run_args(store: &mut dyn Keyspace, args: &[Vec<u8>], context: Context) -> Value {
    let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    match lookup(args[0]) {
        Some(command) => run(store, command, &args, context),
        None => Value::Error("ERR unknown command".into()),
    }
}

/// What a command run for a client in database `db`, speaking `protocol`, knows.
pub(crate) fn context(shared: &Shared, db: usize, protocol: Protocol) -> Context {
    Context {
        protocol,
        limits: shared.config.limits(),
        db,
        cluster: shared.options.cluster,
    }
}

/// A client's keyspace command in database `db`; blocked clients are served after one
/// that writes.
pub(crate) async fn one(
    shared: &Shared,
    db: usize,
    command: &Command,
    args: &[Vec<u8>],
    protocol: Protocol,
) -> Result<Value, Hangup> {
    if let Kind::Reply(answer) = command.kind {
        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        return Ok(answer(&args).unwrap_or_else(Value::Error));
    }
    if super::keys::spans_databases(args, db) {
        return across(shared, db, args, protocol).await;
    }
    let reply = unserved(shared, db, args, protocol).await;
    if command.flags.has(Flags::WRITE) {
        crate::blocking::serve(shared, db).await;
    }
    reply
}

/// A command that spans databases (`COPY … DB n`), run with every database in its
/// atomic step; blocked clients of every database are served after it.
async fn across(
    shared: &Shared,
    db: usize,
    args: &[Vec<u8>],
    protocol: Protocol,
) -> Result<Value, Hangup> {
    let context = context(shared, db, protocol);
    let ran = MemoryBackend::atomically_across(shared.dbs(), db, |databases| {
        run_across(databases, args, context)
    })
    .await;
    for index in 0..shared.dbs().len() {
        crate::blocking::serve(shared, index).await;
    }
    from_store(ran)
}

/// Runs `args` in `context.db` with every database at hand: `COPY … DB n` across them,
/// anything else in the one database.
pub(crate) fn run_across(
    databases: &mut Databases<'_>,
    args: &[Vec<u8>],
    context: Context,
) -> Value {
    if super::keys::spans_databases(args, context.db) {
        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        return super::keys::copy_across(databases, context.db, &args).unwrap_or_else(Value::Error);
    }
    match databases.get(context.db) {
        Some(store) => run_args(store, args, context),
        None => Value::Error("ERR DB index is out of range".into()),
    }
}

/// [`one`] without serving blocked clients afterwards.
pub(crate) async fn unserved(
    shared: &Shared,
    db: usize,
    args: &[Vec<u8>],
    protocol: Protocol,
) -> Result<Value, Hangup> {
    let context = context(shared, db, protocol);
    from_store(
        shared
            .db(db)
            .atomically(|store| run_args(store, args, context))
            .await,
    )
}

/// A blocked client's command, tried again: its reply, and whether its first key holds
/// a list now (so that an error is about something else, the destination of a BLMOVE).
pub(crate) async fn retry_blocked(
    shared: &Shared,
    db: usize,
    args: &[Vec<u8>],
    protocol: Protocol,
) -> Result<(Value, bool), Hangup> {
    let context = context(shared, db, protocol);
    let ran = shared
        .db(db)
        .atomically(|store| {
            let reply = run_args(store, args, context);
            let source_is_list = matches!(&reply, Value::Error(_))
                && store.key_type(&args[1]).is_ok_and(|kind| kind == "list");
            (reply, source_is_list)
        })
        .await;
    match ran {
        Ok(outcome) => Ok(outcome),
        Err(error) => from_store(Err(error)).map(|reply| (reply, false)),
    }
}

/// Checks and ends `watches` of database `db`, then (unless one changed) runs keyspace
/// commands one after another, all in one atomic section (MULTI/EXEC, a pipeline step),
/// calling `after_each` with each command's index once it ran. The reply is the commands'
/// replies, or a null array when a watched key changed (then nothing runs).
pub(crate) async fn batch(
    shared: &Shared,
    db: usize,
    watches: &[(&[u8], WatchMark)],
    commands: &[Vec<Vec<u8>>],
    protocol: Protocol,
    after_each: &mut (dyn FnMut(usize) + Send),
) -> Result<Value, Hangup> {
    let context = context(shared, db, protocol);
    let database = shared.db(db);
    let spans = commands
        .iter()
        .any(|command| super::keys::spans_databases(command, db));
    let ran = if spans {
        // A block with a COPY to another database has every database in its step.
        MemoryBackend::atomically_across(shared.dbs(), db, |databases| {
            let Some(store) = databases.get(db) else {
                return Value::Error("ERR DB index is out of range".into());
            };
            if !watches_hold(store, watches) {
                return Value::NilArray;
            }
            let mut replies = Vec::with_capacity(commands.len());
            for (index, command) in commands.iter().enumerate() {
                replies.push(run_across(databases, command, context));
                after_each(index);
            }
            Value::Array(replies)
        })
        .await
    } else {
        database
            .atomically(|store| {
                if !watches_hold(store, watches) {
                    return Value::NilArray;
                }
                let mut replies = Vec::with_capacity(commands.len());
                for (index, command) in commands.iter().enumerate() {
                    replies.push(run_args(store, command, context));
                    after_each(index);
                }
                Value::Array(replies)
            })
            .await
    };
    if ran.is_err() {
        // An injected fault stopped the step before it ended the watches; EXEC ends
        // them whatever happens, so they must not stay behind in the store.
        let keys: Vec<&[u8]> = watches.iter().map(|(key, _)| *key).collect();
        database.unwatch(&keys);
    }
    if spans {
        for index in 0..shared.dbs().len() {
            crate::blocking::serve(shared, index).await;
        }
    } else if !commands.is_empty() {
        crate::blocking::serve(shared, db).await;
    }
    from_store(ran)
}

/// Ends `watches`: whether none was broken (EXEC then runs its block).
fn watches_hold(store: &mut dyn Keyspace, watches: &[(&[u8], WatchMark)]) -> bool {
    let mut held = true;
    for (key, mark) in watches {
        held &= !store.watch_broken(key, *mark);
        store.unwatch(key);
    }
    held
}

/// Starts watching `keys` in database `db`: what each looks like now.
pub(crate) async fn watch(
    shared: &Shared,
    db: usize,
    keys: &[Vec<u8>],
) -> Result<Result<Vec<WatchMark>, Value>, Hangup> {
    let marks = shared
        .db(db)
        .atomically(|store| keys.iter().map(|key| store.watch(key)).collect())
        .await;
    match marks {
        Ok(marks) => Ok(Ok(marks)),
        Err(error) => from_store(Err(error)).map(Err),
    }
}
