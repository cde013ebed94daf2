use std::sync::LazyLock;

use crate::script::{integer_arg, nth};
use crate::{Result, Script, ScriptContext, SetOptions, Value};

/// How many recent writes the write log (`KEYS[2]`) remembers.
pub const WRITE_LOG_ENTRIES: usize = 32;
/// Bytes of a write id in the log: 16 hex digits.
const ID_LEN: usize = 16;
/// Bytes of one log entry: the id, then the version it wrote as 19 decimal digits.
const ENTRY_LEN: usize = ID_LEN + 19;

/// Versioned compare-and-set (seed 002's optimistic lock), idempotent per write id.
///
/// `KEYS[1]` holds `<version>:<value>` (absent = version 0). `KEYS[2]` is the write log:
/// the ids and versions of the last [`WRITE_LOG_ENTRIES`] writes, newest first, each a
/// 16-hex-digit id followed by its version in 19 decimal digits. `ARGV[1]` is the version
/// the write was computed from, `ARGV[2]` the value, `ARGV[3]` the write's id.
///
/// - The id is in the log: this write already ran (its reply was lost, and it was sent
///   again). Nothing is written; the reply is `{1, the version it wrote}`.
/// - The version is `ARGV[1]`: the value becomes `<version + 1>:ARGV[2]`, the write is
///   logged, and the reply is `{1, version + 1}`. The value's TTL is discarded, as by SET.
/// - Otherwise nothing is written and the reply is `{0, current version, settled}`:
///   `settled` is 1 when the log holds the write that made version `ARGV[1] + 1`, which
///   proves that this write never ran (it could only have made that version), and 0
///   when that entry has left the log.
pub static COMPARE_AND_SET: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "compare-and-set",
        r#"local current = redis.call('GET', KEYS[1])
local version = 0
if current then
  version = tonumber(string.match(current, '^(%d+):')) or 0
end
local log = redis.call('GET', KEYS[2]) or ''
local id = ARGV[3]
local expected = tonumber(ARGV[1])
local settled = 0
for at = 1, #log - 34, 35 do
  local logged = tonumber(string.sub(log, at + 16, at + 34))
  if string.sub(log, at, at + 15) == id then
    return {1, logged}
  end
  if logged == expected + 1 then
    settled = 1
  end
end
if version ~= expected then
  return {0, version, settled}
end
redis.call('SET', KEYS[1], (version + 1) .. ':' .. ARGV[2])
redis.call('SET', KEYS[2], string.sub(id .. string.format('%019d', version + 1) .. log, 1, 1120))
return {1, version + 1}"#,
    )
    .with_native(|store, keys, args| {
        let (key, log_key) = (nth(keys, 0)?, nth(keys, 1)?);
        let (expected, value, id) = (integer_arg(args, 0)?, nth(args, 1)?, nth(args, 2)?);
        let version = store
            .get(key)?
            .map_or(0, |current| split_versioned(&current).map_or(0, |(v, _)| v));
        let log = store.get(log_key)?.unwrap_or_default();
        let mut settled = 0;
        for entry in log.chunks_exact(ENTRY_LEN) {
            let logged = super::parse_integer(&entry[ID_LEN..]).unwrap_or(0);
            if &entry[..ID_LEN] == id {
                return Ok(pair(1, logged));
            }
            if Some(logged) == expected.checked_add(1) {
                settled = 1;
            }
        }
        if version != expected {
            return Ok(Value::Array(vec![
                Value::Int(0),
                Value::Int(version),
                Value::Int(settled),
            ]));
        }
        let next = version + 1;
        let written = [format!("{next}:").as_bytes(), value].concat();
        store.set(key, &written, SetOptions::new())?;
        write_log(store, log_key, id, next, &log)?;
        Ok(pair(1, next))
    })
});

fn pair(a: i64, b: i64) -> Value {
    Value::Array(vec![Value::Int(a), Value::Int(b)])
}

/// Puts `id` and `version` at the front of the log, keeping [`WRITE_LOG_ENTRIES`].
fn write_log(
    store: &mut dyn ScriptContext,
    log_key: &[u8],
    id: &[u8],
    version: i64,
    log: &[u8],
) -> Result<()> {
    let keep = log.len().min((WRITE_LOG_ENTRIES - 1) * ENTRY_LEN);
    let entry = [id, format!("{version:019}").as_bytes(), &log[..keep]].concat();
    store.set(log_key, &entry, SetOptions::new()).map(drop)
}

/// Splits `<version>:<value>` as the Lua pattern `^(%d+):` does: the digits before the
/// first colon, and everything after it.
pub(crate) fn split_versioned(stored: &[u8]) -> Option<(i64, &[u8])> {
    let colon = stored.iter().position(|&b| b == b':')?;
    let digits = &stored[..colon];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let version = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some((version, &stored[colon + 1..]))
}

/// A fresh write id: 16 random hex digits.
pub(crate) fn new_write_id() -> String {
    format!("{:016x}", crate::random::random_u64())
}
