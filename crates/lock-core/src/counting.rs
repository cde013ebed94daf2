//! [`CountingBackend`]: counts the commands a workload sends, on any backend.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{
    Clock, ExpireCondition, KvBackend, Replicated, Replication, Result, Script, SetOptions,
    SetReply, Subscription, Transaction, Value,
};

/// Wraps a backend and counts every command sent through it (a script counts as one), so
/// benchmarks can report commands per lock cycle and tests can assert round trips.
/// Clones share the counter.
#[derive(Clone, Debug)]
pub struct CountingBackend<B> {
    inner: B,
    commands: Arc<AtomicU64>,
}

impl<B> CountingBackend<B> {
    /// Counts commands sent to `inner`, starting at 0.
    pub fn new(inner: B) -> Self {
        Self {
            inner,
            commands: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Commands sent so far.
    pub fn commands(&self) -> u64 {
        self.commands.load(Ordering::Relaxed)
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    fn count(&self) {
        self.commands.fetch_add(1, Ordering::Relaxed);
    }
}

impl<B: KvBackend> KvBackend for CountingBackend<B> {
    async fn set(&self, key: &[u8], value: &[u8], options: SetOptions) -> Result<SetReply> {
        self.count();
        self.inner.set(key, value, options).await
    }
    async fn setnx(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.count();
        self.inner.setnx(key, value).await
    }
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.count();
        self.inner.get(key).await
    }
    async fn getset(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        self.count();
        self.inner.getset(key, value).await
    }
    async fn getdel(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.count();
        self.inner.getdel(key).await
    }
    async fn del(&self, keys: &[&[u8]]) -> Result<i64> {
        self.count();
        self.inner.del(keys).await
    }
    async fn exists(&self, keys: &[&[u8]]) -> Result<i64> {
        self.count();
        self.inner.exists(keys).await
    }
    async fn pexpire(&self, key: &[u8], ms: i64, condition: ExpireCondition) -> Result<bool> {
        self.count();
        self.inner.pexpire(key, ms, condition).await
    }
    async fn pexpireat(
        &self,
        key: &[u8],
        unix_ms: i64,
        condition: ExpireCondition,
    ) -> Result<bool> {
        self.count();
        self.inner.pexpireat(key, unix_ms, condition).await
    }
    async fn pttl(&self, key: &[u8]) -> Result<i64> {
        self.count();
        self.inner.pttl(key).await
    }
    async fn ttl(&self, key: &[u8]) -> Result<i64> {
        self.count();
        self.inner.ttl(key).await
    }
    async fn persist(&self, key: &[u8]) -> Result<bool> {
        self.count();
        self.inner.persist(key).await
    }
    async fn incr(&self, key: &[u8]) -> Result<i64> {
        self.count();
        self.inner.incr(key).await
    }
    async fn eval(&self, script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Result<Value> {
        self.count();
        self.inner.eval(script, keys, args).await
    }
    async fn eval_replicated(
        &self,
        script: &Script,
        keys: &[&[u8]],
        args: &[&[u8]],
        replication: &Replication,
    ) -> Result<Replicated<Value>> {
        // The script and the WAIT: two commands.
        self.count();
        self.count();
        self.inner
            .eval_replicated(script, keys, args, replication)
            .await
    }
    async fn publish(&self, channel: &[u8], message: &[u8]) -> Result<i64> {
        self.count();
        self.inner.publish(channel, message).await
    }
    async fn subscribe(&self, channel: &[u8]) -> Result<Subscription> {
        self.count();
        self.inner.subscribe(channel).await
    }
    /// Counted as the two round trips it takes: WATCH + GETs, then MULTI … EXEC.
    async fn watch(&self, keys: &[&[u8]]) -> Result<Transaction> {
        self.count();
        self.count();
        self.inner.watch(keys).await
    }
    fn sharded_pubsub(&self) -> bool {
        self.inner.sharded_pubsub()
    }
    fn clock(&self) -> Clock {
        self.inner.clock()
    }
}
