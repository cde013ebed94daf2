use std::sync::LazyLock;

use super::parse_integer;
use crate::script::{integer_arg, nth};
use crate::{ExpireCondition, Script, Value};

/// Seed 001's scripted acquire: SETNX / GET / GETSET in one script.
///
/// `KEYS[1]` lock key; `ARGV[1]` our expiry stamp (Unix ms), `ARGV[2]` TTL ms,
/// `ARGV[3]` the client's now (Unix ms). Replies `{code, remaining_ms}`:
///
/// - `0` acquired (also sets a safety PEXPIRE of TTL + 1 s, so a crashed holder's key
///   disappears even if nobody ever reads its stamp);
/// - `1` the key vanished between SETNX and GET: retry now;
/// - `2` held by a stamp still in the future; `remaining_ms` says for how long
///   (a value that is not a stamp counts as held, with remaining 0: never stolen);
/// - `3` lost the GETSET race: retry.
///
/// Inside one atomic script codes 1 and 3 cannot happen; they are kept because seed 001
/// defines them and clients must still handle them.
pub static LEGACY_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "legacy-acquire",
        r#"local safety = tonumber(ARGV[2]) + 1000
if redis.call('SETNX', KEYS[1], ARGV[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], safety)
  return {0, 0}
end
local current = redis.call('GET', KEYS[1])
if not current then
  return {1, 0}
end
local stamp = tonumber(current)
if stamp == nil then
  return {2, 0}
end
local now = tonumber(ARGV[3])
if stamp > now then
  return {2, stamp - now}
end
if redis.call('GETSET', KEYS[1], ARGV[1]) == current then
  redis.call('PEXPIRE', KEYS[1], safety)
  return {0, 0}
end
return {3, 0}"#,
    )
    .with_native(|store, keys, args| {
        let key = nth(keys, 0)?;
        let reply =
            |code, remaining| Ok(Value::Array(vec![Value::Int(code), Value::Int(remaining)]));
        let safety = integer_arg(args, 1)?.saturating_add(1000);
        let now = integer_arg(args, 2)?;
        if store.setnx(key, nth(args, 0)?)? {
            store.pexpire(key, safety, ExpireCondition::Always)?;
            return reply(0, 0);
        }
        let Some(current) = store.get(key)? else {
            return reply(1, 0);
        };
        let Some(stamp) = parse_integer(&current) else {
            return reply(2, 0);
        };
        if stamp > now {
            return reply(2, stamp.saturating_sub(now));
        }
        if store.getset(key, nth(args, 0)?)?.as_deref() == Some(current.as_slice()) {
            store.pexpire(key, safety, ExpireCondition::Always)?;
            return reply(0, 0);
        }
        reply(3, 0)
    })
});
