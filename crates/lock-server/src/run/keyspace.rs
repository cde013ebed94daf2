//! Running keyspace commands against a database: one from a client, a pipeline step, or
//! an EXEC block, each in one atomic section; and what `redis.call` runs.

use lock_core::Value;
use lock_memory::{Databases, Keyspace, MemoryBackend, WatchMark};

use super::blocked;
use crate::commands::keys::{copy_across, spans_databases};
use crate::commands::strings;
use crate::protocol::args::wrong_arity;
use crate::protocol::reply::{Hangup, Protocol, from_store};
use crate::protocol::request::Request;
use crate::state::context::Context;
use crate::state::shared::Shared;
use crate::table::{self, Command, Flags, Kind, introspection};

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
        Kind::Reply(answer) => answer(args, context.version),
        _ => return Value::Error("ERR unknown command".into()),
    };
    if touches(command) {
        for key in table::command_keys::keys_of(command, args) {
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

/// [`run`] for a command and its arguments as they arrived.
fn run_owned(
    store: &mut dyn Keyspace,
    command: &Command,
    args: &[Vec<u8>],
    context: Context,
) -> Value {
    let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    run(store, command, &args, context)
}

/// Values at least this big are moved out of a SET request into the store instead of
/// copied.
const TAKEN_VALUE: usize = crate::protocol::request::BIG_BULK;

/// [`run`] for a request.
fn run_request(store: &mut dyn Keyspace, request: &Request, context: Context) -> Value {
    run_owned(
        store,
        table::command(request.command),
        &request.args,
        context,
    )
}

/// [`run_request`] for a request the caller is done with: a SET of a big value takes
/// the value out of it (leaving its place empty).
fn run_request_taking(store: &mut dyn Keyspace, request: &mut Request, context: Context) -> Value {
    let command = table::command(request.command);
    if command.name == "set"
        && command.arity_ok(request.args.len())
        && request.args[2].len() >= TAKEN_VALUE
    {
        let value = std::mem::take(&mut request.args[2]);
        let args: Vec<&[u8]> = request.args.iter().map(Vec::as_slice).collect();
        return strings::set_taking(store, &args, value).unwrap_or_else(Value::Error);
    }
    run_request(store, request, context)
}

/// What a command run for a client in database `db`, speaking `protocol`, knows.
pub(crate) fn context(shared: &Shared, db: usize, protocol: Protocol) -> Context {
    Context {
        protocol,
        limits: shared.config.limits(),
        db,
        cluster: shared.options.cluster,
        version: shared.options.redis_version,
    }
}

/// A client's keyspace command in database `db`; blocked clients are served after one
/// that writes.
pub(crate) async fn one(
    shared: &Shared,
    db: usize,
    request: &Request,
    protocol: Protocol,
) -> Result<Value, Hangup> {
    let command = table::command(request.command);
    if let Kind::Reply(answer) = command.kind {
        let args: Vec<&[u8]> = request.args.iter().map(Vec::as_slice).collect();
        let version = shared.options.redis_version;
        return Ok(answer(&args, version).unwrap_or_else(Value::Error));
    }
    if spans_databases(&request.args, db) {
        return across(shared, db, request, protocol).await;
    }
    let reply = unserved(shared, db, request, protocol).await;
    if command.flags.has(Flags::WRITE) {
        blocked::serve(shared, db).await;
    }
    reply
}

/// A command that spans databases (`COPY … DB n`), run with every database in its
/// atomic step; blocked clients of every database are served after it.
async fn across(
    shared: &Shared,
    db: usize,
    request: &Request,
    protocol: Protocol,
) -> Result<Value, Hangup> {
    let context = context(shared, db, protocol);
    let command = table::command(request.command);
    let ran = MemoryBackend::atomically_across(shared.dbs(), db, |databases| {
        run_across(databases, command, &request.args, context)
    })
    .await;
    blocked::serve_all(shared).await;
    from_store(ran)
}

/// Runs `args` in `context.db` with every database at hand: `COPY … DB n` across them,
/// anything else in the one database.
pub(crate) fn run_across(
    databases: &mut Databases<'_>,
    command: &Command,
    args: &[Vec<u8>],
    context: Context,
) -> Value {
    if spans_databases(args, context.db) {
        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        return copy_across(databases, context.db, &args).unwrap_or_else(Value::Error);
    }
    match databases.get(context.db) {
        Some(store) => run_owned(store, command, args, context),
        None => Value::Error("ERR DB index is out of range".into()),
    }
}

/// [`one`] without serving blocked clients afterwards.
pub(crate) async fn unserved(
    shared: &Shared,
    db: usize,
    request: &Request,
    protocol: Protocol,
) -> Result<Value, Hangup> {
    let context = context(shared, db, protocol);
    from_store(
        shared
            .db(db)
            .atomically(|store| run_request(store, request, context))
            .await,
    )
}

/// A blocked client's command, tried again: its reply, and whether its first key holds
/// a list now (so that an error is about something else, the destination of a BLMOVE).
pub(crate) async fn retry_blocked(
    shared: &Shared,
    db: usize,
    request: &Request,
    protocol: Protocol,
) -> Result<(Value, bool), Hangup> {
    let context = context(shared, db, protocol);
    let ran = shared
        .db(db)
        .atomically(|store| {
            let reply = run_request(store, request, context);
            let source_is_list = matches!(&reply, Value::Error(_))
                && store
                    .key_type(&request.args[1])
                    .is_ok_and(|kind| kind == "list");
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
    requests: &mut [Request],
    protocol: Protocol,
    after_each: &mut (dyn FnMut(usize) + Send),
) -> Result<Value, Hangup> {
    let context = context(shared, db, protocol);
    let database = shared.db(db);
    let spans = requests
        .iter()
        .any(|request| spans_databases(&request.args, db));
    let started = std::time::Instant::now();
    let ran = if spans {
        // A block with a COPY to another database has every database in its step.
        MemoryBackend::atomically_across(shared.dbs(), db, |databases| {
            let Some(store) = databases.get(db) else {
                return Value::Error("ERR DB index is out of range".into());
            };
            if !watches_hold(store, watches) {
                return Value::NilArray;
            }
            let mut replies = Vec::with_capacity(requests.len());
            for (index, request) in requests.iter().enumerate() {
                let command = table::command(request.command);
                replies.push(run_across(databases, command, &request.args, context));
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
                let mut replies = Vec::with_capacity(requests.len());
                for (index, request) in requests.iter_mut().enumerate() {
                    replies.push(run_request_taking(store, request, context));
                    after_each(index);
                }
                Value::Array(replies)
            })
            .await
    };
    if let Ok(Value::Array(replies)) = &ran {
        // Commandstats: the step's time shared among its commands.
        let each = started.elapsed() / u32::try_from(replies.len().max(1)).unwrap_or(u32::MAX);
        for (request, reply) in requests.iter().zip(replies) {
            let command = table::command(request.command);
            let name = introspection::stat_name(command, &request.args);
            if command.arity_ok(request.args.len()) {
                shared
                    .stats
                    .called(name, each, matches!(reply, Value::Error(_)));
            } else {
                // Refused before it ran, as Redis counts a wrong arity.
                shared.stats.rejected_call(name);
            }
        }
    }
    if ran.is_err() {
        // An injected fault stopped the step before it ended the watches; EXEC ends
        // them whatever happens, so they must not stay behind in the store.
        let keys: Vec<&[u8]> = watches.iter().map(|(key, _)| *key).collect();
        database.unwatch(&keys);
    }
    if spans {
        blocked::serve_all(shared).await;
    } else if !requests.is_empty() {
        blocked::serve(shared, db).await;
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
