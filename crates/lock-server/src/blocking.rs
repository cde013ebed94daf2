//! Clients blocked in BLPOP, BRPOP, BLMOVE, BRPOPLPUSH or BLMPOP, served in the order
//! they blocked (as Redis does) whenever a command may have pushed to their database.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use lock_core::Value;
use tokio::sync::{Mutex, oneshot};

use crate::commands::{keyspace, lists};
use crate::reply::Protocol;
use crate::shared::Shared;

/// Hands elements pushed to database `db` to the clients blocked on them, if any wait.
pub(crate) async fn serve(shared: &Shared, db: usize) {
    if shared.blocked.any() {
        shared.blocked.serve(shared, db).await;
    }
}

/// Undoes what the blocking `command` did for a client that has gone before its reply
/// (`popped`) could be written.
pub(crate) async fn unpop(shared: &Shared, db: usize, command: &[Vec<u8>], popped: &Value) {
    if let Some(undo) = lists::undo(command, popped) {
        // A fault injected here would lose the element, as a crash of Redis would.
        let _ = keyspace::unserved(shared, db, &undo, Protocol::Resp2).await;
    }
}

/// Whether a blocking command's reply means it found nothing (and so waits).
pub(crate) fn found_nothing(reply: &Value) -> bool {
    matches!(reply, Value::Nil | Value::NilArray)
}

/// The waiting clients of every database.
#[derive(Debug, Default)]
pub(crate) struct Blocked {
    /// An async mutex: serving runs store commands (which await) while holding it, so a
    /// waiter is either still queued or already has its element, never in between.
    waiters: Mutex<VecDeque<Waiter>>,
    count: AtomicUsize,
    next_id: AtomicU64,
}

#[derive(Debug)]
struct Waiter {
    id: u64,
    db: usize,
    /// The blocking command itself: run as a keyspace command, it pops without waiting.
    command: Vec<Vec<u8>>,
    protocol: Protocol,
    reply: oneshot::Sender<Value>,
}

/// A client's place in the queue.
#[derive(Debug)]
pub(crate) struct Ticket {
    id: u64,
    /// Where its reply arrives.
    pub(crate) reply: oneshot::Receiver<Value>,
}

impl Blocked {
    /// Whether any client is waiting (so a push needs to look).
    pub(crate) fn any(&self) -> bool {
        self.len() > 0
    }

    /// How many clients are waiting (INFO's `blocked_clients`).
    pub(crate) fn len(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Queues a client whose `command` found nothing.
    pub(crate) async fn enqueue(
        &self,
        db: usize,
        command: Vec<Vec<u8>>,
        protocol: Protocol,
    ) -> Ticket {
        let (sender, reply) = oneshot::channel();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.waiters.lock().await.push_back(Waiter {
            id,
            db,
            command,
            protocol,
            reply: sender,
        });
        self.count.fetch_add(1, Ordering::AcqRel);
        Ticket { id, reply }
    }

    /// Takes the client out of the queue: true if it was still waiting, false if it was
    /// served (its reply is then in its ticket).
    pub(crate) async fn leave(&self, ticket: &Ticket) -> bool {
        let mut waiters = self.waiters.lock().await;
        let Some(index) = waiters.iter().position(|w| w.id == ticket.id) else {
            return false;
        };
        waiters.remove(index);
        self.count.fetch_sub(1, Ordering::AcqRel);
        true
    }

    /// Serves the waiters of database `db`, oldest first, while their lists have elements.
    pub(crate) async fn serve(&self, shared: &Shared, db: usize) {
        let mut waiters = self.waiters.lock().await;
        let mut index = 0;
        while index < waiters.len() {
            let waiter = &waiters[index];
            if waiter.db != db || waiter.reply.is_closed() {
                index += 1;
                continue;
            }
            let tried = keyspace::retry_blocked(shared, db, &waiter.command, waiter.protocol).await;
            let reply = match tried {
                // The source has an element, but the destination of a BLMOVE is not a
                // list: the client gets WRONGTYPE and stops waiting; the element stays.
                Ok((reply @ Value::Error(_), true)) => reply,
                Ok((reply, _)) if !matches!(reply, Value::Error(_)) && !found_nothing(&reply) => {
                    reply
                }
                // Still empty, or no longer a list: keep waiting, as Redis does.
                _ => {
                    index += 1;
                    continue;
                }
            };
            let Some(waiter) = waiters.remove(index) else {
                break;
            };
            self.count.fetch_sub(1, Ordering::AcqRel);
            // A BLMOVE or BRPOPLPUSH pushed what it popped: an older waiter skipped
            // above may be waiting on its destination, and is served in this same turn,
            // as Redis serves the keys that serving made ready.
            if moves(&waiter.command) {
                index = 0;
            }
            if let Err(reply) = waiter.reply.send(reply) {
                // The client went away between the check and the send: put it back.
                unpop(shared, db, &waiter.command, &reply).await;
            }
        }
    }
}

/// Whether a blocking command pushes what it pops (BLMOVE, BRPOPLPUSH).
fn moves(command: &[Vec<u8>]) -> bool {
    command.first().is_some_and(|name| {
        name.eq_ignore_ascii_case(b"blmove") || name.eq_ignore_ascii_case(b"brpoplpush")
    })
}
