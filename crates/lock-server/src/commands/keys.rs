//! DEL, EXISTS, TYPE and KEYS.

use lock_core::Value;
use lock_memory::Keyspace;

use super::text;

pub(crate) fn del(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
    Ok(Value::Int(store.del(&args[1..]).map_err(text)?))
}

pub(crate) fn exists(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
    Ok(Value::Int(store.exists(&args[1..]).map_err(text)?))
}

pub(crate) fn key_type(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
    Ok(Value::Status(store.key_type(args[1]).map_err(text)?.into()))
}

pub(crate) fn keys(store: &mut dyn Keyspace, args: &[&[u8]]) -> Result<Value, String> {
    let keys = store.keys(args[1]).map_err(text)?;
    Ok(Value::Array(keys.into_iter().map(Value::Data).collect()))
}
