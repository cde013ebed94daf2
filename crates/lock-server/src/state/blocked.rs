//! The queue of clients blocked in BLPOP, BRPOP, BLMOVE, BRPOPLPUSH or BLMPOP, in the
//! order they blocked (Redis serves them in that order). Serving them runs commands,
//! which is the runners' work ([`crate::run::blocked`]); this is only the line.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use lock_core::Value;
use lock_memory::InboxAddress;
use tokio::sync::{Mutex, MutexGuard, oneshot};

use crate::protocol::reply::Protocol;
use crate::protocol::request::Request;

/// The waiting clients of every database.
#[derive(Debug, Default)]
pub(crate) struct Blocked {
    /// An async mutex: serving runs store commands (which await) while holding it, so a
    /// waiter is either still queued or already has its element, never in between.
    waiters: Mutex<VecDeque<Waiter>>,
    count: AtomicUsize,
    next_id: AtomicU64,
}

/// One blocked client.
#[derive(Debug)]
pub(crate) struct Waiter {
    id: u64,
    /// The database it waits in.
    pub(crate) db: usize,
    /// The blocking command itself: run as a keyspace command, it pops without waiting.
    pub(crate) request: Request,
    pub(crate) protocol: Protocol,
    /// Its pub/sub inbox: what was delivered there before it was served is written
    /// before its reply.
    pub(crate) inbox: InboxAddress,
    /// Where its reply goes.
    pub(crate) reply: oneshot::Sender<Served>,
}

/// A blocked client's reply, handed over by the command that served it.
#[derive(Debug)]
pub(crate) struct Served {
    pub(crate) reply: Value,
    /// How many deliveries its inbox had taken when serving began
    /// ([`InboxAddress::delivered`]): those come before the reply, as Redis wrote them
    /// to the client before; what the serving itself caused (invalidations, events)
    /// comes after it.
    pub(crate) after: u64,
}

/// A client's place in the queue.
#[derive(Debug)]
pub(crate) struct Ticket {
    id: u64,
    /// Where its reply arrives.
    pub(crate) reply: oneshot::Receiver<Served>,
}

/// The queue, locked: for serving.
pub(crate) struct Line<'a> {
    waiters: MutexGuard<'a, VecDeque<Waiter>>,
    count: &'a AtomicUsize,
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

    /// Queues a client whose `request` found nothing.
    pub(crate) async fn enqueue(
        &self,
        db: usize,
        request: Request,
        protocol: Protocol,
        inbox: InboxAddress,
    ) -> Ticket {
        let (sender, reply) = oneshot::channel();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.waiters.lock().await.push_back(Waiter {
            id,
            db,
            request,
            protocol,
            inbox,
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

    /// Locks the queue, for serving it.
    pub(crate) async fn line(&self) -> Line<'_> {
        Line {
            waiters: self.waiters.lock().await,
            count: &self.count,
        }
    }
}

impl Line<'_> {
    /// The waiter at `index`, oldest first.
    pub(crate) fn get(&self, index: usize) -> Option<&Waiter> {
        self.waiters.get(index)
    }

    /// Takes the waiter at `index` out of the line, to hand it its reply.
    pub(crate) fn take(&mut self, index: usize) -> Option<Waiter> {
        let waiter = self.waiters.remove(index)?;
        self.count.fetch_sub(1, Ordering::AcqRel);
        Some(waiter)
    }
}
