//! WAIT and WAITAOF on a server whose database 0 is a replica set's node
//! ([`ServerOptions::replication`](crate::ServerOptions::replication)): as on a Redis
//! primary, they count the replicas that have applied the connection's last write (its
//! `woff`), and block until enough have or the timeout ends.
//!
//! Redis sets a client's `woff` after each of its commands that moved the replication
//! offset; here the set's position is taken before and after each of the connection's
//! commands (and pipeline steps), which is the same as long as no other connection
//! writes in between, and otherwise names a later write, which WAIT then also waits for.

use lock_core::Value;
use lock_memory::{MemoryReplicaSet, WriteOffset};

use super::blocked;
use crate::commands::replication::Wait;
use crate::protocol::reply::Reply;
use crate::protocol::request::Request;
use crate::state::client::Client;
use crate::state::shared::Shared;

/// The replica set's position now, before one of the connection's commands runs;
/// `None` on a server that is not a set's node.
pub(crate) fn before_command(shared: &Shared) -> Option<WriteOffset> {
    shared
        .options
        .replication
        .as_ref()
        .map(MemoryReplicaSet::write_offset)
}

/// The command that began at `before` has run: if the set's position moved, it wrote,
/// and the connection's `WAIT` now waits for that write.
pub(crate) fn after_command(shared: &Shared, client: &mut Client, before: Option<WriteOffset>) {
    let (Some(set), Some(before)) = (&shared.options.replication, before) else {
        return;
    };
    let now = set.write_offset();
    if now != before {
        client.write_offset = Some(now);
    }
}

/// The write a connection's WAIT waits for: its last, or none yet (which every
/// connected replica has).
pub(crate) fn last_write(set: &MemoryReplicaSet, client: &Client) -> WriteOffset {
    client
        .write_offset
        .clone()
        .unwrap_or_else(|| set.start_offset())
}

/// WAIT or WAITAOF on a set's node, if `request` is one with valid arguments (the others
/// go the lone server's way, which refuses them with Redis's texts): the count at once
/// when enough replicas have the connection's writes or it may not block (in MULTI or a
/// script, as Redis's `CLIENT_DENY_BLOCKING`), else [`Reply::Block`].
pub(crate) fn answer(
    shared: &Shared,
    client: &Client,
    request: &Request,
    may_block: bool,
) -> Option<Reply> {
    let set = shared.options.replication.as_ref()?;
    let wait = waiting(shared, request)?;
    let acknowledged = set.acknowledged_at(&last_write(set, client));
    if acknowledged >= wait.replicas || !may_block {
        return Some(wait.reply_with(acknowledged).into());
    }
    Some(Reply::Block(request.clone()))
}

/// `request` as a WAIT or WAITAOF on a set's node waits.
pub(crate) fn waiting(shared: &Shared, request: &Request) -> Option<Wait> {
    shared.options.replication.as_ref()?;
    blocked::replication_wait(request, shared.clock.now_ms(), shared.options.redis_version)
}

/// What a blocked WAIT answers when it ends early (`CLIENT UNBLOCK … TIMEOUT`): the
/// replicas that have the connection's writes by then.
pub(crate) fn count_now(set: &MemoryReplicaSet, client_write: &WriteOffset, wait: &Wait) -> Value {
    wait.reply_with(set.acknowledged_at(client_write))
}
