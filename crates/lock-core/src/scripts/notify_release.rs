use std::sync::LazyLock;

use crate::script::nth;
use crate::{Script, Value};

/// Release that wakes waiters: compare-and-delete `KEYS[1]` against the token `ARGV[1]`,
/// and when it deleted, publish `""` on the channel `ARGV[2]` in the same atomic step, so
/// no waiter can check the lock between the delete and the wake-up. `ARGV[3]` is the
/// publishing command, `PUBLISH` (the default) or `SPUBLISH` (see
/// [`publish_command`](crate::publish_command)). Replies 1 if released, else 0.
pub static NOTIFY_RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "notify-release",
        r#"if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call(ARGV[3] or 'PUBLISH', ARGV[2], '')
  return 1
end
return 0"#,
    )
    .with_native(|store, keys, args| {
        let key = nth(keys, 0)?;
        if !store.value_is(key, nth(args, 0)?)? {
            return Ok(Value::Int(0));
        }
        store.del(&[key])?;
        store.publish(nth(args, 1)?, b"")?;
        Ok(Value::Int(1))
    })
});
