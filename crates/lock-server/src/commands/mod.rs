//! Every command the server knows, in one table ([`TABLE`]), grouped by kind in the files
//! beside this one, as in miniredis. Dispatch, MULTI, pipelines and `redis.call` all look
//! commands up here.

pub(crate) mod admin;
pub(crate) mod caching;
pub(crate) mod client_command;
pub(crate) mod cluster;
pub(crate) mod config_command;
pub(crate) mod connection;
pub(crate) mod dispatch;
pub(crate) mod expiry;
pub(crate) mod hashes;
pub(crate) mod info;
pub(crate) mod introspection;
pub(crate) mod keys;
pub(crate) mod keyspace;
pub(crate) mod lists;
pub(crate) mod numbers;
pub(crate) mod pubsub;
pub(crate) mod pubsub_command;
pub(crate) mod redis_commands;
pub(crate) mod scripting;
pub(crate) mod sets;
pub(crate) mod sorted_sets;
pub(crate) mod strings;
pub(crate) mod transaction;
pub(crate) mod values;

use std::collections::HashMap;
use std::sync::LazyLock;

use lock_core::Value;
use lock_memory::Keyspace;

use crate::config::Limits;
use crate::reply::Protocol;

use admin::Admin as A;
use connection::Connection as S;
use pubsub::PubSub as P;
use scripting::Scripting as E;
use transaction::Transaction as T;

/// A command that runs inside a database's atomic section, on its keyspace: from a
/// client, a pipeline step, EXEC or `redis.call`. `Err` is the error reply's text.
pub(crate) type KeyspaceFn = fn(&mut dyn Keyspace, &[&[u8]], Context) -> Result<Value, String>;

/// What a keyspace command knows besides its arguments.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Context {
    /// The caller's protocol: as in Redis, a few replies differ in shape between RESP2
    /// and RESP3.
    pub(crate) protocol: Protocol,
    /// The encoding thresholds (`CONFIG SET hash-max-listpack-entries`…).
    pub(crate) limits: Limits,
    /// The caller's database (`SELECT`).
    pub(crate) db: usize,
    /// Whether the server holds to Redis Cluster's rules (scripts check their commands).
    pub(crate) cluster: bool,
}

/// A command whose reply depends on its arguments alone (PING, ECHO).
pub(crate) type ReplyFn = fn(&[&[u8]]) -> Result<Value, String>;

/// Where a command runs.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    /// On the keyspace, atomically.
    Keyspace(KeyspaceFn),
    /// Anywhere a keyspace command may run, without touching the store (so it never
    /// meets an injected fault).
    Reply(ReplyFn),
    /// On the connection's state ([`connection`]).
    Connection(connection::Connection),
    /// On the whole server ([`admin`]).
    Admin(admin::Admin),
    /// Lua scripts and their cache ([`scripting`]).
    Scripting(scripting::Scripting),
    /// Subscriptions ([`pubsub`]).
    PubSub(pubsub::PubSub),
    /// MULTI/EXEC/DISCARD and WATCH ([`transaction`]).
    Transaction(transaction::Transaction),
}

/// What a command may do, and where it may run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flags(u8);

impl Flags {
    pub(crate) const NONE: Flags = Flags(0);
    /// May change the keyspace (or publish): refused in read-only scripts, and blocked
    /// clients are served after it.
    pub(crate) const WRITE: Flags = Flags(1);
    /// May block the client (BLPOP): answers at once inside MULTI and in scripts.
    pub(crate) const BLOCKING: Flags = Flags(1 << 1);
    /// Refused in scripts with "not allowed" (other commands that do not run on the
    /// keyspace are unknown there).
    pub(crate) const NOSCRIPT: Flags = Flags(1 << 2);
    /// Allowed on a RESP2 connection in subscribed mode.
    pub(crate) const PUBSUB: Flags = Flags(1 << 3);
    /// Allowed before AUTH.
    pub(crate) const NO_AUTH: Flags = Flags(1 << 4);
    /// Acts at once inside MULTI instead of being queued.
    pub(crate) const NO_MULTI: Flags = Flags(1 << 5);

    const fn with(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }

    /// Whether every flag of `other` is set.
    pub(crate) fn has(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
}

/// One command of the table.
#[derive(Debug)]
pub(crate) struct Command {
    /// The lower-case name.
    pub(crate) name: &'static str,
    /// Arguments counting the name: `n` exactly, or at least `-n` (Redis's convention).
    pub(crate) arity: i32,
    pub(crate) flags: Flags,
    pub(crate) kind: Kind,
}

impl Command {
    /// Whether `argc` arguments (the name included) fit the arity.
    pub(crate) fn arity_ok(&self, argc: usize) -> bool {
        let argc = i32::try_from(argc).unwrap_or(i32::MAX);
        if self.arity >= 0 {
            argc == self.arity
        } else {
            argc >= -self.arity
        }
    }

    /// Whether it runs on the keyspace (or needs nothing at all), and so may join a
    /// pipeline step, an atomic EXEC or a script.
    pub(crate) fn on_keyspace(&self) -> bool {
        matches!(self.kind, Kind::Keyspace(_) | Kind::Reply(_))
    }
}

const fn command(name: &'static str, arity: i32, flags: Flags, kind: Kind) -> Command {
    Command {
        name,
        arity,
        flags,
        kind,
    }
}

const fn keyspace(name: &'static str, arity: i32, flags: Flags, run: KeyspaceFn) -> Command {
    command(name, arity, flags, Kind::Keyspace(run))
}

/// The admin command that moves every database's clock forward by `ms` milliseconds
/// (`NXLOCK.FASTFORWARD 30000`), like miniredis's `FastForward`.
pub const FAST_FORWARD: &str = "nxlock.fastforward";

const W: Flags = Flags::WRITE;
const R: Flags = Flags::NONE;
const NS: Flags = Flags::NOSCRIPT;
const WB: Flags = Flags::WRITE.with(Flags::BLOCKING);

/// Every command.
pub(crate) static TABLE: &[Command] = &[
    // Connection.
    command("ping", -1, Flags::PUBSUB, Kind::Reply(connection::ping)),
    command("echo", 2, R, Kind::Reply(connection::echo)),
    command(
        "quit",
        -1,
        NS.with(Flags::PUBSUB)
            .with(Flags::NO_AUTH)
            .with(Flags::NO_MULTI),
        Kind::Connection(S::Quit),
    ),
    command("select", 2, R, Kind::Connection(S::Select)),
    command(
        "auth",
        -2,
        NS.with(Flags::NO_AUTH),
        Kind::Connection(S::Auth),
    ),
    command(
        "hello",
        -1,
        NS.with(Flags::NO_AUTH),
        Kind::Connection(S::Hello),
    ),
    command("client", -2, R, Kind::Connection(S::Client)),
    command(
        "reset",
        1,
        NS.with(Flags::PUBSUB)
            .with(Flags::NO_MULTI)
            .with(Flags::NO_AUTH),
        Kind::Connection(S::Reset),
    ),
    // Server.
    command("info", -1, R, Kind::Admin(A::Info)),
    command("config", -2, R, Kind::Admin(A::Config)),
    command("command", -1, R, Kind::Admin(A::Command)),
    command("cluster", -2, R, Kind::Admin(A::Cluster)),
    command("pubsub", -2, R, Kind::Admin(A::PubSub)),
    command("debug", -2, NS, Kind::Admin(A::Debug)),
    keyspace("dbsize", 1, R, keys::dbsize),
    keyspace("flushdb", -1, W, keys::flushdb),
    command("flushall", -1, W, Kind::Admin(A::FlushAll)),
    keyspace("time", 1, R, keys::time),
    command(FAST_FORWARD, 2, R, Kind::Admin(A::FastForward)),
    // Strings.
    keyspace("get", 2, R, strings::get),
    keyspace("set", -3, W, strings::set),
    keyspace("setnx", 3, W, strings::setnx),
    keyspace("setex", 4, W, strings::setex),
    keyspace("psetex", 4, W, strings::psetex),
    keyspace("getset", 3, W, strings::getset),
    keyspace("getdel", 2, W, strings::getdel),
    keyspace("getex", -2, W, strings::getex),
    keyspace("mget", -2, R, strings::mget),
    keyspace("mset", -3, W, strings::mset),
    keyspace("msetnx", -3, W, strings::msetnx),
    keyspace("incr", 2, W, strings::incr),
    keyspace("incrby", 3, W, strings::incrby),
    keyspace("incrbyfloat", 3, W, strings::incrbyfloat),
    keyspace("decr", 2, W, strings::decr),
    keyspace("decrby", 3, W, strings::decrby),
    keyspace("append", 3, W, strings::append),
    keyspace("strlen", 2, R, strings::strlen),
    keyspace("getrange", 4, R, strings::getrange),
    keyspace("setrange", 4, W, strings::setrange),
    // Keys.
    keyspace("del", -2, W, keys::del),
    keyspace("unlink", -2, W, keys::del),
    keyspace("exists", -2, R, keys::exists),
    keyspace("touch", -2, R, keys::exists),
    keyspace("type", 2, R, keys::key_type),
    keyspace("keys", 2, R, keys::keys),
    keyspace("rename", 3, W, keys::rename),
    keyspace("renamenx", 3, W, keys::renamenx),
    keyspace("copy", -3, W, keys::copy),
    keyspace("randomkey", 1, R, keys::randomkey),
    keyspace("scan", -2, R, keys::scan),
    keyspace("object", -2, R, keys::object),
    // Expiry.
    keyspace("expire", -3, W, expiry::expire),
    keyspace("pexpire", -3, W, expiry::pexpire),
    keyspace("expireat", -3, W, expiry::expireat),
    keyspace("pexpireat", -3, W, expiry::pexpireat),
    keyspace("ttl", 2, R, expiry::ttl),
    keyspace("pttl", 2, R, expiry::pttl),
    keyspace("expiretime", 2, R, expiry::expiretime),
    keyspace("pexpiretime", 2, R, expiry::pexpiretime),
    keyspace("persist", 2, W, expiry::persist),
    // Lists.
    keyspace("lpush", -3, W, lists::lpush),
    keyspace("rpush", -3, W, lists::rpush),
    keyspace("lpushx", -3, W, lists::lpushx),
    keyspace("rpushx", -3, W, lists::rpushx),
    keyspace("lpop", -2, W, lists::lpop),
    keyspace("rpop", -2, W, lists::rpop),
    keyspace("llen", 2, R, lists::llen),
    keyspace("lrange", 4, R, lists::lrange),
    keyspace("lindex", 3, R, lists::lindex),
    keyspace("lset", 4, W, lists::lset),
    keyspace("ltrim", 4, W, lists::ltrim),
    keyspace("lrem", 4, W, lists::lrem),
    keyspace("linsert", 5, W, lists::linsert),
    keyspace("lpos", -3, R, lists::lpos),
    keyspace("lmove", 5, W, lists::lmove),
    keyspace("rpoplpush", 3, W, lists::rpoplpush),
    keyspace("lmpop", -4, W, lists::lmpop),
    keyspace("blpop", -3, WB.with(NS), lists::blpop),
    keyspace("brpop", -3, WB.with(NS), lists::brpop),
    keyspace("blmove", 6, WB.with(NS), lists::blmove),
    keyspace("brpoplpush", 4, WB.with(NS), lists::brpoplpush),
    // Unlike the others, BLMPOP may run in a script, where it does not wait.
    keyspace("blmpop", -5, WB, lists::blmpop),
    // Hashes.
    keyspace("hset", -4, W, hashes::hset),
    keyspace("hmset", -4, W, hashes::hmset),
    keyspace("hsetnx", 4, W, hashes::hsetnx),
    keyspace("hget", 3, R, hashes::hget),
    keyspace("hmget", -3, R, hashes::hmget),
    keyspace("hdel", -3, W, hashes::hdel),
    keyspace("hexists", 3, R, hashes::hexists),
    keyspace("hlen", 2, R, hashes::hlen),
    keyspace("hstrlen", 3, R, hashes::hstrlen),
    keyspace("hgetall", 2, R, hashes::hgetall),
    keyspace("hkeys", 2, R, hashes::hkeys),
    keyspace("hvals", 2, R, hashes::hvals),
    keyspace("hincrby", 4, W, hashes::hincrby),
    keyspace("hincrbyfloat", 4, W, hashes::hincrbyfloat),
    keyspace("hscan", -3, R, keys::hscan),
    // Sets.
    keyspace("sadd", -3, W, sets::sadd),
    keyspace("srem", -3, W, sets::srem),
    keyspace("sismember", 3, R, sets::sismember),
    keyspace("smismember", -3, R, sets::smismember),
    keyspace("smembers", 2, R, sets::smembers),
    keyspace("scard", 2, R, sets::scard),
    keyspace("smove", 4, W, sets::smove),
    keyspace("sinter", -2, R, sets::sinter),
    keyspace("sunion", -2, R, sets::sunion),
    keyspace("sdiff", -2, R, sets::sdiff),
    keyspace("sinterstore", -3, W, sets::sinterstore),
    keyspace("sunionstore", -3, W, sets::sunionstore),
    keyspace("sdiffstore", -3, W, sets::sdiffstore),
    keyspace("sintercard", -3, R, sets::sintercard),
    keyspace("spop", -2, W, sets::spop),
    keyspace("srandmember", -2, R, sets::srandmember),
    keyspace("sscan", -3, R, keys::sscan),
    // Sorted sets.
    keyspace("zadd", -4, W, sorted_sets::zadd),
    keyspace("zincrby", 4, W, sorted_sets::zincrby),
    keyspace("zrem", -3, W, sorted_sets::zrem),
    keyspace("zscore", 3, R, sorted_sets::zscore),
    keyspace("zmscore", -3, R, sorted_sets::zmscore),
    keyspace("zcard", 2, R, sorted_sets::zcard),
    keyspace("zcount", 4, R, sorted_sets::zcount),
    keyspace("zlexcount", 4, R, sorted_sets::zlexcount),
    keyspace("zrank", 3, R, sorted_sets::zrank),
    keyspace("zrevrank", 3, R, sorted_sets::zrevrank),
    keyspace("zrange", -4, R, sorted_sets::zrange),
    keyspace("zrevrange", -4, R, sorted_sets::zrevrange),
    keyspace("zrangebyscore", -4, R, sorted_sets::zrangebyscore),
    keyspace("zrevrangebyscore", -4, R, sorted_sets::zrevrangebyscore),
    keyspace("zrangebylex", -4, R, sorted_sets::zrangebylex),
    keyspace("zrevrangebylex", -4, R, sorted_sets::zrevrangebylex),
    keyspace("zremrangebyscore", 4, W, sorted_sets::zremrangebyscore),
    keyspace("zremrangebyrank", 4, W, sorted_sets::zremrangebyrank),
    keyspace("zremrangebylex", 4, W, sorted_sets::zremrangebylex),
    keyspace("zpopmin", -2, W, sorted_sets::zpopmin),
    keyspace("zpopmax", -2, W, sorted_sets::zpopmax),
    keyspace("zscan", -3, R, keys::zscan),
    // Pub/sub.
    keyspace("publish", 3, W, pubsub::publish),
    command(
        "subscribe",
        -2,
        NS.with(Flags::PUBSUB),
        Kind::PubSub(P::Subscribe),
    ),
    command(
        "unsubscribe",
        -1,
        NS.with(Flags::PUBSUB),
        Kind::PubSub(P::Unsubscribe),
    ),
    command(
        "psubscribe",
        -2,
        NS.with(Flags::PUBSUB),
        Kind::PubSub(P::PSubscribe),
    ),
    command(
        "punsubscribe",
        -1,
        NS.with(Flags::PUBSUB),
        Kind::PubSub(P::PUnsubscribe),
    ),
    // Scripting.
    command("eval", -3, NS, Kind::Scripting(E::Eval)),
    command("evalsha", -3, NS, Kind::Scripting(E::EvalSha)),
    command("eval_ro", -3, NS, Kind::Scripting(E::EvalRo)),
    command("evalsha_ro", -3, NS, Kind::Scripting(E::EvalShaRo)),
    command("script", -2, NS, Kind::Scripting(E::Script)),
    // Transactions.
    command(
        "multi",
        1,
        NS.with(Flags::NO_MULTI),
        Kind::Transaction(T::Multi),
    ),
    command(
        "exec",
        1,
        NS.with(Flags::NO_MULTI),
        Kind::Transaction(T::Exec),
    ),
    command(
        "discard",
        1,
        NS.with(Flags::NO_MULTI),
        Kind::Transaction(T::Discard),
    ),
    command(
        "watch",
        -2,
        NS.with(Flags::NO_MULTI),
        Kind::Transaction(T::Watch),
    ),
    command("unwatch", 1, NS, Kind::Transaction(T::Unwatch)),
];

/// The table by lower-case name.
static BY_NAME: LazyLock<HashMap<&'static [u8], &'static Command>> = LazyLock::new(|| {
    TABLE
        .iter()
        .map(|command| (command.name.as_bytes(), command))
        .collect()
});

/// The command named `name`, in any case.
pub(crate) fn lookup(name: &[u8]) -> Option<&'static Command> {
    // Every request looks its name up: lower-case it on the stack, not the heap.
    let mut lower = [0u8; 32];
    let lower = lower.get_mut(..name.len())?;
    for (to, from) in lower.iter_mut().zip(name) {
        *to = from.to_ascii_lowercase();
    }
    BY_NAME.get(&*lower).copied()
}

