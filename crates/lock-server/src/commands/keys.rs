//! Commands on keys of any type: DEL (UNLINK), EXISTS (TOUCH), TYPE, KEYS, RENAME,
//! COPY, RANDOMKEY, OBJECT and the SCAN family.

use lock_core::Value;
use lock_memory::{Data, Databases, Keyspace, KeyspaceEvents, glob_match};

use super::sets::is_intset;
use super::values::{hash, set, sorted_set};
use crate::protocol::args::{NOT_AN_INTEGER, SYNTAX_ERROR, integer, ok, text};
use crate::protocol::numbers::format_double;
use crate::state::config::Limits;
use crate::state::context::Context;
use crate::state::options::DATABASES;

pub(crate) fn del(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    Ok(Value::Int(store.del(&args[1..]).map_err(text)?))
}

pub(crate) fn exists(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    Ok(Value::Int(store.exists(&args[1..]).map_err(text)?))
}

pub(crate) fn key_type(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    Ok(Value::Status(store.key_type(args[1]).map_err(text)?.into()))
}

pub(crate) fn keys(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    let keys = store.keys(args[1]).map_err(text)?;
    Ok(Value::Array(keys.into_iter().map(Value::Data).collect()))
}

/// `FLUSHDB [ASYNC|SYNC]`: every key of the database goes.
pub(crate) fn flushdb(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    if !super::admin::flush_mode_ok(args) {
        return Err(SYNTAX_ERROR.into());
    }
    store.flush();
    Ok(ok())
}

/// `DBSIZE`: how many live keys the database holds.
pub(crate) fn dbsize(store: &mut dyn Keyspace, _: &[&[u8]], _: Context) -> Result<Value, String> {
    Ok(Value::Int(store.size() as i64))
}

/// `TIME`: seconds and microseconds, on the database's clock (so fast-forward moves it,
/// and it stands still inside a script).
pub(crate) fn time(store: &mut dyn Keyspace, _: &[&[u8]], _: Context) -> Result<Value, String> {
    let us = store.now_us();
    Ok(Value::Array(vec![
        Value::Data(us.div_euclid(1_000_000).to_string().into_bytes()),
        Value::Data(us.rem_euclid(1_000_000).to_string().into_bytes()),
    ]))
}

/// `RENAME key newkey`: the value and its TTL move; whatever `newkey` held is replaced.
pub(crate) fn rename(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    if args[1] == args[2] {
        // Renamed to itself: nothing changes, and WATCH sees nothing.
        return match store.value(args[1]) {
            Some(_) => Ok(ok()),
            None => Err("ERR no such key".into()),
        };
    }
    let (data, expires_at) = store.take(args[1]).ok_or("ERR no such key")?;
    move_to(store, args, data, expires_at);
    Ok(ok())
}

/// `RENAMENX key newkey`: as RENAME, unless `newkey` exists (a key renamed to itself
/// counts as existing).
pub(crate) fn renamenx(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    if store.value(args[1]).is_none() {
        return Err("ERR no such key".into());
    }
    if store.value(args[2]).is_some() {
        return Ok(Value::Int(0));
    }
    let (data, expires_at) = store.take(args[1]).expect("checked above");
    move_to(store, args, data, expires_at);
    Ok(Value::Int(1))
}

/// The end of RENAME and RENAMENX: `args[1]`'s value, taken, replaces `args[2]`.
fn move_to(store: &mut dyn Keyspace, args: &[&[u8]], data: Data, expires_at: Option<i64>) {
    // Redis deletes the old destination and adds the key anew: a `new` event even
    // when the name was taken.
    store.take(args[2]);
    store.put(args[2], data, expires_at);
    store.notify(KeyspaceEvents::GENERIC, "rename_from", args[1]);
    store.notify(KeyspaceEvents::GENERIC, "rename_to", args[2]);
}

