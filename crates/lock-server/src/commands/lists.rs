//! The list commands. The blocking ones (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP) run
//! here without waiting and answer a null when there is nothing to pop; the connection
//! then waits and runs them again whenever a list may have grown.

use lock_core::{RedisVersion, Value};
use lock_memory::{Keyspace, KeyspaceEvents, List};

use super::values::{check_type, list, list_or_new};
use crate::protocol::args::{NOT_AN_INTEGER, SYNTAX_ERROR, integer, ok, pop_count};
use crate::state::context::Context;

/// Which end of a list.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Left,
    Right,
}

fn end(arg: &[u8]) -> Option<End> {
    if arg.eq_ignore_ascii_case(b"left") {
        Some(End::Left)
    } else if arg.eq_ignore_ascii_case(b"right") {
        Some(End::Right)
    } else {
        None
    }
}

/// The keyspace events of a push and of a pop at `end`.
fn push_event(end: End) -> &'static str {
    match end {
        End::Left => "lpush",
        End::Right => "rpush",
    }
}

fn pop_event(end: End) -> &'static str {
    match end {
        End::Left => "lpop",
        End::Right => "rpop",
    }
}

/// Ends a pop from `key` at `end`: its event, then `del` if it is empty now.
fn popped(store: &mut dyn Keyspace, key: &[u8], end: End) {
    store.notify(KeyspaceEvents::LIST, pop_event(end), key);
    store.changed(key);
}

fn push_at(list: &mut List, end: End, element: Vec<u8>) {
    match end {
        End::Left => list.push_front(element),
        End::Right => list.push_back(element),
    }
}

fn pop_at(list: &mut List, end: End) -> Option<Vec<u8>> {
    match end {
        End::Left => list.pop_front(),
        End::Right => list.pop_back(),
    }
}

fn push(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    end: End,
    only_existing: bool,
) -> Result<Value, String> {
    if only_existing && list(store, args[1])?.is_none() {
        return Ok(Value::Int(0));
    }
    let target = list_or_new(store, args[1])?;
    for element in &args[2..] {
        push_at(target, end, element.to_vec());
    }
    let length = target.len();
    store.notify(KeyspaceEvents::LIST, push_event(end), args[1]);
    store.changed(args[1]);
    Ok(Value::Int(length as i64))
}

pub(crate) fn lpush(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    push(store, args, End::Left, false)
}

pub(crate) fn rpush(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    push(store, args, End::Right, false)
}

pub(crate) fn lpushx(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    push(store, args, End::Left, true)
}

pub(crate) fn rpushx(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    push(store, args, End::Right, true)
}

pub(crate) fn llen(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    Ok(Value::Int(
        list(store, args[1])?.map_or(0, |l| l.len() as i64),
    ))
}

/// `LPOP|RPOP key [count]`: a bulk string without a count, an array with one.
fn pop(store: &mut dyn Keyspace, args: &[&[u8]], end: End, name: &str) -> Result<Value, String> {
    if args.len() > 3 {
        return Err(crate::protocol::args::wrong_arity_text(name));
    }
    let count = pop_count(args.get(2))?;
    let Some(source) = list(store, args[1])? else {
        return Ok(if count.is_some() {
            Value::NilArray
        } else {
            Value::Nil
        });
    };
    let reply = match count {
        None => pop_at(source, end).map_or(Value::Nil, Value::Data),
        Some(count) => {
            let taken: Vec<Value> = (0..count)
                .map_while(|_| pop_at(source, end))
                .map(Value::Data)
                .collect();
            Value::Array(taken)
        }
    };
    // A count of 0 takes nothing, and WATCH does not see it.
    if reply != Value::Array(Vec::new()) {
        popped(store, args[1], end);
    }
    Ok(reply)
}

pub(crate) fn lpop(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    pop(store, args, End::Left, "lpop")
}

pub(crate) fn rpop(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    pop(store, args, End::Right, "rpop")
}

/// A Redis list index (negative from the end) as a position, if inside the list.
fn position(index: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let index = if index < 0 { len + index } else { index };
    (0..len).contains(&index).then_some(index as usize)
}

/// `start..=stop` (Redis indices) clamped to the list: `None` when empty.
fn range(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        len + stop
    } else {
        stop.min(len - 1)
    };
    (start <= stop && start < len).then_some((start as usize, stop as usize))
}

fn index_arg(arg: &[u8]) -> Result<i64, String> {
    integer(arg).ok_or_else(|| NOT_AN_INTEGER.to_string())
}

