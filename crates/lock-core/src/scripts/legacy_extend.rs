use std::sync::LazyLock;

use super::parse_integer;
use crate::script::{integer_arg, nth};
use crate::{Script, SetOptions, Value};

/// Extension of the scripted legacy lock: if `KEYS[1]` still holds our stamp `ARGV[1]`
/// and that stamp has not passed (`ARGV[4]` = now), replace it by the new stamp `ARGV[2]`
/// with the safety TTL `ARGV[3]` ms (the new TTL + 1 s, computed by the caller). Replies
/// 1 if extended, 0 otherwise.
pub static LEGACY_EXTEND: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "legacy-extend",
        r#"local current = redis.call('GET', KEYS[1])
if current == ARGV[1] and tonumber(current) > tonumber(ARGV[4]) then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0"#,
    )
    .with_native(|store, keys, args| {
        let key = nth(keys, 0)?;
        let now = integer_arg(args, 3)?;
        let current = store.get(key)?;
        let ours = current.as_deref() == Some(nth(args, 0)?);
        if ours && parse_integer(nth(args, 0)?).is_some_and(|stamp| stamp > now) {
            let safety = integer_arg(args, 2)?;
            store.set(key, nth(args, 1)?, SetOptions::new().px(safety))?;
            return Ok(Value::Int(1));
        }
        Ok(Value::Int(0))
    })
});
