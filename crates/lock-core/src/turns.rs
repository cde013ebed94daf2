//! Turns in process: the tasks that share one lock object (its clones, or an `Arc`) line
//! up for it here, first come first served, so only one of them at a time talks to the
//! backend. They never race each other for the lock, and the next one starts the moment
//! the previous hold ends, without polling. A hold past its validity holds nobody up: the
//! tasks behind it then compete through the backend, as they would without turns.
//!
//! A turn may come with a *baton* (`T`): a hold the previous task passed to this one
//! through the backend (the fair lock's pass), so the next task holds the lock the moment
//! its turn comes, without asking the backend again.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use crate::lock::Budget;
use crate::{AcquirePolicy, Clock, LockError};

/// One lock object's line, shared by its clones.
pub(crate) struct Turns<T = ()> {
    shared: Arc<Shared<T>>,
}

struct Shared<T> {
    queue: Mutex<Queue<T>>,
    /// Until when the turn's holder holds the lock, in ms on the lock's clock; `i64::MAX`
    /// while it is still acquiring.
    held_until_ms: AtomicI64,
}

struct Queue<T> {
    /// Whether a task has the turn.
    taken: bool,
    /// The tasks in line, first first; a cancelled one's sender is closed.
    waiting: VecDeque<oneshot::Sender<Grant<T>>>,
}

/// What a task in line receives when its turn comes.
pub(crate) struct Grant<T> {
    /// The turn itself.
    pub(crate) turn: Turn<T>,
    /// A hold passed on by the previous task, if it passed one.
    pub(crate) baton: Option<T>,
}

/// This process's turn at a lock; the next task in line gets it when this is dropped.
pub(crate) struct Turn<T = ()> {
    shared: Arc<Shared<T>>,
    /// Cleared for a turn that never reached its task: dropping it then passes nothing on.
    armed: bool,
}

/// The next task in line, set aside by [`Turn::successor`] while the turn's holder passes
/// it a hold. Dropped without [`Successor::grant`], it goes back to the head of the line.
pub(crate) struct Successor<T> {
    sender: Option<oneshot::Sender<Grant<T>>>,
    shared: Arc<Shared<T>>,
}

impl<T> Shared<T> {
    fn queue(&self) -> MutexGuard<'_, Queue<T>> {
        // A panic while the lock was held leaves a consistent queue (every update is a
        // single push, pop or flag), so a poisoned mutex is still usable.
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Gives the turn, which the caller holds, to the first task still waiting, or frees
    /// it if nobody waits.
    fn hand_on(self: &Arc<Self>) {
        loop {
            let sender = {
                let mut queue = self.queue();
                let sender = queue.waiting.pop_front();
                queue.taken = sender.is_some();
                sender
            };
            let Some(sender) = sender else { return };
            let grant = Grant {
                turn: Turn::new(self.clone()),
                baton: None,
            };
            // Refused by a task that gave up waiting: try the one behind it. (Disarmed
            // first, so that dropping the refused turn does not recurse.)
            let Err(mut refused) = sender.send(grant) else {
                return;
            };
            refused.turn.armed = false;
        }
    }
}

impl<T> Turn<T> {
    fn new(shared: Arc<Shared<T>>) -> Self {
        Self {
            shared,
            armed: true,
        }
    }

    /// Records until when the hold taken in this turn is valid (after an acquire or an
    /// extend).
    pub(crate) fn holds_until(&self, valid_until_ms: i64) {
        self.shared
            .held_until_ms
            .store(valid_until_ms, Ordering::Release);
    }

    /// The first task still waiting for the turn, if any, set aside so that this turn's
    /// holder can pass it a hold.
    pub(crate) fn successor(&self) -> Option<Successor<T>> {
        let mut queue = self.shared.queue();
        while let Some(sender) = queue.waiting.pop_front() {
            if !sender.is_closed() {
                return Some(Successor {
                    sender: Some(sender),
                    shared: self.shared.clone(),
                });
            }
        }
        None
    }
}

impl<T> Drop for Turn<T> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.shared.held_until_ms.store(i64::MAX, Ordering::Release);
        self.shared.hand_on();
    }
}

impl<T> Successor<T> {
    /// Gives `turn` to this task, with the hold passed to it if any. A task that gave up
    /// meanwhile drops them: the turn then goes to the next in line, and the hold is
    /// released as a dropped hold is.
    pub(crate) fn grant(mut self, turn: Turn<T>, baton: Option<T>) {
        if let Some(sender) = self.sender.take() {
            // Dropped here, outside the queue's lock, if refused.
            let _ = sender.send(Grant { turn, baton });
        }
    }
}

impl<T> Drop for Successor<T> {
    fn drop(&mut self) {
        let Some(sender) = self.sender.take() else {
            return;
        };
        let mut queue = self.shared.queue();
        queue.waiting.push_front(sender);
        if queue.taken {
            return;
        }
        // The turn it was set aside from ended first (a release future dropped mid-pass
        // drops its locals in either order): nobody would hand it on, so take the free
        // turn and hand it on here.
        queue.taken = true;
        drop(queue);
        self.shared.hand_on();
    }
}

