//! WAIT and WAITAOF on a server that has no replicas and no append-only file: they answer
//! as a lone Redis primary with `appendonly no` does. Asked for no acknowledgement, they
//! answer at once; asked for a replica's, they wait out their timeout (for ever with 0),
//! as Redis does when no replica answers, and then report none. A server that is a
//! replica set's primary counts its replicas instead (`run::replicas`).

use lock_core::{RedisVersion, Value};
use lock_memory::Keyspace;

use crate::protocol::args::{NOT_AN_INTEGER, integer};
use crate::state::context::Context;

/// What a WAIT or WAITAOF whose arguments are valid waits for.
pub(crate) struct Wait {
    /// How many replicas' acknowledgements it asks for.
    pub(crate) replicas: i64,
    /// Whether it is WAITAOF, whose reply is an array (local fsyncs, replicas).
    pub(crate) aof: bool,
    /// Milliseconds; 0 waits for ever.
    pub(crate) timeout_ms: u64,
    /// Its reply, at once or when the timeout ends: no replica and no local fsync
    /// acknowledged.
    pub(crate) reply: Value,
}

impl Wait {
    /// Whether it waits at all: some replica's acknowledgement was asked for.
    pub(crate) fn needs_replicas(&self) -> bool {
        self.replicas > 0
    }

    /// Its reply when `acknowledged` replicas have the connection's writes: WAIT's
    /// count, or WAITAOF's pair (no local fsync: `appendonly` is off).
    pub(crate) fn reply_with(&self, acknowledged: i64) -> Value {
        if self.aof {
            Value::Array(vec![Value::Int(0), Value::Int(acknowledged)])
        } else {
            Value::Int(acknowledged)
        }
    }
}

/// `WAIT numreplicas timeout`.
pub(crate) fn wait(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    parse_wait(args, store.now_ms(), context.version).map(|wait| wait.reply)
}

/// `WAITAOF numlocal numreplicas timeout` (Redis 7.2 and later).
pub(crate) fn waitaof(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    context: Context,
) -> Result<Value, String> {
    parse_waitaof(args, store.now_ms(), context.version).map(|wait| wait.reply)
}

/// Whether the command named `name` (as the table names it) is WAIT or WAITAOF, whose
/// wait only its timeout ends: no push brings a replica.
pub(crate) fn is_wait(name: &str) -> bool {
    matches!(name, "wait" | "waitaof")
}

/// The WAIT or WAITAOF request `args`, of the command the table names `name`, as it
/// waits on a server answering as `version`; `None` for any other command, or one whose
/// arguments are refused.
pub(crate) fn waiting(
    name: &str,
    args: &[&[u8]],
    now_ms: i64,
    version: RedisVersion,
) -> Option<Wait> {
    match name {
        "wait" if args.len() == 3 => parse_wait(args, now_ms, version).ok(),
        "waitaof" if args.len() == 4 => parse_waitaof(args, now_ms, version).ok(),
        _ => None,
    }
}

/// Checked in Redis's order: the count, then the timeout.
fn parse_wait(args: &[&[u8]], now_ms: i64, version: RedisVersion) -> Result<Wait, String> {
    let replicas = integer(args[1]).ok_or(NOT_AN_INTEGER)?;
    let timeout_ms = timeout(args[2], now_ms, version)?;
    Ok(Wait {
        replicas,
        aof: false,
        timeout_ms,
        reply: Value::Int(0),
    })
}

/// Checked in Redis 7.2's order: the local count (0 or 1), the replica count, the
/// timeout, then whether a local fsync can be waited for at all.
fn parse_waitaof(args: &[&[u8]], now_ms: i64, version: RedisVersion) -> Result<Wait, String> {
    let local = integer(args[1]).ok_or(NOT_AN_INTEGER)?;
    if !(0..=1).contains(&local) {
        return Err("ERR value is out of range, value must between 0 and 1".into());
    }
    let replicas = integer(args[2])
        .filter(|n| *n >= 0)
        .ok_or("ERR value is out of range, must be positive")?;
    let timeout_ms = timeout(args[3], now_ms, version)?;
    if local > 0 {
        return Err(
            "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.".into(),
        );
    }
    Ok(Wait {
        replicas,
        aof: true,
        timeout_ms,
        reply: Value::Array(vec![Value::Int(0), Value::Int(0)]),
    })
}

/// A timeout in whole milliseconds, as Redis's `getTimeoutFromObjectOrReply` reads one
/// for WAIT: an integer, not negative. One so large that now plus it overflows is
/// refused from 7.2; Redis 7.0 adds it anyway, and the deadline it wraps to never comes,
/// so it waits for ever (0).
fn timeout(arg: &[u8], now_ms: i64, version: RedisVersion) -> Result<u64, String> {
    let ms = integer(arg).ok_or("ERR timeout is not an integer or out of range")?;
    if ms < 0 {
        return Err("ERR timeout is negative".into());
    }
    if ms > 0 && ms > i64::MAX - now_ms {
        return match version {
            RedisVersion::V7_0 => Ok(0),
            _ => Err("ERR timeout is out of range".into()),
        };
    }
    Ok(ms.unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<&[u8]> {
        line.split(' ').map(str::as_bytes).collect()
    }

    /// Replies read off Valkey 8.0.1 (`appendonly no`, no replicas).
    #[test]
    fn arguments_are_refused_with_redis_texts() {
        let refused = |line: &str| -> String {
            let a = args(line);
            let parsed = if a[0] == b"WAIT" {
                parse_wait(&a, 1_000, RedisVersion::V7_2)
            } else {
                parse_waitaof(&a, 1_000, RedisVersion::V7_2)
            };
            parsed.err().unwrap_or_default()
        };
        assert_eq!(refused("WAIT a 0"), NOT_AN_INTEGER);
        assert_eq!(refused("WAIT 0 -1"), "ERR timeout is negative");
        assert_eq!(
            refused("WAIT 0 a"),
            "ERR timeout is not an integer or out of range"
        );
        assert_eq!(
            refused("WAIT 0 9223372036854775807"),
            "ERR timeout is out of range"
        );
        assert_eq!(
            refused("WAITAOF 2 0 0"),
            "ERR value is out of range, value must between 0 and 1"
        );
        assert_eq!(refused("WAITAOF a 0 0"), NOT_AN_INTEGER);
        assert_eq!(
            refused("WAITAOF 0 a 0"),
            "ERR value is out of range, must be positive"
        );
        assert_eq!(refused("WAITAOF 0 0 -1"), "ERR timeout is negative");
        assert_eq!(
            refused("WAITAOF 1 0 0"),
            "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."
        );
        let newest = RedisVersion::V7_4;
        let wait = waiting("wait", &args("WAIT -1 0"), 0, newest).unwrap();
        assert!(!wait.needs_replicas());
        let wait = waiting("waitaof", &args("waitaof 0 1 250"), 0, newest).unwrap();
        assert!(wait.needs_replicas() && wait.timeout_ms == 250);
        assert!(waiting("get", &args("GET k"), 0, newest).is_none());
        assert!(is_wait("waitaof") && !is_wait("blpop"));
        // Redis 7.0 overflows the deadline instead, which then never comes.
        let huge = args("WAIT 1 9223372036854775807");
        assert_eq!(
            waiting("wait", &huge, 1_000, RedisVersion::V7_0)
                .unwrap()
                .timeout_ms,
            0
        );
    }
}
