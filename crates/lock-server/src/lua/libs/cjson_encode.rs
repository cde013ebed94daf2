//! `cjson.encode`, as lua-cjson 2.1.0 writes JSON: numbers with `%.14g`, `/` escaped,
//! tables as arrays when every key is a positive integer (sparse ones refused), objects
//! in Lua's iteration order, and the empty table as `{}`.

use mlua::{Table, Value as LuaValue};

use super::cjson::{Config, is_null};
use super::with_stack;
use crate::protocol::numbers::format_g;

/// The JSON text for `value`, or the message of the error Redis raises.
pub(crate) fn encode(value: &LuaValue, config: &Config) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    append(value, config, 0, &mut out)?;
    Ok(out)
}

/// lua-cjson names a value's type with `lua_typename`.
fn type_name(value: &LuaValue) -> &'static str {
    match value {
        LuaValue::LightUserData(_) => "userdata",
        LuaValue::Integer(_) => "number",
        other => other.type_name(),
    }
}

fn number_of(value: &LuaValue) -> Option<f64> {
    match value {
        LuaValue::Integer(n) => Some(*n as f64),
        LuaValue::Number(n) => Some(*n),
        _ => None,
    }
}

fn exception(value: &LuaValue, reason: &str) -> String {
    format!("Cannot serialise {}: {reason}", type_name(value))
}

fn append(value: &LuaValue, config: &Config, depth: i64, out: &mut Vec<u8>) -> Result<(), String> {
    with_stack(|| append_here(value, config, depth, out))
}

fn append_here(
    value: &LuaValue,
    config: &Config,
    depth: i64,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    match value {
        LuaValue::String(s) => append_string(&s.as_bytes(), out),
        LuaValue::Integer(n) => append_number(*n as f64, value, config, out)?,
        LuaValue::Number(n) => append_number(*n, value, config, out)?,
        LuaValue::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        LuaValue::Nil => out.extend_from_slice(b"null"),
        value if is_null(value) => out.extend_from_slice(b"null"),
        LuaValue::Table(table) => {
            let depth = depth + 1;
            if depth > config.encode_max_depth {
                return Err(format!("Cannot serialise, excessive nesting ({depth})"));
            }
            match array_length(table, config)? {
                Some(len) if len > 0 => {
                    out.push(b'[');
                    for i in 1..=len {
                        if i > 1 {
                            out.push(b',');
                        }
                        let item: LuaValue = table.raw_get(i).unwrap_or(LuaValue::Nil);
                        append(&item, config, depth, out)?;
                    }
                    out.push(b']');
                }
                _ => append_object(table, config, depth, out)?,
            }
        }
        other => return Err(exception(other, "type not supported")),
    }
    Ok(())
}

/// lua-cjson's `lua_array_length`: the largest key when every key is an integer >= 1
/// (`None` otherwise, or for a sparse array when converting them is enabled).
fn array_length(table: &Table, config: &Config) -> Result<Option<i64>, String> {
    let (mut max, mut items) = (0i64, 0i64);
    for pair in table.pairs::<LuaValue, LuaValue>() {
        let Ok((key, _)) = pair else {
            return Ok(None);
        };
        let Some(k) = number_of(&key) else {
            return Ok(None);
        };
        if k.floor() != k || k < 1.0 {
            return Ok(None);
        }
        max = max.max(k as i64);
        items += 1;
    }
    if config.sparse_ratio > 0 && max > items * config.sparse_ratio && max > config.sparse_safe {
        if !config.sparse_convert {
            return Err(exception(
                &LuaValue::Table(table.clone()),
                "excessively sparse array",
            ));
        }
        return Ok(None);
    }
    Ok(Some(max))
}

fn append_object(
    table: &Table,
    config: &Config,
    depth: i64,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    out.push(b'{');
    let mut first = true;
    for pair in table.pairs::<LuaValue, LuaValue>() {
        let Ok((key, value)) = pair else { continue };
        if !first {
            out.push(b',');
        }
        first = false;
        match (&key, number_of(&key)) {
            (LuaValue::String(s), _) => append_string(&s.as_bytes(), out),
            (_, Some(n)) => {
                out.push(b'"');
                append_number(n, &key, config, out)?;
                out.push(b'"');
            }
            (other, None) => {
                return Err(exception(other, "table key must be a number or string"));
            }
        }
        out.push(b':');
        append(&value, config, depth, out)?;
    }
    out.push(b'}');
    Ok(())
}

fn append_number(
    n: f64,
    value: &LuaValue,
    config: &Config,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    if !n.is_finite() {
        match config.encode_invalid_numbers {
            0 => return Err(exception(value, "must not be NaN or Inf")),
            1 => {
                let text: &[u8] = if n.is_nan() {
                    b"NaN"
                } else if n < 0.0 {
                    b"-Infinity"
                } else {
                    b"Infinity"
                };
                out.extend_from_slice(text);
                return Ok(());
            }
            _ => {
                out.extend_from_slice(b"null");
                return Ok(());
            }
        }
    }
    out.extend_from_slice(format_g(n, config.number_precision).as_bytes());
    Ok(())
}

/// lua-cjson's escapes: `"`, `\` and `/`, the short forms of control characters, and
/// `\u00XX` for the other control characters and DEL. Bytes above 127 pass as they are.
fn append_string(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &byte in bytes {
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            8 => out.extend_from_slice(b"\\b"),
            9 => out.extend_from_slice(b"\\t"),
            10 => out.extend_from_slice(b"\\n"),
            12 => out.extend_from_slice(b"\\f"),
            13 => out.extend_from_slice(b"\\r"),
            0..=31 | 127 => out.extend_from_slice(format!("\\u{byte:04x}").as_bytes()),
            _ => out.push(byte),
        }
    }
    out.push(b'"');
}
