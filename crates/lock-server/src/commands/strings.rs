//! GET, SET (every option), SETNX, GETSET, GETDEL, INCR, INCRBY, DECR, DECRBY, and the
//! commands on part of a string (APPEND, STRLEN, GETRANGE, SETRANGE), which work on the
//! value where it lies: they cost the part, as in Redis, not the whole value.

use lock_core::{SetOptions, SetReply, Value};
use lock_memory::{Data, Keyspace, KeyspaceEvents};

use super::values::WRONGTYPE;
use crate::protocol::args::{NOT_AN_INTEGER, SYNTAX_ERROR, bulk, integer, ok, text};
use crate::protocol::numbers::LongDouble;
use crate::state::context::Context;

pub(crate) fn get(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    Ok(bulk(store.get(args[1]).map_err(text)?))
}

pub(crate) fn setnx(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    Ok(Value::Int(
        store.setnx(args[1], args[2]).map_err(text)?.into(),
    ))
}

pub(crate) fn getset(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    Ok(bulk(store.getset(args[1], args[2]).map_err(text)?))
}

pub(crate) fn getdel(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    Ok(bulk(store.getdel(args[1]).map_err(text)?))
}

pub(crate) fn incr(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    Ok(Value::Int(store.incr(args[1]).map_err(text)?))
}

pub(crate) fn decr(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    increment(store, args[1], -1)
}

pub(crate) fn incrby(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let by = integer(args[2]).ok_or(NOT_AN_INTEGER)?;
    increment(store, args[1], by)
}

pub(crate) fn decrby(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let by = integer(args[2]).ok_or(NOT_AN_INTEGER)?;
    let by = by.checked_neg().ok_or("ERR decrement would overflow")?;
    increment(store, args[1], by)
}

/// INCRBY/DECR/DECRBY: like INCR, the TTL is kept.
fn increment(store: &mut dyn Keyspace, key: &[u8], by: i64) -> Result<Value, String> {
    let current = match store.get(key).map_err(text)? {
        None => 0,
        Some(value) => integer(&value).ok_or(NOT_AN_INTEGER)?,
    };
    let next = current
        .checked_add(by)
        .ok_or("ERR increment or decrement would overflow")?;
    replace_keeping_ttl(store, key, next.to_string().into_bytes());
    store.notify(KeyspaceEvents::STRING, "incrby", key);
    Ok(Value::Int(next))
}

/// `SET key value [options]`.
pub(crate) fn set(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let options = set_options(args)?;
    set_reply(store.set(args[1], args[2], options).map_err(text)?)
}

/// SET of a value taken out of the request (`args[2]` is left empty): stored without a
/// copy, so that a value of hundreds of megabytes is held once.
pub(crate) fn set_taking(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    value: Vec<u8>,
) -> Result<Value, String> {
    let options = set_options(args)?;
    set_reply(store.set_owned(args[1], value, options).map_err(text)?)
}

fn set_reply(reply: SetReply) -> Result<Value, String> {
    Ok(match reply {
        SetReply::Applied => ok(),
        SetReply::NotApplied => Value::Nil,
        SetReply::OldValue(old) => bulk(old),
    })
}

/// SET's options, parsed in the order and with the conflicts of Redis 7.0's
/// `parseExtendedStringArgumentsOrReply`.
fn set_options(args: &[&[u8]]) -> Result<SetOptions, String> {
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
    Ok(options)
}

/// An INCRBYFLOAT increment: `string2ld`'s rules, and infinity refused as Redis refuses
/// its result.
pub(crate) fn float_increment(arg: &[u8]) -> Result<LongDouble, String> {
    let lower = arg.to_ascii_lowercase();
    let unsigned = lower
        .strip_prefix(b"-")
        .or(lower.strip_prefix(b"+"))
        .unwrap_or(&lower);
    if unsigned.starts_with(b"inf") {
        return Err(NAN_OR_INFINITY.into());
    }
    LongDouble::parse(arg).ok_or_else(|| NOT_A_FLOAT.into())
}

const NOT_A_FLOAT: &str = "ERR value is not a valid float";
pub(crate) const NAN_OR_INFINITY: &str = "ERR increment would produce NaN or Infinity";

/// The live string at `key`, where it lies (`None` when absent), or WRONGTYPE: what a
/// command that reads or changes part of a big string uses, so that it costs the part.
/// A change made through it must be followed by [`Keyspace::changed`].
pub(crate) fn string_in_place<'a>(
    store: &'a mut dyn Keyspace,
    key: &[u8],
) -> Result<Option<&'a mut Vec<u8>>, String> {
    match store.value(key) {
        None => Ok(None),
        Some(Data::String(bytes)) => Ok(Some(bytes)),
        Some(_) => Err(WRONGTYPE.into()),
    }
}

