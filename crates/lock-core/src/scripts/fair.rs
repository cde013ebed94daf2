//! The fair queue: a ticket line kept atomically by two scripts.
//!
//! Keys of one fair lock (one hash tag): the lock (`KEYS[1]`), the last ticket issued
//! (`KEYS[2]`) and the last ticket served (`KEYS[3]`). Whenever a ticket is written or
//! served, both counters get the patience as their TTL, so they outlive every ticket and
//! expire with the line. The lock holds the holder's token,
//! followed by [`LINE_MARK`] once a line has formed behind the hold: a holder that took the
//! lock by `SET NX` and finds its bare token at release time knows nobody waits, and
//! releases with a plain [`COMPARE_AND_DELETE`](crate::scripts::COMPARE_AND_DELETE). A waiter's ticket
//! `n` is the key `ARGV[4] .. n` holding its token with a PX of the patience `ARGV[3]`;
//! waiters refresh it while they wait, so a dead waiter's ticket expires and is skipped.
//! Ticket keys are built inside the scripts (they share the hash tag, so a cluster node
//! serves them, but they are not declared in KEYS).
//!
//! Shared arguments: `ARGV[1]` token, `ARGV[2]` ticket (0 = none), `ARGV[3]` patience ms,
//! `ARGV[4]` ticket key prefix, `ARGV[5]` wake-up channel, `ARGV[6]` the command that
//! publishes on it (`PUBLISH` or `SPUBLISH`, see [`publish_command`](crate::publish_command)).

use std::sync::LazyLock;

use crate::script::{integer_arg, nth};
use crate::{ExpireCondition, Result, Script, ScriptContext, SetOptions, Value};

/// Appended to the holder's token in the lock while a line waits behind the hold (the Lua
/// spells it out as `'+line'`). Tokens are UUIDs, so a marked value names its holder.
pub const LINE_MARK: &[u8] = b"+line";

/// The Lua every fair script starts with: `token` and whether a lock value is its hold,
/// bare or marked.
macro_rules! holder_lua {
    () => {
        r#"local token = ARGV[1]
local function mine(value)
  return value == token or value == token .. '+line'
end
"#
    };
}

/// The Lua both queue scripts define: serve the first live ticket after the last served.
/// The lock goes straight to that waiter (PX patience, marked: others may wait behind it)
/// with a wake-up naming its token, unless the waiter is the caller. Returns the waiter's
/// token, or false after resetting the counters when nobody live is waiting.
///
/// A contended cycle runs this once: hence `GETDEL` for the ticket, and no `DEL` of
/// counters that are not there.
macro_rules! hand_off_lua {
    () => {
        r#"local function hand_off()
  local served_raw = redis.call('GET', KEYS[3])
  local issued_raw = redis.call('GET', KEYS[2])
  local served = tonumber(served_raw or '0')
  local issued = tonumber(issued_raw or '0')
  while served < issued do
    served = served + 1
    local waiter = redis.call('GETDEL', ARGV[4] .. served)
    if waiter then
      redis.call('SET', KEYS[3], served, 'PX', ARGV[3])
      redis.call('PEXPIRE', KEYS[2], ARGV[3])
      if waiter ~= ARGV[1] then
        redis.call('SET', KEYS[1], waiter .. '+line', 'PX', ARGV[3])
        redis.call(ARGV[6], ARGV[5], waiter)
      end
      return waiter
    end
  end
  if served_raw or issued_raw then
    redis.call('DEL', KEYS[2], KEYS[3])
  end
  return false
end
"#
    };
}

