//! Commands, grouped by kind as in miniredis. Keyspace commands run synchronously against
//! a [`ScriptContext`](lock_core::ScriptContext), so the network and `redis.call` inside
//! Lua share one implementation; connection commands need the session and run outside.

pub(crate) mod connection;
pub(crate) mod keyspace;
pub(crate) mod pubsub;
pub(crate) mod scripting;
pub(crate) mod transaction;
pub(crate) mod watch;

use lock_core::Value;

/// A command table: lower-case names with their arities.
pub(crate) type Table = [(&'static str, i32)];

/// The entry of `table` named `name` (any case).
pub(crate) fn find(table: &Table, name: &[u8]) -> Option<(&'static str, i32)> {
    // Every request looks its name up, several times: the first byte rules out most
    // entries before a full comparison.
    let first = name.first()?.to_ascii_lowercase();
    table
        .iter()
        .find(|(known, _)| {
            known.as_bytes().first() == Some(&first) && known.as_bytes().eq_ignore_ascii_case(name)
        })
        .copied()
}

/// How many arguments a command takes, counting its name: `n` exactly, or at least `n`
/// when negative (Redis's arity convention).
pub(crate) fn arity_ok(arity: i32, argc: usize) -> bool {
    let argc = i32::try_from(argc).unwrap_or(i32::MAX);
    if arity >= 0 {
        argc == arity
    } else {
        argc >= -arity
    }
}

/// `ERR wrong number of arguments for '<name>' command`.
pub(crate) fn wrong_arity(name: &str) -> Value {
    Value::Error(wrong_arity_text(name))
}

/// The text of [`wrong_arity`].
pub(crate) fn wrong_arity_text(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
}

/// Redis's reply to a command it does not know.
pub(crate) fn unknown_command(args: &[Vec<u8>]) -> Value {
    let shown = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes);
        text.chars().take(128).collect::<String>()
    };
    let mut text = format!(
        "ERR unknown command '{}', with args beginning with: ",
        shown(&args[0])
    );
    for arg in &args[1..] {
        text.push_str(&format!("'{}' ", shown(arg)));
    }
    Value::Error(text)
}

/// Redis's `string2ll`: an optional minus and digits without a leading zero, nothing
/// else, no overflow. Read digit by digit: every request's lengths go through here.
pub(crate) fn integer(bytes: &[u8]) -> Option<i64> {
    let (negative, digits) = match bytes {
        [b'0'] => return Some(0),
        [b'-', rest @ ..] => (true, rest),
        _ => (false, bytes),
    };
    if digits.is_empty() || digits[0] == b'0' {
        return None;
    }
    // Accumulated negatively so that i64::MIN fits.
    let mut value: i64 = 0;
    for &byte in digits {
        let digit = i64::from(byte.wrapping_sub(b'0'));
        if digit > 9 {
            return None;
        }
        value = value.checked_mul(10)?.checked_sub(digit)?;
    }
    if negative {
        Some(value)
    } else {
        value.checked_neg()
    }
}

pub(crate) const NOT_AN_INTEGER: &str = "ERR value is not an integer or out of range";
pub(crate) const SYNTAX_ERROR: &str = "ERR syntax error";

#[cfg(test)]
mod tests {
    use super::integer;

    #[test]
    fn integers_are_read_like_string2ll() {
        for (text, expected) in [
            ("0", Some(0)),
            ("42", Some(42)),
            ("-7", Some(-7)),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775808", None),
            ("-0", None),
            ("01", None),
            ("+1", None),
            ("", None),
            ("-", None),
            (" 1", None),
            ("1a", None),
        ] {
            assert_eq!(integer(text.as_bytes()), expected, "{text:?}");
        }
    }
}
