//! RESP replies as nxlock script [`Value`]s.

use lock_core::Value;

pub(crate) fn from_redis(value: redis::Value) -> Value {
    match value {
        redis::Value::Nil => Value::Nil,
        redis::Value::Int(n) => Value::Int(n),
        redis::Value::BulkString(bytes) => Value::Data(bytes),
        redis::Value::SimpleString(s) => Value::Status(s),
        redis::Value::Okay => Value::Status("OK".into()),
        redis::Value::Array(items) | redis::Value::Set(items) => {
            Value::Array(items.into_iter().map(from_redis).collect())
        }
        redis::Value::Map(pairs) => Value::Array(
            pairs
                .into_iter()
                .flat_map(|(k, v)| [from_redis(k), from_redis(v)])
                .collect(),
        ),
        redis::Value::Boolean(b) => Value::Int(i64::from(b)),
        // Lua numbers become integers in Redis replies; RESP3 doubles are truncated alike.
        redis::Value::Double(d) => Value::Int(d as i64),
        redis::Value::VerbatimString { text, .. } => Value::Data(text.into_bytes()),
        redis::Value::ServerError(e) => Value::Error(match e.details() {
            Some(detail) => format!("{} {detail}", e.code()),
            None => e.code().to_string(),
        }),
        other => Value::Status(format!("{other:?}")),
    }
}
