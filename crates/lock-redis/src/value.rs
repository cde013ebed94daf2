//! RESP replies as nxlock script [`Value`]s.

use lock_core::Value;

pub(crate) fn from_redis(value: redis::Value) -> Value {
    match value {
        redis::Value::Nil => Value::Nil,
        redis::Value::Int(n) => Value::Int(n),
        redis::Value::BulkString(bytes) => Value::Data(bytes),
        redis::Value::SimpleString(s) => Value::Status(s),
        redis::Value::Okay => Value::Status("OK".into()),
        redis::Value::Array(items) => Value::Array(items.into_iter().map(from_redis).collect()),
        redis::Value::Set(items) => Value::Set(items.into_iter().map(from_redis).collect()),
        redis::Value::Map(pairs) => Value::Map(
            pairs
                .into_iter()
                .map(|(k, v)| (from_redis(k), from_redis(v)))
                .collect(),
        ),
        redis::Value::Boolean(b) => Value::Bool(b),
        redis::Value::Double(d) => Value::Double(d),
        redis::Value::VerbatimString { text, .. } => Value::Data(text.into_bytes()),
        redis::Value::ServerError(e) => Value::Error(match e.details() {
            Some(detail) => format!("{} {detail}", e.code()),
            None => e.code().to_string(),
        }),
        other => Value::Status(format!("{other:?}")),
    }
}
