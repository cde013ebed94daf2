//! [`Keyspace`]: everything the double's store holds, for a Redis-protocol server built on
//! it (`nxlock serve`). Lock code needs only [`ScriptContext`]; a server's commands read
//! and change typed values ([`Data`]) through this, and keep their own semantics.

use lock_core::{ExpireCondition, Result, ScriptContext, SetOptions, SetReply};

use crate::data::Data;
use crate::notifications::KeyspaceEvents;

/// What [`Keyspace::watch`] saw of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchMark {
    /// The store's write stamp of the key at that moment.
    pub stamp: u64,
    /// Whether the key was live (present and not expired).
    pub live: bool,
}

/// The double's whole keyspace inside one atomic section (see
/// [`MemoryBackend::atomically`](crate::MemoryBackend::atomically)): the lock commands of
/// [`ScriptContext`], and typed access to every key for a server's other commands.
pub trait Keyspace: ScriptContext {
    /// `SET key value [options]` of a value handed over: stored as it is, without a copy
    /// (a server's SET of a big value).
    fn set_owned(&mut self, key: &[u8], value: Vec<u8>, options: SetOptions) -> Result<SetReply>;
    /// `GETDEL key`: the string, deleted.
    fn getdel(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// `EXISTS key [key ...]`: how many of the keys (repeats counted) are live.
    fn exists(&mut self, keys: &[&[u8]]) -> Result<i64>;
    /// `PEXPIREAT key unix-ms [NX|XX|GT|LT]`: whether the expiry was set.
    fn pexpireat(&mut self, key: &[u8], unix_ms: i64, condition: ExpireCondition) -> Result<bool>;
    /// `TTL key`: seconds left, rounded, or -1 (no expiry), -2 (no key).
    fn ttl(&mut self, key: &[u8]) -> Result<i64>;
    /// `PERSIST key`: whether an expiry was removed.
    fn persist(&mut self, key: &[u8]) -> Result<bool>;
    /// `TYPE key`: `"string"`, `"list"`, `"hash"`, `"set"`, `"zset"`, or `"none"`.
    fn key_type(&mut self, key: &[u8]) -> Result<&'static str>;
    /// `KEYS pattern`: the live keys matching the glob, in no particular order.
    fn keys(&mut self, pattern: &[u8]) -> Result<Vec<Vec<u8>>>;
    /// `RANDOMKEY`: a live key chosen at random (`pick(n)` chooses an index below `n`),
    /// reaping the expired keys it meets; `None` when there is none. O(1) once
    /// [`MemoryBackend::index_keys`](crate::MemoryBackend::index_keys) was called, O(n)
    /// otherwise.
    fn random_key(&mut self, pick: &mut dyn FnMut(usize) -> usize) -> Option<Vec<u8>>;
    /// `DBSIZE`: how many keys the database holds. Once
    /// [`MemoryBackend::index_keys`](crate::MemoryBackend::index_keys) was called, in
    /// O(1), and, as in Redis, a key whose TTL has passed counts until something reaps it
    /// (this call reaps among a few dozen keys each time, going round the keyspace);
    /// otherwise the live keys, counted.
    fn size(&mut self) -> usize;
    /// The live value at `key`, to read or to change in place (then call
    /// [`Keyspace::changed`]).
    fn value(&mut self, key: &[u8]) -> Option<&mut Data>;
    /// Stores `data` at `key`, expiring at `expires_at` (Unix ms; `None`: no TTL),
    /// replacing whatever was there.
    fn put(&mut self, key: &[u8], data: Data, expires_at: Option<i64>);
    /// Removes the live `key`, giving back its value and expiry time.
    fn take(&mut self, key: &[u8]) -> Option<(Data, Option<i64>)>;
    /// The live key's expiry time: `None` when there is no such key, `Some(None)` when it
    /// has no TTL.
    fn expires_at(&mut self, key: &[u8]) -> Option<Option<i64>>;
    /// Marks the live `key` as just used, as every command that reads or writes it does
    /// in Redis but TTL, TYPE, EXISTS and OBJECT (`OBJECT IDLETIME` measures from here).
    fn access(&mut self, key: &[u8]);
    /// How long ago the live `key` was last used, in milliseconds.
    fn idle_ms(&mut self, key: &[u8]) -> Option<i64>;
    /// Records a change made in place through [`Keyspace::value`]: WATCH sees it, and a
    /// collection left empty is deleted, as Redis deletes empty lists, hashes, sets and
    /// sorted sets.
    fn changed(&mut self, key: &[u8]);
    /// Starts watching `key` for a server's `WATCH`: what it looks like now. Every
    /// `watch` must be paired with an [`Keyspace::unwatch`].
    fn watch(&mut self, key: &[u8]) -> WatchMark;
    /// Whether `key` changed since `mark` was taken, as `EXEC` judges it: written in
    /// any way, or live then and expired or deleted now.
    fn watch_broken(&mut self, key: &[u8], mark: WatchMark) -> bool;
    /// Ends one [`Keyspace::watch`] of `key`.
    fn unwatch(&mut self, key: &[u8]);
    /// Publishes the keyspace notification `event` of `class` on `key`, as far as
    /// [`MemoryBackend::set_keyspace_events`](crate::MemoryBackend::set_keyspace_events)
    /// asks. A server's commands raise their own events (Redis's names, in Redis's
    /// order); the store raises `new` when [`Keyspace::put`] creates a key, `expired`
    /// when it finds a key expired, and `del` when [`Keyspace::changed`] deletes an
    /// emptied collection.
    fn notify(&mut self, class: KeyspaceEvents, event: &str, key: &[u8]);
    /// Removes every key (`FLUSHDB`); WATCH sees every key that was there.
    fn flush(&mut self);
    /// The current command's time in Unix microseconds (`TIME`); it stands still inside
    /// a script, as [`ScriptContext::now_ms`] does.
    fn now_us(&self) -> i64;
}