/// The live string at `key` (`None` when absent), or WRONGTYPE.
fn string(store: &mut dyn Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
    Ok(string_in_place(store, key)?.map(|bytes| bytes.clone()))
}

/// Writes `value` at `key` keeping its TTL (what INCRBYFLOAT, APPEND and SETRANGE do).
fn replace_keeping_ttl(store: &mut dyn Keyspace, key: &[u8], value: Vec<u8>) {
    let expires_at = store.expires_at(key).flatten();
    store.put(key, Data::String(value), expires_at);
}

pub(crate) fn incrbyfloat(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    // Redis checks the key's type and reads its value before the increment.
    let current = match string(store, args[1])? {
        None => LongDouble::parse(b"0").expect("zero parses"),
        Some(value) => LongDouble::parse(&value).ok_or(NOT_A_FLOAT)?,
    };
    let by = float_increment(args[2])?;
    let next = current.add(&by).ok_or(NAN_OR_INFINITY)?.to_human();
    replace_keeping_ttl(store, args[1], next.clone().into_bytes());
    store.notify(KeyspaceEvents::STRING, "incrbyfloat", args[1]);
    Ok(Value::Data(next.into_bytes()))
}

/// SETEX and PSETEX: SET with EX or PX, the error naming the command.
fn set_with_expiry(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    name: &str,
    milliseconds: bool,
) -> Result<Value, String> {
    let amount = integer(args[2]).ok_or(NOT_AN_INTEGER)?;
    let options = if milliseconds {
        SetOptions::new().px(amount)
    } else {
        SetOptions::new().ex(amount)
    };
    store.set(args[1], args[3], options).map_err(|e| {
        if e.message().starts_with("ERR invalid expire time") {
            format!("ERR invalid expire time in '{name}' command")
        } else {
            text(e)
        }
    })?;
    Ok(ok())
}

pub(crate) fn setex(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    set_with_expiry(store, args, "setex", false)
}

pub(crate) fn psetex(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    set_with_expiry(store, args, "psetex", true)
}

/// `GETEX key [EX seconds|PX ms|EXAT unix-s|PXAT unix-ms|PERSIST]`.
pub(crate) fn getex(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let invalid = || "ERR invalid expire time in 'getex' command".to_string();
    // Redis checks the options' syntax, then answers a missing key's nil, checks the
    // type, and only then reads the expire time.
    let mut change: Option<Option<(Vec<u8>, &[u8])>> = None; // Some(None): persist
    let mut j = 2;
    while j < args.len() {
        let option = args[j].to_ascii_lowercase();
        match option.as_slice() {
            b"persist" if change.is_none() => change = Some(None),
            b"ex" | b"px" | b"exat" | b"pxat" if change.is_none() && j + 1 < args.len() => {
                change = Some(Some((option, args[j + 1])));
                j += 1;
            }
            _ => return Err(SYNTAX_ERROR.into()),
        }
        j += 1;
    }
    let Some(value) = string(store, args[1])? else {
        return Ok(Value::Nil);
    };
    match change {
        None => {}
        Some(None) => {
            store.persist(args[1]).map_err(text)?;
        }
        Some(Some((option, amount))) => {
            let amount = integer(amount).ok_or(NOT_AN_INTEGER)?;
            if amount <= 0 {
                return Err(invalid());
            }
            let ms = match option.as_slice() {
                b"ex" | b"exat" => amount.checked_mul(1000).ok_or_else(invalid)?,
                _ => amount,
            };
            let at = if option.ends_with(b"at") {
                ms
            } else {
                store.now_ms().checked_add(ms).ok_or_else(invalid)?
            };
            if at <= store.now_ms() {
                store.del(&[args[1]]).map_err(text)?;
            } else {
                store.put(args[1], Data::String(value.clone()), Some(at));
                store.notify(KeyspaceEvents::GENERIC, "expire", args[1]);
            }
        }
    }
    Ok(Value::Data(value))
}

pub(crate) fn mget(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    Ok(Value::Array(
        args[1..]
            .iter()
            .map(|key| match store.value(key) {
                Some(Data::String(bytes)) => Value::Data(bytes.clone()),
                _ => Value::Nil,
            })
            .collect(),
    ))
}

pub(crate) fn mset(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    if args.len() % 2 != 1 {
        return Err(crate::protocol::args::wrong_arity_text("mset"));
    }
    for pair in args[1..].chunks(2) {
        store
            .set(pair[0], pair[1], SetOptions::new())
            .map_err(text)?;
    }
    Ok(ok())
}