pub(crate) fn lrange(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let (start, stop) = (index_arg(args[2])?, index_arg(args[3])?);
    let Some(source) = list(store, args[1])? else {
        return Ok(Value::Array(Vec::new()));
    };
    Ok(Value::Array(match range(start, stop, source.len()) {
        None => Vec::new(),
        Some((from, to)) => source
            .range(from..=to)
            .map(|e| Value::Data(e.clone()))
            .collect(),
    }))
}

pub(crate) fn lindex(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    // Redis looks the key up and checks its type before it reads the index.
    let Some(source) = list(store, args[1])? else {
        return Ok(Value::Nil);
    };
    let index = index_arg(args[2])?;
    Ok(position(index, source.len()).map_or(Value::Nil, |at| Value::Data(source[at].clone())))
}

pub(crate) fn lset(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let Some(target) = list(store, args[1])? else {
        return Err("ERR no such key".into());
    };
    let index = index_arg(args[2])?;
    let at = position(index, target.len()).ok_or("ERR index out of range")?;
    target[at] = args[3].to_vec();
    store.notify(KeyspaceEvents::LIST, "lset", args[1]);
    store.changed(args[1]);
    Ok(ok())
}

pub(crate) fn ltrim(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let (start, stop) = (index_arg(args[2])?, index_arg(args[3])?);
    let Some(target) = list(store, args[1])? else {
        return Ok(ok());
    };
    match range(start, stop, target.len()) {
        None => target.clear(),
        Some((from, to)) => {
            target.truncate(to + 1);
            target.drain(..from);
        }
    }
    store.notify(KeyspaceEvents::LIST, "ltrim", args[1]);
    store.changed(args[1]);
    Ok(ok())
}

pub(crate) fn lrem(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let count = index_arg(args[2])?;
    let Some(target) = list(store, args[1])? else {
        return Ok(Value::Int(0));
    };
    let limit = if count == 0 {
        usize::MAX
    } else {
        count.unsigned_abs() as usize
    };
    let mut removed = 0;
    if count >= 0 {
        let mut kept = List::with_capacity(target.len());
        for element in target.drain(..) {
            if removed < limit && element == args[3] {
                removed += 1;
            } else {
                kept.push_back(element);
            }
        }
        *target = kept;
    } else {
        let mut kept = List::with_capacity(target.len());
        while let Some(element) = target.pop_back() {
            if removed < limit && element == args[3] {
                removed += 1;
            } else {
                kept.push_front(element);
            }
        }
        *target = kept;
    }
    if removed > 0 {
        store.notify(KeyspaceEvents::LIST, "lrem", args[1]);
        store.changed(args[1]);
    }
    Ok(Value::Int(removed as i64))
}

pub(crate) fn linsert(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let after = if args[2].eq_ignore_ascii_case(b"after") {
        true
    } else if args[2].eq_ignore_ascii_case(b"before") {
        false
    } else {
        return Err(SYNTAX_ERROR.into());
    };
    let Some(target) = list(store, args[1])? else {
        return Ok(Value::Int(0));
    };
    let Some(at) = target.iter().position(|e| e == args[3]) else {
        return Ok(Value::Int(-1));
    };
    target.insert(if after { at + 1 } else { at }, args[4].to_vec());
    let length = target.len();
    store.notify(KeyspaceEvents::LIST, "linsert", args[1]);
    store.changed(args[1]);
    Ok(Value::Int(length as i64))
}

/// `LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]`.
pub(crate) fn lpos(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0i64);
    let mut j = 3;
    while j < args.len() {
        let value = args.get(j + 1).ok_or(SYNTAX_ERROR)?;
        let number = index_arg(value)?;
        match args[j].to_ascii_lowercase().as_slice() {
            b"rank" => {
                if number == 0 || number == i64::MIN {
                    return Err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list".into());
                }
                rank = number;
            }
            b"count" if number < 0 => return Err("ERR COUNT can't be negative".into()),
            b"count" => count = Some(number as usize),
            b"maxlen" if number < 0 => return Err("ERR MAXLEN can't be negative".into()),
            b"maxlen" => maxlen = number,
            _ => return Err(SYNTAX_ERROR.into()),
        }
        j += 2;
    }
    let Some(source) = list(store, args[1])? else {
        return Ok(if count.is_some() {
            Value::Array(Vec::new())
        } else {
            Value::Nil
        });
    };
    let wanted = match count {
        Some(0) => usize::MAX,
        Some(n) => n,
        None => 1,
    };
    let scanned = if maxlen == 0 {
        source.len()
    } else {
        (maxlen as usize).min(source.len())
    };
    let indexed: Box<dyn Iterator<Item = (usize, &Vec<u8>)>> = if rank > 0 {
        Box::new(source.iter().enumerate().take(scanned))
    } else {
        Box::new(source.iter().enumerate().rev().take(scanned))
    };
    let mut skip = rank.unsigned_abs() - 1;
    let mut found = Vec::new();
    for (index, element) in indexed {
        if element != args[2] {
            continue;
        }
        if skip > 0 {
            skip -= 1;
            continue;
        }
        found.push(Value::Int(index as i64));
        if found.len() >= wanted {
            break;
        }
    }
    Ok(match count {
        Some(_) => Value::Array(found),
        None => found.pop().unwrap_or(Value::Nil),
    })
}

