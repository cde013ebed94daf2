//! LPUSH, RPUSH, LPOP, LLEN and BLPOP (which the connection turns into a wait).

use lock_core::Value;
use lock_memory::Keyspace;

use super::{integer, text, wrong_arity_text};

pub(crate) fn lpush(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
    Ok(Value::Int(store.lpush(args[1], &args[2..]).map_err(text)?))
}

pub(crate) fn rpush(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
    Ok(Value::Int(store.rpush(args[1], &args[2..]).map_err(text)?))
}

pub(crate) fn llen(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
    Ok(Value::Int(store.llen(args[1]).map_err(text)?))
}

/// `LPOP key [count]`: a bulk string without a count, an array with one.
pub(crate) fn lpop(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
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
    let popped = store.lpop(args[1], count.unwrap_or(1)).map_err(text)?;
    Ok(match (popped, count) {
        (None, None) => Value::Nil,
        (None, Some(_)) => Value::NilArray,
        (Some(mut items), None) => items.pop().map_or(Value::Nil, Value::Data),
        (Some(items), Some(_)) => Value::Array(items.into_iter().map(Value::Data).collect()),
    })
}

/// `BLPOP key… timeout` without waiting: `[key, element]` from the first non-empty list,
/// or a null array. The connection waits when it may; MULTI never does.
pub(crate) fn blpop(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
    blpop_timeout(args[args.len() - 1], store.now_ms())?;
    for key in &args[1..args.len() - 1] {
        let popped = store.lpop(key, 1).map_err(text)?;
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
