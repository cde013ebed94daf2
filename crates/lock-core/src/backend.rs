//! The [`KvBackend`] trait: the Redis commands a SETNX-family lock needs.

use std::future::Future;

use crate::{
    Clock, Error, ErrorKind, Replicated, Replication, Result, Script, Subscription, Transaction,
    Value,
};

/// SET's existence condition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SetCondition {
    /// Set whether or not the key exists.
    #[default]
    Always,
    /// `NX`: only if the key does not exist.
    IfNotExists,
    /// `XX`: only if the key exists.
    IfExists,
}

/// SET's expiry argument.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SetExpiry {
    /// No expiry argument: the key's old TTL, if any, is discarded.
    #[default]
    Clear,
    /// `KEEPTTL`: keep the key's current TTL.
    KeepTtl,
    /// `EX seconds` (must be > 0).
    Ex(i64),
    /// `PX milliseconds` (must be > 0).
    Px(i64),
    /// `EXAT unix-seconds` (must be > 0).
    ExAt(i64),
    /// `PXAT unix-milliseconds` (must be > 0).
    PxAt(i64),
}

/// Options of one SET command; build with the chained methods.
///
/// ```
/// # use lock_core::SetOptions;
/// let lock = SetOptions::new().nx().px(30_000); // SET key value NX PX 30000
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetOptions {
    /// NX / XX.
    pub condition: SetCondition,
    /// EX / PX / EXAT / PXAT / KEEPTTL.
    pub expiry: SetExpiry,
    /// `GET`: reply with the old value instead of OK/nil.
    pub get: bool,
}

impl SetOptions {
    /// Plain `SET key value`.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds `NX`.
    pub fn nx(mut self) -> Self {
        self.condition = SetCondition::IfNotExists;
        self
    }
    /// Adds `XX`.
    pub fn xx(mut self) -> Self {
        self.condition = SetCondition::IfExists;
        self
    }
    /// Adds `PX milliseconds`.
    pub fn px(mut self, milliseconds: i64) -> Self {
        self.expiry = SetExpiry::Px(milliseconds);
        self
    }
    /// Adds `EX seconds`.
    pub fn ex(mut self, seconds: i64) -> Self {
        self.expiry = SetExpiry::Ex(seconds);
        self
    }
    /// Adds `PXAT unix-milliseconds`.
    pub fn pxat(mut self, unix_ms: i64) -> Self {
        self.expiry = SetExpiry::PxAt(unix_ms);
        self
    }
    /// Adds `EXAT unix-seconds`.
    pub fn exat(mut self, unix_seconds: i64) -> Self {
        self.expiry = SetExpiry::ExAt(unix_seconds);
        self
    }
    /// Adds `KEEPTTL`.
    pub fn keep_ttl(mut self) -> Self {
        self.expiry = SetExpiry::KeepTtl;
        self
    }
    /// Adds `GET`.
    pub fn get(mut self) -> Self {
        self.get = true;
        self
    }
}

/// What SET answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetReply {
    /// `OK`: the value was written.
    Applied,
    /// nil: NX or XX did not hold, nothing was written.
    NotApplied,
    /// With `GET`: the old value (nil if the key was absent). Whether the write happened
    /// is not part of Redis's reply in this form.
    OldValue(Option<Vec<u8>>),
}

/// PEXPIRE's condition (Redis 7).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExpireCondition {
    /// No condition.
    #[default]
    Always,
    /// `NX`: only if the key has no TTL.
    IfNoExpiry,
    /// `XX`: only if the key has a TTL.
    IfHasExpiry,
    /// `GT`: only if the new expiry is later; a key without TTL counts as infinite.
    IfGreater,
    /// `LT`: only if the new expiry is earlier; a key without TTL counts as infinite.
    IfLess,
}

