//! `cmsgpack`: lua-cmsgpack 0.4.0. Integral numbers pack as the smallest integer, other
//! numbers as a float when a float holds them exactly and as a double otherwise; a
//! table packs as an array when its keys are exactly 1..n (the empty table too) and as
//! a map otherwise; tables nested more than 16 deep, functions and userdata pack as nil.

use mlua::{Lua, MultiValue, Table, Value as LuaValue, Variadic};
use rmp::Marker;
use rmp::encode;

use super::{bad_argument, check_bytes, check_number, lib_error, with_stack};

/// lua-cmsgpack's `LUACMSGPACK_MAX_NESTING`.
const MAX_NESTING: usize = 16;

/// How deep unpacking may nest before the input is called malformed (lua-cmsgpack
/// itself recurses on the C stack without a limit).
const MAX_UNPACK_NESTING: usize = 1000;

pub(crate) fn table(lua: &Lua) -> mlua::Result<Table> {
    let cmsgpack = lua.create_table()?;
    cmsgpack.raw_set("_NAME", "cmsgpack")?;
    cmsgpack.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    cmsgpack.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    cmsgpack.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    cmsgpack.raw_set(
        "pack",
        lua.create_function(|lua, args: Variadic<LuaValue>| {
            if args.is_empty() {
                return Err(bad_argument(
                    lua,
                    0,
                    "pack",
                    "MessagePack pack needs input.",
                ));
            }
            let mut out = Vec::new();
            for value in args.iter() {
                pack(value, 0, &mut out);
            }
            lua.create_string(out)
        })?,
    )?;
    cmsgpack.raw_set(
        "unpack",
        lua.create_function(|lua, args: Variadic<LuaValue>| {
            let data = check_bytes(lua, &args, 1, "unpack")?;
            unpack(lua, &data, None, 0)
        })?,
    )?;
    cmsgpack.raw_set(
        "unpack_one",
        lua.create_function(|lua, args: Variadic<LuaValue>| {
            let data = check_bytes(lua, &args, 1, "unpack_one")?;
            let offset = optional_integer(lua, &args, 2, "unpack_one")?;
            unpack(lua, &data, Some(1), offset)
        })?,
    )?;
    cmsgpack.raw_set(
        "unpack_limit",
        lua.create_function(|lua, args: Variadic<LuaValue>| {
            let data = check_bytes(lua, &args, 1, "unpack_limit")?;
            let limit = check_number(lua, &args, 2, "unpack_limit")? as i64;
            let offset = optional_integer(lua, &args, 3, "unpack_limit")?;
            unpack(lua, &data, Some(limit), offset)
        })?,
    )?;
    Ok(cmsgpack)
}

fn optional_integer(
    lua: &Lua,
    args: &[LuaValue],
    position: usize,
    name: &str,
) -> mlua::Result<i64> {
    match args.get(position - 1) {
        None | Some(LuaValue::Nil) => Ok(0),
        Some(_) => Ok(check_number(lua, args, position, name)? as i64),
    }
}

fn number_of(value: &LuaValue) -> Option<f64> {
    match value {
        LuaValue::Integer(n) => Some(*n as f64),
        LuaValue::Number(n) => Some(*n),
        _ => None,
    }
}

// Writing to a Vec cannot fail: the results of rmp's writers are ignored below.
fn pack(value: &LuaValue, level: usize, out: &mut Vec<u8>) {
    match value {
        LuaValue::String(s) => {
            let bytes = s.as_bytes();
            let _ = encode::write_str_len(out, bytes.len() as u32);
            out.extend_from_slice(&bytes);
        }
        LuaValue::Boolean(b) => {
            let _ = encode::write_bool(out, *b);
        }
        LuaValue::Integer(_) | LuaValue::Number(_) => {
            pack_number(number_of(value).expect("a number"), out);
        }
        LuaValue::Table(table) if level < MAX_NESTING => pack_table(table, level, out),
        _ => {
            let _ = encode::write_nil(out);
        }
    }
}

fn pack_number(n: f64, out: &mut Vec<u8>) {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    let integral = n.is_finite() && (-LIMIT..LIMIT).contains(&n) && (n as i64) as f64 == n;
    if integral {
        let n = n as i64;
        let _ = if n >= 0 {
            encode::write_uint(out, n as u64)
        } else {
            encode::write_sint(out, n)
        };
    } else if f64::from(n as f32) == n {
        let _ = encode::write_f32(out, n as f32);
    } else {
        let _ = encode::write_f64(out, n);
    }
}

