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
    table
        .iter()
        .find(|(known, _)| known.as_bytes().eq_ignore_ascii_case(name))
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

/// Redis's `string2ll`: what it accepts as an integer argument or stored integer.
pub(crate) fn integer(bytes: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(bytes).ok()?;
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || digits.len() > 19 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if digits.len() > 1 && digits.starts_with('0') {
        return None;
    }
    text.parse().ok()
}

pub(crate) const NOT_AN_INTEGER: &str = "ERR value is not an integer or out of range";
pub(crate) const SYNTAX_ERROR: &str = "ERR syntax error";