/// Moves one element from `source`'s `from` end to `destination`'s `to` end.
fn move_one(
    store: &mut dyn Keyspace,
    source: &[u8],
    destination: &[u8],
    from: End,
    to: End,
) -> Result<Value, String> {
    let Some(list_from) = list(store, source)? else {
        return Ok(Value::Nil);
    };
    if list_from.is_empty() {
        return Ok(Value::Nil);
    }
    check_type(store, destination, "list")?;
    let element = list(store, source)?
        .and_then(|l| pop_at(l, from))
        .expect("checked non-empty");
    // Redis pushes before it deletes an emptied source, so a rotation (the same list
    // at both ends) keeps its one element.
    push_at(list_or_new(store, destination)?, to, element.clone());
    store.notify(KeyspaceEvents::LIST, push_event(to), destination);
    popped(store, source, from);
    store.changed(destination);
    Ok(Value::Data(element))
}

fn directions(args: &[&[u8]]) -> Result<(End, End), String> {
    match (end(args[0]), end(args[1])) {
        (Some(from), Some(to)) => Ok((from, to)),
        _ => Err(SYNTAX_ERROR.into()),
    }
}

pub(crate) fn lmove(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let (from, to) = directions(&args[3..5])?;
    move_one(store, args[1], args[2], from, to)
}

pub(crate) fn rpoplpush(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    move_one(store, args[1], args[2], End::Right, End::Left)
}

/// `LMPOP numkeys key… LEFT|RIGHT [COUNT count]` from `numkeys_at`: `[key, elements]` of
/// the first non-empty list, or a null array.
fn multi_pop(store: &mut dyn Keyspace, args: &[&[u8]], numkeys_at: usize) -> Result<Value, String> {
    let numkeys = integer(args[numkeys_at])
        .filter(|n| *n > 0)
        .ok_or("ERR numkeys should be greater than 0")?;
    let keys_start = numkeys_at + 1;
    let end_at = keys_start + numkeys as usize;
    if end_at >= args.len() {
        return Err(SYNTAX_ERROR.into());
    }
    let from = end(args[end_at]).ok_or(SYNTAX_ERROR)?;
    let mut count = 1usize;
    match &args[end_at + 1..] {
        [] => {}
        [option, value] if option.eq_ignore_ascii_case(b"count") => {
            count = integer(value)
                .filter(|n| *n > 0)
                .ok_or("ERR count should be greater than 0")? as usize;
        }
        _ => return Err(SYNTAX_ERROR.into()),
    }
    for key in &args[keys_start..end_at] {
        let Some(source) = list(store, key)? else {
            continue;
        };
        let taken: Vec<Value> = (0..count)
            .map_while(|_| pop_at(source, from))
            .map(Value::Data)
            .collect();
        popped(store, key, from);
        return Ok(Value::Array(vec![
            Value::Data(key.to_vec()),
            Value::Array(taken),
        ]));
    }
    Ok(Value::NilArray)
}

pub(crate) fn lmpop(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    multi_pop(store, args, 1)
}

/// BLPOP and BRPOP without waiting: `[key, element]` from the first non-empty list.
fn blocking_pop(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    end: End,
    version: RedisVersion,
) -> Result<Value, String> {
    blocking_timeout(args[args.len() - 1], store.now_ms(), version)?;
    for key in &args[1..args.len() - 1] {
        if let Some(source) = list(store, key)? {
            let element = pop_at(source, end).expect("live lists are not empty");
            popped(store, key, end);
            return Ok(Value::Array(vec![
                Value::Data(key.to_vec()),
                Value::Data(element),
            ]));
        }
    }
    Ok(Value::NilArray)
}

pub(crate) fn blpop(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    blocking_pop(store, args, End::Left, context.version)
}

pub(crate) fn brpop(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    blocking_pop(store, args, End::Right, context.version)
}

pub(crate) fn blmove(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    let (from, to) = directions(&args[3..5])?;
    blocking_timeout(args[5], store.now_ms(), context.version)?;
    move_one(store, args[1], args[2], from, to)
}

