//! The fifth layer: every command the server knows, in one table ([`TABLE`]), with what
//! each may do and which code runs it. The code is in the command bodies below
//! ([`crate::commands`]); the runners above ([`crate::run`]) find a command here once per
//! request and carry its [`CommandId`] from then on. [`introspection`] answers COMMAND
//! from this table, and [`command_keys`] finds the keys of a command where its key positions say.

pub(crate) mod command_keys;
pub(crate) mod introspection;
pub(crate) mod redis_commands;
pub(crate) mod subcommands;

use std::collections::HashMap;
use std::sync::LazyLock;

use lock_core::{RedisVersion, Value};
use lock_memory::Keyspace;

use crate::commands::admin::{self, Admin as A};
use crate::commands::connection::{self, Connection as S};
use crate::commands::markers::{self, MarkerCommand as M};
use crate::commands::pubsub::{self, PubSub as P};
use crate::commands::{
    bits, expiry, hashes, keys, lists, memory, replication, sets, sorted_set_ops, sorted_set_pops,
    sorted_sets, strings,
};
use crate::protocol::request::CommandId;
use crate::state::context::Context;

/// A command that runs inside a database's atomic section, on its keyspace: from a
/// client, a pipeline step, EXEC or `redis.call`. `Err` is the error reply's text.
pub(crate) type KeyspaceFn = fn(&mut dyn Keyspace, &[&[u8]], Context) -> Result<Value, String>;

/// A command whose reply depends on its arguments alone (PING, ECHO), and on the Redis
/// version the server answers as (COMMAND).
pub(crate) type ReplyFn = fn(&[&[u8]], RedisVersion) -> Result<Value, String>;

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
    /// Lua scripts and their cache.
    Scripting(Scripting),
    /// Subscriptions ([`pubsub`]).
    PubSub(pubsub::PubSub),
    /// MULTI/EXEC/DISCARD and WATCH.
    Transaction(Transaction),
    /// What an explored client says it is doing ([`markers`]).
    Marker(markers::MarkerCommand),
}

/// The scripting commands (run by [`crate::run::scripting`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scripting {
    Eval,
    EvalSha,
    EvalRo,
    EvalShaRo,
    Script,
    /// FUNCTION and its subcommands.
    Function,
    FCall,
    FCallRo,
}

/// The transaction commands (run by [`crate::run::transaction`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transaction {
    Multi,
    Exec,
    Discard,
    Watch,
    Unwatch,
}

use Scripting as E;
use Transaction as T;

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
    /// The first Redis version that has it.
    pub(crate) since: RedisVersion,
    /// From which version scripts may call it, where that changed (`WAIT`: 7.2); before,
    /// it is refused as [`Flags::NOSCRIPT`] commands are. `None`: its flags decide.
    pub(crate) scripts_from: Option<RedisVersion>,
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

    /// Whether a server answering as `version` has it.
    pub(crate) fn exists_in(&self, version: RedisVersion) -> bool {
        version >= self.since
    }

    /// Whether scripts of a server answering as `version` are refused it ("This Redis
    /// command is not allowed from script").
    pub(crate) fn refused_in_scripts(&self, version: RedisVersion) -> bool {
        match self.scripts_from {
            Some(from) => version < from,
            None => self.flags.has(Flags::NOSCRIPT),
        }
    }

    /// The same command, new in `version`.
    const fn since(self, version: RedisVersion) -> Command {
        Command {
            since: version,
            ..self
        }
    }

    /// The same command, which scripts may call from `version` on.
    const fn in_scripts_from(self, version: RedisVersion) -> Command {
        Command {
            scripts_from: Some(version),
            ..self
        }
    }

    /// Whether it runs on the keyspace (or needs nothing at all), and so may join a
    /// pipeline step, an atomic EXEC or a script.
    pub(crate) fn on_keyspace(&self) -> bool {
        matches!(self.kind, Kind::Keyspace(_) | Kind::Reply(_))
    }
}

const fn entry(name: &'static str, arity: i32, flags: Flags, kind: Kind) -> Command {
    Command {
        name,
        arity,
        flags,
        kind,
        since: RedisVersion::V7_0,
        scripts_from: None,
    }
}