fn pack_table(table: &Table, level: usize, out: &mut Vec<u8>) {
    if is_array(table) {
        let len = table.raw_len();
        let _ = encode::write_array_len(out, len as u32);
        for i in 1..=len {
            let item: LuaValue = table.raw_get(i).unwrap_or(LuaValue::Nil);
            pack(&item, level + 1, out);
        }
        return;
    }
    let pairs: Vec<(LuaValue, LuaValue)> = table.pairs().filter_map(Result::ok).collect();
    let _ = encode::write_map_len(out, pairs.len() as u32);
    for (key, value) in &pairs {
        pack(key, level + 1, out);
        pack(value, level + 1, out);
    }
}

/// lua-cmsgpack's `table_is_an_array`: every key a positive integer, as many keys as the
/// largest one.
fn is_array(table: &Table) -> bool {
    let (mut count, mut max) = (0i64, 0i64);
    for pair in table.pairs::<LuaValue, LuaValue>() {
        let Ok((key, _)) = pair else { return false };
        let Some(n) = number_of(&key) else {
            return false;
        };
        if n <= 0.0 || f64::from(n as i32) != n {
            return false;
        }
        max = max.max(n as i64);
        count += 1;
    }
    max == count
}

/// Why unpacking stopped.
enum Malformed {
    Missing,
    Bad,
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], Malformed> {
        let bytes = self
            .data
            .get(self.at..self.at + n)
            .ok_or(Malformed::Missing)?;
        self.at += n;
        Ok(bytes)
    }

    fn uint(&mut self, n: usize) -> Result<u64, Malformed> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    fn int(&mut self, n: usize) -> Result<i64, Malformed> {
        let bits = n as u32 * 8;
        let raw = self.uint(n)?;
        Ok(((raw << (64 - bits)) as i64) >> (64 - bits))
    }
}

/// `mp_unpack_full`: every value (or `limit` of them from `offset`, the next offset
/// first).
fn unpack(lua: &Lua, data: &[u8], limit: Option<i64>, offset: i64) -> mlua::Result<MultiValue> {
    let len = data.len() as i64;
    if offset < 0 || limit.is_some_and(|l| l < 0) {
        return Err(lib_error(
            lua,
            format!("Invalid request to unpack with offset of {offset} and limit of {len}."),
        ));
    }
    if offset > len {
        return Err(lib_error(
            lua,
            format!("Start offset {offset} greater than input length {len}."),
        ));
    }
    let decode_all = limit.is_none() && offset == 0;
    let limit = limit.filter(|l| *l > 0 || !decode_all).unwrap_or(i64::MAX);
    let mut reader = Reader {
        data,
        at: offset as usize,
    };
    let mut values = Vec::new();
    while reader.at < data.len() && (values.len() as i64) < limit {
        match decode(lua, &mut reader, 0)? {
            Ok(value) => values.push(value),
            Err(Malformed::Missing) => return Err(lib_error(lua, "Missing bytes in input.")),
            Err(Malformed::Bad) => return Err(lib_error(lua, "Bad data format in input.")),
        }
    }
    if !decode_all {
        let next = if reader.at >= data.len() {
            -1
        } else {
            reader.at as i64
        };
        values.insert(0, LuaValue::Integer(next));
    }
    Ok(MultiValue::from_vec(values))
}

fn decode(
    lua: &Lua,
    r: &mut Reader<'_>,
    depth: usize,
) -> mlua::Result<Result<LuaValue, Malformed>> {
    with_stack(|| decode_here(lua, r, depth))
}

