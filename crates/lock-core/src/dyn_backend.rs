//! [`DynBackend`]: any [`KvBackend`] behind one concrete type, for code that must not be
//! generic over the backend: a suite compiled once for every backend, a `Vec` of
//! different backends for one [`Redlock`](crate::Redlock).

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::{
    Clock, ExpireCondition, KvBackend, Replicated, Replication, Result, Script, SetOptions,
    SetReply, Subscription, Transaction, Value,
};

/// A boxed future of one command.
type Reply<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// [`KvBackend`] with every future boxed: object safe, so backends of different types
/// share one [`DynBackend`]. Implemented for every `KvBackend`.
trait ErasedBackend: Send + Sync {
    fn set<'a>(
        &'a self,
        key: &'a [u8],
        value: &'a [u8],
        options: SetOptions,
    ) -> Reply<'a, SetReply>;
    fn setnx<'a>(&'a self, key: &'a [u8], value: &'a [u8]) -> Reply<'a, bool>;
    fn get<'a>(&'a self, key: &'a [u8]) -> Reply<'a, Option<Vec<u8>>>;
    fn getset<'a>(&'a self, key: &'a [u8], value: &'a [u8]) -> Reply<'a, Option<Vec<u8>>>;
    fn getdel<'a>(&'a self, key: &'a [u8]) -> Reply<'a, Option<Vec<u8>>>;
    fn del<'a>(&'a self, keys: &'a [&'a [u8]]) -> Reply<'a, i64>;
    fn exists<'a>(&'a self, keys: &'a [&'a [u8]]) -> Reply<'a, i64>;
    fn pexpire<'a>(&'a self, key: &'a [u8], ms: i64, condition: ExpireCondition)
    -> Reply<'a, bool>;
    fn pexpireat<'a>(
        &'a self,
        key: &'a [u8],
        unix_ms: i64,
        condition: ExpireCondition,
    ) -> Reply<'a, bool>;
    fn pttl<'a>(&'a self, key: &'a [u8]) -> Reply<'a, i64>;
    fn ttl<'a>(&'a self, key: &'a [u8]) -> Reply<'a, i64>;
    fn persist<'a>(&'a self, key: &'a [u8]) -> Reply<'a, bool>;
    fn incr<'a>(&'a self, key: &'a [u8]) -> Reply<'a, i64>;
    fn eval<'a>(
        &'a self,
        script: &'a Script,
        keys: &'a [&'a [u8]],
        args: &'a [&'a [u8]],
    ) -> Reply<'a, Value>;
    fn eval_replicated<'a>(
        &'a self,
        script: &'a Script,
        keys: &'a [&'a [u8]],
        args: &'a [&'a [u8]],
        replication: &'a Replication,
    ) -> Reply<'a, Replicated<Value>>;
    fn publish<'a>(&'a self, channel: &'a [u8], message: &'a [u8]) -> Reply<'a, i64>;
    fn subscribe<'a>(&'a self, channel: &'a [u8]) -> Reply<'a, Subscription>;
    fn watch<'a>(&'a self, keys: &'a [&'a [u8]]) -> Reply<'a, Transaction>;
    fn sharded_pubsub(&self) -> bool;
    fn clock(&self) -> Clock;
    fn as_any(&self) -> &dyn Any;
}

