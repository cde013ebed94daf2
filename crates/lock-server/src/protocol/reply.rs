//! What a command answers ([`Reply`]), and writing it in RESP2, or RESP3 after
//! `HELLO 3`.

use lock_core::{ErrorKind, Value};

use crate::protocol::numbers::format_double;
use crate::protocol::request::Request;

/// A command's answer, with how the connection must write it.
#[derive(Debug, PartialEq)]
pub(crate) enum Reply {
    /// A plain reply.
    Value(Value),
    /// A pub/sub confirmation, written as a push under RESP3.
    Push(Vec<Value>),
    /// An array with the pub/sub events its commands caused, each written before the
    /// element of its index (EXEC).
    WithEvents(Vec<Value>, Vec<(usize, Value)>),
    /// The command found nothing and may wait for it: the connection blocks on it
    /// (BLPOP outside MULTI).
    Block(Request),
    /// An error whose text quotes the client's own bytes, which need not be UTF-8
    /// (an unknown command's name and arguments), written as they are.
    ErrorBytes(Vec<u8>),
}

impl From<Value> for Reply {
    fn from(value: Value) -> Self {
        Reply::Value(value)
    }
}

impl Reply {
    /// Drops this reply without recursing into it: a script may return arrays nested
    /// thousands deep, and dropping those the ordinary way needs a frame per level.
    pub(crate) fn release(self) {
        let mut pending = match self {
            Reply::Value(value) => vec![value],
            Reply::Push(items) => items,
            Reply::WithEvents(items, events) => {
                let mut all = items;
                all.extend(events.into_iter().map(|(_, event)| event));
                all
            }
            Reply::Block(_) | Reply::ErrorBytes(_) => return,
        };
        while let Some(value) = pending.pop() {
            match value {
                Value::Array(items) | Value::Set(items) => pending.extend(items),
                Value::Map(pairs) => {
                    for (key, value) in pairs {
                        pending.push(key);
                        pending.push(value);
                    }
                }
                _ => {}
            }
        }
    }
}

/// An injected connection fault: the connection closes where the reply would be, after
/// the replies before it, as with a server whose connection was reset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hangup;

/// A store's answer as a reply: its error's text, or [`Hangup`] for an injected
/// connection fault.
pub(crate) fn from_store(result: lock_core::Result<Value>) -> Result<Value, Hangup> {
    match result {
        Ok(value) => Ok(value),
        Err(error) if error.kind() == ErrorKind::Connection => Err(Hangup),
        Err(error) => Ok(Value::Error(error.message().to_string())),
    }
}

/// Appends `reply` to `out` in `protocol`. [`Reply::Block`] is the connection's to
/// handle and writes nothing.
pub(crate) fn write(protocol: Protocol, reply: &Reply, out: &mut Vec<u8>) {
    match reply {
        Reply::Value(value) => encode_in(protocol, value, out),
        Reply::Push(items) => encode_push(protocol, items, out),
        Reply::WithEvents(items, events) => encode_interleaved(protocol, items, events, out),
        Reply::Block(_) => {}
        Reply::ErrorBytes(text) => {
            out.push(b'-');
            out.extend_from_slice(text);
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// The protocol a connection speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// RESP2, the default.
    #[default]
    Resp2,
    /// RESP3, after `HELLO 3`.
    Resp3,
}

/// Appends `value` to `out` in RESP2. Nil is the null bulk string, as Redis sends for a
/// missing key.
pub(crate) fn encode(value: &Value, out: &mut Vec<u8>) {
    encode_in(Protocol::Resp2, value, out);
}

/// Appends `value` in `protocol`: RESP3 writes nil as its null type (`_`).
pub(crate) fn encode_in(protocol: Protocol, value: &Value, out: &mut Vec<u8>) {
    let resp3 = protocol == Protocol::Resp3;
    // Depth first with an explicit stack: a script may return arrays nested thousands
    // deep, more than a thread's stack holds frames for.
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::Nil | Value::NilArray if resp3 => out.extend_from_slice(b"_\r\n"),
            Value::Nil => out.extend_from_slice(b"$-1\r\n"),
            Value::NilArray => out.extend_from_slice(b"*-1\r\n"),
            Value::Int(n) => header(b':', *n, out),
            Value::Data(bytes) => bulk(bytes, out),
            Value::Status(text) => line(b'+', text, out),
            Value::Error(text) => line(b'-', text, out),
            Value::Array(items) | Value::Set(items) => {
                let kind = if resp3 && matches!(value, Value::Set(_)) {
                    b'~'
                } else {
                    b'*'
                };
                header(kind, items.len() as i64, out);
                pending.extend(items.iter().rev());
            }
            Value::Map(pairs) => {
                if resp3 {
                    header(b'%', pairs.len() as i64, out);
                } else {
                    header(b'*', 2 * pairs.len() as i64, out);
                }
                for (key, value) in pairs.iter().rev() {
                    pending.push(value);
                    pending.push(key);
                }
            }
            Value::Bool(b) if resp3 => {
                out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" });
            }
            Value::Bool(b) => header(b':', i64::from(*b), out),
            // Redis's addReplyDouble: a bulk string in RESP2, RESP3's double type after.
            Value::Double(x) if resp3 => line(b',', &format_double(*x), out),
            Value::Double(x) => bulk(format_double(*x).as_bytes(), out),
        }
    }
}

