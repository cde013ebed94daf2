use std::sync::LazyLock;

use crate::script::{integer_arg, nth};
use crate::{ExpireCondition, Script, SetOptions, SetReply, Value};

/// Acquire with a fencing token: `SET KEYS[1] ARGV[1] NX PX ARGV[2]`, and only if that
/// succeeded, `INCR KEYS[2]` (the lock's fence counter, in the same hash slot).
///
/// Replies `{1, fence}` when acquired, `{0, pttl}` when held. The counter never decreases
/// and has no TTL, so every acquisition's fence is strictly greater than all before it.
///
/// A lock that already holds the caller's token counts as acquired, with its TTL set
/// again and a fresh fence: a retried acquire after a lost reply takes the lock once.
/// It takes a new fence rather than reading the counter because it cannot tell whether
/// its first send got as far as the `INCR`: a script cut short after the `SET` leaves the
/// counter at the previous holder's fence, and reading it would hand that fence out
/// twice. The first send's fence, if it took one, was never delivered, so it is simply
/// spent; fences may have gaps, never repeats.
pub static FENCED_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "fenced-acquire",
        r#"if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, redis.call('INCR', KEYS[2])}
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, redis.call('INCR', KEYS[2])}
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
            return pair(1, store.incr(fence)?);
        }
        pair(0, store.pttl(key)?)
    })
});