/// `COPY source destination [DB db] [REPLACE]`'s options: the destination database
/// (`None`: the caller's) and REPLACE.
pub(crate) fn copy_options(args: &[&[u8]]) -> Result<(Option<usize>, bool), String> {
    let mut replace = false;
    let mut db = None;
    let mut options = args[3..].iter();
    while let Some(option) = options.next() {
        if option.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if let (true, Some(index)) = (option.eq_ignore_ascii_case(b"db"), options.next()) {
            let index = integer(index).ok_or(NOT_AN_INTEGER)?;
            db = Some(
                usize::try_from(index)
                    .ok()
                    .filter(|db| *db < DATABASES)
                    .ok_or("ERR DB index is out of range")?,
            );
        } else {
            return Err(SYNTAX_ERROR.into());
        }
    }
    Ok((db, replace))
}

/// Whether a command runs across databases, and so needs them all in its atomic step:
/// `COPY … DB n` to another database than `db`'s.
pub(crate) fn spans_databases<A: AsRef<[u8]>>(args: &[A], db: usize) -> bool {
    args[0].as_ref().eq_ignore_ascii_case(b"copy") && args.len() > 3 && {
        let args: Vec<&[u8]> = args.iter().map(AsRef::as_ref).collect();
        matches!(copy_options(&args), Ok((Some(to), _)) if to != db)
    }
}

/// `COPY` within the caller's database. One that names another database runs through
/// [`copy_across`], with every database in its atomic step.
pub(crate) fn copy(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    let (db, replace) = copy_options(args)?;
    if db.is_some_and(|db| db != context.db) {
        return Err(
            "ERR nxlock serve runs COPY to another database only as a command of its own".into(),
        );
    }
    if args[1] == args[2] {
        return Err("ERR source and destination objects are the same".into());
    }
    copy_between(store, None, args, replace)
}

/// `COPY source destination DB n [REPLACE]` from database `from` into another one.
pub(crate) fn copy_across(
    databases: &mut Databases<'_>,
    from: usize,
    args: &[&[u8]],
) -> Result<Value, String> {
    let (to, replace) = copy_options(args)?;
    let to = to.unwrap_or(from);
    match databases.pair(from, to) {
        Some((source, target)) => copy_between(source, Some(target), args, replace),
        None => {
            let store = databases.get(from).ok_or("ERR DB index is out of range")?;
            if args[1] == args[2] {
                return Err("ERR source and destination objects are the same".into());
            }
            copy_between(store, None, args, replace)
        }
    }
}

/// Copies `args[1]` of `source` to `args[2]` of `target` (`None`: the same keyspace).
fn copy_between<'a>(
    source: &'a mut dyn Keyspace,
    target: Option<&'a mut dyn Keyspace>,
    args: &[&[u8]],
    replace: bool,
) -> Result<Value, String> {
    let Some(data) = source.value(args[1]).cloned() else {
        return Ok(Value::Int(0));
    };
    let expires_at = source.expires_at(args[1]).flatten();
    let target = match target {
        Some(target) => target,
        None => source,
    };
    if target.value(args[2]).is_some() {
        if !replace {
            return Ok(Value::Int(0));
        }
        // Deleted, then added anew (a `new` event), as Redis does it.
        target.take(args[2]);
    }
    target.put(args[2], data, expires_at);
    target.notify(KeyspaceEvents::GENERIC, "copy_to", args[2]);
    Ok(Value::Int(1))
}

/// `RANDOMKEY`.
pub(crate) fn randomkey(
    store: &mut dyn Keyspace,
    _: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    Ok(store
        .random_key(&mut |n| fastrand::usize(..n))
        .map_or(Value::Nil, Value::Data))
}

