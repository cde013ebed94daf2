//! GET, SET (every option), SETNX, GETSET, GETDEL, INCR, INCRBY, DECR, DECRBY.

use lock_core::{SetOptions, SetReply, Value};
use lock_memory::Keyspace;

use super::{NOT_AN_INTEGER, SYNTAX_ERROR, bulk, integer, ok, text};

pub(crate) fn get(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
    Ok(bulk(store.get(args[1]).map_err(text)?))
}

pub(crate) fn setnx(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
    Ok(Value::Int(
        store.setnx(args[1], args[2]).map_err(text)?.into(),
    ))
}

pub(crate) fn getset(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
    Ok(bulk(store.getset(args[1], args[2]).map_err(text)?))
}

pub(crate) fn getdel(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
    Ok(bulk(store.getdel(args[1]).map_err(text)?))
}

pub(crate) fn incr(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
    Ok(Value::Int(store.incr(args[1]).map_err(text)?))
}

pub(crate) fn decr(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
    increment(store, args[1], -1)
}

pub(crate) fn incrby(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
    let by = integer(args[2]).ok_or(NOT_AN_INTEGER)?;
    increment(store, args[1], by)
}

pub(crate) fn decrby(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
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
    let options = SetOptions::new().keep_ttl();
    store
        .set(key, next.to_string().as_bytes(), options)
        .map_err(text)?;
    Ok(Value::Int(next))
}

/// SET's options, parsed in the order and with the conflicts of Redis 7.0's
/// `parseExtendedStringArgumentsOrReply`.
pub(crate) fn set(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
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
    Ok(match store.set(args[1], args[2], options).map_err(text)? {
        SetReply::Applied => ok(),
        SetReply::NotApplied => Value::Nil,
        SetReply::OldValue(old) => bulk(old),
    })
}
