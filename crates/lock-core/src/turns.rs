//! Turns in process: the tasks that share one lock object (its clones, or an `Arc`) line
//! up for it here, first come first served, so only one of them at a time talks to the
//! backend. They never race each other for the lock, and the next one starts the moment
//! the previous hold ends, without polling.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::lock::Budget;
use crate::{AcquirePolicy, Clock, LockError};

/// This process's turn at a lock; the next task in line gets it when this is dropped.
pub(crate) type Turn = OwnedSemaphorePermit;

/// One lock object's line, shared by its clones.
#[derive(Debug)]
pub(crate) struct Turns(Arc<Semaphore>);

impl Default for Turns {
    fn default() -> Self {
        Self(Arc::new(Semaphore::new(1)))
    }
}

impl Clone for Turns {
    /// The same line: clones of a lock take turns with each other.
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl Turns {
    /// The turn, if nobody in this process holds it or waits for it.
    pub(crate) fn try_take(&self) -> Option<Turn> {
        self.0.clone().try_acquire_owned().ok()
    }

    /// The turn: at once if free; otherwise in line, counting each of `policy`'s backoff
    /// delays spent there as a refused attempt of `budget`, until the turn comes or the
    /// policy gives up ([`LockError::Timeout`] for `key`).
    pub(crate) async fn take(
        &self,
        budget: &mut Budget<'_>,
        policy: &AcquirePolicy,
        clock: &Clock,
        key: &[u8],
    ) -> Result<Turn, LockError> {
        if let Some(turn) = self.try_take() {
            return Ok(turn);
        }
        // Our place in line is kept across the delays below.
        let turn = self.0.clone().acquire_owned();
        tokio::pin!(turn);
        loop {
            budget.count_attempt();
            budget.allow_another(key)?;
            let delay = policy.delay(budget.attempts, None, budget.waited());
            tokio::select! {
                biased;
                turn = &mut turn => {
                    // Never closed, so never an error; answered as one rather than
                    // unwrapped all the same.
                    return turn.map_err(|_| LockError::InvalidConfig("the turns closed".into()));
                }
                () = clock.sleep(delay) => {}
            }
        }
    }
}
