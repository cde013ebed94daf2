//! The seeds' lock algorithms, generic over any [`KvBackend`](crate::KvBackend).

/// The [`LockAlgorithm`](crate::LockAlgorithm) accessors every algorithm answers from its
/// `binding` field.
macro_rules! binding_accessors {
    () => {
        fn key(&self) -> &[u8] {
            &self.binding.key
        }
        fn options(&self) -> &LockOptions {
            &self.binding.options
        }
        fn clock(&self) -> &Clock {
            &self.binding.clock
        }
    };
}

mod fair;
mod fenced;
mod legacy;
mod reentrant;
mod scripted;
mod token;

pub use fair::{DEFAULT_PATIENCE, FairGuard, FairLock};
pub use fenced::{FencedGuard, FencedLock};
pub use legacy::{LegacyGuard, LegacyLock};
pub use reentrant::{LockOwner, ReentrantGuard, ReentrantLock};
pub use scripted::{ScriptedGuard, ScriptedLock};
pub use token::{TokenGuard, TokenLock};

use std::sync::Arc;
use std::time::Duration;

use crate::{Attempt, Clock, KvBackend, LockError, LockOptions, Script, Value};

/// What every algorithm is bound to: a backend, a key, options and the resolved clock.
#[derive(Clone, Debug)]
struct Binding<B> {
    backend: B,
    /// Shared with every guard: acquiring clones a pointer, not the key.
    key: Arc<[u8]>,
    options: LockOptions,
    clock: Clock,
}

impl<B: KvBackend> Binding<B> {
    fn new(backend: B, key: impl Into<Vec<u8>>, options: LockOptions) -> Self {
        let clock = options.clock.clone().unwrap_or_else(|| backend.clock());
        Self {
            backend,
            key: Arc::from(key.into()),
            options,
            clock,
        }
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
    if let Value::Array(items) = &reply {
        if let [Value::Int(a), Value::Int(b)] = items.as_slice() {
            return Ok((*a, *b));
        }
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
