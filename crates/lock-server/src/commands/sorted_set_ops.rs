//! ZUNION, ZINTER and ZDIFF, their STORE forms, and ZINTERCARD: Redis 7.0's
//! `zunionInterDiffGenericCommand`, with its order of checks (the number of keys, the
//! keys' types, then the options) and its arithmetic (weights, SUM/MIN/MAX, and `inf +
//! -inf` counted as 0). Sets count as sorted sets whose every score is 1.

use lock_core::Value;
use lock_memory::{Data, Keyspace, KeyspaceEvents, Set, SortedSet};

use super::sorted_sets::range_reply;
use super::values::{self, WRONGTYPE};
use crate::protocol::args::{NOT_AN_INTEGER, SYNTAX_ERROR, integer};
use crate::protocol::numbers::parse_double;
use crate::state::context::Context;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

/// One input key's value, copied out of the keyspace.
enum Input {
    Missing,
    Set(Set),
    Sorted(SortedSet),
}

impl Input {
    fn len(&self) -> usize {
        match self {
            Input::Missing => 0,
            Input::Set(members) => members.len(),
            Input::Sorted(sorted) => sorted.len(),
        }
    }

    /// The member's score (1 for a set's member).
    fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            Input::Missing => None,
            Input::Set(members) => members.contains(member).then_some(1.0),
            Input::Sorted(sorted) => sorted.score(member),
        }
    }

    fn members(&self) -> Vec<(Vec<u8>, f64)> {
        match self {
            Input::Missing => Vec::new(),
            Input::Set(members) => members.iter().map(|m| (m.clone(), 1.0)).collect(),
            Input::Sorted(sorted) => sorted.iter().map(|(m, s)| (m.to_vec(), s)).collect(),
        }
    }
}

/// What the arguments asked for.
struct Request {
    inputs: Vec<(Input, f64)>,
    aggregate: Aggregate,
    with_scores: bool,
    limit: usize,
}

/// Reads the keys and options from `args[numkeys_at..]` as Redis does; `name` is the
/// command's, for the error about no keys.
fn request(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    numkeys_at: usize,
    op: Op,
    name: &str,
    stores: bool,
    cardinality_only: bool,
) -> Result<Request, String> {
    let numkeys = integer(args[numkeys_at]).ok_or(NOT_AN_INTEGER)?;
    if numkeys < 1 {
        return Err(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        ));
    }
    let first = numkeys_at + 1;
    if numkeys > (args.len() - first) as i64 {
        return Err(SYNTAX_ERROR.into());
    }
    let numkeys = numkeys as usize;
    let mut inputs = Vec::with_capacity(numkeys);
    for key in &args[first..first + numkeys] {
        let input = match store.value(key) {
            None => Input::Missing,
            Some(Data::Set(members)) => Input::Set(members.clone()),
            Some(Data::SortedSet(sorted)) => Input::Sorted(sorted.clone()),
            Some(_) => return Err(WRONGTYPE.into()),
        };
        inputs.push((input, 1.0));
    }
    let mut request = Request {
        inputs,
        aggregate: Aggregate::Sum,
        with_scores: false,
        limit: 0,
    };
    let mut j = first + numkeys;
    while j < args.len() {
        let remaining = args.len() - j;
        let option = args[j];
        let combining = op != Op::Diff && !cardinality_only;
        if combining && remaining > numkeys && option.eq_ignore_ascii_case(b"weights") {
            for (i, weight) in request.inputs.iter_mut().map(|(_, w)| w).enumerate() {
                *weight = parse_double(args[j + 1 + i]).ok_or("ERR weight value is not a float")?;
            }
            j += 1 + numkeys;
        } else if combining && remaining >= 2 && option.eq_ignore_ascii_case(b"aggregate") {
            request.aggregate = match args[j + 1].to_ascii_lowercase().as_slice() {
                b"sum" => Aggregate::Sum,
                b"min" => Aggregate::Min,
                b"max" => Aggregate::Max,
                _ => return Err(SYNTAX_ERROR.into()),
            };
            j += 2;
        } else if !stores && !cardinality_only && option.eq_ignore_ascii_case(b"withscores") {
            request.with_scores = true;
            j += 1;
        } else if cardinality_only && remaining >= 2 && option.eq_ignore_ascii_case(b"limit") {
            request.limit = integer(args[j + 1])
                .and_then(|limit| usize::try_from(limit).ok())
                .ok_or("ERR LIMIT can't be negative")?;
            j += 2;
        } else {
            return Err(SYNTAX_ERROR.into());
        }
    }
    if op != Op::Diff {
        // Smallest first, as Redis orders them (its sort keeps equal sizes in order).
        request.inputs.sort_by_key(|(input, _)| input.len());
    }
    Ok(request)
}

