use std::sync::LazyLock;

use crate::script::{integer_arg, nth};
use crate::{ExpireCondition, Script, SetOptions, SetReply, Value};

/// A [`Wait::Notify`](crate::Wait::Notify) attempt with bounded barging: `KEYS[1]` is the
/// lock, `KEYS[2]` the claim on its next turn (a waiter's token); `ARGV[1]` the caller's
/// token, `ARGV[2]` the TTL ms, `ARGV[3]` how long a claim lasts, ms (0: do not claim).
///
/// Replies `{1, 0}` when the caller holds the lock, `{0, pttl}` when it does not. A free
/// lock goes to whoever asks unless another waiter's claim stands: then only the claimant
/// may take it, so a releaser cannot win back, again and again, the lock it just released
/// while the waiters it woke are still on their way. An unclaimed turn is claimed by the
/// first refused caller that asks to (its claim is refreshed by its later attempts and
/// ends when it takes the lock). A key that already holds the caller's token counts as
/// acquired, as in [`ACQUIRE_OR_PTTL`](super::ACQUIRE_OR_PTTL).
pub static NOTIFY_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "notify-acquire",
        r#"local claim = redis.call('GET', KEYS[2])
local mine = claim == ARGV[1]
if not claim or mine then
  if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    if mine then
      redis.call('DEL', KEYS[2])
    end
    return {1, 0}
  end
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if mine then
    redis.call('DEL', KEYS[2])
  end
  return {1, 0}
end
if ARGV[3] ~= '0' and (not claim or mine) then
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[3])
end
return {0, redis.call('PTTL', KEYS[1])}"#,
    )
    .with_native(|store, keys, args| {
        let pair = |a, b| Ok(Value::Array(vec![Value::Int(a), Value::Int(b)]));
        let (lock, claim_key, token) = (nth(keys, 0)?, nth(keys, 1)?, nth(args, 0)?);
        let ttl = integer_arg(args, 1)?;
        let claim_ms = integer_arg(args, 2)?;
        let claim = store.get(claim_key)?;
        let mine = claim.as_deref() == Some(token);
        if (claim.is_none() || mine)
            && store.set(lock, token, SetOptions::new().nx().px(ttl))? == SetReply::Applied
        {
            if mine {
                store.del(&[claim_key])?;
            }
            return pair(1, 0);
        }
        if store.value_is(lock, token)? {
            store.pexpire(lock, ttl, ExpireCondition::Always)?;
            if mine {
                store.del(&[claim_key])?;
            }
            return pair(1, 0);
        }
        if claim_ms != 0 && (claim.is_none() || mine) {
            store.set(claim_key, token, SetOptions::new().px(claim_ms))?;
        }
        pair(0, store.pttl(lock)?)
    })
});