fn bulk(bytes: &[u8], out: &mut Vec<u8>) {
    header(b'$', bytes.len() as i64, out);
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// An array as a RESP3 push (`>`), as pub/sub events are sent after `HELLO 3`; a plain
/// array in RESP2.
pub(crate) fn encode_push(protocol: Protocol, items: &[Value], out: &mut Vec<u8>) {
    let kind = if protocol == Protocol::Resp3 {
        b'>'
    } else {
        b'*'
    };
    aggregate(protocol, kind, items, out);
}

/// A pub/sub event (`message`, `pmessage`…): a push under RESP3, an array under RESP2.
pub(crate) fn encode_event(protocol: Protocol, event: &Value, out: &mut Vec<u8>) {
    match event {
        Value::Array(parts) => encode_push(protocol, parts, out),
        other => encode_in(protocol, other, out),
    }
}

/// An array with pub/sub events inside it, as Redis writes an EXEC reply whose commands
/// published to the connection's own subscriptions (see [`encode_with_events`]).
pub(crate) fn encode_interleaved(
    protocol: Protocol,
    items: &[Value],
    events: &[(usize, Value)],
    out: &mut Vec<u8>,
) {
    header(b'*', items.len() as i64, out);
    encode_with_events(protocol, items, events, out);
}

/// Replies one after another, with the pub/sub events their commands caused: each
/// `(i, event)` goes, as a push, before reply `i` (after the last when `i` is the length).
pub(crate) fn encode_with_events(
    protocol: Protocol,
    items: &[Value],
    events: &[(usize, Value)],
    out: &mut Vec<u8>,
) {
    let mut events = events.iter().peekable();
    for index in 0..=items.len() {
        while let Some((_, event)) = events.next_if(|(at, _)| *at <= index) {
            encode_event(protocol, event, out);
        }
        if let Some(item) = items.get(index) {
            encode_in(protocol, item, out);
        }
    }
}

/// `<kind><number>\r\n`, formatted straight into `out` (no temporary string: this runs
/// for every reply).
fn header(kind: u8, number: i64, out: &mut Vec<u8>) {
    out.push(kind);
    out.extend_from_slice(itoa::Buffer::new().format(number).as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn aggregate(protocol: Protocol, kind: u8, items: &[Value], out: &mut Vec<u8>) {
    header(kind, items.len() as i64, out);
    for item in items {
        encode_in(protocol, item, out);
    }
}

/// A status or error line; Redis replaces CR and LF in them with spaces.
fn line(kind: u8, text: &str, out: &mut Vec<u8>) {
    out.push(kind);
    out.extend(
        text.bytes()
            .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_encode_as_redis_sends_them() {
        let mut out = Vec::new();
        encode(
            &Value::Array(vec![
                Value::Int(-3),
                Value::Nil,
                Value::Data(b"ab".to_vec()),
                Value::Status("OK".into()),
                Value::Error("ERR x\ny".into()),
            ]),
            &mut out,
        );
        assert_eq!(out, b"*5\r\n:-3\r\n$-1\r\n$2\r\nab\r\n+OK\r\n-ERR x y\r\n");
    }

    #[test]
    fn doubles_maps_and_sets_take_their_resp3_types_only_after_hello_3() {
        let value = Value::Array(vec![
            Value::Double(1.5),
            Value::Double(f64::NEG_INFINITY),
            Value::Map(vec![(Value::Data(b"k".to_vec()), Value::Int(1))]),
            Value::Set(vec![Value::Int(2)]),
        ]);
        let mut resp2 = Vec::new();
        encode_in(Protocol::Resp2, &value, &mut resp2);
        assert_eq!(
            resp2,
            b"*4\r\n$3\r\n1.5\r\n$4\r\n-inf\r\n*2\r\n$1\r\nk\r\n:1\r\n*1\r\n:2\r\n"
        );
        let mut resp3 = Vec::new();
        encode_in(Protocol::Resp3, &value, &mut resp3);
        assert_eq!(
            resp3,
            b"*4\r\n,1.5\r\n,-inf\r\n%1\r\n$1\r\nk\r\n:1\r\n~1\r\n:2\r\n"
        );
    }

    #[test]
    fn replies_nested_thousands_deep_encode_on_a_worker_stack() {
        // Tokio's worker threads have 2 MiB of stack.
        let encoded = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let mut value = Value::Error("ERR reached lua stack limit".into());
                for _ in 0..7995 {
                    value = Value::Array(vec![value]);
                }
                let mut out = Vec::new();
                encode(&value, &mut out);
                out
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(encoded.starts_with(b"*1\r\n*1\r\n"));
        assert!(encoded.ends_with(b"*1\r\n-ERR reached lua stack limit\r\n"));
        assert_eq!(encoded.len(), 7995 * 4 + 30);
    }
}
