use std::sync::LazyLock;

use crate::script::{integer_arg, nth};
use crate::{ExpireCondition, Script, SetOptions, SetReply, Value};

/// One-round-trip attempt: `SET KEYS[1] ARGV[1] NX PX ARGV[2]`, and when that fails, the
/// holder's PTTL in the same reply. Replies `{1, 0}` when acquired, `{0, pttl}` when held.
///
/// A key that already holds the caller's token `ARGV[1]` counts as acquired (its TTL is
/// set to `ARGV[2]` again): an acquire retried after an attempt whose reply was lost finds
/// its own lock instead of waiting for it. Woken waiters use it too, paying one command
/// per attempt instead of SET + PTTL.
pub static ACQUIRE_OR_PTTL: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "acquire-or-pttl",
        r#"if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, 0}
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, 0}
end
return {0, redis.call('PTTL', KEYS[1])}"#,
    )
    .with_native(|store, keys, args| {
        let pair = |a, b| Ok(Value::Array(vec![Value::Int(a), Value::Int(b)]));
        let (key, token) = (nth(keys, 0)?, nth(args, 0)?);
        let ttl = integer_arg(args, 1)?;
        if store.set(key, token, SetOptions::new().nx().px(ttl))? == SetReply::Applied {
            return pair(1, 0);
        }
        if store.value_is(key, token)? {
            store.pexpire(key, ttl, ExpireCondition::Always)?;
            return pair(1, 0);
        }
        pair(0, store.pttl(key)?)
    })
});
