use std::sync::LazyLock;

use crate::script::{integer_arg, nth};
use crate::{ExpireCondition, Script, Value};

/// Extension of a token lock: `PEXPIRE KEYS[1] ARGV[2]` only if the key still holds the
/// token `ARGV[1]`. Replies 1 if extended, 0 otherwise.
pub static COMPARE_AND_PEXPIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "compare-and-pexpire",
        r#"if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0"#,
    )
    .with_native(|store, keys, args| {
        let key = nth(keys, 0)?;
        if store.value_is(key, nth(args, 0)?)? {
            let ttl = integer_arg(args, 1)?;
            let set = store.pexpire(key, ttl, ExpireCondition::Always)?;
            return Ok(Value::Int(i64::from(set)));
        }
        Ok(Value::Int(0))
    })
});
