//! The sorted-set commands: members ordered by score, then by member bytes.

use lock_core::Value;
use lock_memory::{Keyspace, KeyspaceEvents, SortedSet};

use super::values::{settle, sorted_set, sorted_set_or_new, store_result};
use crate::protocol::args::{NOT_AN_INTEGER, SYNTAX_ERROR, integer, pop_count};
use crate::protocol::numbers::parse_double;
use crate::protocol::reply::Protocol;
use crate::state::context::Context;

const NOT_A_FLOAT: &str = "ERR value is not a valid float";

/// One end of a score range (`ZRANGEBYSCORE`'s min or max): `(` makes it exclusive.
#[derive(Clone, Copy)]
struct ScoreBound {
    value: f64,
    exclusive: bool,
}

/// Redis's `zslParseRange` for one bound: `strtod` on the rest of the text, which must be
/// used whole and not be NaN.
fn score_bound(arg: &[u8]) -> Result<ScoreBound, String> {
    let (exclusive, text) = match arg.first() {
        Some(b'(') => (true, &arg[1..]),
        _ => (false, arg),
    };
    let text = std::str::from_utf8(text).map_err(|_| "ERR min or max is not a float")?;
    let value = if text.is_empty() {
        Some(0.0) // strtod reads nothing from an empty string and stops at its end
    } else {
        // strtod skips leading white space before a number; with no number after it,
        // it stops at the start, so white space alone is not used whole.
        text.trim_start().parse::<f64>().ok()
    };
    match value {
        Some(value) if !value.is_nan() => Ok(ScoreBound { value, exclusive }),
        _ => Err("ERR min or max is not a float".into()),
    }
}

/// One end of a lex range: `-`, `+`, `[member` or `(member`.
#[derive(Clone)]
enum LexBound {
    Min,
    Max,
    Inclusive(Vec<u8>),
    Exclusive(Vec<u8>),
}

fn lex_bound(arg: &[u8]) -> Result<LexBound, String> {
    match arg {
        b"-" => Ok(LexBound::Min),
        b"+" => Ok(LexBound::Max),
        [b'[', rest @ ..] => Ok(LexBound::Inclusive(rest.to_vec())),
        [b'(', rest @ ..] => Ok(LexBound::Exclusive(rest.to_vec())),
        _ => Err("ERR min or max not valid string range item".into()),
    }
}

