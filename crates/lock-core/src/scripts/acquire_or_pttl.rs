use std::sync::LazyLock;

use crate::script::{integer_arg, nth};
use crate::{Script, SetOptions, SetReply, Value};

/// One-round-trip attempt for waiters: `SET KEYS[1] ARGV[1] NX PX ARGV[2]`, and when that
/// fails, the holder's PTTL in the same reply. Replies `{1, 0}` when acquired, `{0, pttl}`
/// when held. A woken waiter pays one command per attempt instead of SET + PTTL.
pub static ACQUIRE_OR_PTTL: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "acquire-or-pttl",
        r#"if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, 0}
end
return {0, redis.call('PTTL', KEYS[1])}"#,
    )
    .with_native(|store, keys, args| {
        let pair = |a, b| Ok(Value::Array(vec![Value::Int(a), Value::Int(b)]));
        let key = nth(keys, 0)?;
        let ttl = integer_arg(args, 1)?;
        match store.set(key, nth(args, 0)?, SetOptions::new().nx().px(ttl))? {
            SetReply::Applied => pair(1, 0),
            _ => pair(0, store.pttl(key)?),
        }
    })
});