/// Redis's `zunionInterAggregate`.
fn aggregate(target: &mut f64, value: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *target += value;
            // +inf plus -inf: Redis counts it as 0.
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => {
            if value < *target {
                *target = value;
            }
        }
        Aggregate::Max => {
            if value > *target {
                *target = value;
            }
        }
    }
}

/// A weighted score, NaN (inf × 0) counted as 0.
fn weighted(score: f64, weight: f64) -> f64 {
    let value = score * weight;
    if value.is_nan() { 0.0 } else { value }
}

/// The result of `op` over the request's inputs.
fn combine(request: &Request, op: Op) -> SortedSet {
    let mut result = SortedSet::new();
    let Some(((first, first_weight), others)) = request.inputs.split_first() else {
        return result;
    };
    match op {
        Op::Inter => {
            if first.len() == 0 {
                return result;
            }
            'members: for (member, score) in first.members() {
                let mut total = weighted(score, *first_weight);
                for (other, weight) in others {
                    let Some(score) = other.score(&member) else {
                        continue 'members;
                    };
                    aggregate(&mut total, score * weight, request.aggregate);
                }
                result.insert(&member, total);
            }
        }
        Op::Union => {
            let mut totals: std::collections::HashMap<Vec<u8>, f64> =
                std::collections::HashMap::new();
            for (input, weight) in &request.inputs {
                for (member, score) in input.members() {
                    let value = weighted(score, *weight);
                    match totals.get_mut(&member) {
                        Some(total) => aggregate(total, value, request.aggregate),
                        None => {
                            totals.insert(member, value);
                        }
                    }
                }
            }
            for (member, score) in totals {
                result.insert(&member, score);
            }
        }
        Op::Diff => {
            for (member, score) in first.members() {
                if others
                    .iter()
                    .all(|(other, _)| other.score(&member).is_none())
                {
                    result.insert(&member, score);
                }
            }
        }
    }
    result
}

/// The STORE forms: the result replaces `args[1]` (an empty result deletes it).
fn store_result(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    op: Op,
    name: &str,
) -> Result<Value, String> {
    let request = request(store, args, 2, op, name, true, false)?;
    let result = combine(&request, op);
    let size = result.len();
    // The event is the command's name.
    let event = (KeyspaceEvents::ZSET, name);
    Ok(values::store_result(
        store,
        args[1],
        Data::SortedSet(result),
        size,
        event,
    ))
}

/// The read forms: the members, lowest score first, with their scores if asked.
fn reply_result(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    op: Op,
    name: &str,
    context: Context,
) -> Result<Value, String> {
    let request = request(store, args, 1, op, name, false, false)?;
    let result = combine(&request, op);
    let members = result.iter().map(|(m, s)| (m.to_vec(), s)).collect();
    Ok(range_reply(members, request.with_scores, context.protocol))
}

pub(crate) fn zunionstore(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    store_result(store, args, Op::Union, "zunionstore")
}

pub(crate) fn zinterstore(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    store_result(store, args, Op::Inter, "zinterstore")
}

pub(crate) fn zdiffstore(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    store_result(store, args, Op::Diff, "zdiffstore")
}

pub(crate) fn zunion(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    reply_result(store, args, Op::Union, "zunion", context)
}

pub(crate) fn zinter(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    reply_result(store, args, Op::Inter, "zinter", context)
}

pub(crate) fn zdiff(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    reply_result(store, args, Op::Diff, "zdiff", context)
}

/// `ZINTERCARD numkeys key [key ...] [LIMIT limit]`: how many members the intersection
/// has, counting stopped at the limit.
pub(crate) fn zintercard(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let request = request(store, args, 1, Op::Inter, "zintercard", false, true)?;
    let size = combine(&request, Op::Inter).len();
    let counted = if request.limit > 0 {
        size.min(request.limit)
    } else {
        size
    };
    Ok(Value::Int(counted as i64))
}
