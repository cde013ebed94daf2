//! [`Either`]: one of two backend kinds, so that one [`Redlock`](crate::Redlock) can run
//! on nodes of different kinds (a `RedisBackend` beside a `MemoryBackend`, say).

use crate::{
    Clock, ExpireCondition, KvBackend, Replicated, Replication, Result, Script, SetOptions,
    SetReply, Subscription, Transaction, Value,
};

/// A backend of kind `L` or kind `R`; every command goes to the one it holds. Nest it
/// (`Either<A, Either<B, C>>`) for more kinds.
///
/// ```
/// # use lock_core::{Either, KvBackend};
/// fn nodes<A: KvBackend, B: KvBackend>(a: A, b1: B, b2: B) -> Vec<Either<A, B>> {
///     vec![Either::Left(a), Either::Right(b1), Either::Right(b2)]
/// }
/// ```
#[derive(Clone, Debug)]
pub enum Either<L, R> {
    /// A backend of the first kind.
    Left(L),
    /// A backend of the second kind.
    Right(R),
}

/// Sends one call to whichever backend `$self` holds.
macro_rules! either {
    ($self:ident, $backend:ident => $call:expr) => {
        match $self {
            Either::Left($backend) => $call.await,
            Either::Right($backend) => $call.await,
        }
    };
}

impl<L: KvBackend, R: KvBackend> KvBackend for Either<L, R> {
    async fn set(&self, key: &[u8], value: &[u8], options: SetOptions) -> Result<SetReply> {
        either!(self, b => b.set(key, value, options))
    }
    async fn setnx(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        either!(self, b => b.setnx(key, value))
    }
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        either!(self, b => b.get(key))
    }
    async fn getset(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        either!(self, b => b.getset(key, value))
    }
    async fn getdel(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        either!(self, b => b.getdel(key))
    }
    async fn del(&self, keys: &[&[u8]]) -> Result<i64> {
        either!(self, b => b.del(keys))
    }
    async fn exists(&self, keys: &[&[u8]]) -> Result<i64> {
        either!(self, b => b.exists(keys))
    }
    async fn pexpire(&self, key: &[u8], ms: i64, condition: ExpireCondition) -> Result<bool> {
        either!(self, b => b.pexpire(key, ms, condition))
    }
    async fn pexpireat(&self, key: &[u8], at: i64, condition: ExpireCondition) -> Result<bool> {
        either!(self, b => b.pexpireat(key, at, condition))
    }
    async fn pttl(&self, key: &[u8]) -> Result<i64> {
        either!(self, b => b.pttl(key))
    }
    async fn ttl(&self, key: &[u8]) -> Result<i64> {
        either!(self, b => b.ttl(key))
    }
    async fn persist(&self, key: &[u8]) -> Result<bool> {
        either!(self, b => b.persist(key))
    }
    async fn incr(&self, key: &[u8]) -> Result<i64> {
        either!(self, b => b.incr(key))
    }
    async fn eval(&self, script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Result<Value> {
        either!(self, b => b.eval(script, keys, args))
    }
    async fn eval_replicated(
        &self,
        script: &Script,
        keys: &[&[u8]],
        args: &[&[u8]],
        replication: &Replication,
    ) -> Result<Replicated<Value>> {
        either!(self, b => b.eval_replicated(script, keys, args, replication))
    }
    async fn publish(&self, channel: &[u8], message: &[u8]) -> Result<i64> {
        either!(self, b => b.publish(channel, message))
    }
    async fn subscribe(&self, channel: &[u8]) -> Result<Subscription> {
        either!(self, b => b.subscribe(channel))
    }
    async fn watch(&self, keys: &[&[u8]]) -> Result<Transaction> {
        either!(self, b => b.watch(keys))
    }
    fn sharded_pubsub(&self) -> bool {
        match self {
            Either::Left(b) => b.sharded_pubsub(),
            Either::Right(b) => b.sharded_pubsub(),
        }
    }
    fn clock(&self) -> Clock {
        match self {
            Either::Left(b) => b.clock(),
            Either::Right(b) => b.clock(),
        }
    }
}