/// `ERR wrong number of arguments for '<name>' command`.
pub(crate) fn wrong_arity(name: &str) -> Value {
    Value::Error(wrong_arity_text(name))
}

/// The text of [`wrong_arity`].
pub(crate) fn wrong_arity_text(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
}

/// Redis's reply to a command it does not know.
pub(crate) fn unknown_command(args: &[Vec<u8>]) -> Value {
    let shown = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes);
        text.chars().take(128).collect::<String>()
    };
    let mut text = format!(
        "ERR unknown command '{}', with args beginning with: ",
        shown(&args[0])
    );
    for arg in &args[1..] {
        text.push_str(&format!("'{}' ", shown(arg)));
    }
    Value::Error(text)
}

/// Redis's `string2ll`: an optional minus and digits without a leading zero, nothing
/// else, no overflow. Read digit by digit: every request's lengths go through here.
pub(crate) fn integer(bytes: &[u8]) -> Option<i64> {
    let (negative, digits) = match bytes {
        [b'0'] => return Some(0),
        [b'-', rest @ ..] => (true, rest),
        _ => (false, bytes),
    };
    if digits.is_empty() || digits[0] == b'0' {
        return None;
    }
    // Accumulated negatively so that i64::MIN fits.
    let mut value: i64 = 0;
    for &byte in digits {
        let digit = i64::from(byte.wrapping_sub(b'0'));
        if digit > 9 {
            return None;
        }
        value = value.checked_mul(10)?.checked_sub(digit)?;
    }
    if negative {
        Some(value)
    } else {
        value.checked_neg()
    }
}