impl<B: KvBackend + 'static> ErasedBackend for B {
    fn set<'a>(
        &'a self,
        key: &'a [u8],
        value: &'a [u8],
        options: SetOptions,
    ) -> Reply<'a, SetReply> {
        Box::pin(KvBackend::set(self, key, value, options))
    }
    fn setnx<'a>(&'a self, key: &'a [u8], value: &'a [u8]) -> Reply<'a, bool> {
        Box::pin(KvBackend::setnx(self, key, value))
    }
    fn get<'a>(&'a self, key: &'a [u8]) -> Reply<'a, Option<Vec<u8>>> {
        Box::pin(KvBackend::get(self, key))
    }
    fn getset<'a>(&'a self, key: &'a [u8], value: &'a [u8]) -> Reply<'a, Option<Vec<u8>>> {
        Box::pin(KvBackend::getset(self, key, value))
    }
    fn getdel<'a>(&'a self, key: &'a [u8]) -> Reply<'a, Option<Vec<u8>>> {
        Box::pin(KvBackend::getdel(self, key))
    }
    fn del<'a>(&'a self, keys: &'a [&'a [u8]]) -> Reply<'a, i64> {
        Box::pin(KvBackend::del(self, keys))
    }
    fn exists<'a>(&'a self, keys: &'a [&'a [u8]]) -> Reply<'a, i64> {
        Box::pin(KvBackend::exists(self, keys))
    }
    fn pexpire<'a>(
        &'a self,
        key: &'a [u8],
        ms: i64,
        condition: ExpireCondition,
    ) -> Reply<'a, bool> {
        Box::pin(KvBackend::pexpire(self, key, ms, condition))
    }
    fn pexpireat<'a>(
        &'a self,
        key: &'a [u8],
        unix_ms: i64,
        condition: ExpireCondition,
    ) -> Reply<'a, bool> {
        Box::pin(KvBackend::pexpireat(self, key, unix_ms, condition))
    }
    fn pttl<'a>(&'a self, key: &'a [u8]) -> Reply<'a, i64> {
        Box::pin(KvBackend::pttl(self, key))
    }
    fn ttl<'a>(&'a self, key: &'a [u8]) -> Reply<'a, i64> {
        Box::pin(KvBackend::ttl(self, key))
    }
    fn persist<'a>(&'a self, key: &'a [u8]) -> Reply<'a, bool> {
        Box::pin(KvBackend::persist(self, key))
    }
    fn incr<'a>(&'a self, key: &'a [u8]) -> Reply<'a, i64> {
        Box::pin(KvBackend::incr(self, key))
    }
    fn eval<'a>(
        &'a self,
        script: &'a Script,
        keys: &'a [&'a [u8]],
        args: &'a [&'a [u8]],
    ) -> Reply<'a, Value> {
        Box::pin(KvBackend::eval(self, script, keys, args))
    }
    fn eval_replicated<'a>(
        &'a self,
        script: &'a Script,
        keys: &'a [&'a [u8]],
        args: &'a [&'a [u8]],
        replication: &'a Replication,
    ) -> Reply<'a, Replicated<Value>> {
        Box::pin(KvBackend::eval_replicated(
            self,
            script,
            keys,
            args,
            replication,
        ))
    }
    fn publish<'a>(&'a self, channel: &'a [u8], message: &'a [u8]) -> Reply<'a, i64> {
        Box::pin(KvBackend::publish(self, channel, message))
    }
    fn subscribe<'a>(&'a self, channel: &'a [u8]) -> Reply<'a, Subscription> {
        Box::pin(KvBackend::subscribe(self, channel))
    }
    fn watch<'a>(&'a self, keys: &'a [&'a [u8]]) -> Reply<'a, Transaction> {
        Box::pin(KvBackend::watch(self, keys))
    }
    fn sharded_pubsub(&self) -> bool {
        KvBackend::sharded_pubsub(self)
    }
    fn clock(&self) -> Clock {
        KvBackend::clock(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Any [`KvBackend`] as one type: every command is the wrapped backend's, through one boxed
/// future. Clones share the backend.
///
/// ```
/// use lock_core::{DynBackend, KvBackend};
/// # #[derive(Clone)] struct Mine;
/// # impl KvBackend for Mine {
/// #   async fn set(&self, _: &[u8], _: &[u8], _: lock_core::SetOptions) -> lock_core::Result<lock_core::SetReply> { Ok(lock_core::SetReply::Applied) }
/// #   async fn setnx(&self, _: &[u8], _: &[u8]) -> lock_core::Result<bool> { Ok(true) }
/// #   async fn get(&self, _: &[u8]) -> lock_core::Result<Option<Vec<u8>>> { Ok(None) }
/// #   async fn getset(&self, _: &[u8], _: &[u8]) -> lock_core::Result<Option<Vec<u8>>> { Ok(None) }
/// #   async fn getdel(&self, _: &[u8]) -> lock_core::Result<Option<Vec<u8>>> { Ok(None) }
/// #   async fn del(&self, _: &[&[u8]]) -> lock_core::Result<i64> { Ok(0) }
/// #   async fn exists(&self, _: &[&[u8]]) -> lock_core::Result<i64> { Ok(0) }
/// #   async fn pexpire(&self, _: &[u8], _: i64, _: lock_core::ExpireCondition) -> lock_core::Result<bool> { Ok(false) }
/// #   async fn pexpireat(&self, _: &[u8], _: i64, _: lock_core::ExpireCondition) -> lock_core::Result<bool> { Ok(false) }
/// #   async fn pttl(&self, _: &[u8]) -> lock_core::Result<i64> { Ok(-2) }
/// #   async fn ttl(&self, _: &[u8]) -> lock_core::Result<i64> { Ok(-2) }
/// #   async fn persist(&self, _: &[u8]) -> lock_core::Result<bool> { Ok(false) }
/// #   async fn incr(&self, _: &[u8]) -> lock_core::Result<i64> { Ok(1) }
/// #   async fn eval(&self, _: &lock_core::Script, _: &[&[u8]], _: &[&[u8]]) -> lock_core::Result<lock_core::Value> { Ok(lock_core::Value::Nil) }
/// # }
/// let any = DynBackend::new(Mine);
/// assert!(any.downcast_ref::<Mine>().is_some());
/// ```
#[derive(Clone)]
pub struct DynBackend {
    inner: Arc<dyn ErasedBackend>,
}

impl DynBackend {
    /// `backend` behind the common type.
    pub fn new<B: KvBackend + 'static>(backend: B) -> Self {
        Self {
            inner: Arc::new(backend),
        }
    }

    /// The wrapped backend, if it is a `B`.
    pub fn downcast_ref<B: KvBackend + 'static>(&self) -> Option<&B> {
        self.inner.as_any().downcast_ref()
    }
}

