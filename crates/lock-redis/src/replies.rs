//! The shape of each command's reply, checked against what Redis sends: a server that
//! answers in another shape gets an [`ErrorKind::UnexpectedReply`] naming the command, the
//! reply's RESP type and bytes, and what Redis replies, so a server author sees at once
//! what to change.

use lock_core::{Error, ErrorKind, Result, SetOptions, SetReply};

/// An integer reply (DEL, EXISTS, PTTL, TTL, INCR, PUBLISH).
pub(crate) fn integer(command: &str, reply: redis::Value) -> Result<i64> {
    match reply {
        redis::Value::Int(n) => Ok(n),
        other => Err(unexpected(command, &other, "an integer")),
    }
}

/// An integer 0 or 1 (SETNX, PEXPIRE, PEXPIREAT, PERSIST).
pub(crate) fn flag(command: &str, reply: redis::Value) -> Result<bool> {
    match reply {
        redis::Value::Int(n @ (0 | 1)) => Ok(n == 1),
        other => Err(unexpected(command, &other, "an integer, 0 or 1")),
    }
}

/// A bulk string or a null (GET, GETSET, GETDEL, SET … GET).
pub(crate) fn bulk_or_nil(command: &str, reply: redis::Value) -> Result<Option<Vec<u8>>> {
    match reply {
        redis::Value::BulkString(bytes) => Ok(Some(bytes)),
        redis::Value::Nil => Ok(None),
        other => Err(unexpected(command, &other, "a bulk string or a null")),
    }
}

/// SET's reply: `+OK` or a null (NX/XX not met); with GET, the old value.
pub(crate) fn set(options: SetOptions, reply: redis::Value) -> Result<SetReply> {
    if options.get {
        return bulk_or_nil("SET", reply).map(SetReply::OldValue);
    }
    match reply {
        redis::Value::Okay => Ok(SetReply::Applied),
        redis::Value::SimpleString(status) if status == "OK" => Ok(SetReply::Applied),
        redis::Value::Nil => Ok(SetReply::NotApplied),
        other => Err(unexpected(
            "SET",
            &other,
            "+OK, or a null when NX or XX does not hold",
        )),
    }
}

fn unexpected(command: &str, reply: &redis::Value, redis_replies: &str) -> Error {
    let mut bytes = Vec::new();
    resp(reply, &mut bytes);
    const SHOWN: usize = 120;
    let shown = bytes.get(..SHOWN).unwrap_or(&bytes).escape_ascii();
    let more = if bytes.len() > SHOWN { "…" } else { "" };
    Error::new(
        ErrorKind::UnexpectedReply,
        format!(
            "{command} replied with {} \"{shown}{more}\", where Redis replies with {redis_replies}",
            type_name(reply)
        ),
    )
}

/// The reply's RESP type, as the protocol's documentation names it.
fn type_name(reply: &redis::Value) -> &'static str {
    match reply {
        redis::Value::Nil => "a null",
        redis::Value::Int(_) => "an integer",
        redis::Value::BulkString(_) => "a bulk string",
        redis::Value::Array(_) => "an array",
        redis::Value::SimpleString(_) | redis::Value::Okay => "a simple string",
        redis::Value::Map(_) => "a map",
        redis::Value::Attribute { .. } => "an attribute",
        redis::Value::Set(_) => "a set",
        redis::Value::Double(_) => "a double",
        redis::Value::Boolean(_) => "a boolean",
        redis::Value::VerbatimString { .. } => "a verbatim string",
        redis::Value::BigNumber(_) => "a big number",
        redis::Value::Push { .. } => "a push",
        redis::Value::ServerError(_) => "an error",
        _ => "an unknown type",
    }
}

/// The reply as the server sent it on the wire (as redis-rs parsed it).
fn resp(reply: &redis::Value, out: &mut Vec<u8>) {
    let line = |out: &mut Vec<u8>, prefix: &str, text: &str| {
        out.extend_from_slice(format!("{prefix}{text}\r\n").as_bytes());
    };
    match reply {
        redis::Value::Nil => out.extend_from_slice(b"$-1\r\n"),
        redis::Value::Int(n) => line(out, ":", &n.to_string()),
        redis::Value::BulkString(bytes) => {
            line(out, "$", &bytes.len().to_string());
            out.extend_from_slice(bytes);
            out.extend_from_slice(b"\r\n");
        }
        redis::Value::SimpleString(text) => line(out, "+", text),
        redis::Value::Okay => line(out, "+", "OK"),
        redis::Value::Array(items) | redis::Value::Set(items) => {
            let prefix = if matches!(reply, redis::Value::Set(_)) {
                "~"
            } else {
                "*"
            };
            line(out, prefix, &items.len().to_string());
            for item in items {
                resp(item, out);
            }
        }
        redis::Value::Map(pairs) => {
            line(out, "%", &pairs.len().to_string());
            for (key, value) in pairs {
                resp(key, out);
                resp(value, out);
            }
        }
        redis::Value::Double(d) => line(out, ",", &d.to_string()),
        redis::Value::Boolean(b) => line(out, "#", if *b { "t" } else { "f" }),
        redis::Value::ServerError(error) => {
            let text = match error.details() {
                Some(detail) => format!("{} {detail}", error.code()),
                None => error.code().to_string(),
            };
            line(out, "-", &text);
        }
        other => out.extend_from_slice(format!("{other:?}").as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_simple_string_where_redis_sends_a_bulk_string_is_named_with_its_bytes() {
        let error = bulk_or_nil("GET", redis::Value::SimpleString("one".into())).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::UnexpectedReply);
        assert_eq!(
            error.message(),
            "GET replied with a simple string \"+one\\r\\n\", where Redis replies with a bulk string or a null"
        );
        assert_eq!(bulk_or_nil("GET", redis::Value::Nil).unwrap(), None);
        assert!(flag("PEXPIRE", redis::Value::Int(2)).is_err());
        assert_eq!(
            integer("DEL", redis::Value::BulkString(b"1".to_vec()))
                .unwrap_err()
                .message(),
            "DEL replied with a bulk string \"$1\\r\\n1\\r\\n\", where Redis replies with an integer"
        );
    }
}
