//! [`Versioned`]: optimistic concurrency (seed 002's "乐观锁"), the alternative to a lock
//! for read-mostly data. A value carries a version; a write names the version it was
//! computed from and is refused when another write came first.

use std::time::Duration;

use crate::lock::Budget;
use crate::outcome::lossy;
use crate::scripts::{COMPARE_AND_SET, new_write_id, split_versioned};
use crate::{AcquirePolicy, Clock, Error, KvBackend, LockError, LockName, Value};

/// A value at `{name}:versioned`, stored as `<version>:<bytes>`, read with one `GET` and
/// written with one compare-and-set script ([`COMPARE_AND_SET`]). One script call per
/// write: safe on a shared multiplexed connection (unlike `WATCH`) and on a Redis Cluster
/// (both keys carry the name's hash tag).
///
/// [`Versioned::update`] is the usual entry: read, compute, compare-and-set, and on a
/// conflict wait by the [`AcquirePolicy`]'s backoff and compute again.
///
/// # Exactly once
///
/// Every write carries a random id, and the script keeps the ids of the last
/// [`WRITE_LOG_ENTRIES`](crate::scripts::WRITE_LOG_ENTRIES) writes at
/// `{name}:versioned:writes`. When a write's reply is lost (a dropped connection, a
/// timeout), [`Versioned::update`] sends the same write again: the log says whether it
/// already ran, so an update that returns `Ok` ran exactly once. When even the log can no
/// longer tell (more writes than it keeps came in between, or the policy gave up while
/// the outcome was unknown), the update returns [`LockError::OutcomeUnknown`]: the write
/// ran once or not at all, never twice.
#[derive(Clone, Debug)]
pub struct Versioned<B> {
    backend: B,
    key: Vec<u8>,
    log_key: Vec<u8>,
    policy: AcquirePolicy,
    clock: Clock,
}

/// What [`Versioned::read`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// 0 when the key is absent (or holds something that is not `<version>:<bytes>`).
    pub version: i64,
    /// The value, `None` when absent.
    pub value: Option<Vec<u8>>,
}

/// What [`Versioned::update`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Updated {
    /// The version written.
    pub version: i64,
    /// The value written.
    pub value: Vec<u8>,
    /// How many attempts found another write first and were computed again.
    pub conflicts: u32,
}

/// One compare-and-set, kept whole so that it can be sent again unchanged.
struct Write {
    expected: i64,
    value: Vec<u8>,
    id: String,
}

/// What one compare-and-set found.
enum Cas {
    /// Written now, or by an earlier send of the same write: the version it wrote.
    Written(i64),
    /// Another write came first. `settled`: the log proves this write never ran.
    Refused { settled: bool },
}

impl<B: KvBackend> Versioned<B> {
    /// The value named `name`, retried by the default [`AcquirePolicy`] (10 s of jittered
    /// backoff) on conflicts.
    pub fn new(backend: B, name: &LockName) -> Self {
        let clock = backend.clock();
        Self {
            backend,
            key: name.key("versioned"),
            log_key: name.key("versioned:writes"),
            policy: AcquirePolicy::default(),
            clock,
        }
    }

