//! Strings, keys and expiry: the commands that touch the keyspace. Each runs inside the
//! store's atomic section, from the network or from `redis.call`.

use lock_core::{ExpireCondition, ScriptContext, SetOptions, SetReply, Value};

use super::{NOT_AN_INTEGER, SYNTAX_ERROR, arity_ok, integer, wrong_arity};

/// Every keyspace command with its arity, by lower-case name.
const COMMANDS: &super::Table = &[
    ("get", 2),
    ("set", -3),
    ("setnx", 3),
    ("getset", 3),
    ("getdel", 2),
    ("del", -2),
    ("exists", -2),
    ("incr", 2),
    ("incrby", 3),
    ("decr", 2),
    ("decrby", 3),
    ("expire", -3),
    ("pexpire", -3),
    ("expireat", -3),
    ("pexpireat", -3),
    ("ttl", 2),
    ("pttl", 2),
    ("persist", 2),
    ("type", 2),
    ("publish", 3),
];

/// The lower-case name of a keyspace command, if `name` is one.
pub(crate) fn lookup(name: &[u8]) -> Option<&'static str> {
    super::find(COMMANDS, name).map(|(known, _)| known)
}

/// The arity of the keyspace command `name` (as returned by [`lookup`]).
pub(crate) fn arity(name: &str) -> i32 {
    super::find(COMMANDS, name.as_bytes()).map_or(0, |(_, arity)| arity)
}

/// Whether `name` may change the keyspace (or publish): refused in read-only scripts.
pub(crate) fn writes(name: &str) -> bool {
    !matches!(name, "get" | "exists" | "ttl" | "pttl" | "type")
}

/// Runs one keyspace command (`args[0]` is its name) and returns its reply.
pub(crate) fn run(store: &mut dyn ScriptContext, args: &[&[u8]]) -> Value {
    let Some(name) = args.first().and_then(|n| lookup(n)) else {
        return Value::Error("ERR unknown command".into());
    };
    if !arity_ok(arity(name), args.len()) {
        return wrong_arity(name);
    }
    match execute(store, name, args) {
        Ok(value) => value,
        Err(error) => Value::Error(error),
    }
}

fn ok() -> Value {
    Value::Status("OK".into())
}

fn bulk(value: Option<Vec<u8>>) -> Value {
    value.map_or(Value::Nil, Value::Data)
}

fn execute(store: &mut dyn ScriptContext, name: &str, args: &[&[u8]]) -> Result<Value, String> {
    let key = args[1];
    let e = |error: lock_core::Error| error.message().to_string();
    Ok(match name {
        "get" => bulk(store.get(key).map_err(e)?),
        "set" => set(store, args)?,
        "setnx" => Value::Int(store.setnx(key, args[2]).map_err(e)?.into()),
        "getset" => bulk(store.getset(key, args[2]).map_err(e)?),
        "getdel" => bulk(store.getdel(key).map_err(e)?),
        "del" => Value::Int(store.del(&args[1..]).map_err(e)?),
        "exists" => Value::Int(store.exists(&args[1..]).map_err(e)?),
        "incr" => Value::Int(store.incr(key).map_err(e)?),
        "decr" => Value::Int(increment(store, key, -1)?),
        "incrby" | "decrby" => {
            let by = integer(args[2]).ok_or(NOT_AN_INTEGER)?;
            let by = if name == "decrby" {
                by.checked_neg().ok_or("ERR decrement would overflow")?
            } else {
                by
            };
            Value::Int(increment(store, key, by)?)
        }
        "expire" | "pexpire" | "expireat" | "pexpireat" => expire(store, name, args)?,
        "ttl" => Value::Int(store.ttl(key).map_err(e)?),
        "pttl" => Value::Int(store.pttl(key).map_err(e)?),
        "persist" => Value::Int(store.persist(key).map_err(e)?.into()),
        "type" => {
            let kind = if store.exists(&[key]).map_err(e)? == 1 {
                "string"
            } else {
                "none"
            };
            Value::Status(kind.into())
        }
        "publish" => Value::Int(store.publish(key, args[2]).map_err(e)?),
        _ => return Err("ERR unknown command".into()),
    })
}

