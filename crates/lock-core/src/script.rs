//! [`Script`]: one atomic multi-step operation, as Lua for servers and as Rust for doubles.

use std::fmt;
use std::sync::Arc;

use crate::{ExpireCondition, Result, SetOptions, SetReply, Value};

/// The commands a native script body may call, run synchronously inside the backend's
/// atomic section. The semantics are those of the [`KvBackend`](crate::KvBackend) method
/// of the same name; `now_ms` is the (frozen) server time of the running script. A store
/// with more commands (a server's) extends this trait with its own.
pub trait ScriptContext {
    /// See [`KvBackend::set`](crate::KvBackend::set).
    fn set(&mut self, key: &[u8], value: &[u8], options: SetOptions) -> Result<SetReply>;
    /// See [`KvBackend::setnx`](crate::KvBackend::setnx).
    fn setnx(&mut self, key: &[u8], value: &[u8]) -> Result<bool>;
    /// See [`KvBackend::get`](crate::KvBackend::get).
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Whether `GET key` would answer exactly `expected`. The default calls
    /// [`ScriptContext::get`]; a store can compare in place and skip the copy.
    fn value_is(&mut self, key: &[u8], expected: &[u8]) -> Result<bool> {
        Ok(self.get(key)?.as_deref() == Some(expected))
    }
    /// See [`KvBackend::getset`](crate::KvBackend::getset).
    fn getset(&mut self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>>;
    /// See [`KvBackend::del`](crate::KvBackend::del).
    fn del(&mut self, keys: &[&[u8]]) -> Result<i64>;
    /// See [`KvBackend::pexpire`](crate::KvBackend::pexpire).
    fn pexpire(
        &mut self,
        key: &[u8],
        milliseconds: i64,
        condition: ExpireCondition,
    ) -> Result<bool>;
    /// See [`KvBackend::pttl`](crate::KvBackend::pttl).
    fn pttl(&mut self, key: &[u8]) -> Result<i64>;
    /// See [`KvBackend::incr`](crate::KvBackend::incr).
    fn incr(&mut self, key: &[u8]) -> Result<i64>;
    /// `PUBLISH channel message` from inside the script: how many subscriptions received it.
    fn publish(&mut self, channel: &[u8], message: &[u8]) -> Result<i64> {
        let _ = (channel, message);
        Err(not_in_this_store("PUBLISH"))
    }
    /// Server time in Unix milliseconds, constant for the whole script (as in Redis 7).
    fn now_ms(&self) -> i64;
}

/// What the optional [`ScriptContext`] methods answer by default: their command is not
/// available in this store ([`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported)).
fn not_in_this_store(command: &str) -> crate::Error {
    crate::Error::new(
        crate::ErrorKind::Unsupported,
        format!("ERR this store does not implement {command}"),
    )
}

/// The Rust body of a script: `(store, KEYS, ARGV) -> reply`.
pub type NativeScript =
    dyn Fn(&mut dyn ScriptContext, &[&[u8]], &[&[u8]]) -> Result<Value> + Send + Sync;

/// An atomic operation defined once, in two languages kept side by side.
///
/// A Redis server runs [`Script::lua`] (by SHA1 with EVALSHA, falling back to EVAL); an
/// in-process double runs [`Script::native`] against its store while holding its lock.
/// The two bodies must agree on every input: the differential tests compare them against
/// a real redis-server.
///
/// Define your own the same way:
///
/// ```
/// use lock_core::{Script, Value};
///
/// let get_or_nil = Script::new("get-or-nil", "return redis.call('GET', KEYS[1])")
///     .with_native(|store, keys, _args| {
///         Ok(store.get(keys[0])?.map_or(Value::Nil, Value::Data))
///     });
/// assert_eq!(get_or_nil.sha1().len(), 40);
/// ```
#[derive(Clone)]
pub struct Script {
    name: &'static str,
    lua: Arc<str>,
    sha1: Arc<str>,
    native: Option<Arc<NativeScript>>,
}

impl Script {
    /// A script with only a Lua body (runs on servers, not on native-only doubles).
    pub fn new(name: &'static str, lua: impl Into<Arc<str>>) -> Self {
        let lua = lua.into();
        let sha1 = sha1_smol::Sha1::from(lua.as_bytes())
            .digest()
            .to_string()
            .into();
        Self {
            name,
            lua,
            sha1,
            native: None,
        }
    }

    /// Adds the native body that in-process doubles run.
    pub fn with_native<F>(mut self, native: F) -> Self
    where
        F: Fn(&mut dyn ScriptContext, &[&[u8]], &[&[u8]]) -> Result<Value> + Send + Sync + 'static,
    {
        self.native = Some(Arc::new(native));
        self
    }

    /// A short name for logs and reports.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The Lua source a Redis server runs.
    pub fn lua(&self) -> &str {
        &self.lua
    }

    /// Lowercase hex SHA1 of the Lua source, as EVALSHA and `SCRIPT LOAD` use it.
    pub fn sha1(&self) -> &str {
        &self.sha1
    }

    /// The native body, if the script has one.
    pub fn native(&self) -> Option<&NativeScript> {
        self.native.as_deref()
    }
}

impl fmt::Debug for Script {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Script")
            .field("name", &self.name)
            .field("sha1", &self.sha1)
            .field("native", &self.native.is_some())
            .finish()
    }
}

/// `KEYS[index + 1]` or `ARGV[index + 1]` for a native body: a typed script error instead
/// of an index panic when a caller passed too few.
pub fn nth<'a>(list: &[&'a [u8]], index: usize) -> Result<&'a [u8]> {
    list.get(index).copied().ok_or_else(|| {
        crate::Error::new(
            crate::ErrorKind::Script,
            format!("ERR script expected at least {} keys/arguments", index + 1),
        )
    })
}

/// `ARGV[index + 1]` as a decimal integer, the way `tonumber` reads the well-formed
/// arguments nxlock's own scripts are given.
pub fn integer_arg(args: &[&[u8]], index: usize) -> Result<i64> {
    std::str::from_utf8(nth(args, index)?)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| {
            crate::Error::new(
                crate::ErrorKind::Script,
                format!("ERR script argument {} is not an integer", index + 1),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_is_the_one_redis_computes() {
        // redis-cli SCRIPT LOAD "return 1" answers this digest.
        let s = Script::new("one", "return 1");
        assert_eq!(s.sha1(), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
    }
}
