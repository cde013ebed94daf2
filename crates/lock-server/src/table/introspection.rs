//! `COMMAND`, `COMMAND COUNT|INFO|DOCS|LIST`: the server's command table as the Redis
//! version it answers as describes its own. Names, arity and key positions come from
//! [`TABLE`]; flags and ACL categories are Redis's own descriptions of the same commands
//! ([`redis_commands`](super::redis_commands), from 7.0, and [`CHANGED`] since);
//! subcommands are those this server runs. Tips, key specifications and docs are left
//! empty.

use lock_core::{RedisVersion, Value};
use lock_memory::glob_match;

use super::redis_commands::{DESCRIBED, Described};
use super::{Command, Flags, Kind, TABLE, named_in};
use crate::protocol::args::{SYNTAX_ERROR, wrong_arity};
use crate::state::stats::StatName;

fn status(text: &str) -> Value {
    Value::Status(text.into())
}

/// The subcommands this server runs, by container command.
const SUBCOMMANDS: &[(&str, &[&str])] = &[
    (
        "client",
        &[
            "getname", "help", "id", "info", "kill", "list", "no-evict", "reply", "setinfo",
            "setname", "unblock",
        ],
    ),
    (
        "cluster",
        &["info", "keyslot", "myid", "nodes", "shards", "slots"],
    ),
    ("command", &["count", "docs", "info", "list"]),
    ("config", &["get", "resetstat", "rewrite", "set"]),
    (
        "object",
        &["encoding", "freq", "help", "idletime", "refcount"],
    ),
    ("pubsub", &["channels", "help", "numpat", "numsub"]),
    (
        "memory",
        &["doctor", "help", "malloc-stats", "purge", "stats", "usage"],
    ),
    (
        "function",
        &["delete", "flush", "kill", "list", "load", "stats"],
    ),
    ("script", &["exists", "flush", "kill", "load"]),
];

/// The descriptions that changed after Redis 7.0, each with the version it is from
/// (read off the `src/commands/*.json` of Redis 7.2 and 7.4, and Valkey 8's COMMAND
/// INFO). A command that scripts may call from some version on also loses its
/// `noscript` flag from that version ([`info`]).
#[rustfmt::skip]
static CHANGED: &[(RedisVersion, Described)] = &[
    (RedisVersion::V7_2, Described { name: "client|setinfo", arity: 4, flags: &["noscript", "loading", "stale"], keys: (0, 0, 0), categories: &["@slow", "@connection"] }),
    (RedisVersion::V7_2, Described { name: "waitaof", arity: 4, flags: &["noscript"], keys: (0, 0, 0), categories: &["@slow", "@connection"] }),
    (RedisVersion::V7_4, Described { name: "wait", arity: 3, flags: &["blocking"], keys: (0, 0, 0), categories: &["@slow", "@blocking", "@connection"] }),
    (RedisVersion::V7_4, Described { name: "waitaof", arity: 4, flags: &["blocking"], keys: (0, 0, 0), categories: &["@slow", "@blocking", "@connection"] }),
];

/// How Redis `version` describes `name` (a command, or `container|sub`).
fn described_in(version: RedisVersion, name: &str) -> Option<&'static Described> {
    let changed = CHANGED
        .iter()
        .rev()
        .find(|(since, described)| *since <= version && described.name == name);
    match changed {
        Some((_, described)) => Some(described),
        None => described(name),
    }
}

/// How Redis 7.0 describes `name` (a command, or `container|sub`).
fn described(name: &str) -> Option<&'static Described> {
    DESCRIBED
        .binary_search_by(|entry| entry.name.cmp(name))
        .ok()
        .map(|index| &DESCRIBED[index])
}

/// The subcommands of `container` this server runs, as Redis `version` describes them
/// (those it has).
fn subcommands(container: &str, version: RedisVersion) -> impl Iterator<Item = &'static Described> {
    SUBCOMMANDS
        .iter()
        .filter(move |(name, _)| *name == container)
        .flat_map(move |(name, subs)| {
            subs.iter()
                .filter_map(move |sub| described_in(version, &format!("{name}|{sub}")))
        })
}

/// Whether Redis tracks a command's keys for client-side caching: it is read-only, and not
/// a pub/sub command. Worked out once per command of the table: a script asks for each
/// of its calls.
pub(crate) fn reads_keys(command: &'static Command) -> bool {
    static READS: std::sync::OnceLock<Vec<bool>> = std::sync::OnceLock::new();
    let looked_up = |name: &str| {
        described(name)
            .is_some_and(|d| d.flags.contains(&"readonly") && !d.flags.contains(&"pubsub"))
    };
    let reads = READS.get_or_init(|| TABLE.iter().map(|c| looked_up(c.name)).collect());
    reads
        .get(usize::from(super::id_of(command).0))
        .copied()
        .unwrap_or_else(|| looked_up(command.name))
}