/// A key-value store with Redis 7 semantics: the commands SETNX-family locks use.
///
/// # Contract
///
/// Every implementation behaves like Redis 7.0 for the commands below; the
/// `lock-conformance` crate checks this, case by case.
///
/// - Keys and values are binary-safe byte strings.
/// - A key whose expiry time has passed is absent to every command (lazy expiry), even
///   if it is still in memory. A key expires when `now > expiry` (strictly).
/// - TTLs are in milliseconds; the backend's clock ([`KvBackend::clock`]) is the one
///   expiries are measured against.
/// - Errors carry Redis's reply text byte for byte where Redis has one, and an
///   [`ErrorKind`](crate::ErrorKind) that says what kind of failure it is; connection
///   failures and timeouts are their own kinds, distinct from server replies.
/// - Every method is one command: one round trip on a network backend.
/// - A command whose future is dropped before it completes (cancelled) may or may not
///   have run: a network backend may already have sent it, and the server runs what it
///   received; an in-process double runs a command in one step or not at all. Code that
///   must know treats a cancelled command like one whose reply was lost, as
///   [`ErrorKind::Timeout`](crate::ErrorKind::Timeout) asks too: the locks' retried
///   attempts recognise their own token for this reason.
/// - Implementations are `Send + Sync` and usable from many tasks on a multi-threaded
///   tokio runtime; the returned futures are `Send`.
pub trait KvBackend: Send + Sync {
    /// `SET key value [NX|XX] [GET] [EX|PX|EXAT|PXAT|KEEPTTL]`.
    ///
    /// Without an expiry argument the key's old TTL is discarded; `KEEPTTL` keeps it.
    /// An expire of 0 or less is `ERR invalid expire time in 'set' command`.
    fn set(
        &self,
        key: &[u8],
        value: &[u8],
        options: SetOptions,
    ) -> impl Future<Output = Result<SetReply>> + Send;

    /// `SETNX key value`: true if the key was set. Never sets a TTL.
    fn setnx(&self, key: &[u8], value: &[u8]) -> impl Future<Output = Result<bool>> + Send;

    /// `GET key`.
    fn get(&self, key: &[u8]) -> impl Future<Output = Result<Option<Vec<u8>>>> + Send;

    /// `GETSET key value`: the old value; the new value has no TTL.
    fn getset(
        &self,
        key: &[u8],
        value: &[u8],
    ) -> impl Future<Output = Result<Option<Vec<u8>>>> + Send;

    /// `GETDEL key`: the value, and the key is gone.
    fn getdel(&self, key: &[u8]) -> impl Future<Output = Result<Option<Vec<u8>>>> + Send;

    /// `DEL key [key ...]`: how many of the keys existed (each counted once) and were removed.
    fn del(&self, keys: &[&[u8]]) -> impl Future<Output = Result<i64>> + Send;

    /// `EXISTS key [key ...]`: how many of the named keys exist; a key named twice counts twice.
    fn exists(&self, keys: &[&[u8]]) -> impl Future<Output = Result<i64>> + Send;

