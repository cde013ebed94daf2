//! `COMMAND`, `COMMAND COUNT|INFO|DOCS|LIST`: the server's command table as Redis 7.0
//! describes its own. Names, arity, flags and key positions come from [`TABLE`]; ACL
//! categories, tips, key specifications and docs are left empty (the double has no ACLs).

use lock_core::Value;
use lock_memory::glob_match;

use super::{Command, Flags, Kind, TABLE, lookup, wrong_arity};

fn status(text: &str) -> Value {
    Value::Status(text.into())
}

/// Runs `COMMAND [subcommand …]`.
pub(crate) fn command(args: &[Vec<u8>]) -> Value {
    let Some(sub) = args.get(1) else {
        return Value::Array(TABLE.iter().map(info).collect());
    };
    let sub = String::from_utf8_lossy(sub).to_ascii_lowercase();
    match sub.as_str() {
        "count" if args.len() == 2 => Value::Int(TABLE.len() as i64),
        "info" => Value::Array(if args.len() == 2 {
            TABLE.iter().map(info).collect()
        } else {
            args[2..]
                .iter()
                .map(|name| lookup(name).map_or(Value::Nil, info))
                .collect()
        }),
        "docs" => {
            let named: Vec<&Command> = if args.len() == 2 {
                TABLE.iter().collect()
            } else {
                args[2..].iter().filter_map(|name| lookup(name)).collect()
            };
            Value::Map(
                named
                    .into_iter()
                    .map(|command| (Value::Data(command.name.into()), Value::Map(Vec::new())))
                    .collect(),
            )
        }
        "list" => match &args[2..] {
            [] => names(|_| true),
            [filter, by, pattern]
                if filter.eq_ignore_ascii_case(b"filterby")
                    && by.eq_ignore_ascii_case(b"pattern") =>
            {
                let pattern = pattern.to_ascii_lowercase();
                names(|name| glob_match(&pattern, name.as_bytes()))
            }
            _ => Value::Error(super::SYNTAX_ERROR.into()),
        },
        "count" => wrong_arity("command|count"),
        _ => Value::Error(format!(
            "ERR unknown subcommand '{}'. Try COMMAND HELP.",
            String::from_utf8_lossy(&args[1])
        )),
    }
}

fn names(keep: impl Fn(&str) -> bool) -> Value {
    Value::Array(
        TABLE
            .iter()
            .filter(|command| keep(command.name))
            .map(|command| Value::Data(command.name.into()))
            .collect(),
    )
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
        | "brpoplpush" => (1, 2, 1),
        "blpop" | "brpop" => (1, -2, 1),
        "keys" | "scan" | "randomkey" | "dbsize" | "time" | "publish" | "flushdb" | "lmpop"
        | "blmpop" | "sintercard" => (0, 0, 0),
        name if CONTAINERS.contains(&name) => (0, 0, 0),
        _ if matches!(command.kind, Kind::Keyspace(_)) => (1, 1, 1),
        _ => (0, 0, 0),
    }
}

fn movable(command: &Command) -> bool {
    matches!(
        command.name,
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "lmpop" | "blmpop" | "sintercard"
    )
}

/// Commands made of subcommands: Redis describes them without flags or keys (their
/// subcommands have those).
const CONTAINERS: &[&str] = &[
    "client", "cluster", "command", "config", "object", "pubsub", "script",
];

/// One command's `COMMAND INFO` entry.
fn info(command: &Command) -> Value {
    let mut flags = Vec::new();
    if CONTAINERS.contains(&command.name) {
        return entry(command, flags);
    }
    // PUBLISH changes nothing stored; TIME and OBJECT read no key's value.
    let reads_nothing = matches!(command.name, "publish" | "time" | "object");
    if command.flags.has(Flags::WRITE) && !reads_nothing {
        flags.push(status("write"));
    } else if matches!(command.kind, Kind::Keyspace(_)) && !reads_nothing {
        flags.push(status("readonly"));
    }
    if command.flags.has(Flags::NOSCRIPT) {
        flags.push(status("noscript"));
    }
    if command.flags.has(Flags::BLOCKING) {
        flags.push(status("blocking"));
    }
    if matches!(command.kind, Kind::PubSub(_)) || command.name == "publish" {
        flags.push(status("pubsub"));
    }
    if command.flags.has(Flags::NO_AUTH) {
        flags.push(status("no_auth"));
    }
    if movable(command) {
        flags.push(status("movablekeys"));
    }
    entry(command, flags)
}

fn entry(command: &Command, flags: Vec<Value>) -> Value {
    let (first, last, step) = key_positions(command);
    Value::Array(vec![
        Value::Data(command.name.into()),
        Value::Int(i64::from(command.arity)),
        Value::Set(flags),
        Value::Int(first),
        Value::Int(last),
        Value::Int(step),
        Value::Set(Vec::new()),
        Value::Array(Vec::new()),
        Value::Array(Vec::new()),
        Value::Array(Vec::new()),
    ])
}
