//! Serving blocked clients: whenever a command may have pushed to their database, the
//! clients blocked there (oldest first) run their command again, and those it now finds
//! something for get their reply.

use lock_core::{RedisVersion, Value};

use super::keyspace;
use crate::commands::{lists, replication, sorted_set_pops};
use crate::protocol::reply::Protocol;
use crate::protocol::request::Request;
use crate::state::blocked::Served;
use crate::state::shared::Shared;
use crate::table;

/// Hands elements pushed to database `db` to the clients blocked on them, if any wait.
pub(crate) async fn serve(shared: &Shared, db: usize) {
    if shared.blocked.any() {
        serve_line(shared, db).await;
    }
}

/// Serves every database's blocked clients (after a command that may span databases).
pub(crate) async fn serve_all(shared: &Shared) {
    for index in 0..shared.dbs().len() {
        serve(shared, index).await;
    }
}

/// Undoes what the blocking `request` did for a client that has gone before its reply
/// (`popped`) could be written.
pub(crate) async fn unpop(shared: &Shared, db: usize, request: &Request, popped: &Value) {
    let undone =
        lists::undo(&request.args, popped).or_else(|| sorted_set_pops::undo(&request.args, popped));
    let Some(undo) = undone else {
        return;
    };
    let Some(command) = table::lookup(&undo[0]) else {
        return;
    };
    let undo = Request {
        command,
        args: undo,
    };
    // A fault injected here would lose the element, as a crash of Redis would.
    let _ = keyspace::unserved(shared, db, &undo, Protocol::Resp2).await;
}

/// Whether a blocking command's reply means it found nothing (and so waits).
pub(crate) fn found_nothing(reply: &Value) -> bool {
    matches!(reply, Value::Nil | Value::NilArray)
}

/// Whether a blocking command that answered `reply` waits (when it may): a list command
/// that found nothing, or a WAIT or WAITAOF that asked for a replica's acknowledgement
/// (no replica ever gives one here).
pub(crate) fn waits(request: &Request, reply: &Value, now_ms: i64, version: RedisVersion) -> bool {
    match replication_wait(request, now_ms, version) {
        Some(wait) => wait.needs_replicas() && !matches!(reply, Value::Error(_)),
        None => found_nothing(reply),
    }
}

/// `request` as it waits, if it is a WAIT or WAITAOF (checked by the table's name before
/// any argument is read).
pub(crate) fn replication_wait(
    request: &Request,
    now_ms: i64,
    version: RedisVersion,
) -> Option<replication::Wait> {
    let name = table::command(request.command).name;
    if !replication::is_wait(name) {
        return None;
    }
    let args: Vec<&[u8]> = request.args.iter().map(Vec::as_slice).collect();
    replication::waiting(name, &args, now_ms, version)
}

/// How long a blocked `request` waits, in milliseconds (0: for ever), and what it answers
/// when that time ends.
pub(crate) fn timeout(request: &Request, now_ms: i64, version: RedisVersion) -> (u64, Value) {
    if let Some(wait) = replication_wait(request, now_ms, version) {
        return (wait.timeout_ms, wait.reply);
    }
    // The first try checked the timeout; nothing else can make it invalid since.
    let timeout = timeout_arg(&request.args);
    let ms = lists::blocking_timeout(timeout, now_ms, version).unwrap_or(0);
    // What every blocking list command answers on timeout.
    (ms, Value::NilArray)
}

/// Where a blocking pop's timeout is: BLMPOP's and BZMPOP's first argument, the others'
/// last.
fn timeout_arg(args: &[Vec<u8>]) -> &[u8] {
    if args[0].eq_ignore_ascii_case(b"blmpop") || args[0].eq_ignore_ascii_case(b"bzmpop") {
        &args[1]
    } else {
        &args[args.len() - 1]
    }
}

/// Serves the waiters of database `db`, oldest first, while their lists have elements.
async fn serve_line(shared: &Shared, db: usize) {
    let mut line = shared.blocked.line().await;
    let mut index = 0;
    while let Some(waiter) = line.get(index) {
        // Only its timeout ends a WAIT's wait: no push brings it a replica.
        let name = table::command(waiter.request.command).name;
        if waiter.db != db || waiter.reply.is_closed() || replication::is_wait(name) {
            index += 1;
            continue;
        }
        let after = waiter.inbox.delivered();
        let tried = keyspace::retry_blocked(shared, db, &waiter.request, waiter.protocol).await;
        let reply = match tried {
            // The source has an element, but the destination of a BLMOVE is not a
            // list: the client gets WRONGTYPE and stops waiting; the element stays.
            Ok((reply @ Value::Error(_), true)) => reply,
            Ok((reply, _)) if !matches!(reply, Value::Error(_)) && !found_nothing(&reply) => reply,
            // Still empty, or no longer a list: keep waiting, as Redis does.
            _ => {
                index += 1;
                continue;
            }
        };
        let Some(waiter) = line.take(index) else {
            break;
        };
        // A BLMOVE or BRPOPLPUSH pushed what it popped: an older waiter skipped above may
        // be waiting on its destination, and is served in this same turn, as Redis serves
        // the keys that serving made ready.
        if moves(&waiter.request) {
            index = 0;
        }
        if let Err(served) = waiter.reply.send(Served { reply, after }) {
            // The client went away between the check and the send: put it back.
            unpop(shared, db, &waiter.request, &served.reply).await;
        }
    }
}

/// Whether a blocking command pushes what it pops (BLMOVE, BRPOPLPUSH).
fn moves(request: &Request) -> bool {
    matches!(
        table::command(request.command).name,
        "blmove" | "brpoplpush"
    )
}