    /// `PEXPIRE key milliseconds [NX|XX|GT|LT]`: true if the TTL was set.
    ///
    /// A TTL of 0 or less deletes the key (and answers true when the condition held).
    /// `GT`/`LT` treat a key without TTL as having an infinite one.
    fn pexpire(
        &self,
        key: &[u8],
        milliseconds: i64,
        condition: ExpireCondition,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// `PEXPIREAT key unix-milliseconds [NX|XX|GT|LT]`; a time in the past deletes the key.
    fn pexpireat(
        &self,
        key: &[u8],
        unix_ms: i64,
        condition: ExpireCondition,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// `PTTL key`: -2 if the key is missing, -1 if it has no TTL, else milliseconds left.
    fn pttl(&self, key: &[u8]) -> impl Future<Output = Result<i64>> + Send;

    /// `TTL key`: like PTTL in seconds, rounded to the nearest second.
    fn ttl(&self, key: &[u8]) -> impl Future<Output = Result<i64>> + Send;

    /// `PERSIST key`: true if a TTL was removed.
    fn persist(&self, key: &[u8]) -> impl Future<Output = Result<bool>> + Send;

    /// `INCR key`: the new value; a missing key counts as 0 and the TTL is kept.
    fn incr(&self, key: &[u8]) -> impl Future<Output = Result<i64>> + Send;

    /// Runs `script` atomically: nothing else touches the store while it runs, and time
    /// stands still inside it.
    ///
    /// A Redis server runs [`Script::lua`] (EVALSHA, falling back to EVAL); an in-process
    /// double runs [`Script::native`].
    fn eval(
        &self,
        script: &Script,
        keys: &[&[u8]],
        args: &[&[u8]],
    ) -> impl Future<Output = Result<Value>> + Send;

    /// Runs `script` like [`KvBackend::eval`], then waits for replicas to acknowledge its
    /// writes (`WAIT replicas timeout`, or `WAITAOF 0 replicas timeout` with
    /// [`Replication::fsync`]), on the same connection: the script's reply, and how many
    /// replicas acknowledged.
    ///
    /// `WAIT` counts the writes of the connection it is sent on, and blocks that
    /// connection while it waits, so a network backend must run both on a connection of
    /// their own, never on one other commands share. A backend without replicas answers
    /// as a lone Redis does: 0 acknowledgements once the timeout has passed.
    ///
    /// The default answers [`ErrorKind::Unsupported`].
    fn eval_replicated(
        &self,
        script: &Script,
        keys: &[&[u8]],
        args: &[&[u8]],
        replication: &Replication,
    ) -> impl Future<Output = Result<Replicated<Value>>> + Send {
        let _ = (script, keys, args, replication);
        async { Err(unsupported("WAIT")) }
    }

    /// `PUBLISH channel message`: how many subscriptions received it.
    ///
    /// Lock releases publish from inside their scripts; this method is for tests and
    /// tools. The default answers [`ErrorKind::Unsupported`]: a backend without pub/sub
    /// still works, and waiters fall back to re-checking by the holder's TTL.
    fn publish(&self, channel: &[u8], message: &[u8]) -> impl Future<Output = Result<i64>> + Send {
        let _ = (channel, message);
        async { Err(unsupported("PUBLISH")) }
    }

    /// `SUBSCRIBE channel`: every message published on `channel` after this returns is
    /// delivered to the subscription, in order. Dropping it ends the subscription.
    ///
    /// The default answers [`ErrorKind::Unsupported`] (see [`KvBackend::publish`]).
    fn subscribe(&self, channel: &[u8]) -> impl Future<Output = Result<Subscription>> + Send {
        let _ = channel;
        async { Err(unsupported("SUBSCRIBE")) }
    }

    /// `WATCH keys`, then `GET` each, on a connection of the transaction's own (never the
    /// shared one: `WATCH` belongs to a connection, and another caller's `EXEC` on a shared
    /// one would see or clear it). The returned [`Transaction`] holds the values read;
    /// its [`exec`](Transaction::exec) sends `MULTI`, the writes and `EXEC`, which writes
    /// nothing when a watched key was written, deleted or expired in between.
    ///
    /// A server's keys must share a slot on a Redis Cluster (`CROSSSLOT` otherwise). The
    /// default answers [`ErrorKind::Unsupported`].
    fn watch(&self, keys: &[&[u8]]) -> impl Future<Output = Result<Transaction>> + Send {
        let _ = keys;
        async { Err(unsupported("WATCH")) }
    }

    /// Whether wake-ups use sharded pub/sub, Redis 7's `SPUBLISH` and `SSUBSCRIBE`: a
    /// channel then lives in its name's slot like a key (a lock's `{name}:wake` in its
    /// lock's slot), and a Redis Cluster keeps each message within that slot's shard
    /// instead of sending it to every node. Lock scripts publish with the command
    /// [`publish_command`] names for this backend, and [`KvBackend::publish`] and
    /// [`KvBackend::subscribe`] use the matching kind. Default `false`: classic
    /// `PUBLISH`/`SUBSCRIBE`.
    fn sharded_pubsub(&self) -> bool {
        false
    }

    /// The clock a client of this backend should use for timestamps and retry sleeps.
    ///
    /// For a real server this is the system clock; a double returns its own (virtual)
    /// clock so that expiry and client-side waiting move together in tests.
    fn clock(&self) -> Clock {
        Clock::system()
    }
}

/// The command lock scripts publish wake-ups with on `backend`: `SPUBLISH` where it uses
/// sharded pub/sub ([`KvBackend::sharded_pubsub`]), else `PUBLISH`.
pub fn publish_command<B: KvBackend + ?Sized>(backend: &B) -> &'static [u8] {
    if backend.sharded_pubsub() {
        b"SPUBLISH"
    } else {
        b"PUBLISH"
    }
}

fn unsupported(command: &str) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!("ERR this backend does not implement {command}"),
    )
}
