//! Script replies.

/// A reply: from a script, in the shapes Redis converts Lua values to, or from a command.
///
/// Lua `false` and `nil` become [`Value::Nil`], `true` becomes `Int(1)`, numbers are
/// truncated to integers, strings are [`Value::Data`], `{ok=...}` tables are
/// [`Value::Status`], and arrays stop at the first nil. [`Value::Double`],
/// [`Value::Map`], [`Value::Set`] and [`Value::Bool`] are RESP3's own types; under RESP2 a
/// double is sent as a bulk string, a map as a flat array of keys and values, a set as an
/// array, a boolean as 1 or 0.
#[derive(Clone, Debug, PartialEq)]
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
    /// A double (RESP3 `,`), as ZSCORE answers.
    Double(f64),
    /// Key-value pairs in order (RESP3 `%`), as HGETALL answers.
    Map(Vec<(Value, Value)>),
    /// Members (RESP3 `~`), as SMEMBERS answers.
    Set(Vec<Value>),
    /// A boolean (RESP3 `#`; `:1`/`:0` under RESP2), as a script returns one after
    /// `redis.setresp(3)`.
    Bool(bool),
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
