//! [`ReplicaSetClient`]: a client of a [`MemoryReplicaSet`], on whichever node is primary.

use std::time::Duration;

use lock_core::{
    Clock, Error, ErrorKind, ExpireCondition, KvBackend, Replicated, Replication, Result, Script,
    SetOptions, SetReply, Subscription, Value,
};

use super::MemoryReplicaSet;
use crate::MemoryBackend;

/// A [`KvBackend`] on a [`MemoryReplicaSet`]'s current primary. Each command goes to the
/// node that is primary when it is sent, as with a Sentinel-aware client; while none is
/// (between a crash and a promotion) commands fail with
/// [`ErrorKind::Connection`], as against a dead server. Clones share the set.
#[derive(Clone, Debug)]
pub struct ReplicaSetClient {
    set: MemoryReplicaSet,
}

impl ReplicaSetClient {
    pub(crate) fn new(set: MemoryReplicaSet) -> Self {
        Self { set }
    }

    /// The set this client talks to.
    pub fn replica_set(&self) -> &MemoryReplicaSet {
        &self.set
    }

    fn primary(&self) -> Result<MemoryBackend> {
        self.set.primary_for_command().ok_or_else(|| {
            Error::new(
                ErrorKind::Connection,
                "Connection refused: no node of the replica set is primary",
            )
        })
    }
}

/// What Redis 7.0, which has no `WAITAOF`, answers to the probe a replicated lock sends
/// before its script: `WAITAOF 0 0 0` (which a newer server answers at once), so that a
/// server without it refuses before the lock is written.
pub(crate) fn no_waitaof() -> Error {
    Error::new(
        ErrorKind::Unsupported,
        "ERR unknown command 'WAITAOF', with args beginning with: '0' '0' '0' ",
    )
}

impl KvBackend for ReplicaSetClient {
    async fn set(&self, key: &[u8], value: &[u8], options: SetOptions) -> Result<SetReply> {
        self.primary()?.set(key, value, options).await
    }
    async fn setnx(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.primary()?.setnx(key, value).await
    }
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.primary()?.get(key).await
    }
    async fn getset(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        self.primary()?.getset(key, value).await
    }
    async fn getdel(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.primary()?.getdel(key).await
    }
    async fn del(&self, keys: &[&[u8]]) -> Result<i64> {
        self.primary()?.del(keys).await
    }
    async fn exists(&self, keys: &[&[u8]]) -> Result<i64> {
        self.primary()?.exists(keys).await
    }
    async fn pexpire(&self, key: &[u8], ms: i64, condition: ExpireCondition) -> Result<bool> {
        self.primary()?.pexpire(key, ms, condition).await
    }
    async fn pexpireat(
        &self,
        key: &[u8],
        unix_ms: i64,
        condition: ExpireCondition,
    ) -> Result<bool> {
        self.primary()?.pexpireat(key, unix_ms, condition).await
    }
    async fn pttl(&self, key: &[u8]) -> Result<i64> {
        self.primary()?.pttl(key).await
    }
    async fn ttl(&self, key: &[u8]) -> Result<i64> {
        self.primary()?.ttl(key).await
    }
    async fn persist(&self, key: &[u8]) -> Result<bool> {
        self.primary()?.persist(key).await
    }
    async fn incr(&self, key: &[u8]) -> Result<i64> {
        self.primary()?.incr(key).await
    }
    async fn eval(&self, script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Result<Value> {
        self.primary()?.eval(script, keys, args).await
    }
    /// The script on a connection of its own, then `WAIT` for that connection's write.
    async fn eval_replicated(
        &self,
        script: &Script,
        keys: &[&[u8]],
        args: &[&[u8]],
        replication: &Replication,
    ) -> Result<Replicated<Value>> {
        if replication.fsync && !self.primary()?.redis_version().has_waitaof() {
            return Err(no_waitaof());
        }
        let stream = self.set.stream();
        let connection = self.primary()?.connection();
        let reply = connection.eval(script, keys, args).await?;
        let acknowledged = self
            .set
            .wait(
                &stream,
                connection.last_write(),
                i64::from(replication.replicas),
                replication.timeout,
            )
            .await?;
        Ok(Replicated {
            reply,
            acknowledged,
        })
    }
    async fn publish(&self, channel: &[u8], message: &[u8]) -> Result<i64> {
        self.primary()?.publish(channel, message).await
    }
    async fn subscribe(&self, channel: &[u8]) -> Result<Subscription> {
        self.primary()?.subscribe(channel).await
    }
    async fn watch(&self, keys: &[&[u8]]) -> Result<lock_core::Transaction> {
        self.primary()?.watch(keys).await
    }
    fn clock(&self) -> Clock {
        self.set.clock()
    }
}

/// How long a lone double's `WAIT` blocks: its timeout (Redis reads 0 as forever).
pub(crate) async fn lone_wait(clock: &Clock, timeout: Duration) {
    if timeout.is_zero() {
        std::future::pending::<()>().await;
    }
    clock.sleep(timeout).await;
}