/// Members (with scores) as a range reply: WITHSCORES gives `member, score` flat in
/// RESP2 and `[member, score]` pairs in RESP3.
pub(crate) fn range_reply(
    members: Vec<(Vec<u8>, f64)>,
    with_scores: bool,
    protocol: Protocol,
) -> Value {
    Value::Array(if !with_scores {
        members.into_iter().map(|(m, _)| Value::Data(m)).collect()
    } else if protocol == Protocol::Resp3 {
        members
            .into_iter()
            .map(|(m, s)| Value::Array(vec![Value::Data(m), Value::Double(s)]))
            .collect()
    } else {
        members
            .into_iter()
            .flat_map(|(m, s)| [Value::Data(m), Value::Double(s)])
            .collect()
    })
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`.
pub(crate) fn zadd(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) =
        (false, false, false, false, false, false);
    let mut at = 2;
    while at < args.len() {
        match args[at].to_ascii_lowercase().as_slice() {
            b"nx" => nx = true,
            b"xx" => xx = true,
            b"gt" => gt = true,
            b"lt" => lt = true,
            b"ch" => ch = true,
            b"incr" => incr = true,
            _ => break,
        }
        at += 1;
    }
    let pairs = &args[at..];
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return Err(SYNTAX_ERROR.into());
    }
    if nx && xx {
        return Err("ERR XX and NX options at the same time are not compatible".into());
    }
    if (nx && (gt || lt)) || (gt && lt) {
        return Err("ERR GT, LT, and/or NX options at the same time are not compatible".into());
    }
    if incr && pairs.len() > 2 {
        return Err("ERR INCR option supports a single increment-element pair".into());
    }
    let scores: Vec<f64> = pairs
        .chunks(2)
        .map(|pair| parse_double(pair[0]).ok_or(NOT_A_FLOAT))
        .collect::<Result<_, _>>()?;
    let target = sorted_set_or_new(store, args[1])?;
    let (mut added, mut updated) = (0, 0);
    let mut incremented = None;
    for (pair, score) in pairs.chunks(2).zip(scores) {
        let member = pair[1];
        match target.score(member) {
            Some(current) => {
                if nx {
                    continue;
                }
                let next = if incr { current + score } else { score };
                if next.is_nan() {
                    changed(store, args[1], added + updated > 0, incr);
                    return Err("ERR resulting score is not a number (NaN)".into());
                }
                if (gt && next <= current) || (lt && next >= current) {
                    continue;
                }
                incremented = Some(next);
                if next != current {
                    target.insert(member, next);
                    updated += 1;
                }
            }
            None => {
                if xx {
                    continue;
                }
                target.insert(member, score);
                incremented = Some(score);
                added += 1;
            }
        }
    }
    changed(store, args[1], added + updated > 0, incr);
    if incr {
        return Ok(incremented.map_or(Value::Nil, Value::Double));
    }
    Ok(Value::Int(if ch { added + updated } else { added }))
}

pub(crate) fn zincrby(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let by = parse_double(args[2]).ok_or(NOT_A_FLOAT)?;
    let target = sorted_set_or_new(store, args[1])?;
    let current = target.score(args[3]);
    let next = current.unwrap_or(0.0) + by;
    if next.is_nan() {
        settle(store, args[1], false);
        return Err("ERR resulting score is not a number (NaN)".into());
    }
    target.insert(args[3], next);
    changed(store, args[1], current != Some(next), true);
    Ok(Value::Double(next))
}

/// Ends ZADD and ZINCRBY: Redis's `zadd` or `zincr` event when a member was added or
/// its score changed.
fn changed(store: &mut dyn Keyspace, key: &[u8], changed: bool, incr: bool) {
    if changed {
        store.notify(
            KeyspaceEvents::ZSET,
            if incr { "zincr" } else { "zadd" },
            key,
        );
    }
    settle(store, key, changed);
}

pub(crate) fn zrem(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let Some(target) = sorted_set(store, args[1])? else {
        return Ok(Value::Int(0));
    };
    let removed = args[2..].iter().filter(|m| target.remove(m)).count();
    if removed > 0 {
        store.notify(KeyspaceEvents::ZSET, "zrem", args[1]);
    }
    settle(store, args[1], removed > 0);
    Ok(Value::Int(removed as i64))
}

pub(crate) fn zscore(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let score = sorted_set(store, args[1])?.and_then(|z| z.score(args[2]));
    Ok(score.map_or(Value::Nil, Value::Double))
}

pub(crate) fn zmscore(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let source = sorted_set(store, args[1])?;
    Ok(Value::Array(
        args[2..]
            .iter()
            .map(|m| {
                source
                    .as_ref()
                    .and_then(|z| z.score(m))
                    .map_or(Value::Nil, Value::Double)
            })
            .collect(),
    ))
}

pub(crate) fn zcard(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    Ok(Value::Int(
        sorted_set(store, args[1])?.map_or(0, |z| z.len() as i64),
    ))
}

pub(crate) fn zcount(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let (min, max) = (score_bound(args[2])?, score_bound(args[3])?);
    let count =
        sorted_set(store, args[1])?.map_or(0, |z| ranks(z, &By::Score(min, max), false).len());
    Ok(Value::Int(count as i64))
}

pub(crate) fn zlexcount(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let (min, max) = (lex_bound(args[2])?, lex_bound(args[3])?);
    let count =
        sorted_set(store, args[1])?.map_or(0, |z| ranks(z, &By::Lex(min, max), false).len());
    Ok(Value::Int(count as i64))
}

fn rank_of(store: &mut dyn Keyspace, args: &[&[u8]], reverse: bool) -> Result<Value, String> {
    let Some(source) = sorted_set(store, args[1])? else {
        return Ok(Value::Nil);
    };
    let len = source.len();
    Ok(source.rank(args[2]).map_or(Value::Nil, |rank| {
        Value::Int(if reverse { len - 1 - rank } else { rank } as i64)
    }))
}

pub(crate) fn zrank(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    rank_of(store, args, false)
}

pub(crate) fn zrevrank(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    rank_of(store, args, true)
}

/// What a range selects by.
#[derive(Clone)]
enum By {
    Rank(i64, i64),
    Score(ScoreBound, ScoreBound),
    Lex(LexBound, LexBound),
}

/// The ascending ranks `by` selects in `source`, before any LIMIT: found by rank and
/// score lookups in O(log n), never by walking the members.
fn ranks(source: &SortedSet, by: &By, reverse: bool) -> std::ops::Range<usize> {
    let len = source.len();
    match by {
        By::Rank(start, stop) => {
            let len = len as i64;
            let start = if *start < 0 {
                (len + start).max(0)
            } else {
                *start
            };
            let stop = if *stop < 0 {
                len + stop
            } else {
                (*stop).min(len - 1)
            };
            if start > stop || start >= len {
                return 0..0;
            }
            let (start, stop) = (start as usize, stop as usize);
            if reverse {
                // Ranks counted from the highest member.
                (len as usize - 1 - stop)..(len as usize - start)
            } else {
                start..stop + 1
            }
        }
        By::Score(min, max) => {
            // Past the members below the minimum, up to those at or below the maximum.
            let low = source.count_below(min.value, min.exclusive);
            let high = source.count_below(max.value, !max.exclusive);
            low..high.max(low)
        }
        By::Lex(min, max) => {
            let low = match min {
                LexBound::Min => 0,
                LexBound::Max => len,
                LexBound::Inclusive(m) => source.count_before_member(m, false),
                LexBound::Exclusive(m) => source.count_before_member(m, true),
            };
            let high = match max {
                LexBound::Min => 0,
                LexBound::Max => len,
                LexBound::Inclusive(m) => source.count_before_member(m, true),
                LexBound::Exclusive(m) => source.count_before_member(m, false),
            };
            low..high.max(low)
        }
    }
}

/// The members of `source` that `by` selects, in order (descending when `reverse`), after
/// skipping `offset` and taking at most `count` (negative: all). O(log n + m) for the m
/// members returned.
fn select(
    source: &SortedSet,
    by: &By,
    reverse: bool,
    offset: i64,
    count: i64,
) -> Vec<(Vec<u8>, f64)> {
    if offset < 0 {
        return Vec::new();
    }
    let chosen = ranks(source, by, reverse);
    let available = chosen.len();
    let skip = (offset as u64).min(available as u64) as usize;
    let take = if count < 0 {
        available - skip
    } else {
        (count as u64).min((available - skip) as u64) as usize
    };
    let ranks = if reverse {
        (chosen.end - skip - take)..(chosen.end - skip)
    } else {
        (chosen.start + skip)..(chosen.start + skip + take)
    };
    let members = source.by_rank(ranks);
    let own = |(member, score): (&[u8], f64)| (member.to_vec(), score);
    if reverse {
        members.rev().map(own).collect()
    } else {
        members.map(own).collect()
    }
}

fn long(arg: &[u8]) -> Result<i64, String> {
    integer(arg).ok_or_else(|| NOT_AN_INTEGER.to_string())
}

/// The options after a range's bounds: WITHSCORES and `LIMIT offset count` (and for ZRANGE
/// also BYSCORE, BYLEX and REV).
struct RangeOptions {
    with_scores: bool,
    limit: Option<(i64, i64)>,
    by_score: bool,
    by_lex: bool,
    reverse: bool,
}

fn range_options(
    options: &[&[u8]],
    full: bool,
    scores_allowed: bool,
) -> Result<RangeOptions, String> {
    let mut parsed = RangeOptions {
        with_scores: false,
        limit: None,
        by_score: false,
        by_lex: false,
        reverse: false,
    };
    let mut j = 0;
    while j < options.len() {
        match options[j].to_ascii_lowercase().as_slice() {
            b"withscores" if scores_allowed => parsed.with_scores = true,
            b"limit" if j + 2 < options.len() => {
                parsed.limit = Some((long(options[j + 1])?, long(options[j + 2])?));
                j += 2;
            }
            b"byscore" if full => parsed.by_score = true,
            b"bylex" if full => parsed.by_lex = true,
            b"rev" if full => parsed.reverse = true,
            _ => return Err(SYNTAX_ERROR.into()),
        }
        j += 1;
    }
    Ok(parsed)
}

/// `ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]`.
pub(crate) fn zrange(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    let (by, options) = zrange_request(args, false)?;
    ranged(
        store,
        args[1],
        &by,
        options.reverse,
        options.limit,
        options.with_scores,
        context.protocol,
    )
}

/// `ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]`: ZRANGE's
/// selection stored at `dst` (an empty one deletes it); how many members it has.
pub(crate) fn zrangestore(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    // ZRANGE's arguments, with the destination in the command's place.
    let (by, options) = zrange_request(&args[1..], true)?;
    let (offset, count) = options.limit.unwrap_or((0, -1));
    let selected = sorted_set(store, args[2])?
        .map_or_else(Vec::new, |z| select(z, &by, options.reverse, offset, count));
    let mut result = SortedSet::new();
    for (member, score) in &selected {
        result.insert(member, *score);
    }
    let result = lock_memory::Data::SortedSet(result);
    let event = (KeyspaceEvents::ZSET, "zrangestore");
    Ok(store_result(store, args[1], result, selected.len(), event))
}

/// ZRANGE's selection and options, from `[_, key, start, stop, options…]`; WITHSCORES
/// is a syntax error when the result is `stored`, as in Redis.
fn zrange_request(args: &[&[u8]], stored: bool) -> Result<(By, RangeOptions), String> {
    let options = range_options(&args[4..], true, !stored)?;
    if options.by_score && options.by_lex {
        return Err(SYNTAX_ERROR.into());
    }
    if options.limit.is_some() && !options.by_score && !options.by_lex {
        return Err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
                .into(),
        );
    }
    if options.with_scores && options.by_lex {
        return Err("ERR syntax error, WITHSCORES not supported in combination with BYLEX".into());
    }
    // With REV, the range is given from the high end first.
    let (low, high) = if options.reverse && (options.by_score || options.by_lex) {
        (args[3], args[2])
    } else {
        (args[2], args[3])
    };
    let by = if options.by_score {
        By::Score(score_bound(low)?, score_bound(high)?)
    } else if options.by_lex {
        By::Lex(lex_bound(low)?, lex_bound(high)?)
    } else {
        By::Rank(long(low)?, long(high)?)
    };
    Ok((by, options))
}

fn ranged(
    store: &mut dyn Keyspace,
    key: &[u8],
    by: &By,
    reverse: bool,
    limit: Option<(i64, i64)>,
    with_scores: bool,
    protocol: Protocol,
) -> Result<Value, String> {
    let (offset, count) = limit.unwrap_or((0, -1));
    let members =
        sorted_set(store, key)?.map_or_else(Vec::new, |z| select(z, by, reverse, offset, count));
    Ok(range_reply(members, with_scores, protocol))
}

pub(crate) fn zrevrange(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    let options = range_options(&args[4..], false, true)?;
    if options.limit.is_some() {
        return Err(SYNTAX_ERROR.into());
    }
    let by = By::Rank(long(args[2])?, long(args[3])?);
    ranged(
        store,
        args[1],
        &by,
        true,
        None,
        options.with_scores,
        context.protocol,
    )
}

fn by_score(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    reverse: bool,
    protocol: Protocol,
) -> Result<Value, String> {
    let options = range_options(&args[4..], false, true)?;
    let (low, high) = if reverse {
        (args[3], args[2])
    } else {
        (args[2], args[3])
    };
    let by = By::Score(score_bound(low)?, score_bound(high)?);
    ranged(
        store,
        args[1],
        &by,
        reverse,
        options.limit,
        options.with_scores,
        protocol,
    )
}

pub(crate) fn zrangebyscore(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    by_score(store, args, false, context.protocol)
}

pub(crate) fn zrevrangebyscore(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    by_score(store, args, true, context.protocol)
}

fn by_lex(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    reverse: bool,
    protocol: Protocol,
) -> Result<Value, String> {
    let options = range_options(&args[4..], false, true)?;
    if options.with_scores {
        return Err(SYNTAX_ERROR.into());
    }
    let (low, high) = if reverse {
        (args[3], args[2])
    } else {
        (args[2], args[3])
    };
    let by = By::Lex(lex_bound(low)?, lex_bound(high)?);
    ranged(store, args[1], &by, reverse, options.limit, false, protocol)
}

pub(crate) fn zrangebylex(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    by_lex(store, args, false, context.protocol)
}

pub(crate) fn zrevrangebylex(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    by_lex(store, args, true, context.protocol)
}

fn remove_selected(store: &mut dyn Keyspace, key: &[u8], by: &By) -> Result<Value, String> {
    let Some(target) = sorted_set(store, key)? else {
        return Ok(Value::Int(0));
    };
    let chosen = ranks(target, by, false);
    let removed = target.remove_ranks(chosen);
    if removed > 0 {
        let event = match by {
            By::Score(..) => "zremrangebyscore",
            By::Rank(..) => "zremrangebyrank",
            By::Lex(..) => "zremrangebylex",
        };
        store.notify(KeyspaceEvents::ZSET, event, key);
    }
    settle(store, key, removed > 0);
    Ok(Value::Int(removed as i64))
}

pub(crate) fn zremrangebyscore(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let by = By::Score(score_bound(args[2])?, score_bound(args[3])?);
    remove_selected(store, args[1], &by)
}

pub(crate) fn zremrangebyrank(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let by = By::Rank(long(args[2])?, long(args[3])?);
    remove_selected(store, args[1], &by)
}

pub(crate) fn zremrangebylex(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let by = By::Lex(lex_bound(args[2])?, lex_bound(args[3])?);
    remove_selected(store, args[1], &by)
}

/// Pops up to `count` of the lowest (or `highest`) members of the sorted set at `key`,
/// with ZPOPMIN's or ZPOPMAX's event, deleting it if emptied; WRONGTYPE for another type.
pub(crate) fn pop_members(
    store: &mut dyn Keyspace,
    key: &[u8],
    highest: bool,
    count: usize,
) -> Result<Vec<(Vec<u8>, f64)>, String> {
    let Some(target) = sorted_set(store, key)? else {
        return Ok(Vec::new());
    };
    let wanted = count.min(target.len());
    let chosen: Vec<(Vec<u8>, f64)> = (0..wanted).filter_map(|_| target.pop(highest)).collect();
    if !chosen.is_empty() {
        let event = if highest { "zpopmax" } else { "zpopmin" };
        store.notify(KeyspaceEvents::ZSET, event, key);
    }
    settle(store, key, !chosen.is_empty());
    Ok(chosen)
}

fn pop(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    highest: bool,
    protocol: Protocol,
) -> Result<Value, String> {
    if args.len() > 3 {
        return Err(SYNTAX_ERROR.into());
    }
    let count = pop_count(args.get(2))?;
    if sorted_set(store, args[1])?.is_none() {
        return Ok(Value::Array(Vec::new()));
    }
    let chosen = pop_members(store, args[1], highest, count.unwrap_or(1))?;
    if count.is_none() || protocol == Protocol::Resp2 {
        return Ok(Value::Array(
            chosen
                .into_iter()
                .flat_map(|(m, s)| [Value::Data(m), Value::Double(s)])
                .collect(),
        ));
    }
    Ok(range_reply(chosen, true, protocol))
}

pub(crate) fn zpopmin(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    pop(store, args, false, context.protocol)
}

pub(crate) fn zpopmax(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    pop(store, args, true, context.protocol)
}

/// `ZRANDMEMBER key [count [WITHSCORES]]`: random members (see [`super::sampling`]).
pub(crate) fn zrandmember(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    let request = super::sampling::request(args, b"withscores")?;
    let Some(source) = sorted_set(store, args[1])? else {
        return Ok(super::sampling::absent(request.is_some()));
    };
    let member = |at: usize| {
        let (member, score) = source
            .by_rank(at..at + 1)
            .next()
            .expect("a rank below the length");
        (member.to_vec(), score)
    };
    let Some((count, with_scores)) = request else {
        return Ok(Value::Data(member(fastrand::usize(..source.len())).0));
    };
    let picked: Vec<(Vec<u8>, f64)> = super::sampling::indices(source.len(), count)?
        .into_iter()
        .map(member)
        .collect();
    Ok(range_reply(picked, with_scores, context.protocol))
}