/// The optional count of LPOP, SPOP, ZPOPMIN and the like: a non-negative integer.
pub(crate) fn pop_count(arg: Option<&&[u8]>) -> Result<Option<usize>, String> {
    arg.map(|count| {
        integer(count)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| "ERR value is out of range, must be positive".to_string())
    })
    .transpose()
}

/// The most elements a reply may hold when a command's arguments, not the data, choose
/// its size (SRANDMEMBER with a negative count): Redis would stream such a reply for as
/// long as its memory lasts; this server builds replies whole, so it refuses larger ones.
pub(crate) const MAX_REPLY_ELEMENTS: usize = 1 << 20;

/// The refusal of a reply larger than [`MAX_REPLY_ELEMENTS`].
pub(crate) fn reply_too_large() -> String {
    format!("ERR nxlock serve refuses to build a reply of more than {MAX_REPLY_ELEMENTS} elements")
}

pub(crate) const NOT_AN_INTEGER: &str = "ERR value is not an integer or out of range";
pub(crate) const SYNTAX_ERROR: &str = "ERR syntax error";

/// `+OK`.
pub(crate) fn ok() -> Value {
    Value::Status("OK".into())
}

/// A bulk string, or nil.
pub(crate) fn bulk(value: Option<Vec<u8>>) -> Value {
    value.map_or(Value::Nil, Value::Data)
}

/// A store error as its reply text.
pub(crate) fn text(error: lock_core::Error) -> String {
    error.message().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_read_like_string2ll() {
        for (text, expected) in [
            ("0", Some(0)),
            ("42", Some(42)),
            ("-7", Some(-7)),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775808", None),
            ("-0", None),
            ("01", None),
            ("+1", None),
            ("", None),
            ("-", None),
            (" 1", None),
            ("1a", None),
        ] {
            assert_eq!(integer(text.as_bytes()), expected, "{text:?}");
        }
    }

    #[test]
    fn names_are_found_in_any_case_and_once() {
        assert_eq!(lookup(b"GeT").map(|c| c.name), Some("get"));
        assert!(lookup(b"nope").is_none());
        assert!(lookup(&[b'a'; 64]).is_none());
        let mut names: Vec<_> = TABLE.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TABLE.len(), "a name appears twice");
    }
}