const fn keyspace(name: &'static str, arity: i32, flags: Flags, run: KeyspaceFn) -> Command {
    entry(name, arity, flags, Kind::Keyspace(run))
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
    entry("ping", -1, Flags::PUBSUB, Kind::Reply(connection::ping)),
    entry("echo", 2, R, Kind::Reply(connection::echo)),
    entry(
        "quit",
        -1,
        NS.with(Flags::PUBSUB)
            .with(Flags::NO_AUTH)
            .with(Flags::NO_MULTI),
        Kind::Connection(S::Quit),
    ),
    entry("select", 2, R, Kind::Connection(S::Select)),
    entry(
        "auth",
        -2,
        NS.with(Flags::NO_AUTH),
        Kind::Connection(S::Auth),
    ),
    entry(
        "hello",
        -1,
        NS.with(Flags::NO_AUTH),
        Kind::Connection(S::Hello),
    ),
    entry("client", -2, R, Kind::Connection(S::Client)),
    entry(
        "reset",
        1,
        NS.with(Flags::PUBSUB)
            .with(Flags::NO_MULTI)
            .with(Flags::NO_AUTH),
        Kind::Connection(S::Reset),
    ),
    // Server.
    entry("info", -1, R, Kind::Admin(A::Info)),
    entry("config", -2, R, Kind::Admin(A::Config)),
    entry("command", -1, R, Kind::Reply(introspection::command)),
    entry("cluster", -2, R, Kind::Admin(A::Cluster)),
    entry("pubsub", -2, R, Kind::Admin(A::PubSub)),
    entry("debug", -2, NS, Kind::Admin(A::Debug)),
    keyspace("dbsize", 1, R, keys::dbsize),
    keyspace("flushdb", -1, W, keys::flushdb),
    entry("flushall", -1, W, Kind::Admin(A::FlushAll)),
    keyspace("time", 1, R, keys::time),
    entry(FAST_FORWARD, 2, R, Kind::Admin(A::FastForward)),
    entry("nxlock.fault", -2, NS, Kind::Admin(A::Fault)),
    // What an explored client says it does; accepted and ignored by a server that
    // explores nothing.
    entry("nxlock.enter", -2, NS, Kind::Marker(M::Enter)),
    entry("nxlock.extend", 4, NS, Kind::Marker(M::Extend)),
    entry("nxlock.exit", 2, NS, Kind::Marker(M::Exit)),
    entry("nxlock.holds", 3, NS, Kind::Marker(M::Holds)),
    entry("nxlock.write", 3, NS, Kind::Marker(M::Write)),
    entry("nxlock.incr", 2, NS, Kind::Marker(M::Increment)),
    entry("nxlock.done", 1, NS, Kind::Marker(M::Done)),
    entry("nxlock.failed", 1, NS, Kind::Marker(M::Failed)),
    entry("nxlock.permanent", 2, NS, Kind::Marker(M::Permanent)),
    entry("nxlock.counter", 3, NS, Kind::Marker(M::Counter)),
    // Replication: the server has no replicas and no AOF, so these answer at once or
    // when their timeout ends. Redis 7.0 refuses WAIT in scripts; 7.2 added WAITAOF, which
    // scripts may call from 7.4.
    keyspace(
        "wait",
        3,
        R.with(Flags::BLOCKING).with(NS),
        replication::wait,
    )
    .in_scripts_from(RedisVersion::V7_2),
    keyspace(
        "waitaof",
        4,
        R.with(Flags::BLOCKING).with(NS),
        replication::waitaof,
    )
    .since(RedisVersion::V7_2)
    .in_scripts_from(RedisVersion::V7_4),
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
    keyspace("substr", 4, R, strings::getrange),
    keyspace("setrange", 4, W, strings::setrange),
    keyspace("getbit", 3, R, bits::getbit),
    keyspace("setbit", 4, W, bits::setbit),
    keyspace("bitcount", -2, R, bits::bitcount),
    keyspace("bitpos", -3, R, bits::bitpos),
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
    keyspace("memory", -2, R, memory::memory),
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
    // Scripts may call these from Redis 7.2 on, where they do not wait.
    keyspace("blpop", -3, WB.with(NS), lists::blpop).in_scripts_from(RedisVersion::V7_2),
    keyspace("brpop", -3, WB.with(NS), lists::brpop).in_scripts_from(RedisVersion::V7_2),
    keyspace("blmove", 6, WB.with(NS), lists::blmove).in_scripts_from(RedisVersion::V7_2),
    keyspace("brpoplpush", 4, WB.with(NS), lists::brpoplpush).in_scripts_from(RedisVersion::V7_2),
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
    keyspace("hrandfield", -2, R, hashes::hrandfield),
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
    keyspace("zrangestore", -5, W, sorted_sets::zrangestore),
    keyspace("zmpop", -4, W, sorted_set_pops::zmpop),
    keyspace("bzpopmin", -3, WB.with(NS), sorted_set_pops::bzpopmin)
        .in_scripts_from(RedisVersion::V7_2),
    keyspace("bzpopmax", -3, WB.with(NS), sorted_set_pops::bzpopmax)
        .in_scripts_from(RedisVersion::V7_2),
    keyspace("bzmpop", -5, WB, sorted_set_pops::bzmpop),
    keyspace("zrandmember", -2, R, sorted_sets::zrandmember),
    keyspace("zunionstore", -4, W, sorted_set_ops::zunionstore),
    keyspace("zinterstore", -4, W, sorted_set_ops::zinterstore),
    keyspace("zdiffstore", -4, W, sorted_set_ops::zdiffstore),
    keyspace("zunion", -3, R, sorted_set_ops::zunion),
    keyspace("zinter", -3, R, sorted_set_ops::zinter),
    keyspace("zdiff", -3, R, sorted_set_ops::zdiff),
    keyspace("zintercard", -3, R, sorted_set_ops::zintercard),
    keyspace("zscan", -3, R, keys::zscan),
    // Pub/sub.
    keyspace("publish", 3, W, pubsub::publish),
    entry(
        "subscribe",
        -2,
        NS.with(Flags::PUBSUB),
        Kind::PubSub(P::Subscribe),
    ),
    entry(
        "unsubscribe",
        -1,
        NS.with(Flags::PUBSUB),
        Kind::PubSub(P::Unsubscribe),
    ),
    entry(
        "psubscribe",
        -2,
        NS.with(Flags::PUBSUB),
        Kind::PubSub(P::PSubscribe),
    ),
    entry(
        "punsubscribe",
        -1,
        NS.with(Flags::PUBSUB),
        Kind::PubSub(P::PUnsubscribe),
    ),
    // Scripting.
    entry("eval", -3, NS, Kind::Scripting(E::Eval)),
    entry("evalsha", -3, NS, Kind::Scripting(E::EvalSha)),
    entry("eval_ro", -3, NS, Kind::Scripting(E::EvalRo)),
    entry("evalsha_ro", -3, NS, Kind::Scripting(E::EvalShaRo)),
    entry("script", -2, NS, Kind::Scripting(E::Script)),
    entry("function", -2, NS, Kind::Scripting(E::Function)),
    entry("fcall", -3, NS, Kind::Scripting(E::FCall)),
    entry("fcall_ro", -3, NS, Kind::Scripting(E::FCallRo)),
    // Transactions.
    entry(
        "multi",
        1,
        NS.with(Flags::NO_MULTI),
        Kind::Transaction(T::Multi),
    ),
    entry(
        "exec",
        1,
        NS.with(Flags::NO_MULTI),
        Kind::Transaction(T::Exec),
    ),
    entry(
        "discard",
        1,
        NS.with(Flags::NO_MULTI),
        Kind::Transaction(T::Discard),
    ),
    entry(
        "watch",
        -2,
        NS.with(Flags::NO_MULTI),
        Kind::Transaction(T::Watch),
    ),
    entry("unwatch", 1, NS, Kind::Transaction(T::Unwatch)),
];