/// The commands a server answering as `version` has.
fn commands_of(version: RedisVersion) -> impl Iterator<Item = &'static Command> {
    TABLE
        .iter()
        .filter(move |command| command.exists_in(version))
}

/// Every name `COMMAND LIST` gives: the commands, then each one's subcommands.
fn every_name(
    version: RedisVersion,
) -> impl Iterator<Item = (&'static str, Option<&'static Described>)> {
    commands_of(version).flat_map(move |command| {
        std::iter::once((command.name, described_in(version, command.name)))
            .chain(subcommands(command.name, version).map(|sub| (sub.name, Some(sub))))
    })
}

/// Runs `COMMAND [subcommand …]`: its reply depends on its arguments, the table and the
/// version alone.
pub(crate) fn command(args: &[&[u8]], version: RedisVersion) -> Result<Value, String> {
    Ok(command_reply(args, version))
}

fn command_reply(args: &[&[u8]], version: RedisVersion) -> Value {
    let info = |command: &Command| info(command, version);
    let Some(sub) = args.get(1) else {
        return Value::Array(commands_of(version).map(info).collect());
    };
    let sub = String::from_utf8_lossy(sub).to_ascii_lowercase();
    match sub.as_str() {
        "count" if args.len() == 2 => Value::Int(commands_of(version).count() as i64),
        "info" => Value::Array(if args.len() == 2 {
            commands_of(version).map(info).collect()
        } else {
            args[2..]
                .iter()
                .map(|name| info_by_name(name, version))
                .collect()
        }),
        "docs" => {
            let named: Vec<&Command> = if args.len() == 2 {
                commands_of(version).collect()
            } else {
                args[2..]
                    .iter()
                    .filter_map(|name| named_in(version, name))
                    .collect()
            };
            Value::Map(
                named
                    .into_iter()
                    .map(|command| (Value::Data(command.name.into()), Value::Map(Vec::new())))
                    .collect(),
            )
        }
        "list" => match &args[2..] {
            [] => names(version, |_, _| true),
            [filter, by, value] if filter.eq_ignore_ascii_case(b"filterby") => {
                let value = value.to_ascii_lowercase();
                match by.to_ascii_lowercase().as_slice() {
                    b"pattern" => names(version, |name, _| glob_match(&value, name.as_bytes())),
                    b"aclcat" => {
                        let category = [b"@".as_slice(), &value].concat();
                        names(version, |_, described| {
                            described.is_some_and(|d| {
                                d.categories.iter().any(|c| c.as_bytes() == category)
                            })
                        })
                    }
                    // No modules are loaded.
                    b"module" => Value::Array(Vec::new()),
                    _ => Value::Error(SYNTAX_ERROR.into()),
                }
            }
            _ => Value::Error(SYNTAX_ERROR.into()),
        },
        "count" => wrong_arity("command|count"),
        _ => Value::Error(format!(
            "ERR unknown subcommand '{}'. Try COMMAND HELP.",
            String::from_utf8_lossy(args[1])
        )),
    }
}

fn names(version: RedisVersion, keep: impl Fn(&str, Option<&Described>) -> bool) -> Value {
    Value::Array(
        every_name(version)
            .filter(|(name, described)| keep(name, *described))
            .map(|(name, _)| Value::Data(name.into()))
            .collect(),
    )
}

/// `COMMAND INFO name`: a command, or `container|sub` for a subcommand this server runs.
fn info_by_name(name: &[u8], version: RedisVersion) -> Value {
    let name = String::from_utf8_lossy(name).to_ascii_lowercase();
    match name.split_once('|') {
        None => {
            named_in(version, name.as_bytes()).map_or(Value::Nil, |command| info(command, version))
        }
        Some((container, _)) => subcommands(container, version)
            .find(|sub| sub.name == name)
            .map_or(Value::Nil, sub_info),
    }
}

/// Where a command's keys are: first, last (negative: from the end), step. Commands
/// whose keys depend on their arguments (EVAL, LMPOP…) report 0, 0, 0 and `movablekeys`.
pub(crate) fn key_positions(command: &Command) -> (i64, i64, i64) {
    match command.name {
        "del" | "unlink" | "exists" | "touch" | "mget" | "watch" | "sinter" | "sunion"
        | "sdiff" => (1, -1, 1),
        "sinterstore" | "sunionstore" | "sdiffstore" => (1, -1, 1),
        "mset" | "msetnx" => (1, -1, 2),
        "rename" | "renamenx" | "copy" | "smove" | "lmove" | "rpoplpush" | "blmove"
        | "brpoplpush" | "zrangestore" => (1, 2, 1),
        "blpop" | "brpop" | "bzpopmin" | "bzpopmax" => (1, -2, 1),
        "keys" | "scan" | "randomkey" | "dbsize" | "time" | "publish" | "flushdb" | "lmpop"
        | "blmpop" | "sintercard" | "wait" | "waitaof" | "zunion" | "zinter" | "zdiff"
        | "zmpop" | "bzmpop" | "zintercard" => (0, 0, 0),
        name if CONTAINERS.contains(&name) => (0, 0, 0),
        _ if matches!(command.kind, Kind::Keyspace(_)) => (1, 1, 1),
        _ => (0, 0, 0),
    }
}

