//! The set commands. Members come back as Redis sends them for a small set of integers
//! (an intset: in numeric order), and otherwise in insertion order, where Redis's
//! hash-table order is arbitrary anyway.

use lock_core::Value;
use lock_memory::{Data, Keyspace, KeyspaceEvents, Set};

use super::values::{WRONGTYPE, check_type, set, set_or_new, settle, store_result};
use crate::protocol::args::{SYNTAX_ERROR, integer, pop_count};
use crate::state::config::Limits;
use crate::state::context::Context;

/// Whether Redis would keep `members` as an intset: integers only, at most
/// `set-max-intset-entries` of them.
pub(crate) fn is_intset(members: &Set, limits: &Limits) -> bool {
    members.len() <= limits.set_max_intset_entries && members.iter().all(|m| integer(m).is_some())
}

/// `members` in the order Redis answers with.
fn ordered(members: &Set, limits: &Limits) -> Vec<Vec<u8>> {
    let mut list: Vec<Vec<u8>> = members.iter().cloned().collect();
    if is_intset(members, limits) {
        list.sort_by_key(|m| integer(m));
    }
    list
}

fn reply(members: &Set, limits: &Limits) -> Value {
    Value::Set(
        ordered(members, limits)
            .into_iter()
            .map(Value::Data)
            .collect(),
    )
}

pub(crate) fn sadd(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let target = set_or_new(store, args[1])?;
    let added = args[2..]
        .iter()
        .filter(|member| target.insert(member.to_vec()))
        .count();
    if added > 0 {
        store.notify(KeyspaceEvents::SET, "sadd", args[1]);
    }
    settle(store, args[1], added > 0);
    Ok(Value::Int(added as i64))
}

pub(crate) fn srem(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let Some(target) = set(store, args[1])? else {
        return Ok(Value::Int(0));
    };
    let removed = args[2..]
        .iter()
        .filter(|member| target.shift_remove(**member))
        .count();
    if removed > 0 {
        store.notify(KeyspaceEvents::SET, "srem", args[1]);
        store.changed(args[1]);
    }
    Ok(Value::Int(removed as i64))
}

pub(crate) fn sismember(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let found = set(store, args[1])?.is_some_and(|s| s.contains(args[2]));
    Ok(Value::Int(found.into()))
}

pub(crate) fn smismember(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let source = set(store, args[1])?;
    Ok(Value::Array(
        args[2..]
            .iter()
            .map(|m| Value::Int(source.as_ref().is_some_and(|s| s.contains(*m)).into()))
            .collect(),
    ))
}

pub(crate) fn smembers(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    Ok(set(store, args[1])?.map_or(Value::Set(Vec::new()), |s| reply(s, &context.limits)))
}

pub(crate) fn scard(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    Ok(Value::Int(
        set(store, args[1])?.map_or(0, |s| s.len() as i64),
    ))
}

pub(crate) fn smove(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let (source, destination, member) = (args[1], args[2], args[3]);
    // A missing source answers 0 before Redis looks at the destination's type.
    let Some(from) = set(store, source)? else {
        return Ok(Value::Int(0));
    };
    let present = from.contains(member);
    check_type(store, destination, "set")?;
    if !present {
        return Ok(Value::Int(0));
    }
    if source == destination {
        return Ok(Value::Int(1));
    }
    set(store, source)?.expect("checked").shift_remove(member);
    store.notify(KeyspaceEvents::SET, "srem", source);
    store.changed(source);
    let added = set_or_new(store, destination)?.insert(member.to_vec());
    if added {
        store.notify(KeyspaceEvents::SET, "sadd", destination);
    }
    settle(store, destination, added);
    Ok(Value::Int(1))
}

/// The sets at `keys` (an empty one for a missing key), after checking every type.
fn sets_of(store: &mut dyn Keyspace, keys: &[&[u8]]) -> Result<Vec<Set>, String> {
    keys.iter()
        .map(|key| match store.value(key) {
            None => Ok(Set::default()),
            Some(Data::Set(members)) => Ok(members.clone()),
            Some(_) => Err(WRONGTYPE.to_string()),
        })
        .collect()
}

#[derive(Clone, Copy)]
enum Op {
    Inter,
    Union,
    Diff,
}

fn combine(sets: Vec<Set>, op: Op) -> Set {
    let mut sets = sets.into_iter();
    let mut result = sets.next().unwrap_or_default();
    for other in sets {
        match op {
            Op::Inter => result.retain(|m| other.contains(m)),
            Op::Union => result.extend(other),
            Op::Diff => result.retain(|m| !other.contains(m)),
        }
    }
    result
}