/// `OBJECT ENCODING|REFCOUNT|IDLETIME|FREQ key`, and `OBJECT HELP`.
pub(crate) fn object(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    let sub = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
    let arity = match sub.as_str() {
        "help" => 2,
        "encoding" | "refcount" | "idletime" | "freq" => 3,
        _ => {
            return Err(format!(
                "ERR unknown subcommand '{}'. Try OBJECT HELP.",
                String::from_utf8_lossy(args[1])
            ));
        }
    };
    if args.len() != arity {
        return Err(crate::protocol::args::wrong_arity_text(&format!(
            "object|{sub}"
        )));
    }
    if sub == "help" {
        return Ok(Value::Array(
            OBJECT_HELP
                .iter()
                .map(|line| Value::Status((*line).into()))
                .collect(),
        ));
    }
    let Some(data) = store.value(args[2]) else {
        return Ok(Value::Nil);
    };
    Ok(match sub.as_str() {
        "encoding" => Value::Data(encoding(data, &context.limits).as_bytes().to_vec()),
        // Redis shares one object for each small integer.
        "refcount" => Value::Int(match data {
            Data::String(bytes) if integer(bytes).is_some_and(|n| (0..10_000).contains(&n)) => {
                i64::from(i32::MAX)
            }
            _ => 1,
        }),
        "idletime" => Value::Int(store.idle_ms(args[2]).unwrap_or(0) / 1000),
        _ => return Err(FREQ_WITHOUT_LFU.into()),
    })
}

const FREQ_WITHOUT_LFU: &str = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";

const OBJECT_HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
];

/// The encoding Redis 7.0 would use for `data`, judged from its content now. (Redis
/// converts one way only: a hash that once grew past the limits stays a hashtable after
/// it shrinks, and a string changed by APPEND or SETRANGE is raw.)
fn encoding(data: &Data, limits: &Limits) -> &'static str {
    match data {
        Data::String(bytes) if bytes.len() <= 20 && integer(bytes).is_some() => "int",
        Data::String(bytes) if bytes.len() <= 44 => "embstr",
        Data::String(_) => "raw",
        Data::List(_) => "quicklist",
        Data::Hash(hash)
            if hash.len() <= limits.hash_max_listpack_entries
                && hash.iter().all(|(field, value)| {
                    field.len() <= limits.hash_max_listpack_value
                        && value.len() <= limits.hash_max_listpack_value
                }) =>
        {
            "listpack"
        }
        Data::Hash(_) => "hashtable",
        Data::Set(members) if is_intset(members, limits) => "intset",
        Data::Set(_) => "hashtable",
        Data::SortedSet(sorted)
            if sorted.len() <= limits.zset_max_listpack_entries
                && sorted
                    .iter()
                    .all(|(member, _)| member.len() <= limits.zset_max_listpack_value) =>
        {
            "listpack"
        }
        Data::SortedSet(_) => "skiplist",
    }
}

/// A SCAN-family cursor, read as Redis 7.0 reads it (`strtoul`: a sign is accepted,
/// `-1` wraps around, an empty string is 0).
fn cursor(arg: &[u8]) -> Result<u64, String> {
    let invalid = || "ERR invalid cursor".to_string();
    let digits = match arg {
        [b'+' | b'-', rest @ ..] if !rest.is_empty() => rest,
        _ => arg,
    };
    if arg.is_empty() {
        return Ok(0);
    }
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid());
    }
    let value: u64 = std::str::from_utf8(digits)
        .ok()
        .and_then(|d| d.parse().ok())
        .ok_or_else(invalid)?;
    Ok(if arg[0] == b'-' {
        value.wrapping_neg()
    } else {
        value
    })
}

/// The MATCH, COUNT and (for SCAN) TYPE options of the SCAN family.
struct ScanOptions<'a> {
    pattern: Option<&'a [u8]>,
    kind: Option<&'a [u8]>,
}

