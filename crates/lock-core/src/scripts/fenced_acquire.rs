use std::sync::LazyLock;

use super::parse_integer;
use crate::script::{integer_arg, nth};
use crate::{ExpireCondition, Script, SetOptions, SetReply, Value};

/// Acquire with a fencing token: `SET KEYS[1] ARGV[1] NX PX ARGV[2]`, and only if that
/// succeeded, `INCR KEYS[2]` (the lock's fence counter, in the same hash slot).
///
/// Replies `{1, fence}` when acquired, `{0, pttl}` when held. The counter never decreases
/// and has no TTL, so every acquisition's fence is strictly greater than all before it.
///
/// A lock that already holds the caller's token counts as acquired, with the counter's
/// current value (the fence that acquisition took) and its TTL set again: a retried
/// acquire after a lost reply is idempotent and takes no second fence.
pub static FENCED_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "fenced-acquire",
        r#"if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, redis.call('INCR', KEYS[2])}
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local fence = tonumber(redis.call('GET', KEYS[2]))
  if not fence then
    fence = redis.call('INCR', KEYS[2])
  end
  return {1, fence}
end
return {0, redis.call('PTTL', KEYS[1])}"#,
    )
    .with_native(|store, keys, args| {
        let pair = |a, b| Ok(Value::Array(vec![Value::Int(a), Value::Int(b)]));
        let (key, fence, token) = (nth(keys, 0)?, nth(keys, 1)?, nth(args, 0)?);
        let ttl = integer_arg(args, 1)?;
        if store.set(key, token, SetOptions::new().nx().px(ttl))? == SetReply::Applied {
            return pair(1, store.incr(fence)?);
        }
        if store.value_is(key, token)? {
            store.pexpire(key, ttl, ExpireCondition::Always)?;
            let taken = store.get(fence)?.and_then(|v| parse_integer(&v));
            let taken = match taken {
                Some(taken) => taken,
                None => store.incr(fence)?,
            };
            return pair(1, taken);
        }
        pair(0, store.pttl(key)?)
    })
});
