//! Pops from the first non-empty of several sorted sets: ZMPOP, and the blocking
//! BZPOPMIN, BZPOPMAX and BZMPOP. The blocking ones run here without waiting and answer
//! a null array when every set is empty; the connection then waits and runs them again
//! whenever the database changes, as it does for BLPOP.

use lock_core::{RedisVersion, Value};
use lock_memory::{Data, Keyspace};

use super::lists::blocking_timeout;
use super::sorted_sets::{pop_members, range_reply};
use super::values::WRONGTYPE;
use crate::protocol::args::{SYNTAX_ERROR, integer};
use crate::protocol::reply::Protocol;
use crate::state::context::Context;

/// What ZMPOP and BZMPOP were asked, read from `numkeys_at` in Redis's order: the number
/// of keys, MIN or MAX, then COUNT.
struct MultiPop<'a> {
    keys: &'a [&'a [u8]],
    highest: bool,
    count: usize,
}

fn multi_pop<'a>(args: &'a [&'a [u8]], numkeys_at: usize) -> Result<MultiPop<'a>, String> {
    let numkeys = integer(args[numkeys_at])
        .filter(|n| *n > 0)
        .ok_or("ERR numkeys should be greater than 0")?;
    let where_at = numkeys_at
        .checked_add(usize::try_from(numkeys).unwrap_or(usize::MAX))
        .and_then(|at| at.checked_add(1))
        .filter(|at| *at < args.len())
        .ok_or(SYNTAX_ERROR)?;
    let highest = if args[where_at].eq_ignore_ascii_case(b"min") {
        false
    } else if args[where_at].eq_ignore_ascii_case(b"max") {
        true
    } else {
        return Err(SYNTAX_ERROR.into());
    };
    let mut count = None;
    let mut options = args[where_at + 1..].iter();
    while let Some(option) = options.next() {
        match options.next() {
            Some(value) if count.is_none() && option.eq_ignore_ascii_case(b"count") => {
                count = Some(
                    integer(value)
                        .filter(|n| *n > 0)
                        .ok_or("ERR count should be greater than 0")? as usize,
                );
            }
            _ => return Err(SYNTAX_ERROR.into()),
        }
    }
    Ok(MultiPop {
        keys: &args[numkeys_at + 1..where_at],
        highest,
        count: count.unwrap_or(1),
    })
}

/// The first of `keys` holding a sorted set, checking the types of those before it
/// (missing keys are passed over): Redis's walk for every multi-key pop.
fn first_nonempty<'a>(
    store: &mut dyn Keyspace,
    keys: &[&'a [u8]],
) -> Result<Option<&'a [u8]>, String> {
    for key in keys {
        match store.value(key) {
            None => continue,
            Some(Data::SortedSet(sorted)) if !sorted.is_empty() => return Ok(Some(key)),
            Some(Data::SortedSet(_)) => continue,
            Some(_) => return Err(WRONGTYPE.into()),
        }
    }
    Ok(None)
}

/// `[key, [[member, score], …]]` from the first non-empty set, or a null array.
fn pop_first(store: &mut dyn Keyspace, request: &MultiPop<'_>) -> Result<Value, String> {
    let Some(key) = first_nonempty(store, request.keys)? else {
        return Ok(Value::NilArray);
    };
    let popped = pop_members(store, key, request.highest, request.count)?;
    // Nested pairs in either protocol, as Redis answers ZMPOP.
    let pairs = match range_reply(popped, true, Protocol::Resp3) {
        Value::Array(pairs) => pairs,
        other => vec![other],
    };
    Ok(Value::Array(vec![
        Value::Data(key.to_vec()),
        Value::Array(pairs),
    ]))
}

/// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]`.
pub(crate) fn zmpop(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let request = multi_pop(args, 1)?;
    pop_first(store, &request)
}

/// `BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]`, without waiting.
pub(crate) fn bzmpop(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    let request = multi_pop(args, 2)?;
    blocking_timeout(args[1], store.now_ms(), context.version)?;
    pop_first(store, &request)
}

/// BZPOPMIN and BZPOPMAX without waiting: `[key, member, score]` from the first
/// non-empty set, or a null array.
fn blocking_pop(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    highest: bool,
    version: RedisVersion,
) -> Result<Value, String> {
    blocking_timeout(args[args.len() - 1], store.now_ms(), version)?;
    let Some(key) = first_nonempty(store, &args[1..args.len() - 1])? else {
        return Ok(Value::NilArray);
    };
    let popped = pop_members(store, key, highest, 1)?;
    let Some((member, score)) = popped.into_iter().next() else {
        return Ok(Value::NilArray);
    };
    Ok(Value::Array(vec![
        Value::Data(key.to_vec()),
        Value::Data(member),
        Value::Double(score),
    ]))
}

pub(crate) fn bzpopmin(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    blocking_pop(store, args, false, context.version)
}

pub(crate) fn bzpopmax(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    blocking_pop(store, args, true, context.version)
}

/// The ZADD that puts back what a blocking pop took for a client that went away before
/// its reply could be written.
pub(crate) fn undo(command: &[Vec<u8>], reply: &Value) -> Option<Vec<Vec<u8>>> {
    let name = command[0].to_ascii_lowercase();
    let score = |value: &Value| match value {
        Value::Double(score) => Some(crate::protocol::numbers::format_double(*score).into_bytes()),
        _ => None,
    };
    let Value::Array(reply) = reply else {
        return None;
    };
    let mut zadd = vec![b"zadd".to_vec()];
    match (name.as_slice(), reply.as_slice()) {
        (b"bzpopmin" | b"bzpopmax", [Value::Data(key), Value::Data(member), value]) => {
            zadd.extend([key.clone(), score(value)?, member.clone()]);
        }
        (b"bzmpop", [Value::Data(key), Value::Array(pairs)]) => {
            zadd.push(key.clone());
            for pair in pairs {
                let Value::Array(pair) = pair else {
                    return None;
                };
                let [Value::Data(member), value] = pair.as_slice() else {
                    return None;
                };
                zadd.extend([score(value)?, member.clone()]);
            }
        }
        _ => return None,
    }
    Some(zadd)
}
