//! [`Keyspace`]: everything the double's store can do, for a Redis-protocol server built on
//! it (`nxlock serve`). Lock code needs only [`ScriptContext`]; the commands here serve a
//! server's clients.

use lock_core::{Result, ScriptContext};

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
/// [`ScriptContext`] and the rest a server needs, with Redis 7.0's semantics and error
/// texts.
pub trait Keyspace: ScriptContext {
    /// `TYPE key`: `"string"`, `"list"`, or `"none"` when absent.
    fn key_type(&mut self, key: &[u8]) -> Result<&'static str>;
    /// `KEYS pattern`: the live keys matching the glob, in no particular order.
    fn keys(&mut self, pattern: &[u8]) -> Result<Vec<Vec<u8>>>;
    /// `LPUSH key value…`: each value in turn to the head; the new length.
    fn lpush(&mut self, key: &[u8], values: &[&[u8]]) -> Result<i64>;
    /// `RPUSH key value…`: each value in turn to the tail; the new length.
    fn rpush(&mut self, key: &[u8], values: &[&[u8]]) -> Result<i64>;
    /// `LPOP key count`: up to `count` elements from the head, or `None` when the key is
    /// absent. A list left empty is deleted.
    fn lpop(&mut self, key: &[u8], count: usize) -> Result<Option<Vec<Vec<u8>>>>;
    /// `LLEN key`: 0 when absent.
    fn llen(&mut self, key: &[u8]) -> Result<i64>;
    /// Starts watching `key` for a server's `WATCH`: what it looks like now. Every
    /// `watch` must be paired with an [`Keyspace::unwatch`].
    fn watch(&mut self, key: &[u8]) -> WatchMark;
    /// Whether `key` changed since `mark` was taken, as `EXEC` judges it: written in
    /// any way, or live then and expired or deleted now.
    fn watch_broken(&mut self, key: &[u8], mark: WatchMark) -> bool;
    /// Ends one [`Keyspace::watch`] of `key`.
    fn unwatch(&mut self, key: &[u8]);
}
