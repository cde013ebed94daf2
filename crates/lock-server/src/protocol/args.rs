//! The pieces every command's code shares: reading integers as Redis does, the common
//! replies, and the texts of the common errors.

use lock_core::Value;

use crate::protocol::reply::Reply;

/// `ERR wrong number of arguments for '<name>' command`.
pub(crate) fn wrong_arity(name: &str) -> Value {
    Value::Error(wrong_arity_text(name))
}

/// The text of [`wrong_arity`].
pub(crate) fn wrong_arity_text(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
}

/// Redis's reply to a command it does not know.
pub(crate) fn unknown_command(args: &[Vec<u8>]) -> Reply {
    // Redis prints each with `%.*s` (so a NUL ends it), stops adding arguments once 128
    // bytes are shown, and turns CR and LF into spaces to keep the reply one line.
    let c_string = |bytes: &[u8], limit: usize| -> Vec<u8> {
        let end = memchr::memchr(0, bytes).unwrap_or(bytes.len());
        bytes[..end.min(limit)].to_vec()
    };
    let mut shown = Vec::new();
    for arg in &args[1..] {
        if shown.len() >= 128 {
            break;
        }
        let room = 128 - shown.len();
        shown.push(b'\'');
        shown.extend(c_string(arg, room));
        shown.extend_from_slice(b"' ");
    }
    let mut text = b"ERR unknown command '".to_vec();
    text.extend(c_string(&args[0], 128));
    text.extend_from_slice(b"', with args beginning with: ");
    text.extend(shown);
    for byte in &mut text {
        if matches!(byte, b'\r' | b'\n') {
            *byte = b' ';
        }
    }
    Reply::ErrorBytes(text)
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

/// The optional count of LPOP, SPOP, ZPOPMIN and the like: a non-negative integer.
pub(crate) fn pop_count(arg: Option<&&[u8]>) -> Result<Option<usize>, String> {
    arg.map(|count| {
        integer(count)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| "ERR value is out of range, must be positive".to_string())
    })
    .transpose()
}

/// The most elements a reply may hold when a command's arguments, not the data, choose
/// its size (SRANDMEMBER with a negative count): Redis would stream such a reply for as
/// long as its memory lasts; this server builds replies whole, so it refuses larger ones.
pub(crate) const MAX_REPLY_ELEMENTS: usize = 1 << 20;

/// The refusal of a reply larger than [`MAX_REPLY_ELEMENTS`].
pub(crate) fn reply_too_large() -> String {
    format!("ERR nxlock serve refuses to build a reply of more than {MAX_REPLY_ELEMENTS} elements")
}

pub(crate) const NOT_AN_INTEGER: &str = "ERR value is not an integer or out of range";
pub(crate) const SYNTAX_ERROR: &str = "ERR syntax error";

/// `+OK`.
pub(crate) fn ok() -> Value {
    Value::Status("OK".into())
}

/// A bulk string, or nil.
pub(crate) fn bulk(value: Option<Vec<u8>>) -> Value {
    value.map_or(Value::Nil, Value::Data)
}

/// A store error as its reply text.
pub(crate) fn text(error: lock_core::Error) -> String {
    error.message().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

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
