use std::sync::LazyLock;

use super::{owner_count, split_owner_count};
use crate::script::nth;
use crate::{Script, SetOptions, Value};

/// Leave a reentrant lock once: decrement owner `ARGV[1]`'s count, deleting the key at 0.
/// Replies the remaining count (0 = released), or -1 if the owner does not hold the lock.
pub static REENTRANT_RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "reentrant-release",
        r#"local current = redis.call('GET', KEYS[1])
if not current then
  return -1
end
local owner, count = string.match(current, '^(.*):(%d+)$')
if owner ~= ARGV[1] then
  return -1
end
count = tonumber(count) - 1
if count <= 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
redis.call('SET', KEYS[1], owner .. ':' .. count, 'KEEPTTL')
return count"#,
    )
    .with_native(|store, keys, args| {
        let key = nth(keys, 0)?;
        let Some(current) = store.get(key)? else {
            return Ok(Value::Int(-1));
        };
        let count = match split_owner_count(&current) {
            Some((owner, count)) if owner == nth(args, 0)? => count - 1,
            _ => return Ok(Value::Int(-1)),
        };
        if count <= 0 {
            store.del(&[key])?;
            return Ok(Value::Int(0));
        }
        store.set(
            key,
            &owner_count(nth(args, 0)?, count),
            SetOptions::new().keep_ttl(),
        )?;
        Ok(Value::Int(count))
    })
});
