use std::sync::LazyLock;

use super::split_owner_count;
use crate::script::{integer_arg, nth};
use crate::{ExpireCondition, Script, Value};

/// Extension of a reentrant lock: `PEXPIRE KEYS[1] ARGV[2]` if owner `ARGV[1]` holds it.
/// Replies 1 if extended, 0 otherwise.
pub static REENTRANT_EXTEND: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "reentrant-extend",
        r#"local current = redis.call('GET', KEYS[1])
if current then
  local owner = string.match(current, '^(.*):%d+$')
  if owner == ARGV[1] then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
end
return 0"#,
    )
    .with_native(|store, keys, args| {
        let key = nth(keys, 0)?;
        let owner = nth(args, 0)?;
        let current = store.get(key)?;
        if current
            .as_deref()
            .and_then(split_owner_count)
            .is_some_and(|(found, _)| found == owner)
        {
            let ttl = integer_arg(args, 1)?;
            let set = store.pexpire(key, ttl, ExpireCondition::Always)?;
            return Ok(Value::Int(i64::from(set)));
        }
        Ok(Value::Int(0))
    })
});