/// Fair acquire, also a waiter's refresh. `ARGV[7]` is the TTL ms of a hold.
///
/// Replies `{1, 0, 0}` when the caller holds the lock: it was free with nobody live
/// ahead, or it had been handed to the caller's token (the TTL is then raised from the
/// patience to `ARGV[7]`). Otherwise `{0, pttl, ticket}`: the caller waits in line with
/// `ticket` (a new one if it had none or its old one lapsed), the holder has `pttl` ms
/// left, and the holder's value is marked. A free lock with live waiters is handed to the
/// first of them first. Ticket -1 asks without queueing: `{0, pttl, 0}` instead of a
/// ticket.
pub static FAIR_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "fair-acquire",
        concat!(
            holder_lua!(),
            hand_off_lua!(),
            r#"local holder = redis.call('GET', KEYS[1])
if mine(holder) then
  redis.call('PEXPIRE', KEYS[1], ARGV[7])
  return {1, 0, 0}
end
local ticket = tonumber(ARGV[2])
if ticket > 0 and redis.call('GET', ARGV[4] .. ticket) ~= token then
  ticket = 0
end
if not holder then
  local waiter = hand_off()
  if not waiter then
    redis.call('SET', KEYS[1], token, 'PX', ARGV[7])
    return {1, 0, 0}
  end
  if waiter == token then
    redis.call('SET', KEYS[1], token .. '+line', 'PX', ARGV[7])
    return {1, 0, 0}
  end
end
if ticket < 0 then
  return {0, redis.call('PTTL', KEYS[1]), 0}
end
if ticket == 0 then
  ticket = redis.call('INCR', KEYS[2])
end
redis.call('SET', ARGV[4] .. ticket, token, 'PX', ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('PEXPIRE', KEYS[3], ARGV[3])
if holder and string.sub(holder, -5) ~= '+line' then
  redis.call('SET', KEYS[1], holder .. '+line', 'KEEPTTL')
end
return {0, redis.call('PTTL', KEYS[1]), ticket}"#
        ),
    )
    .with_native(|store, keys, args| {
        let triple = |a, b, c| {
            Ok(Value::Array(vec![
                Value::Int(a),
                Value::Int(b),
                Value::Int(c),
            ]))
        };
        let queue = Queue::parse(keys, args)?;
        let ttl = integer_arg(args, 6)?;
        let holder = store.get(queue.lock)?;
        if queue.holds(holder.as_deref()) {
            store.pexpire(queue.lock, ttl, ExpireCondition::Always)?;
            return triple(1, 0, 0);
        }
        let mut ticket = integer_arg(args, 1)?;
        if ticket > 0 && store.get(&queue.ticket_key(ticket))?.as_deref() != Some(queue.token) {
            ticket = 0;
        }
        if holder.is_none() {
            let value = match queue.hand_off(store)? {
                None => queue.token.to_vec(),
                Some(served) if served == queue.token => marked(queue.token),
                Some(_) => Vec::new(),
            };
            if !value.is_empty() {
                store.set(queue.lock, &value, SetOptions::new().px(ttl))?;
                return triple(1, 0, 0);
            }
        }
        if ticket < 0 {
            return triple(0, store.pttl(queue.lock)?, 0);
        }
        if ticket == 0 {
            ticket = store.incr(queue.issued)?;
        }
        let patience = SetOptions::new().px(queue.patience);
        store.set(&queue.ticket_key(ticket), queue.token, patience)?;
        queue.outlive_tickets(store, &[queue.issued, queue.served])?;
        if let Some(holder) = holder.filter(|h| !h.ends_with(LINE_MARK)) {
            store.set(queue.lock, &marked(&holder), SetOptions::new().keep_ttl())?;
        }
        triple(0, store.pttl(queue.lock)?, ticket)
    })
});

/// Fair release, also a waiter's cancellation. When the caller holds the lock (bare or
/// marked), it goes to the first live waiter (reply 2) or is deleted (reply 1).
///
/// A *pass* names a successor: the token `ARGV[7]` of another task of the holder's
/// process, with the TTL ms `ARGV[8]` of its hold. A lock nobody in line waits for then
/// goes to the successor (bare: no line) instead of being deleted (reply 3); a live
/// waiter in line still comes first (reply 2).
///
/// Otherwise the caller's ticket leaves the line, and the reply is 0: ticket `ARGV[2]` if
/// still the caller's, or with ticket 0 whichever waiting ticket holds the caller's token
/// (an acquire cancelled while its queueing command was in flight never learnt its
/// number).
pub static FAIR_RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "fair-release",
        concat!(
            holder_lua!(),
            hand_off_lua!(),
            r#"if not mine(redis.call('GET', KEYS[1])) then
  local first, last = tonumber(ARGV[2]), tonumber(ARGV[2])
  if first == 0 then
    first = tonumber(redis.call('GET', KEYS[3]) or '0') + 1
    last = tonumber(redis.call('GET', KEYS[2]) or '0')
  end
  for ticket = first, last do
    if redis.call('GET', ARGV[4] .. ticket) == token then
      redis.call('DEL', ARGV[4] .. ticket)
      break
    end
  end
  return 0
end
if hand_off() then
  return 2
end
if ARGV[7] then
  redis.call('SET', KEYS[1], ARGV[7], 'PX', ARGV[8])
  return 3
end
redis.call('DEL', KEYS[1])
return 1"#
        ),
    )
    .with_native(|store, keys, args| {
        let queue = Queue::parse(keys, args)?;
        if !queue.holds(store.get(queue.lock)?.as_deref()) {
            let ticket = integer_arg(args, 1)?;
            let tickets = if ticket == 0 {
                queue.counter(store, queue.served)? + 1..=queue.counter(store, queue.issued)?
            } else {
                ticket..=ticket
            };
            for ticket in tickets {
                let key = queue.ticket_key(ticket);
                if store.value_is(&key, queue.token)? {
                    store.del(&[&key])?;
                    break;
                }
            }
            return Ok(Value::Int(0));
        }
        if queue.hand_off(store)?.is_some() {
            return Ok(Value::Int(2));
        }
        if let Some(successor) = args.get(6) {
            let ttl = SetOptions::new().px(integer_arg(args, 7)?);
            store.set(queue.lock, successor, ttl)?;
            return Ok(Value::Int(3));
        }
        store.del(&[queue.lock])?;
        Ok(Value::Int(1))
    })
});