fn scan_options<'a>(options: &[&'a [u8]], allow_type: bool) -> Result<ScanOptions<'a>, String> {
    let mut parsed = ScanOptions {
        pattern: None,
        kind: None,
    };
    let mut rest = options.iter();
    while let Some(option) = rest.next() {
        let lower = option.to_ascii_lowercase();
        let Some(value) = rest.next() else {
            return Err(SYNTAX_ERROR.into());
        };
        match lower.as_slice() {
            b"match" => parsed.pattern = Some(value),
            b"count" => {
                if integer(value).ok_or(NOT_AN_INTEGER)? < 1 {
                    return Err(SYNTAX_ERROR.into());
                }
            }
            b"type" if allow_type => parsed.kind = Some(value),
            _ => return Err(SYNTAX_ERROR.into()),
        }
    }
    Ok(parsed)
}

fn matches(pattern: Option<&[u8]>, subject: &[u8]) -> bool {
    pattern.is_none_or(|pattern| pattern == b"*" || glob_match(pattern, subject))
}

/// A whole scan in one reply: cursor 0 and every match. Redis may split a large keyspace
/// over several calls; a client that loops until cursor 0 sees the same elements.
fn scan_reply(items: Vec<Vec<u8>>) -> Value {
    Value::Array(vec![
        Value::Data(b"0".to_vec()),
        Value::Array(items.into_iter().map(Value::Data).collect()),
    ])
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`.
pub(crate) fn scan(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    cursor(args[1])?;
    let options = scan_options(&args[2..], true)?;
    let mut keys = store.keys(options.pattern.unwrap_or(b"*")).map_err(text)?;
    if let Some(kind) = options.kind {
        keys.retain(|key| {
            store
                .value(key)
                .is_some_and(|data| kind.eq_ignore_ascii_case(data.type_name().as_bytes()))
        });
    }
    Ok(scan_reply(keys))
}

/// `HSCAN key cursor [MATCH pattern] [COUNT count]`: fields and values.
pub(crate) fn hscan(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    // Redis reads the cursor, then answers a missing key's empty scan, then checks the
    // type, and only then the options.
    cursor(args[2])?;
    let Some(hash) = hash(store, args[1])? else {
        return Ok(scan_reply(Vec::new()));
    };
    let options = scan_options(&args[3..], false)?;
    let pairs = hash
        .iter()
        .filter(|(field, _)| matches(options.pattern, field))
        .flat_map(|(field, value)| [field.clone(), value.clone()])
        .collect();
    Ok(scan_reply(pairs))
}

/// `SSCAN key cursor [MATCH pattern] [COUNT count]`.
pub(crate) fn sscan(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    cursor(args[2])?;
    let Some(members) = set(store, args[1])? else {
        return Ok(scan_reply(Vec::new()));
    };
    let options = scan_options(&args[3..], false)?;
    let members = members
        .iter()
        .filter(|member| matches(options.pattern, member))
        .cloned()
        .collect();
    Ok(scan_reply(members))
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]`: members and scores.
pub(crate) fn zscan(store: &mut dyn Keyspace, args: &[&[u8]], _: Context) -> Result<Value, String> {
    cursor(args[2])?;
    let Some(sorted) = sorted_set(store, args[1])? else {
        return Ok(scan_reply(Vec::new()));
    };
    let options = scan_options(&args[3..], false)?;
    let pairs = sorted
        .iter()
        .filter(|(member, _)| matches(options.pattern, member))
        .flat_map(|(member, score)| [member.to_vec(), format_double(score).into_bytes()])
        .collect();
    Ok(scan_reply(pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_are_read_like_strtoul() {
        assert_eq!(cursor(b"0"), Ok(0));
        assert_eq!(cursor(b""), Ok(0));
        assert_eq!(cursor(b"-1"), Ok(u64::MAX));
        assert_eq!(cursor(b"18446744073709551615"), Ok(u64::MAX));
        for bad in [&b"18446744073709551616"[..], b"x", b"-", b" 1", b"1 "] {
            assert!(cursor(bad).is_err(), "{bad:?}");
        }
    }
}
