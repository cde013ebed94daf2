use std::sync::LazyLock;

use crate::script::{integer_arg, nth};
use crate::{Script, SetOptions, SetReply, Value};

/// Acquire with a fencing token: `SET KEYS[1] ARGV[1] NX PX ARGV[2]`, and only if that
/// succeeded, `INCR KEYS[2]` (the lock's fence counter, in the same hash slot).
///
/// Replies `{1, fence}` when acquired, `{0, pttl}` when held. The counter never decreases
/// and has no TTL, so every acquisition's fence is strictly greater than all before it.
pub static FENCED_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "fenced-acquire",
        r#"if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, redis.call('INCR', KEYS[2])}
end
return {0, redis.call('PTTL', KEYS[1])}"#,
    )
    .with_native(|store, keys, args| {
        let pair = |a, b| Ok(Value::Array(vec![Value::Int(a), Value::Int(b)]));
        let (key, fence) = (nth(keys, 0)?, nth(keys, 1)?);
        let ttl = integer_arg(args, 1)?;
        match store.set(key, nth(args, 0)?, SetOptions::new().nx().px(ttl))? {
            SetReply::Applied => pair(1, store.incr(fence)?),
            _ => pair(0, store.pttl(key)?),
        }
    })
});
