use std::sync::LazyLock;

use super::parse_integer;
use crate::script::{integer_arg, nth};
use crate::{Script, Value};

/// Release of the scripted legacy lock: delete `KEYS[1]` only if it still holds our stamp
/// `ARGV[1]` and that stamp is still in the future (`ARGV[2]` = now).
///
/// Seed 001's own release deletes the key only when the stamp has *passed*, which leaves
/// every live lock in place until it expires; this is the check seed 004's IMPORTANT NOTE
/// asks for instead. Replies 1 if deleted, 0 otherwise.
pub static LEGACY_RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "legacy-release",
        r#"local current = redis.call('GET', KEYS[1])
if current == ARGV[1] and tonumber(current) > tonumber(ARGV[2]) then
  return redis.call('DEL', KEYS[1])
end
return 0"#,
    )
    .with_native(|store, keys, args| {
        let key = nth(keys, 0)?;
        let now = integer_arg(args, 1)?;
        let current = store.get(key)?;
        let ours = current.as_deref() == Some(nth(args, 0)?);
        if ours && parse_integer(nth(args, 0)?).is_some_and(|stamp| stamp > now) {
            return Ok(Value::Int(store.del(&[key])?));
        }
        Ok(Value::Int(0))
    })
});
