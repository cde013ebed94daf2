//! Turns in process: the tasks that share one lock object (its clones, or an `Arc`) line
//! up for it here, first come first served, so only one of them at a time talks to the
//! backend. They never race each other for the lock, and the next one starts the moment
//! the previous hold ends, without polling. A hold past its validity holds nobody up: the
//! tasks behind it then compete through the backend, as they would without turns.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::lock::Budget;
use crate::{AcquirePolicy, Clock, LockError};

/// One lock object's line, shared by its clones.
#[derive(Debug)]
pub(crate) struct Turns {
    semaphore: Arc<Semaphore>,
    /// Until when the turn's holder holds the lock, in ms on the lock's clock; `i64::MAX`
    /// while it is still acquiring.
    held_until_ms: Arc<AtomicI64>,
}

/// This process's turn at a lock; the next task in line gets it when this is dropped.
#[derive(Debug)]
pub(crate) struct Turn {
    held_until_ms: Arc<AtomicI64>,
    /// Dropped after `Drop::drop` has reset `held_until_ms` for the next holder.
    _permit: OwnedSemaphorePermit,
}

impl Turn {
    /// Records until when the hold taken in this turn is valid (after an acquire or an
    /// extend).
    pub(crate) fn holds_until(&self, valid_until_ms: i64) {
        self.held_until_ms.store(valid_until_ms, Ordering::Release);
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.held_until_ms.store(i64::MAX, Ordering::Release);
    }
}

impl Default for Turns {
    fn default() -> Self {
        Self {
            semaphore: Arc::new(Semaphore::new(1)),
            held_until_ms: Arc::new(AtomicI64::new(i64::MAX)),
        }
    }
}

impl Clone for Turns {
    /// The same line: clones of a lock take turns with each other.
    fn clone(&self) -> Self {
        Self {
            semaphore: self.semaphore.clone(),
            held_until_ms: self.held_until_ms.clone(),
        }
    }
}

impl Turns {
    fn turn(&self, permit: OwnedSemaphorePermit) -> Turn {
        Turn {
            held_until_ms: self.held_until_ms.clone(),
            _permit: permit,
        }
    }

    /// The turn, if nobody in this process holds it or waits for it.
    pub(crate) fn try_take(&self) -> Option<Turn> {
        let permit = self.semaphore.clone().try_acquire_owned().ok()?;
        Some(self.turn(permit))
    }

    /// Whether the turn's holder holds a lock whose validity has passed on `clock`.
    pub(crate) fn holder_lapsed(&self, clock: &Clock) -> bool {
        clock.now_ms() > self.held_until_ms.load(Ordering::Acquire)
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
    ) -> Result<Option<Turn>, LockError> {
        if let Some(turn) = self.try_take() {
            return Ok(Some(turn));
        }
        // Our place in line is kept across the delays below.
        let permit = self.semaphore.clone().acquire_owned();
        tokio::pin!(permit);
        loop {
            if self.holder_lapsed(clock) {
                return Ok(None);
            }
            budget.count_attempt();
            budget.allow_another(key)?;
            let delay = policy.delay(budget.attempts, None, budget.waited());
            tokio::select! {
                biased;
                permit = &mut permit => {
                    // Never closed, so never an error; answered as one rather than
                    // unwrapped all the same.
                    let permit = permit
                        .map_err(|_| LockError::InvalidConfig("the turns closed".into()))?;
                    return Ok(Some(self.turn(permit)));
                }
                () = clock.sleep(delay) => {}
            }
        }
    }
}
