//! Strings, keys and expiry: the commands that touch the keyspace. Each runs inside the
//! store's atomic section, from the network or from `redis.call`.

use lock_core::{ExpireCondition, ScriptContext, SetOptions, SetReply, Value};

use super::{NOT_AN_INTEGER, SYNTAX_ERROR, arity_ok, integer, wrong_arity, wrong_arity_text};

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
    ("keys", 2),
    ("lpush", -3),
    ("rpush", -3),
    ("lpop", -2),
    ("llen", 2),
    ("blpop", -3),
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
    !matches!(
        name,
        "get" | "exists" | "ttl" | "pttl" | "type" | "keys" | "llen"
    )
}

/// Whether `name` may block the client: refused in scripts; inside MULTI (and here, where
/// it never waits) it answers at once.
pub(crate) fn blocks(name: &str) -> bool {
    name == "blpop"
}

/// Runs one keyspace command (`args[0]` is its name) and returns its reply.
pub(crate) fn run(store: &mut dyn ScriptContext, args: &[&[u8]]) -> Value {
    let Some((name, arity)) = args.first().and_then(|n| super::find(COMMANDS, n)) else {
        return Value::Error("ERR unknown command".into());
    };
    if !arity_ok(arity, args.len()) {
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
        "type" => Value::Status(store.key_type(key).map_err(e)?.into()),
        "keys" => Value::Array(
            store
                .keys(key)
                .map_err(e)?
                .into_iter()
                .map(Value::Data)
                .collect(),
        ),
        "lpush" => Value::Int(store.lpush(key, &args[2..]).map_err(e)?),
        "rpush" => Value::Int(store.rpush(key, &args[2..]).map_err(e)?),
        "lpop" => lpop(store, args)?,
        "llen" => Value::Int(store.llen(key).map_err(e)?),
        "blpop" => try_blpop(store, args)?,
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

/// `LPOP key [count]`: a bulk string without a count, an array with one.
fn lpop(store: &mut dyn ScriptContext, args: &[&[u8]]) -> Result<Value, String> {
    if args.len() > 3 {
        return Err(wrong_arity_text("lpop"));
    }
    let count = match args.get(2) {
        None => None,
        Some(count) => Some(
            integer(count)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or("ERR value is out of range, must be positive")?,
        ),
    };
    let popped = store
        .lpop(args[1], count.unwrap_or(1))
        .map_err(|e| e.message().to_string())?;
    Ok(match (popped, count) {
        (None, None) => Value::Nil,
        (None, Some(_)) => Value::NilArray,
        (Some(mut items), None) => items.pop().map_or(Value::Nil, Value::Data),
        (Some(items), Some(_)) => Value::Array(items.into_iter().map(Value::Data).collect()),
    })
}

/// `BLPOP key… timeout` without waiting: `[key, element]` from the first non-empty list,
/// or a null array. The connection waits when it may; MULTI and these calls never do.
fn try_blpop(store: &mut dyn ScriptContext, args: &[&[u8]]) -> Result<Value, String> {
    blpop_timeout(args[args.len() - 1], store.now_ms())?;
    for key in &args[1..args.len() - 1] {
        let popped = store.lpop(key, 1).map_err(|e| e.message().to_string())?;
        if let Some(element) = popped.and_then(|mut items| items.pop()) {
            return Ok(Value::Array(vec![
                Value::Data(key.to_vec()),
                Value::Data(element),
            ]));
        }
    }
    Ok(Value::NilArray)
}

/// BLPOP's timeout in milliseconds (0: wait forever), parsed as Redis 7.0's
/// `getTimeoutFromObjectOrReply` does: seconds as a float, rounded up to whole
/// milliseconds, then cast to an integer the C way, so values too large to cast come out
/// negative. (Redis computes in `long double`; a few values within 1e-19 of a whole
/// millisecond round differently here, and hex floats are not accepted.)
pub(crate) fn blpop_timeout(arg: &[u8], now_ms: i64) -> Result<u64, String> {
    let seconds = std::str::from_utf8(arg)
        .ok()
        .filter(|text| !text.starts_with(|c: char| c.is_ascii_whitespace()))
        .and_then(|text| text.parse::<f64>().ok())
        .filter(|seconds| !seconds.is_nan())
        .ok_or("ERR timeout is not a float or out of range")?;
    let ms = (seconds * 1000.0).ceil();
    // C's (long long) cast of an out-of-range value gives LLONG_MIN on x86-64.
    // 2^63 is exactly representable; every double below it in magnitude casts.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    let ms = if (-LIMIT..LIMIT).contains(&ms) {
        ms as i64
    } else {
        i64::MIN
    };
    if ms < 0 {
        return Err("ERR timeout is negative".into());
    }
    if ms > i64::MAX - now_ms {
        return Err("ERR timeout is out of range".into());
    }
    Ok(ms as u64)
}