/// Extension of a fair hold: `PEXPIRE KEYS[1] ARGV[2]` if the lock holds the token
/// `ARGV[1]`, bare or marked. Replies 1 if extended, 0 otherwise.
pub static FAIR_EXTEND: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "fair-extend",
        concat!(
            holder_lua!(),
            r#"if mine(redis.call('GET', KEYS[1])) then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0"#
        ),
    )
    .with_native(|store, keys, args| {
        let (key, token) = (nth(keys, 0)?, nth(args, 0)?);
        let value = store.get(key)?;
        if value.is_none_or(|value| value != token && value != marked(token)) {
            return Ok(Value::Int(0));
        }
        let set = store.pexpire(key, integer_arg(args, 1)?, ExpireCondition::Always)?;
        Ok(Value::Int(i64::from(set)))
    })
});

/// `token` followed by [`LINE_MARK`].
fn marked(token: &[u8]) -> Vec<u8> {
    [token, LINE_MARK].concat()
}

/// The keys and shared arguments of one fair-queue script call.
struct Queue<'a> {
    lock: &'a [u8],
    issued: &'a [u8],
    served: &'a [u8],
    token: &'a [u8],
    patience: i64,
    prefix: &'a [u8],
    channel: &'a [u8],
}

impl<'a> Queue<'a> {
    fn parse(keys: &[&'a [u8]], args: &[&'a [u8]]) -> Result<Self> {
        Ok(Self {
            lock: nth(keys, 0)?,
            issued: nth(keys, 1)?,
            served: nth(keys, 2)?,
            token: nth(args, 0)?,
            patience: integer_arg(args, 2)?,
            prefix: nth(args, 3)?,
            channel: nth(args, 4)?,
        })
    }

    /// Whether the lock's `value` is the caller's hold, bare or marked.
    fn holds(&self, value: Option<&[u8]>) -> bool {
        value.is_some_and(|v| v == self.token || v.strip_suffix(LINE_MARK) == Some(self.token))
    }

    fn ticket_key(&self, ticket: i64) -> Vec<u8> {
        [self.prefix, ticket.to_string().as_bytes()].concat()
    }

    /// A ticket counter; missing counts as 0.
    fn counter(&self, store: &mut dyn ScriptContext, key: &[u8]) -> Result<i64> {
        Ok(store
            .get(key)?
            .and_then(|v| super::parse_integer(&v))
            .unwrap_or(0))
    }

    /// Gives the counters `keys` the patience as their TTL, whenever a ticket is written
    /// or served: every ticket's TTL is at most the patience, so the counters outlive
    /// every live ticket, and expire with the line once nobody refreshes a ticket (a
    /// line whose holder and waiters all left leaves no key behind).
    fn outlive_tickets(&self, store: &mut dyn ScriptContext, keys: &[&[u8]]) -> Result<()> {
        for key in keys {
            store.pexpire(key, self.patience, ExpireCondition::Always)?;
        }
        Ok(())
    }

    /// The native twin of `hand_off` in [`hand_off_lua`].
    fn hand_off(&self, store: &mut dyn ScriptContext) -> Result<Option<Vec<u8>>> {
        let mut served = self.counter(store, self.served)?;
        let issued = self.counter(store, self.issued)?;
        while served < issued {
            served += 1;
            let key = self.ticket_key(served);
            let Some(waiter) = store.get(&key)? else {
                continue;
            };
            store.del(&[&key])?;
            store.set(
                self.served,
                served.to_string().as_bytes(),
                SetOptions::new().px(self.patience),
            )?;
            self.outlive_tickets(store, &[self.issued])?;
            if waiter != self.token {
                store.set(
                    self.lock,
                    &marked(&waiter),
                    SetOptions::new().px(self.patience),
                )?;
                store.publish(self.channel, &waiter)?;
            }
            return Ok(Some(waiter));
        }
        store.del(&[self.issued, self.served])?;
        Ok(None)
    }
}
