use std::sync::LazyLock;

use super::{owner_count, parse_integer, split_owner_count};
use crate::script::{integer_arg, nth};
use crate::{Script, SetOptions, Value};

/// Acquire or re-enter a reentrant lock whose value is `<owner>:<count>`.
///
/// `ARGV[1]` owner, `ARGV[2]` TTL ms. Replies `{1, count}` when acquired or re-entered
/// (the TTL is refreshed), `{0, pttl}` when another owner holds it.
///
/// With a fence counter as `KEYS[2]`, the reply when held is `{1, count, fence}`: the first
/// hold takes a new fence (`INCR`), and re-entry reports the same one without bumping it
/// (nobody else can have taken one while the owner held the lock throughout).
pub static REENTRANT_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "reentrant-acquire",
        r#"local current = redis.call('GET', KEYS[1])
if not current then
  redis.call('SET', KEYS[1], ARGV[1] .. ':1', 'PX', ARGV[2])
  if KEYS[2] then
    return {1, 1, redis.call('INCR', KEYS[2])}
  end
  return {1, 1}
end
local owner, count = string.match(current, '^(.*):(%d+)$')
if owner == ARGV[1] then
  count = tonumber(count) + 1
  redis.call('SET', KEYS[1], owner .. ':' .. count, 'PX', ARGV[2])
  if KEYS[2] then
    return {1, count, tonumber(redis.call('GET', KEYS[2]) or '0')}
  end
  return {1, count}
end
return {0, redis.call('PTTL', KEYS[1])}"#,
    )
    .with_native(|store, keys, args| {
        let key = nth(keys, 0)?;
        let pair = |a, b| Ok(Value::Array(vec![Value::Int(a), Value::Int(b)]));
        let ttl = integer_arg(args, 1)?;
        let (count, first_hold) = match store.get(key)? {
            None => (1, true),
            Some(current) => match split_owner_count(&current) {
                Some((owner, count)) if owner == nth(args, 0)? => (count.saturating_add(1), false),
                _ => return pair(0, store.pttl(key)?),
            },
        };
        store.set(
            key,
            &owner_count(nth(args, 0)?, count),
            SetOptions::new().px(ttl),
        )?;
        let Some(&fence_key) = keys.get(1) else {
            return pair(1, count);
        };
        let fence = if first_hold {
            store.incr(fence_key)?
        } else {
            store
                .get(fence_key)?
                .and_then(|v| parse_integer(&v))
                .unwrap_or(0)
        };
        Ok(Value::Array(vec![
            Value::Int(1),
            Value::Int(count),
            Value::Int(fence),
        ]))
    })
});
