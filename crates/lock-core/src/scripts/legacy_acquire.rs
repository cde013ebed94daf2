use std::sync::LazyLock;

use super::parse_integer;
use crate::script::{integer_arg, nth};
use crate::{Script, SetOptions, SetReply, Value};

/// Seed 001's scripted acquire: SETNX / GET / GETSET in one script.
///
/// `KEYS[1]` lock key; `ARGV[1]` our expiry stamp (Unix ms), `ARGV[2]` the safety TTL in
/// ms (the lock's TTL + 1 s, computed by the caller), `ARGV[3]` the client's now (Unix
/// ms). Replies `{code, remaining_ms}`:
///
/// - `0` acquired; the stamp is written together with the safety TTL, so a crashed
///   holder's key disappears even if nobody ever reads its stamp;
/// - `1` the key vanished between SETNX and GET: retry now;
/// - `2` held by a stamp still in the future; `remaining_ms` says for how long
///   (a value that is not a stamp counts as held, with remaining 0: never stolen);
/// - `3` lost the GETSET race: retry.
///
/// Seed 001 writes with `SETNX` and sets the TTL with a second command; when that second
/// step failed (a TTL the server rejects), the key stayed behind with no TTL and nobody
/// holding it. Here each write is one `SET` carrying its `PX` (`NX` for the first,
/// `GET` in place of `GETSET`), so a rejected TTL writes nothing. The safety TTL comes in
/// as an argument because Lua arithmetic on it would reach Redis as a double (`1e+17`).
///
/// Inside one atomic script codes 1 and 3 cannot happen; they are kept because seed 001
/// defines them and clients must still handle them.
pub static LEGACY_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "legacy-acquire",
        r#"if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
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
if redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'GET') == current then
  return {0, 0}
end
return {3, 0}"#,
    )
    .with_native(|store, keys, args| {
        let key = nth(keys, 0)?;
        let reply =
            |code, remaining| Ok(Value::Array(vec![Value::Int(code), Value::Int(remaining)]));
        let stamp = nth(args, 0)?;
        let safety = integer_arg(args, 1)?;
        let now = integer_arg(args, 2)?;
        if store.set(key, stamp, SetOptions::new().nx().px(safety))? == SetReply::Applied {
            return reply(0, 0);
        }
        let Some(current) = store.get(key)? else {
            return reply(1, 0);
        };
        let Some(held_until) = parse_integer(&current) else {
            return reply(2, 0);
        };
        if held_until > now {
            return reply(2, held_until.saturating_sub(now));
        }
        let old = store.set(key, stamp, SetOptions::new().px(safety).get())?;
        if old == SetReply::OldValue(Some(current)) {
            return reply(0, 0);
        }
        reply(3, 0)
    })
});