fn read_op(
    store: &mut dyn Keyspace,
    keys: &[&[u8]],
    op: Op,
    limits: &Limits,
) -> Result<Value, String> {
    let sets = sets_of(store, keys)?;
    Ok(reply(&combine(sets, op), limits))
}

fn store_op(store: &mut dyn Keyspace, args: &[&[u8]], op: Op) -> Result<Value, String> {
    let sets = sets_of(store, &args[2..])?;
    let result = combine(sets, op);
    let event = match op {
        Op::Inter => "sinterstore",
        Op::Union => "sunionstore",
        Op::Diff => "sdiffstore",
    };
    let size = result.len();
    let event = (KeyspaceEvents::SET, event);
    Ok(store_result(store, args[1], Data::Set(result), size, event))
}

pub(crate) fn sinter(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    read_op(store, &args[1..], Op::Inter, &context.limits)
}

pub(crate) fn sunion(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    read_op(store, &args[1..], Op::Union, &context.limits)
}

pub(crate) fn sdiff(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    read_op(store, &args[1..], Op::Diff, &context.limits)
}

pub(crate) fn sinterstore(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    store_op(store, args, Op::Inter)
}

pub(crate) fn sunionstore(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    store_op(store, args, Op::Union)
}

pub(crate) fn sdiffstore(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    store_op(store, args, Op::Diff)
}

/// `SINTERCARD numkeys key [key ...] [LIMIT limit]`.
pub(crate) fn sintercard(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let numkeys = integer(args[1])
        .filter(|n| *n > 0)
        .ok_or("ERR numkeys should be greater than 0")? as usize;
    if numkeys > args.len() - 2 {
        return Err("ERR Number of keys can't be greater than number of args".into());
    }
    let mut limit = 0usize;
    let mut options = args[2 + numkeys..].iter();
    while let Some(option) = options.next() {
        match options.next() {
            // Redis's one message for a LIMIT that is not a non-negative integer; a
            // later LIMIT wins.
            Some(value) if option.eq_ignore_ascii_case(b"limit") => {
                limit = integer(value)
                    .and_then(|value| usize::try_from(value).ok())
                    .ok_or("ERR LIMIT can't be negative")?;
            }
            _ => return Err(SYNTAX_ERROR.into()),
        }
    }
    let sets = sets_of(store, &args[2..2 + numkeys])?;
    let size = combine(sets, Op::Inter).len();
    Ok(Value::Int(
        if limit > 0 { size.min(limit) } else { size } as i64
    ))
}

/// `SPOP key [count]`: random members, removed.
pub(crate) fn spop(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let count = pop_count(args.get(2))?;
    if args.len() > 3 {
        return Err(SYNTAX_ERROR.into());
    }
    let Some(target) = set(store, args[1])? else {
        return Ok(if count.is_some() {
            Value::Set(Vec::new())
        } else {
            Value::Nil
        });
    };
    let mut taken = Vec::new();
    for _ in 0..count.unwrap_or(1) {
        if target.is_empty() {
            break;
        }
        // O(1): the last member moves into the gap (a set's order is Redis's hash
        // order, which no client may rely on).
        let at = fastrand::usize(..target.len());
        taken.push(Value::Data(target.swap_remove_index(at).expect("in range")));
    }
    if !taken.is_empty() {
        store.notify(KeyspaceEvents::SET, "spop", args[1]);
        store.changed(args[1]);
    }
    Ok(match count {
        None => taken.pop().unwrap_or(Value::Nil),
        Some(_) => Value::Set(taken),
    })
}

/// `SRANDMEMBER key [count]`: random members; a negative count may repeat them.
pub(crate) fn srandmember(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    // Redis refuses extra arguments before it reads the count.
    if args.len() > 3 {
        return Err(SYNTAX_ERROR.into());
    }
    let count = super::sampling::count(args)?;
    let Some(source) = set(store, args[1])? else {
        return Ok(super::sampling::absent(count.is_some()));
    };
    let pick = |s: &Set| Value::Data(s[fastrand::usize(..s.len())].clone());
    Ok(match count {
        None => pick(source),
        // Redis streams a negative count's picks for as long as its memory lasts; a reply
        // this server builds whole is bounded instead.
        Some(n) if n.unsigned_abs() > crate::protocol::args::MAX_REPLY_ELEMENTS as u64 && n < 0 => {
            return Err(crate::protocol::args::reply_too_large());
        }
        Some(n) if n < 0 => Value::Array((0..n.unsigned_abs()).map(|_| pick(source)).collect()),
        Some(n) => Value::Array(
            super::sampling::distinct_indices(source.len(), n as u64)
                .into_iter()
                .map(|at| Value::Data(source[at].clone()))
                .collect(),
        ),
    })
}