/// The table's index by lower-case name.
static BY_NAME: LazyLock<HashMap<&'static [u8], CommandId>> = LazyLock::new(|| {
    TABLE
        .iter()
        .enumerate()
        .map(|(index, command)| {
            let index = u16::try_from(index).expect("the table has fewer than 65536 commands");
            (command.name.as_bytes(), CommandId(index))
        })
        .collect()
});

/// The command named `name`, in any case, if a server answering as `version` has it:
/// the one lookup of a request.
pub(crate) fn lookup_in(version: RedisVersion, name: &[u8]) -> Option<CommandId> {
    lookup(name).filter(|id| command(*id).exists_in(version))
}

/// The command named `name`, in any case, of every version.
pub(crate) fn lookup(name: &[u8]) -> Option<CommandId> {
    // Every request looks its name up: lower-case it on the stack, not the heap.
    let mut lower = [0u8; 32];
    let lower = lower.get_mut(..name.len())?;
    for (to, from) in lower.iter_mut().zip(name) {
        *to = from.to_ascii_lowercase();
    }
    BY_NAME.get(&*lower).copied()
}

/// The command at `id`, found by [`lookup`].
pub(crate) fn command(id: CommandId) -> &'static Command {
    &TABLE[usize::from(id.0)]
}

/// The id of one of the table's commands, found by its place in the table.
pub(crate) fn id_of(command: &'static Command) -> CommandId {
    let offset = (command as *const Command as usize).wrapping_sub(TABLE.as_ptr() as usize);
    let index = offset / std::mem::size_of::<Command>();
    debug_assert!(
        std::ptr::eq(&TABLE[index], command),
        "a command of the table"
    );
    CommandId(u16::try_from(index).unwrap_or(u16::MAX))
}

/// The command named `name`, in any case, if a server answering as `version` has it.
pub(crate) fn named_in(version: RedisVersion, name: &[u8]) -> Option<&'static Command> {
    lookup_in(version, name).map(command)
}

/// Whether a server answering as `version` knows a command named `name`
/// (`redis.acl_check_cmd`).
pub(crate) fn knows(version: RedisVersion, name: &[u8]) -> bool {
    lookup_in(version, name).is_some()
}

/// Whether `name` is one of this server's own `NXLOCK.*` commands (or would be).
pub(crate) fn is_nxlock(name: &[u8]) -> bool {
    name.len() > 7 && name[..7].eq_ignore_ascii_case(b"nxlock.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_in_any_case_and_once() {
        assert_eq!(lookup(b"GeT").map(|id| command(id).name), Some("get"));
        assert!(lookup(b"nope").is_none());
        assert!(lookup(&[b'a'; 64]).is_none());
        let mut names: Vec<_> = TABLE.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TABLE.len(), "a name appears twice");
    }
}
