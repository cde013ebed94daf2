//! The seeds' lock algorithms, generic over any [`KvBackend`](crate::KvBackend).

#[macro_use]
mod held;

mod fair;
mod fenced;
mod legacy;
mod redlock;
mod reentrant;
mod scripted;
mod token;

pub use fair::{DEFAULT_PATIENCE, FairGuard, FairLock};
pub use fenced::{FencedGuard, FencedLock};
pub use legacy::{LegacyGuard, LegacyLock};
pub use redlock::{Redlock, RedlockGuard, RedlockOptions};
pub use reentrant::{LockOwner, ReentrantGuard, ReentrantLock};
pub use scripted::{ScriptedGuard, ScriptedLock};
pub use token::{TokenGuard, TokenLock};

use std::time::Duration;

use crate::lock::Supports;
use crate::{
    Attempt, Clock, KvBackend, LockBinding, LockError, LockName, LockOptions, Replication, Script,
    Value,
};

/// Binds `algorithm` (which honours what `supports` says) to `name` on `backend`,
/// checking `options` now rather than at the first acquire.
fn bind<B: KvBackend>(
    backend: &B,
    name: &LockName,
    options: LockOptions,
    algorithm: &'static str,
    supports: Supports,
) -> Result<LockBinding, LockError> {
    LockBinding::for_algorithm(algorithm, supports, name, options, backend.clock())
}

/// What a guard needs to report its hold: the lock's clock and its validity deadline.
#[derive(Clone, Debug)]
struct Hold {
    clock: Clock,
    valid_until_ms: i64,
}

impl Hold {
    /// A hold valid for `ttl_ms` from `started_ms` (when the acquire or extend began).
    fn new(clock: Clock, started_ms: i64, ttl_ms: i64) -> Self {
        Self {
            clock,
            valid_until_ms: started_ms.saturating_add(ttl_ms),
        }
    }
}

/// Writes the lock with `script`; with `replication`, through
/// [`KvBackend::eval_replicated`], and then also how many replicas acknowledged.
async fn write<B: KvBackend>(
    backend: &B,
    replication: Option<&Replication>,
    script: &Script,
    keys: &[&[u8]],
    args: &[&[u8]],
) -> Result<(Value, Option<i64>), LockError> {
    match replication {
        None => Ok((backend.eval(script, keys, args).await?, None)),
        Some(replication) => {
            let written = backend
                .eval_replicated(script, keys, args, replication)
                .await?;
            Ok((written.reply, Some(written.acknowledged)))
        }
    }
}

/// [`LockError::NotReplicated`] when `replication` asks for more acknowledgements than
/// the write got.
fn replicated_enough(
    key: &[u8],
    replication: Option<&Replication>,
    acknowledged: Option<i64>,
) -> Result<(), LockError> {
    match (replication, acknowledged) {
        (Some(replication), Some(acknowledged))
            if acknowledged < i64::from(replication.replicas) =>
        {
            Err(LockError::NotReplicated {
                key: crate::outcome::lossy(key),
                acknowledged,
                required: replication.replicas,
            })
        }
        _ => Ok(()),
    }
}

fn unexpected(script: &Script, reply: &Value) -> LockError {
    LockError::UnexpectedReply {
        script: script.name(),
        reply: format!("{reply:?}"),
    }
}

/// A script reply that must be an integer.
fn int_reply(script: &Script, reply: Value) -> Result<i64, LockError> {
    reply.as_int().ok_or_else(|| unexpected(script, &reply))
}

/// A script reply that must be `{integer, integer}`.
fn pair_reply(script: &Script, reply: Value) -> Result<(i64, i64), LockError> {
    if let Value::Array(items) = &reply
        && let [Value::Int(a), Value::Int(b)] = items.as_slice()
    {
        return Ok((*a, *b));
    }
    Err(unexpected(script, &reply))
}

/// A refused acquire, judged by the key's PTTL: -2 means the holder released between our
/// attempt and the look, which is worth an immediate retry.
fn refused<G>(pttl_ms: i64) -> Attempt<G> {
    match pttl_ms {
        -2 => Attempt::Contended,
        pttl => Attempt::Held {
            holder_ttl: holder_ttl(pttl),
        },
    }
}

/// A PTTL reply as the holder's remaining time: known only when the key has a TTL.
fn holder_ttl(pttl_ms: i64) -> Option<Duration> {
    u64::try_from(pttl_ms).ok().map(Duration::from_millis)
}

fn ms_arg(ms: i64) -> Vec<u8> {
    ms.to_string().into_bytes()
}

/// The stamp locks' safety TTL: the hold's TTL plus 1 s, so that a crashed holder's key
/// disappears a second after its stamp has passed. Cannot overflow: TTLs are at most
/// [`MAX_TTL`](crate::MAX_TTL).
fn safety_ttl_ms(ttl_ms: i64) -> i64 {
    ttl_ms + 1000
}
