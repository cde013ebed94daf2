//! The hash commands. A hash keeps its fields in insertion order, the order Redis answers
//! in for the small hashes it keeps in a listpack.

use lock_core::Value;
use lock_memory::{Keyspace, KeyspaceEvents};

use super::values::{hash, hash_or_new};
use crate::protocol::args::{NOT_AN_INTEGER, bulk, integer, ok, wrong_arity_text};
use crate::protocol::numbers::LongDouble;
use crate::protocol::reply::Protocol;
use crate::state::context::Context;

/// `HSET key field value [field value ...]`: how many fields are new.
pub(crate) fn hset(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    if !args.len().is_multiple_of(2) {
        return Err(wrong_arity_text("hset"));
    }
    let added = set_pairs(store, args)?;
    Ok(Value::Int(added))
}

/// `HMSET key field value [field value ...]`: OK.
pub(crate) fn hmset(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    if !args.len().is_multiple_of(2) {
        return Err(wrong_arity_text("hmset"));
    }
    set_pairs(store, args)?;
    Ok(ok())
}

fn set_pairs(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<i64, String> {
    let target = hash_or_new(store, args[1])?;
    let mut added = 0;
    for pair in args[2..].chunks(2) {
        if target.insert(pair[0].to_vec(), pair[1].to_vec()).is_none() {
            added += 1;
        }
    }
    store.notify(KeyspaceEvents::HASH, "hset", args[1]);
    store.changed(args[1]);
    Ok(added)
}

pub(crate) fn hsetnx(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let target = hash_or_new(store, args[1])?;
    let added = !target.contains_key(args[2]);
    if added {
        target.insert(args[2].to_vec(), args[3].to_vec());
        store.notify(KeyspaceEvents::HASH, "hset", args[1]);
        store.changed(args[1]);
    }
    Ok(Value::Int(added.into()))
}

pub(crate) fn hget(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    Ok(bulk(
        hash(store, args[1])?.and_then(|h| h.get(args[2]).cloned()),
    ))
}

pub(crate) fn hmget(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let source = hash(store, args[1])?;
    Ok(Value::Array(
        args[2..]
            .iter()
            .map(|field| bulk(source.as_ref().and_then(|h| h.get(*field).cloned())))
            .collect(),
    ))
}

pub(crate) fn hdel(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let Some(target) = hash(store, args[1])? else {
        return Ok(Value::Int(0));
    };
    let removed = args[2..]
        .iter()
        .filter(|field| target.shift_remove(**field).is_some())
        .count();
    if removed > 0 {
        store.notify(KeyspaceEvents::HASH, "hdel", args[1]);
        store.changed(args[1]);
    }
    Ok(Value::Int(removed as i64))
}

pub(crate) fn hexists(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let found = hash(store, args[1])?.is_some_and(|h| h.contains_key(args[2]));
    Ok(Value::Int(found.into()))
}

pub(crate) fn hlen(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    Ok(Value::Int(
        hash(store, args[1])?.map_or(0, |h| h.len() as i64),
    ))
}

pub(crate) fn hstrlen(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let length = hash(store, args[1])?
        .and_then(|h| h.get(args[2]))
        .map_or(0, Vec::len);
    Ok(Value::Int(length as i64))
}

pub(crate) fn hgetall(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let pairs = hash(store, args[1])?.map_or_else(Vec::new, |h| {
        h.iter()
            .map(|(f, v)| (Value::Data(f.clone()), Value::Data(v.clone())))
            .collect()
    });
    Ok(Value::Map(pairs))
}

pub(crate) fn hkeys(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let keys = hash(store, args[1])?.map_or_else(Vec::new, |h| {
        h.keys().map(|f| Value::Data(f.clone())).collect()
    });
    Ok(Value::Array(keys))
}

pub(crate) fn hvals(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let values = hash(store, args[1])?.map_or_else(Vec::new, |h| {
        h.values().map(|v| Value::Data(v.clone())).collect()
    });
    Ok(Value::Array(values))
}

pub(crate) fn hincrby(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let by = integer(args[3]).ok_or(NOT_AN_INTEGER)?;
    let target = hash_or_new(store, args[1])?;
    let current = match target.get(args[2]) {
        None => 0,
        Some(value) => integer(value).ok_or("ERR hash value is not an integer")?,
    };
    let next = current
        .checked_add(by)
        .ok_or("ERR increment or decrement would overflow")?;
    target.insert(args[2].to_vec(), next.to_string().into_bytes());
    store.notify(KeyspaceEvents::HASH, "hincrby", args[1]);
    store.changed(args[1]);
    Ok(Value::Int(next))
}

pub(crate) fn hincrbyfloat(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    // Redis refuses an infinite increment itself here (INCRBYFLOAT refuses the sum).
    let by = super::strings::float_increment(args[3]).map_err(|error| {
        if error == super::strings::NAN_OR_INFINITY {
            "ERR value is NaN or Infinity".to_string()
        } else {
            error
        }
    })?;
    let target = hash_or_new(store, args[1])?;
    let current = match target.get(args[2]) {
        None => LongDouble::parse(b"0").expect("zero parses"),
        Some(value) => LongDouble::parse(value).ok_or("ERR hash value is not a float")?,
    };
    let next = current
        .add(&by)
        .ok_or("ERR increment would produce NaN or Infinity")?
        .to_human();
    target.insert(args[2].to_vec(), next.clone().into_bytes());
    store.notify(KeyspaceEvents::HASH, "hincrbyfloat", args[1]);
    store.changed(args[1]);
    Ok(Value::Data(next.into_bytes()))
}

/// `HRANDFIELD key [count [WITHVALUES]]`: random fields (see [`super::sampling`]).
pub(crate) fn hrandfield(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    let request = super::sampling::request(args, b"withvalues")?;
    let Some(source) = hash(store, args[1])? else {
        return Ok(super::sampling::absent(request.is_some()));
    };
    let field = |at: usize| source.get_index(at).expect("an index below the length");
    let Some((count, with_values)) = request else {
        let (name, _) = field(fastrand::usize(..source.len()));
        return Ok(Value::Data(name.clone()));
    };
    let picked = super::sampling::indices(source.len(), count)?;
    let pairs = picked.into_iter().map(|at| {
        let (name, value) = field(at);
        (Value::Data(name.clone()), Value::Data(value.clone()))
    });
    Ok(Value::Array(match (with_values, context.protocol) {
        (false, _) => pairs.map(|(name, _)| name).collect(),
        (true, Protocol::Resp3) => pairs
            .map(|(name, value)| Value::Array(vec![name, value]))
            .collect(),
        (true, Protocol::Resp2) => pairs.flat_map(|(name, value)| [name, value]).collect(),
    }))
}