impl<T> Default for Turns<T> {
    fn default() -> Self {
        Self {
            shared: Arc::new(Shared {
                queue: Mutex::new(Queue {
                    taken: false,
                    waiting: VecDeque::new(),
                }),
                held_until_ms: AtomicI64::new(i64::MAX),
            }),
        }
    }
}

impl<T> Clone for Turns<T> {
    /// The same line: clones of a lock take turns with each other.
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl<T> fmt::Debug for Turns<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let queue = self.shared.queue();
        f.debug_struct("Turns")
            .field("taken", &queue.taken)
            .field("waiting", &queue.waiting.len())
            .finish()
    }
}

impl<T> fmt::Debug for Turn<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Turn").finish_non_exhaustive()
    }
}

impl<T> Turns<T> {
    /// The turn, if nobody in this process holds it or waits for it.
    pub(crate) fn try_take(&self) -> Option<Turn<T>> {
        let mut queue = self.shared.queue();
        if queue.taken {
            return None;
        }
        queue.taken = true;
        Some(Turn::new(self.shared.clone()))
    }

    /// Whether the turn's holder holds a lock whose validity has passed on `clock`.
    pub(crate) fn holder_lapsed(&self, clock: &Clock) -> bool {
        clock.now_ms() > self.shared.held_until_ms.load(Ordering::Acquire)
    }

    /// The turn: at once if free; otherwise in line, counting each of `policy`'s backoff
    /// delays spent there as a refused attempt of `budget`, until the turn comes
    /// (`Some`), the holder's hold lapses (`None`: go to the backend without a turn), or
    /// the policy gives up ([`LockError::Timeout`] for `key`).
    pub(crate) async fn take(
        &self,
        budget: &mut Budget<'_>,
        policy: &AcquirePolicy,
        clock: &Clock,
        key: &[u8],
    ) -> Result<Option<Grant<T>>, LockError> {
        let mut granted = {
            let mut queue = self.shared.queue();
            if !queue.taken {
                queue.taken = true;
                let turn = Turn::new(self.shared.clone());
                return Ok(Some(Grant { turn, baton: None }));
            }
            // Our place in line is kept across the delays below. Leaving it (by returning
            // or by being cancelled) closes the channel; a grant sent just before is
            // dropped with the receiver, which passes the turn on.
            let (sender, receiver) = oneshot::channel();
            queue.waiting.push_back(sender);
            receiver
        };
        loop {
            if self.holder_lapsed(clock) {
                return Ok(None);
            }
            budget.count_attempt();
            budget.allow_another(key)?;
            let delay = policy.delay(budget.attempts, None, budget.waited());
            tokio::select! {
                biased;
                grant = &mut granted => {
                    // Senders are only dropped after sending, so this is never an error;
                    // answered as one rather than unwrapped all the same.
                    return grant
                        .map(Some)
                        .map_err(|_| LockError::InvalidConfig("the turns closed".into()));
                }
                () = clock.sleep(delay) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::Retry;

    /// A task waiting for `turns`; resolves to whether it got the turn.
    fn wait_for_turn(turns: &Turns) -> tokio::task::JoinHandle<bool> {
        let turns = turns.clone();
        tokio::spawn(async move {
            let (policy, clock) = (AcquirePolicy::retry(Retry::Forever), Clock::tokio());
            let mut budget = Budget::new(&policy, &clock);
            let granted = turns.take(&mut budget, &policy, &clock, b"k").await;
            matches!(granted, Ok(Some(_)))
        })
    }

    async fn joined(task: tokio::task::JoinHandle<bool>) -> bool {
        tokio::time::timeout(Duration::from_secs(60), task)
            .await
            .is_ok_and(|got| got.unwrap())
    }

    #[tokio::test(start_paused = true)]
    async fn a_successor_set_aside_gets_the_turn_whichever_is_dropped_first() {
        for successor_first in [true, false] {
            let turns = Turns::default();
            let turn = turns.try_take().unwrap();
            let waiter = wait_for_turn(&turns);
            tokio::task::yield_now().await;
            let successor = turn.successor().expect("the waiter is in line");
            if successor_first {
                drop(successor);
                drop(turn);
            } else {
                drop(turn);
                drop(successor);
            }
            assert!(
                joined(waiter).await,
                "stranded (successor dropped first: {successor_first})"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_turn_skips_tasks_that_gave_up_waiting() {
        let turns = Turns::default();
        let turn = turns.try_take().unwrap();
        let gave_up = wait_for_turn(&turns);
        let patient = wait_for_turn(&turns);
        tokio::task::yield_now().await;
        gave_up.abort();
        tokio::task::yield_now().await;
        drop(turn);
        assert!(joined(patient).await);
        assert!(turns.try_take().is_some(), "the turn was not free again");
    }
}
