//! `MEMORY USAGE` and `MEMORY HELP`. serve's allocator is not Redis's, so the bytes a key
//! takes are estimated from what it holds; the other subcommands report on jemalloc and
//! Redis's own accounting, which serve does not have.

use lock_core::Value;
use lock_memory::{Data, Keyspace};

use crate::protocol::args::{NOT_AN_INTEGER, SYNTAX_ERROR, integer, wrong_arity_text};
use crate::state::context::Context;

/// What one stored key costs besides its bytes: Redis's dict entry, key and value
/// objects (a fair fit for its `MEMORY USAGE` of small strings).
const KEY_OVERHEAD: usize = 56;
/// What each element of a collection costs besides its bytes.
const ELEMENT_OVERHEAD: usize = 16;

/// `MEMORY <subcommand> …`.
pub(crate) fn memory(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let sub = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
    let arity_holds = match sub.as_str() {
        "usage" => args.len() >= 3,
        "help" | "doctor" | "malloc-stats" | "purge" | "stats" => args.len() == 2,
        _ => {
            return Err(format!(
                "ERR unknown subcommand '{}'. Try MEMORY HELP.",
                String::from_utf8_lossy(args[1])
            ));
        }
    };
    if !arity_holds {
        return Err(wrong_arity_text(&format!("memory|{sub}")));
    }
    match sub.as_str() {
        "help" => Ok(Value::Array(
            HELP.iter()
                .map(|line| Value::Status((*line).into()))
                .collect(),
        )),
        "usage" => usage(store, args),
        _ => Err(format!(
            "ERR nxlock serve has no MEMORY {}: it reports on Redis's allocator",
            sub.to_ascii_uppercase()
        )),
    }
}

/// `MEMORY USAGE key [SAMPLES count]`: the estimate for the whole value (serve does not
/// sample, so SAMPLES is checked and otherwise changes nothing), or nil.
fn usage(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
    let mut options = args[3..].iter();
    while let Some(option) = options.next() {
        match options.next() {
            Some(count) if option.eq_ignore_ascii_case(b"samples") => {
                if integer(count).ok_or(NOT_AN_INTEGER)? < 0 {
                    return Err(SYNTAX_ERROR.into());
                }
            }
            _ => return Err(SYNTAX_ERROR.into()),
        }
    }
    Ok(store.value(args[2]).map_or(
        Value::Nil,
        |data| Value::Int(estimate(args[2], data) as i64),
    ))
}

/// The bytes `key` and its value take, estimated.
fn estimate(key: &[u8], data: &Data) -> usize {
    let element = |bytes: usize| bytes + ELEMENT_OVERHEAD;
    let value = match data {
        Data::String(bytes) => bytes.len(),
        Data::List(items) => items.iter().map(|item| element(item.len())).sum(),
        Data::Hash(pairs) => pairs
            .iter()
            .map(|(field, value)| element(field.len() + value.len()))
            .sum(),
        Data::Set(members) => members.iter().map(|member| element(member.len())).sum(),
        Data::SortedSet(sorted) => sorted
            .iter()
            .map(|(member, _)| element(member.len() + 8))
            .sum(),
    };
    KEY_OVERHEAD + key.len() + value
}

const HELP: &[&str] = &[
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
    "HELP",
    "    Prints this help.",
];