    /// Retries conflicts by `policy` (its backoff between attempts, its limit on them).
    pub fn with_policy(mut self, policy: AcquirePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The key the value lives at.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The key of the write log, which makes a write sent twice run once.
    pub fn log_key(&self) -> &[u8] {
        &self.log_key
    }

    /// The current version and value (one `GET`).
    pub async fn read(&self) -> Result<Snapshot, LockError> {
        let stored = self.backend.get(&self.key).await?;
        Ok(match stored.as_deref().and_then(split_versioned) {
            Some((version, value)) => Snapshot {
                version,
                value: Some(value.to_vec()),
            },
            None => Snapshot {
                version: 0,
                value: None,
            },
        })
    }

    /// Writes `value` if the version is still `expected`: the new version, or `None` when
    /// another write came first (nothing written).
    ///
    /// One attempt, not retried: after a transient error (a lost reply) the write ran or
    /// did not. [`Versioned::update`] settles that by sending the write again.
    pub async fn compare_and_set(
        &self,
        expected: i64,
        value: &[u8],
    ) -> Result<Option<i64>, LockError> {
        let write = Write {
            expected,
            value: value.to_vec(),
            id: new_write_id(),
        };
        Ok(match self.send(&write).await? {
            Cas::Written(version) => Some(version),
            Cas::Refused { .. } => None,
        })
    }

    async fn send(&self, write: &Write) -> Result<Cas, LockError> {
        let expected = write.expected.to_string();
        let reply = self
            .backend
            .eval(
                &COMPARE_AND_SET,
                &[&self.key, &self.log_key],
                &[expected.as_bytes(), &write.value, write.id.as_bytes()],
            )
            .await?;
        match reply {
            Value::Array(items) => match items.as_slice() {
                [Value::Int(1), Value::Int(version)] => Ok(Cas::Written(*version)),
                [Value::Int(0), Value::Int(_), Value::Int(settled)] => Ok(Cas::Refused {
                    settled: *settled == 1,
                }),
                _ => Err(unexpected(Value::Array(items))),
            },
            other => Err(unexpected(other)),
        }
    }

    /// Read, compute the new value from the old (`None` when absent), write if nobody
    /// wrote in between; on a conflict, wait by the policy's backoff and do it again.
    /// [`LockError::Conflicted`] once the policy allows no further attempt.
    ///
    /// A transient backend error is retried the same way. A write whose reply was lost
    /// is sent again unchanged (same value, same id) rather than computed again, so it
    /// runs at most once; `Ok` means it ran exactly once, and
    /// [`LockError::OutcomeUnknown`] says when that could not be settled.
    pub async fn update<F>(&self, mut compute: F) -> Result<Updated, LockError>
    where
        F: FnMut(Option<&[u8]>) -> Vec<u8>,
    {
        let mut budget = Budget::new(&self.policy, &self.clock);
        let mut conflicts = 0u32;
        // A write that was sent and whose reply never came, with the error that lost it.
        let mut unsettled: Option<(Write, Error)> = None;
        loop {
            budget.count_attempt();
            let (write, resent) = match unsettled.take() {
                Some((write, _)) => (write, true),
                None => match self.read().await {
                    Ok(snapshot) => {
                        let write = Write {
                            expected: snapshot.version,
                            value: compute(snapshot.value.as_deref()),
                            id: new_write_id(),
                        };
                        (write, false)
                    }
                    Err(error) => {
                        budget.absorb(error)?;
                        self.before_next(&budget, conflicts, None).await?;
                        continue;
                    }
                },
            };
            match self.send(&write).await {
                Ok(Cas::Written(version)) => {
                    return Ok(Updated {
                        version,
                        value: write.value,
                        conflicts,
                    });
                }
                Ok(Cas::Refused { settled }) if resent && !settled => {
                    return Err(self.outcome_unknown(
                        "more writes than the write log keeps came in before it was sent again",
                        None,
                    ));
                }
                Ok(Cas::Refused { .. }) => conflicts = conflicts.saturating_add(1),
                Err(LockError::Backend(error)) if error.is_transient() => {
                    if !self.policy.retries() {
                        let why = "the policy retries no errors";
                        return Err(self.outcome_unknown(why, Some(error)));
                    }
                    budget.note_transient(&error);
                    unsettled = Some((write, error));
                }
                Err(error) => return Err(error),
            }
            self.before_next(&budget, conflicts, unsettled.as_ref().map(|(_, e)| e))
                .await?;
        }
    }

    /// Waits by the policy's backoff before the next attempt, or ends the update when the
    /// policy allows none: [`LockError::OutcomeUnknown`] while a write is `unsettled`,
    /// else [`LockError::Conflicted`].
    async fn before_next(
        &self,
        budget: &Budget<'_>,
        conflicts: u32,
        unsettled: Option<&Error>,
    ) -> Result<(), LockError> {
        if !self.policy.allows_another(budget.attempts, budget.waited()) {
            return Err(match unsettled {
                Some(error) => self.outcome_unknown(
                    "the policy gave up before the write could be sent again",
                    Some(error.clone()),
                ),
                None => LockError::Conflicted {
                    key: lossy(&self.key),
                    conflicts,
                    waited: budget.waited(),
                },
            });
        }
        let delay = self.policy.delay(budget.attempts, None, budget.waited());
        if delay == Duration::ZERO {
            tokio::task::yield_now().await;
        } else {
            self.clock.sleep(delay).await;
        }
        Ok(())
    }

    fn outcome_unknown(&self, why: &'static str, last_error: Option<Error>) -> LockError {
        LockError::OutcomeUnknown {
            key: lossy(&self.key),
            why,
            last_error,
        }
    }
}

fn unexpected(reply: Value) -> LockError {
    LockError::UnexpectedReply {
        script: COMPARE_AND_SET.name(),
        reply: format!("{reply:?}"),
    }
}
