//! Waiting for replicas: what a lock asks of them ([`Replication`]) and what a backend
//! reports ([`Replicated`]).
//!
//! A Redis primary acknowledges a write before any replica has it; if the primary then
//! fails, the replica that takes over does not have it (seed 000's warning: the lock is
//! lost in a failover and a second client takes it). `WAIT numreplicas timeout` narrows
//! that window: it answers once `numreplicas` replicas have acknowledged the writes made
//! on the same connection, or when the timeout runs out, with how many did.

use std::time::Duration;

use crate::LockError;

/// How many replicas must acknowledge a lock's write, and for how long to wait for them.
///
/// With [`LockOptions::replication`](crate::LockOptions::replication), an acquire whose
/// write fewer replicas acknowledged in time is undone and reported as
/// [`LockError::NotReplicated`]; so is an extend (the hold then stands on the primary
/// alone, and the caller decides).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replication {
    /// Replicas that must acknowledge (`WAIT`'s `numreplicas`); at least 1.
    pub replicas: u32,
    /// How long to wait for them (`WAIT`'s timeout); more than zero, since Redis reads a
    /// timeout of 0 as "forever".
    pub timeout: Duration,
    /// Wait for the replicas to write the lock to their append-only files, with Redis
    /// 7.2's `WAITAOF 0 replicas timeout`, instead of only receiving it (`WAIT`). Needs
    /// `appendonly yes` on the replicas (otherwise none ever acknowledges); a server
    /// without WAITAOF answers [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported).
    pub fsync: bool,
}

impl Replication {
    /// `replicas` must acknowledge within `timeout`, by `WAIT`.
    pub fn new(replicas: u32, timeout: Duration) -> Self {
        Self {
            replicas,
            timeout,
            fsync: false,
        }
    }

    /// By `WAITAOF` instead: the replicas have the lock in their append-only files.
    pub fn fsync(mut self) -> Self {
        self.fsync = true;
        self
    }

    /// The timeout in whole milliseconds, as WAIT takes it.
    pub fn timeout_ms(&self) -> i64 {
        i64::try_from(self.timeout.as_millis()).unwrap_or(i64::MAX)
    }

    pub(crate) fn validate(&self) -> Result<(), LockError> {
        if self.replicas == 0 {
            return Err(LockError::InvalidConfig(
                "replication needs at least one replica to acknowledge".into(),
            ));
        }
        if self.timeout_ms() < 1 {
            return Err(LockError::InvalidConfig(
                "the replication timeout must be at least 1 ms (WAIT reads 0 as forever)".into(),
            ));
        }
        Ok(())
    }
}

/// A write's reply, and how many replicas acknowledged it
/// ([`KvBackend::eval_replicated`](crate::KvBackend::eval_replicated)).
#[derive(Clone, Debug, PartialEq)]
pub struct Replicated<T> {
    /// The write's own reply.
    pub reply: T,
    /// `WAIT`'s (or `WAITAOF`'s) answer: how many replicas acknowledged it in time.
    pub acknowledged: i64,
}
