use std::sync::LazyLock;

use crate::script::nth;
use crate::{Script, Value};

/// Release of a token lock (seed 000): delete `KEYS[1]` only if it still holds the token
/// `ARGV[1]`. Replies 1 if deleted, 0 if the key is gone or belongs to someone else.
pub static COMPARE_AND_DELETE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "compare-and-delete",
        r#"if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0"#,
    )
    .with_native(|store, keys, args| {
        let key = nth(keys, 0)?;
        if store.value_is(key, nth(args, 0)?)? {
            return Ok(Value::Int(store.del(&[key])?));
        }
        Ok(Value::Int(0))
    })
});
