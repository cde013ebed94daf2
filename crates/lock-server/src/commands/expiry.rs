//! EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (with NX/XX/GT/LT), TTL, PTTL, EXPIRETIME,
//! PEXPIRETIME and PERSIST.

use lock_core::{ExpireCondition, Value};
use lock_memory::Keyspace;

use crate::protocol::args::{NOT_AN_INTEGER, integer, text};
use crate::state::context::Context;

pub(crate) fn expire(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    set_expiry(store, "expire", args)
}

pub(crate) fn pexpire(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    set_expiry(store, "pexpire", args)
}

pub(crate) fn expireat(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    set_expiry(store, "expireat", args)
}

pub(crate) fn pexpireat(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    set_expiry(store, "pexpireat", args)
}

pub(crate) fn ttl(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    Ok(Value::Int(store.ttl(args[1]).map_err(text)?))
}

pub(crate) fn pttl(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    Ok(Value::Int(store.pttl(args[1]).map_err(text)?))
}

/// `EXPIRETIME key`: when it expires, in Unix seconds; -1 without a TTL, -2 when missing.
pub(crate) fn expiretime(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    Ok(Value::Int(expire_time(store, args[1], 1000)))
}

/// `PEXPIRETIME key`: as EXPIRETIME, in milliseconds.
pub(crate) fn pexpiretime(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    Ok(Value::Int(expire_time(store, args[1], 1)))
}

fn expire_time(store: &mut dyn Keyspace, key: &[u8], unit_ms: i64) -> i64 {
    match store.expires_at(key) {
        None => -2,
        Some(None) => -1,
        Some(Some(at)) => at / unit_ms,
    }
}

pub(crate) fn persist(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    Ok(Value::Int(store.persist(args[1]).map_err(text)?.into()))
}

/// The four expire commands: `name` says the unit (seconds unless `p…`) and whether the
/// time is absolute (`…at`).
fn set_expiry(store: &mut dyn Keyspace, name: &str, args: &[&[u8]]) -> Result<Value, String> {
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
    let ms = if name.starts_with('p') {
        when
    } else {
        when.checked_mul(1000).ok_or_else(invalid)?
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
            if e.message().starts_with("ERR invalid expire time") {
                invalid()
            } else {
                text(e)
            }
        })
}