impl fmt::Debug for DynBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynBackend").finish_non_exhaustive()
    }
}

impl KvBackend for DynBackend {
    async fn set(&self, key: &[u8], value: &[u8], options: SetOptions) -> Result<SetReply> {
        self.inner.set(key, value, options).await
    }
    async fn setnx(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.inner.setnx(key, value).await
    }
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.get(key).await
    }
    async fn getset(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.getset(key, value).await
    }
    async fn getdel(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.getdel(key).await
    }
    async fn del(&self, keys: &[&[u8]]) -> Result<i64> {
        self.inner.del(keys).await
    }
    async fn exists(&self, keys: &[&[u8]]) -> Result<i64> {
        self.inner.exists(keys).await
    }
    async fn pexpire(&self, key: &[u8], ms: i64, condition: ExpireCondition) -> Result<bool> {
        self.inner.pexpire(key, ms, condition).await
    }
    async fn pexpireat(
        &self,
        key: &[u8],
        unix_ms: i64,
        condition: ExpireCondition,
    ) -> Result<bool> {
        self.inner.pexpireat(key, unix_ms, condition).await
    }
    async fn pttl(&self, key: &[u8]) -> Result<i64> {
        self.inner.pttl(key).await
    }
    async fn ttl(&self, key: &[u8]) -> Result<i64> {
        self.inner.ttl(key).await
    }
    async fn persist(&self, key: &[u8]) -> Result<bool> {
        self.inner.persist(key).await
    }
    async fn incr(&self, key: &[u8]) -> Result<i64> {
        self.inner.incr(key).await
    }
    async fn eval(&self, script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Result<Value> {
        self.inner.eval(script, keys, args).await
    }
    async fn eval_replicated(
        &self,
        script: &Script,
        keys: &[&[u8]],
        args: &[&[u8]],
        replication: &Replication,
    ) -> Result<Replicated<Value>> {
        self.inner
            .eval_replicated(script, keys, args, replication)
            .await
    }
    async fn publish(&self, channel: &[u8], message: &[u8]) -> Result<i64> {
        self.inner.publish(channel, message).await
    }
    async fn subscribe(&self, channel: &[u8]) -> Result<Subscription> {
        self.inner.subscribe(channel).await
    }
    async fn watch(&self, keys: &[&[u8]]) -> Result<Transaction> {
        self.inner.watch(keys).await
    }
    fn sharded_pubsub(&self) -> bool {
        self.inner.sharded_pubsub()
    }
    fn clock(&self) -> Clock {
        self.inner.clock()
    }
}
