//! Values between Redis and Lua, as Redis 7.0 converts them.
//!
//! To Lua (`redis.call`'s replies), in the script's protocol (`redis.setresp`): under
//! RESP2 nil is `false`, a status `{ok=…}`, an error `{err=…}`, a double a string;
//! under RESP3 nil is `nil`, a double `{double=…}`, a map `{map={…}}`, a set
//! `{set={…}}`, a boolean a boolean.
//!
//! From Lua (a script's return value): numbers are cast to integers the C way (x86:
//! out of range and NaN give `i64::MIN`), `true` is 1 (or RESP3's true after
//! `setresp(3)`), `false` and `nil` are nil, tables are `{err=…}`, `{ok=…}`,
//! `{double=…}`, `{map=…}`, `{set=…}`, or arrays that stop at their first nil.

use lock_core::Value;
use mlua::{Function, Lua, Table, Value as LuaValue};

use crate::protocol::numbers::format_double;

/// A `redis.call` argument: a string as is, a number as `%.17g` (Redis 7.0's
/// formatting, so `0.1` arrives as `0.10000000000000001`); `None` for other types.
pub(crate) fn argument(value: &LuaValue) -> Option<Vec<u8>> {
    match value {
        LuaValue::String(s) => Some(s.as_bytes().to_vec()),
        // mlua hands over integral Lua numbers as integers; they are still doubles.
        LuaValue::Integer(n) => Some(format_double(*n as f64).into_bytes()),
        LuaValue::Number(n) => Some(format_double(*n).into_bytes()),
        _ => None,
    }
}

/// A reply as the script sees it, `resp` being 2 or 3.
pub(crate) fn to_lua(lua: &Lua, value: &Value, resp: u8) -> mlua::Result<LuaValue> {
    let resp3 = resp == 3;
    let field = |name: &str, value: LuaValue| -> mlua::Result<LuaValue> {
        let table = lua.create_table()?;
        table.raw_set(name, value)?;
        Ok(LuaValue::Table(table))
    };
    let array = |items: &mut dyn Iterator<Item = &Value>| -> mlua::Result<LuaValue> {
        let table = lua.create_table()?;
        for (i, item) in items.enumerate() {
            table.raw_set(i + 1, to_lua(lua, item, resp)?)?;
        }
        Ok(LuaValue::Table(table))
    };
    Ok(match value {
        Value::Nil | Value::NilArray if resp3 => LuaValue::Nil,
        Value::Nil | Value::NilArray => LuaValue::Boolean(false),
        Value::Int(n) => LuaValue::Number(*n as f64),
        Value::Data(bytes) => LuaValue::String(lua.create_string(bytes)?),
        Value::Status(text) => field("ok", LuaValue::String(lua.create_string(text)?))?,
        Value::Error(text) => field("err", LuaValue::String(lua.create_string(text)?))?,
        Value::Array(items) => array(&mut items.iter())?,
        Value::Double(x) if resp3 => field("double", LuaValue::Number(*x))?,
        Value::Double(x) => LuaValue::String(lua.create_string(format_double(*x))?),
        Value::Bool(b) if resp3 => LuaValue::Boolean(*b),
        Value::Bool(b) => LuaValue::Number(f64::from(u8::from(*b))),
        Value::Set(items) if resp3 => {
            let members = lua.create_table()?;
            for item in items {
                members.raw_set(to_lua(lua, item, resp)?, true)?;
            }
            field("set", LuaValue::Table(members))?
        }
        Value::Set(items) => array(&mut items.iter())?,
        Value::Map(pairs) if resp3 => {
            let map = lua.create_table()?;
            for (key, value) in pairs {
                map.raw_set(to_lua(lua, key, resp)?, to_lua(lua, value, resp)?)?;
            }
            field("map", LuaValue::Table(map))?
        }
        Value::Map(pairs) => array(&mut pairs.iter().flat_map(|(k, v)| [k, v]))?,
    })
}

/// A script's return value as Redis replies with it, `resp` being the script's protocol
/// when it returned. A table is first flattened by `flatten` (`flatten.lua`), then built
/// here without recursion.
pub(crate) fn from_lua(value: &LuaValue, resp: u8, flatten: &Function) -> mlua::Result<Value> {
    if !matches!(value, LuaValue::Table(_)) {
        return Ok(scalar(value, resp));
    }
    let (kinds, out, count): (Table, Table, usize) = flatten.call(value)?;
    // Aggregates being filled: their kind, how many elements they still expect, and
    // those read so far.
    let mut open: Vec<(u8, usize, Vec<Value>)> = Vec::new();
    for i in 1..=count {
        let kind: mlua::LuaString = kinds.raw_get(i)?;
        let item: LuaValue = out.raw_get(i)?;
        let text = || match &item {
            LuaValue::String(s) => s.to_string_lossy(),
            _ => String::new(),
        };
        let mut done = match kind.as_bytes()[0] {
            b'v' => Some(scalar(&item, resp)),
            b'e' => Some(Value::Error(text())),
            b'o' => Some(Value::Status(text())),
            b'd' => Some(Value::Double(number(&item))),
            b'g' => Some(Value::Data(text().into_bytes())),
            aggregate => {
                let pairs = if aggregate == b'm' { 2 } else { 1 };
                let elements = number(&item) as usize * pairs;
                open.push((aggregate, elements, Vec::with_capacity(elements.min(1024))));
                // An empty one is complete at once.
                close(&mut open)
            }
        };
        while let Some(value) = done {
            match open.last_mut() {
                None => return Ok(value),
                Some((_, _, items)) => items.push(value),
            }
            done = close(&mut open);
        }
    }
    Ok(Value::Nil)
}

/// Pops the innermost aggregate if it has all its elements.
fn close(open: &mut Vec<(u8, usize, Vec<Value>)>) -> Option<Value> {
    let (_, expected, items) = open.last()?;
    if items.len() < *expected {
        return None;
    }
    let (kind, _, items) = open.pop()?;
    Some(aggregate(kind, items))
}

fn aggregate(kind: u8, items: Vec<Value>) -> Value {
    match kind {
        b's' => Value::Set(items),
        b'm' => {
            let mut items = items.into_iter();
            let mut pairs = Vec::new();
            while let (Some(key), Some(value)) = (items.next(), items.next()) {
                pairs.push((key, value));
            }
            Value::Map(pairs)
        }
        _ => Value::Array(items),
    }
}

fn number(value: &LuaValue) -> f64 {
    match value {
        LuaValue::Integer(n) => *n as f64,
        LuaValue::Number(n) => *n,
        _ => 0.0,
    }
}

/// A value that is not a table.
fn scalar(value: &LuaValue, resp: u8) -> Value {
    match value {
        LuaValue::Boolean(b) if resp == 3 => Value::Bool(*b),
        LuaValue::Boolean(true) => Value::Int(1),
        LuaValue::Integer(n) => Value::Int(*n),
        LuaValue::Number(n) => Value::Int(c_cast(*n)),
        LuaValue::String(s) => Value::Data(s.as_bytes().to_vec()),
        _ => Value::Nil,
    }
}

/// C's `(long long)` cast on x86-64: NaN and values out of range give `LLONG_MIN`.
fn c_cast(n: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if (-LIMIT..LIMIT).contains(&n) {
        n as i64
    } else {
        i64::MIN
    }
}