pub(crate) fn msetnx(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    if args.len() % 2 != 1 {
        return Err(crate::protocol::args::wrong_arity_text("msetnx"));
    }
    if args[1..]
        .chunks(2)
        .any(|pair| store.value(pair[0]).is_some())
    {
        return Ok(Value::Int(0));
    }
    for pair in args[1..].chunks(2) {
        store
            .set(pair[0], pair[1], SetOptions::new())
            .map_err(text)?;
    }
    Ok(Value::Int(1))
}

pub(crate) fn append(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let addition = args[2];
    let length = match string_in_place(store, args[1])? {
        None => {
            // A new key holds exactly what was appended, as Redis's APPEND stores it.
            store.put(args[1], Data::String(addition.to_vec()), None);
            addition.len()
        }
        Some(value) => {
            if value.len() as i64 + addition.len() as i64 > MAX_STRING {
                return Err(TOO_LONG.into());
            }
            grow_for(value, value.len() + addition.len());
            value.extend_from_slice(addition);
            let length = value.len();
            store.changed(args[1]);
            length
        }
    };
    store.notify(KeyspaceEvents::STRING, "append", args[1]);
    Ok(Value::Int(length as i64))
}

/// Makes room in `value` for `needed` bytes as Redis's `sdsMakeRoomFor` does: twice
/// what is needed below 1 MB, 1 MB more above it. Appending stays amortised O(1) a
/// byte, and a big string is never given twice its size (Rust's own growth policy
/// would double a 512 MB string's buffer to 1 GB for one appended byte).
fn grow_for(value: &mut Vec<u8>, needed: usize) {
    const MAX_PREALLOC: usize = 1024 * 1024;
    if needed <= value.capacity() {
        return;
    }
    let target = if needed < MAX_PREALLOC {
        needed * 2
    } else {
        needed + MAX_PREALLOC
    };
    value.reserve_exact(target - value.len());
}

/// Lengthens `value` to `len` bytes with zeros, as `sdsgrowzero` does (SETRANGE and
/// SETBIT past the end); a longer value is left as it is. Whether it grew.
pub(crate) fn grow_zeroed(value: &mut Vec<u8>, len: usize) -> bool {
    if value.len() >= len {
        return false;
    }
    grow_for(value, len);
    value.resize(len, 0);
    true
}

pub(crate) fn strlen(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    Ok(Value::Int(
        string_in_place(store, args[1])?.map_or(0, |v| v.len() as i64),
    ))
}

/// GETRANGE (and SUBSTR, its old name): only the range is copied.
pub(crate) fn getrange(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let start = integer(args[2]).ok_or(NOT_AN_INTEGER)?;
    let end = integer(args[3]).ok_or(NOT_AN_INTEGER)?;
    let Some(value) = string_in_place(store, args[1])? else {
        return Ok(Value::Data(Vec::new()));
    };
    let len = value.len() as i64;
    // Redis's getrangeCommand: both negative and start > end is empty.
    if start < 0 && end < 0 && start > end {
        return Ok(Value::Data(Vec::new()));
    }
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let end = if end < 0 { (len + end).max(0) } else { end }.min(len - 1);
    if start > end || len == 0 {
        return Ok(Value::Data(Vec::new()));
    }
    Ok(Value::Data(value[start as usize..=end as usize].to_vec()))
}

/// The largest string Redis builds: `proto-max-bulk-len`, the largest argument too.
const MAX_STRING: i64 = crate::protocol::request::MAX_BULK_LEN;

/// Redis's `checkStringLength` refusal, for a string that would pass [`MAX_STRING`].
const TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

/// SETRANGE: the value is changed where it lies, grown only as far as the write
/// reaches.
pub(crate) fn setrange(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let offset = integer(args[2]).ok_or(NOT_AN_INTEGER)?;
    if offset < 0 {
        return Err("ERR offset is out of range".into());
    }
    let patch = args[3];
    let fits = |offset: i64| offset <= MAX_STRING - patch.len() as i64;
    let length = match string_in_place(store, args[1])? {
        None if patch.is_empty() => return Ok(Value::Int(0)),
        Some(value) if patch.is_empty() => return Ok(Value::Int(value.len() as i64)),
        _ if !fits(offset) => return Err(TOO_LONG.into()),
        None => {
            // Zeroed in one allocation, which the system leaves untouched until used.
            let mut value = vec![0; offset as usize + patch.len()];
            value[offset as usize..].copy_from_slice(patch);
            let length = value.len();
            store.put(args[1], Data::String(value), None);
            length
        }
        Some(value) => {
            let (offset, end) = (offset as usize, offset as usize + patch.len());
            grow_zeroed(value, end);
            value[offset..end].copy_from_slice(patch);
            let length = value.len();
            store.changed(args[1]);
            length
        }
    };
    store.notify(KeyspaceEvents::STRING, "setrange", args[1]);
    Ok(Value::Int(length as i64))
}
