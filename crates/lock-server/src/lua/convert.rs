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
use mlua::{Lua, Table, Value as LuaValue};

use crate::commands::numbers::format_double;

/// How deep returned tables may nest: Redis runs out of Lua stack (`lua_checkstack`)
/// below this, and answers an error in place of the table that did not fit.
const MAX_NESTING: usize = 7995;

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

/// A script's return value as Redis replies with it, `resp` being the script's
/// protocol when it returned. Nested tables are walked with an explicit stack: a script
/// may return a table nested thousands deep (or one that contains itself).
pub(crate) fn from_lua(value: &LuaValue, resp: u8) -> Value {
    let mut stack: Vec<Node> = Vec::new();
    let mut done = match step(value, resp, &mut stack) {
        Some(value) => return value,
        None => None,
    };
    loop {
        let top = stack.last_mut().expect("a table is being converted");
        if let Some(value) = done.take() {
            top.converted.push(value);
        }
        let top = stack.last_mut().expect("a table is being converted");
        if top.converted.len() < top.children.len() {
            let child = top.children[top.converted.len()].clone();
            done = step(&child, resp, &mut stack);
            continue;
        }
        let node = stack.pop().expect("checked above");
        let value = node.finish();
        if stack.is_empty() {
            return value;
        }
        done = Some(value);
    }
}

/// A table being converted: its children in reply order, and those converted so far.
struct Node {
    shape: Shape,
    children: Vec<LuaValue>,
    converted: Vec<Value>,
}

#[derive(Clone, Copy)]
enum Shape {
    Array,
    /// Children are key, value, key, value…
    Map,
    Set,
}

impl Node {
    fn finish(self) -> Value {
        match self.shape {
            Shape::Array => Value::Array(self.converted),
            Shape::Set => Value::Set(self.converted),
            Shape::Map => {
                let mut items = self.converted.into_iter();
                let mut pairs = Vec::new();
                while let (Some(key), Some(value)) = (items.next(), items.next()) {
                    pairs.push((key, value));
                }
                Value::Map(pairs)
            }
        }
    }
}

/// Converts `value` at once, or (for an aggregate table) pushes it to be converted and
/// answers `None`.
fn step(value: &LuaValue, resp: u8, stack: &mut Vec<Node>) -> Option<Value> {
    let table = match value {
        LuaValue::Boolean(b) if resp == 3 => return Some(Value::Bool(*b)),
        LuaValue::Boolean(true) => return Some(Value::Int(1)),
        LuaValue::Integer(n) => return Some(Value::Int(*n)),
        LuaValue::Number(n) => return Some(Value::Int(c_cast(*n))),
        LuaValue::String(s) => return Some(Value::Data(s.as_bytes().to_vec())),
        LuaValue::Table(table) => table,
        _ => return Some(Value::Nil),
    };
    if stack.len() >= MAX_NESTING {
        return Some(Value::Error("ERR reached lua stack limit".into()));
    }
    let get = |name: &str| table.raw_get::<LuaValue>(name).unwrap_or(LuaValue::Nil);
    if let LuaValue::String(text) = get("err") {
        return Some(Value::Error(text.to_string_lossy()));
    }
    if let LuaValue::String(text) = get("ok") {
        return Some(Value::Status(text.to_string_lossy()));
    }
    match get("double") {
        LuaValue::Integer(n) => return Some(Value::Double(n as f64)),
        LuaValue::Number(n) => return Some(Value::Double(n)),
        _ => {}
    }
    if let LuaValue::String(digits) = get("big_number") {
        return Some(Value::Data(digits.as_bytes().to_vec()));
    }
    let pairs = |t: &Table| -> Vec<(LuaValue, LuaValue)> {
        t.pairs::<LuaValue, LuaValue>()
            .filter_map(Result::ok)
            .collect()
    };
    let (shape, children) = if let LuaValue::Table(map) = get("map") {
        let children = pairs(&map).into_iter().flat_map(|(k, v)| [k, v]).collect();
        (Shape::Map, children)
    } else if let LuaValue::Table(set) = get("set") {
        (
            Shape::Set,
            pairs(&set).into_iter().map(|(k, _)| k).collect(),
        )
    } else {
        let mut items = Vec::new();
        for i in 1.. {
            match table.raw_get::<LuaValue>(i) {
                Ok(LuaValue::Nil) | Err(_) => break,
                Ok(item) => items.push(item),
            }
        }
        (Shape::Array, items)
    };
    stack.push(Node {
        shape,
        children,
        converted: Vec::new(),
    });
    None
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