fn decode_here(
    lua: &Lua,
    r: &mut Reader<'_>,
    depth: usize,
) -> mlua::Result<Result<LuaValue, Malformed>> {
    if depth > MAX_UNPACK_NESTING {
        return Ok(Err(Malformed::Bad));
    }
    let marker = match r.take(1) {
        Ok(byte) => Marker::from_u8(byte[0]),
        Err(missing) => return Ok(Err(missing)),
    };
    let string = |r: &mut Reader<'_>, n: usize| -> mlua::Result<Result<LuaValue, Malformed>> {
        Ok(match r.take(n) {
            Ok(bytes) => Ok(LuaValue::String(lua.create_string(bytes)?)),
            Err(missing) => Err(missing),
        })
    };
    macro_rules! read {
        ($e:expr) => {
            match $e {
                Ok(v) => v,
                Err(malformed) => return Ok(Err(malformed)),
            }
        };
    }
    Ok(Ok(match marker {
        Marker::FixPos(n) => LuaValue::Number(f64::from(n)),
        Marker::FixNeg(n) => LuaValue::Number(f64::from(n)),
        Marker::Null => LuaValue::Nil,
        Marker::True => LuaValue::Boolean(true),
        Marker::False => LuaValue::Boolean(false),
        Marker::U8 => LuaValue::Number(read!(r.uint(1)) as f64),
        Marker::U16 => LuaValue::Number(read!(r.uint(2)) as f64),
        Marker::U32 => LuaValue::Number(read!(r.uint(4)) as f64),
        Marker::U64 => LuaValue::Number(read!(r.uint(8)) as f64),
        Marker::I8 => LuaValue::Number(read!(r.int(1)) as f64),
        Marker::I16 => LuaValue::Number(read!(r.int(2)) as f64),
        Marker::I32 => LuaValue::Number(read!(r.int(4)) as f64),
        Marker::I64 => LuaValue::Number(read!(r.int(8)) as f64),
        Marker::F32 => LuaValue::Number(f64::from(f32::from_bits(read!(r.uint(4)) as u32))),
        Marker::F64 => LuaValue::Number(f64::from_bits(read!(r.uint(8)))),
        Marker::FixStr(n) => return string(r, usize::from(n)),
        Marker::Str8 | Marker::Bin8 => {
            let n = read!(r.uint(1)) as usize;
            return string(r, n);
        }
        Marker::Str16 | Marker::Bin16 => {
            let n = read!(r.uint(2)) as usize;
            return string(r, n);
        }
        Marker::Str32 | Marker::Bin32 => {
            let n = read!(r.uint(4)) as usize;
            return string(r, n);
        }
        Marker::FixArray(n) => read!(array(lua, r, usize::from(n), depth)?),
        Marker::Array16 => {
            let n = read!(r.uint(2)) as usize;
            read!(array(lua, r, n, depth)?)
        }
        Marker::Array32 => {
            let n = read!(r.uint(4)) as usize;
            read!(array(lua, r, n, depth)?)
        }
        Marker::FixMap(n) => read!(map(lua, r, usize::from(n), depth)?),
        Marker::Map16 => {
            let n = read!(r.uint(2)) as usize;
            read!(map(lua, r, n, depth)?)
        }
        Marker::Map32 => {
            let n = read!(r.uint(4)) as usize;
            read!(map(lua, r, n, depth)?)
        }
        _ => return Ok(Err(Malformed::Bad)),
    }))
}

fn array(
    lua: &Lua,
    r: &mut Reader<'_>,
    n: usize,
    depth: usize,
) -> mlua::Result<Result<LuaValue, Malformed>> {
    let table = lua.create_table()?;
    for i in 1..=n {
        match decode(lua, r, depth + 1)? {
            Ok(value) => table.raw_set(i, value)?,
            Err(malformed) => return Ok(Err(malformed)),
        }
    }
    Ok(Ok(LuaValue::Table(table)))
}

fn map(
    lua: &Lua,
    r: &mut Reader<'_>,
    n: usize,
    depth: usize,
) -> mlua::Result<Result<LuaValue, Malformed>> {
    let table = lua.create_table()?;
    for _ in 0..n {
        let key = match decode(lua, r, depth + 1)? {
            Ok(key) => key,
            Err(malformed) => return Ok(Err(malformed)),
        };
        let value = match decode(lua, r, depth + 1)? {
            Ok(value) => value,
            Err(malformed) => return Ok(Err(malformed)),
        };
        // Lua cannot index by nil or NaN: lua_settable raises, from C (no position).
        if matches!(key, LuaValue::Nil) {
            return Err(mlua::Error::RuntimeError("table index is nil".into()));
        }
        if number_of(&key).is_some_and(f64::is_nan) {
            return Err(mlua::Error::RuntimeError("table index is NaN".into()));
        }
        table.raw_set(key, value)?;
    }
    Ok(Ok(LuaValue::Table(table)))
}