/// INCRBY/DECR/DECRBY: like INCR, the TTL is kept.
fn increment(store: &mut dyn ScriptContext, key: &[u8], by: i64) -> Result<i64, String> {
    let current = match store.get(key).map_err(|e| e.message().to_string())? {
        None => 0,
        Some(value) => integer(&value).ok_or(NOT_AN_INTEGER)?,
    };
    let next = current
        .checked_add(by)
        .ok_or("ERR increment or decrement would overflow")?;
    let options = SetOptions::new().keep_ttl();
    store
        .set(key, next.to_string().as_bytes(), options)
        .map_err(|e| e.message().to_string())?;
    Ok(next)
}

/// SET's options, parsed in the order and with the conflicts of Redis 7.0's
/// `parseExtendedStringArgumentsOrReply`.
fn set(store: &mut dyn ScriptContext, args: &[&[u8]]) -> Result<Value, String> {
    let mut options = SetOptions::new();
    let (mut condition_set, mut expiry): (Option<&str>, Option<(&str, &[u8])>) = (None, None);
    let mut keep_ttl = false;
    let mut j = 3;
    while j < args.len() {
        let option = args[j].to_ascii_lowercase();
        let next = args.get(j + 1).copied();
        match option.as_slice() {
            b"nx" if condition_set != Some("xx") => {
                condition_set = Some("nx");
                options = options.nx();
            }
            b"xx" if condition_set != Some("nx") => {
                condition_set = Some("xx");
                options = options.xx();
            }
            b"get" => options = options.get(),
            b"keepttl" if expiry.is_none() => keep_ttl = true,
            b"ex" | b"px" | b"exat" | b"pxat"
                if !keep_ttl
                    && expiry.is_none_or(|(unit, _)| unit.as_bytes() == option.as_slice())
                    && next.is_some() =>
            {
                let unit = match option.as_slice() {
                    b"ex" => "ex",
                    b"px" => "px",
                    b"exat" => "exat",
                    _ => "pxat",
                };
                expiry = Some((unit, next.unwrap_or_default()));
                j += 1;
            }
            _ => return Err(SYNTAX_ERROR.into()),
        }
        j += 1;
    }
    if keep_ttl {
        options = options.keep_ttl();
    }
    if let Some((unit, amount)) = expiry {
        let amount = integer(amount).ok_or(NOT_AN_INTEGER)?;
        options = match unit {
            "ex" => options.ex(amount),
            "px" => options.px(amount),
            "exat" => options.exat(amount),
            _ => options.pxat(amount),
        };
    }
    let reply = store
        .set(args[1], args[2], options)
        .map_err(|e| e.message().to_string())?;
    Ok(match reply {
        SetReply::Applied => ok(),
        SetReply::NotApplied => Value::Nil,
        SetReply::OldValue(old) => bulk(old),
    })
}

/// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT with NX/XX/GT/LT.
fn expire(store: &mut dyn ScriptContext, name: &str, args: &[&[u8]]) -> Result<Value, String> {
    let mut condition = ExpireCondition::Always;
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for option in &args[3..] {
        match option.to_ascii_lowercase().as_slice() {
            b"nx" => nx = true,
            b"xx" => xx = true,
            b"gt" => gt = true,
            b"lt" => lt = true,
            _ => {
                return Err(format!(
                    "ERR Unsupported option {}",
                    String::from_utf8_lossy(option)
                ));
            }
        }
    }
    if nx && (xx || gt || lt) {
        return Err("ERR NX and XX, GT or LT options at the same time are not compatible".into());
    }
    if gt && lt {
        return Err("ERR GT and LT options at the same time are not compatible".into());
    }
    for (flag, value) in [
        (nx, ExpireCondition::IfNoExpiry),
        (xx, ExpireCondition::IfHasExpiry),
        (gt, ExpireCondition::IfGreater),
        (lt, ExpireCondition::IfLess),
    ] {
        if flag && condition == ExpireCondition::Always {
            condition = value;
        }
    }
    let when = integer(args[2]).ok_or(NOT_AN_INTEGER)?;
    let invalid = || format!("ERR invalid expire time in '{name}' command");
    let ms = if name == "expire" || name == "expireat" {
        when.checked_mul(1000).ok_or_else(invalid)?
    } else {
        when
    };
    let applied = if name.ends_with("at") {
        store.pexpireat(args[1], ms, condition)
    } else {
        store.pexpire(args[1], ms, condition)
    };
    // The store names its own command in this error; the caller may have used another.
    applied
        .map(|applied| Value::Int(applied.into()))
        .map_err(|e| {
            let text = e.message();
            if text.starts_with("ERR invalid expire time") {
                invalid()
            } else {
                text.to_string()
            }
        })
}