/// The name INFO's Commandstats counts a request under: the command's, or for a command
/// made of subcommands `container|sub`, as Redis counts them.
pub(crate) fn stat_name<A: AsRef<[u8]>>(command: &'static Command, args: &[A]) -> StatName {
    match args.get(1) {
        Some(sub) if CONTAINERS.contains(&command.name) => StatName::Subcommand(format!(
            "{}|{}",
            command.name,
            String::from_utf8_lossy(sub.as_ref()).to_ascii_lowercase()
        )),
        _ => StatName::Command(super::id_of(command), command.name),
    }
}

/// Commands made of subcommands: Redis describes them without flags or keys (their
/// subcommands have those).
const CONTAINERS: &[&str] = &[
    "client", "cluster", "command", "config", "function", "memory", "object", "pubsub", "script",
];

/// One command's `COMMAND INFO` entry: Redis's flags and categories for it, or (for this
/// server's own commands) flags from its table.
fn info(command: &Command, version: RedisVersion) -> Value {
    let (first, last, step) = key_positions(command);
    let (mut flags, categories) = match described_in(version, command.name) {
        Some(described) => (described.flags.to_vec(), described.categories.to_vec()),
        None => (own_flags(command), Vec::new()),
    };
    if command.scripts_from.is_some() && !command.refused_in_scripts(version) {
        flags.retain(|flag| *flag != "noscript");
    }
    let subs: Vec<Value> = subcommands(command.name, version).map(sub_info).collect();
    entry(
        command.name,
        command.arity,
        &flags,
        (first, last, step),
        &categories,
        subs,
    )
}

fn sub_info(sub: &Described) -> Value {
    entry(
        sub.name,
        sub.arity,
        sub.flags,
        sub.keys,
        sub.categories,
        Vec::new(),
    )
}

/// Flags of a command Redis does not have (`NXLOCK.FASTFORWARD`), from this server's
/// table.
fn own_flags(command: &Command) -> Vec<&'static str> {
    let mut flags = Vec::new();
    if command.flags.has(Flags::WRITE) {
        flags.push("write");
    } else if matches!(command.kind, Kind::Keyspace(_)) {
        flags.push("readonly");
    }
    if command.flags.has(Flags::NOSCRIPT) {
        flags.push("noscript");
    }
    flags
}

fn entry(
    name: &str,
    arity: i32,
    flags: &[&str],
    (first, last, step): (i64, i64, i64),
    categories: &[&str],
    subcommands: Vec<Value>,
) -> Value {
    Value::Array(vec![
        Value::Data(name.into()),
        Value::Int(i64::from(arity)),
        Value::Set(flags.iter().map(|flag| status(flag)).collect()),
        Value::Int(first),
        Value::Int(last),
        Value::Int(step),
        Value::Set(categories.iter().map(|c| status(c)).collect()),
        Value::Array(Vec::new()),
        Value::Array(Vec::new()),
        Value::Array(subcommands),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the server does with a command follows the same flags Redis reports for it.
    #[test]
    fn behaviour_flags_agree_with_redis_descriptions() {
        let mut wrong = Vec::new();
        for command in TABLE {
            let Some(described) = described_in(command.since, command.name) else {
                assert!(
                    command.name.starts_with("nxlock."),
                    "{} is not Redis's",
                    command.name
                );
                continue;
            };
            // A container's flags are its subcommands'.
            if CONTAINERS.contains(&command.name) {
                continue;
            }
            if described.arity != command.arity {
                wrong.push(format!("{}: arity", command.name));
            }
            for (flag, name) in [
                (Flags::WRITE, "write"),
                (Flags::NOSCRIPT, "noscript"),
                (Flags::BLOCKING, "blocking"),
                (Flags::NO_AUTH, "no_auth"),
            ] {
                // PUBLISH is refused in read-only scripts although Redis marks it
                // pubsub, not write.
                if command.name == "publish" && name == "write" {
                    continue;
                }
                // WAIT and WAITAOF block although Redis 7.0 and 7.2 do not say so (7.4
                // does).
                if matches!(command.name, "wait" | "waitaof") && name == "blocking" {
                    continue;
                }
                if command.flags.has(flag) != described.flags.contains(&name) {
                    wrong.push(format!("{}: {name}", command.name));
                }
            }
        }
        assert!(wrong.is_empty(), "{wrong:?}");
        for (container, subs) in SUBCOMMANDS {
            for sub in *subs {
                assert!(
                    described_in(RedisVersion::V7_4, &format!("{container}|{sub}")).is_some(),
                    "{container}|{sub}"
                );
            }
        }
    }
}