pub(crate) fn brpoplpush(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    blocking_timeout(args[3], store.now_ms(), context.version)?;
    move_one(store, args[1], args[2], End::Right, End::Left)
}

pub(crate) fn blmpop(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    blocking_timeout(args[1], store.now_ms(), context.version)?;
    multi_pop(store, args, 2)
}

/// A blocking command's timeout in milliseconds (0: wait forever), parsed as Redis's
/// `getTimeoutFromObjectOrReply` does: seconds as a float, rounded up to whole
/// milliseconds. Redis 7.0 then casts to an integer the C way, so values too large to
/// cast come out negative, and one so large that now plus it overflows wraps to a
/// deadline that never comes (it waits for ever, 0); 7.2 refuses both as out of range.
/// (Redis computes in `long double`: whole seconds are exact here too; a few fractional
/// values within 1e-19 of a whole millisecond round differently, and hex floats are not
/// accepted.)
pub(crate) fn blocking_timeout(
    arg: &[u8],
    now_ms: i64,
    version: RedisVersion,
) -> Result<u64, String> {
    let text = std::str::from_utf8(arg)
        .ok()
        .filter(|text| !text.starts_with(|c: char| c.is_ascii_whitespace()))
        .ok_or("ERR timeout is not a float or out of range")?;
    let seconds = text
        .parse::<f64>()
        .ok()
        .filter(|seconds| !seconds.is_nan())
        .ok_or("ERR timeout is not a float or out of range")?;
    // Milliseconds, exact for whole seconds (as a long double holds them); `None` beyond
    // what a 64-bit integer holds.
    let ms: Option<i64> = match text.parse::<i64>() {
        Ok(whole) => whole.checked_mul(1000),
        Err(_) => {
            let ms = (seconds * 1000.0).ceil();
            // 2^63 is exactly representable; every double below it in magnitude casts.
            const LIMIT: f64 = 9_223_372_036_854_775_808.0;
            (-LIMIT..LIMIT).contains(&ms).then_some(ms as i64)
        }
    };
    let out_of_range = || Err("ERR timeout is out of range".to_string());
    let ms = match (ms, version) {
        (Some(ms), _) => ms,
        // Too large to hold: 7.2 says so; 7.0's cast gives LLONG_MIN on x86-64.
        (None, RedisVersion::V7_0) => i64::MIN,
        (None, _) if seconds > 0.0 => return out_of_range(),
        (None, _) => i64::MIN,
    };
    if ms < 0 {
        return Err("ERR timeout is negative".into());
    }
    if ms > i64::MAX - now_ms {
        return match version {
            RedisVersion::V7_0 => Ok(0),
            _ => out_of_range(),
        };
    }
    Ok(ms.unsigned_abs())
}

/// The command that puts back what the blocking `command` took when it answered `reply`,
/// for a client that left before the reply could reach it: the elements go back to the
/// end they came from, in their order.
pub(crate) fn undo(command: &[Vec<u8>], reply: &Value) -> Option<Vec<Vec<u8>>> {
    let name = command[0].to_ascii_lowercase();
    let push = |end: End, key: &[u8], elements: &[&Value]| {
        let mut undo = vec![
            match end {
                End::Left => b"lpush".to_vec(),
                End::Right => b"rpush".to_vec(),
            },
            key.to_vec(),
        ];
        // Pushed one by one to the end they left, the last pushed is the first taken.
        for element in elements.iter().rev() {
            let Value::Data(element) = element else {
                return None;
            };
            undo.push(element.clone());
        }
        Some(undo)
    };
    match (name.as_slice(), reply) {
        (b"blpop" | b"brpop", Value::Array(popped)) => {
            let [Value::Data(key), element] = popped.as_slice() else {
                return None;
            };
            let end = if name == b"blpop" {
                End::Left
            } else {
                End::Right
            };
            push(end, key, &[element])
        }
        (b"blmpop", Value::Array(popped)) => {
            let [Value::Data(key), Value::Array(elements)] = popped.as_slice() else {
                return None;
            };
            let numkeys = usize::try_from(integer(&command[2])?).ok()?;
            let end = end(command.get(3 + numkeys)?)?;
            push(end, key, &elements.iter().collect::<Vec<_>>())
        }
        (b"blmove" | b"brpoplpush", Value::Data(_)) => {
            let (from, to) = if name == b"blmove" {
                (command[3].clone(), command[4].clone())
            } else {
                (b"right".to_vec(), b"left".to_vec())
            };
            Some(vec![
                b"lmove".to_vec(),
                command[2].clone(),
                command[1].clone(),
                to,
                from,
            ])
        }
        _ => None,
    }
}
