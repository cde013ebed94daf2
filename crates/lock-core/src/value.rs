//! Script replies.

/// A reply from a script, in the shapes Redis converts Lua values to.
///
/// Lua `false` and `nil` become [`Value::Nil`], `true` becomes `Int(1)`, numbers are
/// truncated to integers, strings are [`Value::Data`], `{ok=...}` tables are
/// [`Value::Status`], and arrays stop at the first nil.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// Nil bulk reply.
    Nil,
    /// Null array reply (`*-1` in RESP2): what `BLPOP` answers on timeout and `LPOP key
    /// count` on a missing key. Lua sees it as `false`, like [`Value::Nil`].
    NilArray,
    /// Integer reply.
    Int(i64),
    /// Bulk string reply (binary-safe).
    Data(Vec<u8>),
    /// Status reply (`+OK`).
    Status(String),
    /// Array reply.
    Array(Vec<Value>),
    /// An error reply nested inside an array (a top-level error is an `Err`).
    Error(String),
}

impl Value {
    /// The integer, when this is an integer reply.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(n) => Some(*n),
            _ => None,
        }
    }
}
