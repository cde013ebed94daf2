//! [`Versioned`]: optimistic concurrency (seed 002's "乐观锁"), the alternative to a lock
//! for read-mostly data. A value carries a version; a write names the version it was
//! computed from and is refused when another write came first.

use std::time::Duration;

use crate::lock::Budget;
use crate::outcome::lossy;
use crate::scripts::{COMPARE_AND_SET, split_versioned};
use crate::{AcquirePolicy, Clock, KvBackend, LockError, LockName, Value};

/// A value at `{name}:versioned`, stored as `<version>:<bytes>`, read with one `GET` and
/// written with one compare-and-set script ([`COMPARE_AND_SET`]). One key and one script
/// call per write: safe on a shared multiplexed connection (unlike `WATCH`) and on a
/// Redis Cluster (the key has the name's hash tag).
///
/// [`Versioned::update`] is the usual entry: read, compute, compare-and-set, and on a
/// conflict wait by the [`AcquirePolicy`]'s backoff and compute again.
#[derive(Clone, Debug)]
pub struct Versioned<B> {
    backend: B,
    key: Vec<u8>,
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

impl<B: KvBackend> Versioned<B> {
    /// The value named `name`, retried by the default [`AcquirePolicy`] (10 s of jittered
    /// backoff) on conflicts.
    pub fn new(backend: B, name: &LockName) -> Self {
        let clock = backend.clock();
        Self {
            backend,
            key: name.key("versioned"),
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
    pub async fn compare_and_set(
        &self,
        expected: i64,
        value: &[u8],
    ) -> Result<Option<i64>, LockError> {
        let expected = expected.to_string();
        let reply = self
            .backend
            .eval(
                &COMPARE_AND_SET,
                &[&self.key],
                &[expected.as_bytes(), value],
            )
            .await?;
        match reply {
            Value::Array(items) => match items.as_slice() {
                [Value::Int(1), Value::Int(version)] => Ok(Some(*version)),
                [Value::Int(0), Value::Int(_)] => Ok(None),
                _ => Err(unexpected(Value::Array(items))),
            },
            other => Err(unexpected(other)),
        }
    }

    /// Read, compute the new value from the old (`None` when absent), write if nobody
    /// wrote in between; on a conflict, wait by the policy's backoff and do it again.
    /// [`LockError::Conflicted`] once the policy allows no further attempt; a transient
    /// backend error is retried the same way.
    pub async fn update<F>(&self, mut compute: F) -> Result<Updated, LockError>
    where
        F: FnMut(Option<&[u8]>) -> Vec<u8>,
    {
        let mut budget = Budget::new(&self.policy, &self.clock);
        let mut conflicts = 0u32;
        loop {
            budget.count_attempt();
            let attempt = async {
                let snapshot = self.read().await?;
                let value = compute(snapshot.value.as_deref());
                let written = self.compare_and_set(snapshot.version, &value).await?;
                Ok::<_, LockError>(written.map(|version| (version, value)))
            };
            match attempt.await {
                Ok(Some((version, value))) => {
                    return Ok(Updated {
                        version,
                        value,
                        conflicts,
                    });
                }
                Ok(None) => conflicts = conflicts.saturating_add(1),
                Err(error) => budget.absorb(error)?,
            }
            if !self.policy.allows_another(budget.attempts, budget.waited()) {
                return Err(LockError::Conflicted {
                    key: lossy(&self.key),
                    conflicts,
                    waited: budget.waited(),
                });
            }
            let delay = self.policy.delay(budget.attempts, None, budget.waited());
            if delay == Duration::ZERO {
                tokio::task::yield_now().await;
            } else {
                self.clock.sleep(delay).await;
            }
        }
    }
}

fn unexpected(reply: Value) -> LockError {
    LockError::UnexpectedReply {
        script: COMPARE_AND_SET.name(),
        reply: format!("{reply:?}"),
    }
}
