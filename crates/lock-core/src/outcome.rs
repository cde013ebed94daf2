//! What lock operations report: attempts, and the errors of the lock layer.

use std::time::Duration;

use crate::Error;

/// The result of one acquisition attempt.
///
/// New outcomes may be added; match with a wildcard arm.
#[non_exhaustive]
#[derive(Debug)]
pub enum Attempt<G> {
    /// We hold the lock.
    Acquired(G),
    /// Someone else holds it. `holder_ttl` is how long their hold has left, when the
    /// backend reported it (seed 000: a failed SET NX is followed by the holder's PTTL).
    Held {
        /// Time left on the current holder's lock, if known.
        holder_ttl: Option<Duration>,
    },
    /// The attempt raced with another client (seed 001's codes 1 and 3): retry at once.
    Contended,
    /// A [`Redlock`](crate::Redlock) quorum granted the lock, but the attempt took so long
    /// that no validity was left (`elapsed` plus the drift allowance reached the TTL);
    /// every node's hold was undone. Nobody else need hold it: retry, or use a TTL that
    /// outlasts the nodes' latency.
    ValidityLost {
        /// How long the attempt took.
        elapsed: Duration,
    },
}

impl<G> Attempt<G> {
    /// The guard, if the attempt acquired the lock.
    pub fn acquired(self) -> Option<G> {
        match self {
            Attempt::Acquired(guard) => Some(guard),
            _ => None,
        }
    }
}

/// Errors of the lock layer. Each outcome a caller may want to handle is its own variant.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The acquire policy gave up before the lock became free. The caller does not hold
    /// the lock, and (for [`FairLock`](crate::FairLock)) is no longer in its line.
    #[error(
        "timed out waiting for lock {key:?} after {attempts} attempts over {waited:?}{}",
        failed_attempts(*.errors, .last_error.as_ref())
    )]
    Timeout {
        /// The lock key, lossily decoded for display.
        key: String,
        /// How many attempts were made, failed ones included.
        attempts: u32,
        /// How long the policy waited (on the lock's clock).
        waited: Duration,
        /// How many attempts failed with a transient backend error and were retried.
        errors: u32,
        /// The last of those errors.
        last_error: Option<Error>,
    },
    /// The backend failed; the inner error has its kind and exact text.
    #[error("backend error: {0}")]
    Backend(#[from] Error),
    /// A script replied in a shape its caller does not expect.
    #[error("script {script} replied unexpectedly: {reply}")]
    UnexpectedReply {
        /// The script's name.
        script: &'static str,
        /// The reply, debug-formatted.
        reply: String,
    },
    /// The algorithm cannot do this operation.
    #[error("{algorithm} locks do not support {operation}")]
    Unsupported {
        /// The algorithm's name.
        algorithm: &'static str,
        /// The operation asked for.
        operation: &'static str,
    },
    /// The lock was written, but fewer replicas acknowledged it than
    /// [`LockOptions::replication`](crate::LockOptions::replication) asks: a failover could
    /// lose it. An acquire has been undone (the caller does not hold the lock); an extend
    /// stands on the primary alone.
    #[error("lock {key:?} reached {acknowledged} of the {required} replicas it needs")]
    NotReplicated {
        /// The lock key, lossily decoded for display.
        key: String,
        /// How many replicas acknowledged in time.
        acknowledged: i64,
        /// How many the options ask for.
        required: u32,
    },
    /// Failures and timeouts of [`Redlock`](crate::Redlock) nodes left too few answers to
    /// reach (or rule out) a quorum. An acquire has been undone on every node; a retrying
    /// acquire retries it like a transient backend error.
    #[error(
        "lock {key:?}: {granted} of {nodes} nodes agreed, {required} needed; the last failure: {last_error}"
    )]
    NoQuorum {
        /// The lock key, lossily decoded for display.
        key: String,
        /// How many nodes did what was asked.
        granted: usize,
        /// The quorum: N/2 + 1 of the configured N.
        required: usize,
        /// The configured N.
        nodes: usize,
        /// The last node failure (a backend error, or a node timeout).
        last_error: Error,
    },
    /// A lock name or option that cannot work (an empty name, a TTL of zero, …).
    #[error("invalid lock configuration: {0}")]
    InvalidConfig(String),
    /// A [`Versioned`](crate::Versioned) update found another write first on every
    /// attempt its policy allowed; nothing was written.
    #[error("{key:?}: {conflicts} conflicting writes over {waited:?}, nothing written")]
    Conflicted {
        /// The value's key, lossily decoded for display.
        key: String,
        /// How many attempts found another write first.
        conflicts: u32,
        /// How long the policy waited (on the backend's clock).
        waited: Duration,
    },
    /// A [`Versioned`](crate::Versioned) write was sent, its reply never came, and
    /// whether it ran could not be settled: it ran once or not at all, never twice.
    #[error(
        "{key:?}: a write's outcome is unknown (it ran once or not at all): {why}{}",
        last_error.as_ref().map(|e| format!("; the reply was lost to: {e}")).unwrap_or_default()
    )]
    OutcomeUnknown {
        /// The value's key, lossily decoded for display.
        key: String,
        /// Why it could not be settled.
        why: &'static str,
        /// The error that lost the reply, when one did.
        last_error: Option<Error>,
    },
}

impl LockError {
    /// The backend error inside, if this is one.
    pub fn backend(&self) -> Option<&Error> {
        match self {
            LockError::Backend(e) => Some(e),
            _ => None,
        }
    }
}

fn failed_attempts(errors: u32, last: Option<&Error>) -> String {
    match last {
        Some(last) => format!(" ({errors} failed with backend errors, the last: {last})"),
        None => String::new(),
    }
}

pub(crate) fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
