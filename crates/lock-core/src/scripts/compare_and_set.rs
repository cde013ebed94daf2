use std::sync::LazyLock;

use crate::script::{integer_arg, nth};
use crate::{Script, SetOptions, Value};

/// Versioned compare-and-set (seed 002's optimistic lock): `KEYS[1]` holds
/// `<version>:<value>` (absent = version 0). When its version is `ARGV[1]`, it becomes
/// `<version + 1>:ARGV[2]` and the reply is `{1, version + 1}`; otherwise nothing is
/// written and the reply is `{0, current version}`. The key's TTL is discarded, as by SET.
pub static COMPARE_AND_SET: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "compare-and-set",
        r#"local current = redis.call('GET', KEYS[1])
local version = 0
if current then
  version = tonumber(string.match(current, '^(%d+):')) or 0
end
if version ~= tonumber(ARGV[1]) then
  return {0, version}
end
redis.call('SET', KEYS[1], (version + 1) .. ':' .. ARGV[2])
return {1, version + 1}"#,
    )
    .with_native(|store, keys, args| {
        let key = nth(keys, 0)?;
        let version = store
            .get(key)?
            .map_or(0, |current| split_versioned(&current).map_or(0, |(v, _)| v));
        if version != integer_arg(args, 0)? {
            return Ok(Value::Array(vec![Value::Int(0), Value::Int(version)]));
        }
        let next = version + 1;
        let value = [format!("{next}:").as_bytes(), nth(args, 1)?].concat();
        store.set(key, &value, SetOptions::new())?;
        Ok(Value::Array(vec![Value::Int(1), Value::Int(next)]))
    })
});

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
