//! `cjson`: lua-cjson 2.1.0 with Redis's defaults, its configuration functions
//! included (their settings last, as in Redis, until the server restarts).

use std::sync::{Arc, Mutex};

use mlua::{LightUserData, Lua, Table, Value as LuaValue, Variadic};

use super::{bad_argument, check_bytes, lib_error};

/// How `cjson.encode` and `cjson.decode` behave.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) sparse_convert: bool,
    pub(crate) sparse_ratio: i64,
    pub(crate) sparse_safe: i64,
    pub(crate) encode_max_depth: i64,
    pub(crate) decode_max_depth: i64,
    pub(crate) number_precision: usize,
    pub(crate) keep_buffer: bool,
    /// 0: refuse, 1: `NaN`/`Infinity`, 2: `null`.
    pub(crate) encode_invalid_numbers: u8,
    pub(crate) decode_invalid_numbers: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            number_precision: 14,
            keep_buffer: true,
            encode_invalid_numbers: 0,
            decode_invalid_numbers: true,
        }
    }
}

/// `cjson.null`: a light userdata holding NULL.
pub(crate) fn null() -> LuaValue {
    LuaValue::LightUserData(LightUserData(std::ptr::null_mut()))
}

pub(crate) fn is_null(value: &LuaValue) -> bool {
    matches!(value, LuaValue::LightUserData(data) if data.0.is_null())
}

type Shared = Arc<Mutex<Config>>;

fn config(shared: &Shared) -> Config {
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

fn update(shared: &Shared, change: impl FnOnce(&mut Config)) {
    change(
        &mut shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
}

/// A `cjson` module with its own configuration (`cjson.new()` makes another).
pub(crate) fn table(lua: &Lua) -> mlua::Result<Table> {
    let cjson = lua.create_table()?;
    let shared: Shared = Arc::new(Mutex::new(Config::default()));
    cjson.raw_set("_NAME", "cjson")?;
    cjson.raw_set("_VERSION", "2.1.0")?;
    cjson.raw_set("null", null())?;
    let state = shared.clone();
    cjson.raw_set(
        "encode",
        lua.create_function(move |lua, args: Variadic<LuaValue>| {
            let [value] = args.as_slice() else {
                return Err(bad_argument(lua, 1, "encode", "expected 1 argument"));
            };
            let text = super::cjson_encode::encode(value, &config(&state))
                .map_err(|message| lib_error(lua, message))?;
            lua.create_string(text)
        })?,
    )?;
    let state = shared.clone();
    cjson.raw_set(
        "decode",
        lua.create_function(move |lua, args: Variadic<LuaValue>| {
            if args.len() != 1 {
                return Err(bad_argument(lua, 1, "decode", "expected 1 argument"));
            }
            let text = check_bytes(lua, &args, 1, "decode")?;
            super::cjson_decode::decode(lua, &text, &config(&state))
        })?,
    )?;
    let integer = |lua: &Lua, args: &[LuaValue], name: &str, min: i64, max: i64| match args.first()
    {
        None | Some(LuaValue::Nil) => Ok(None),
        Some(value) => match lua.coerce_number(value.clone())? {
            Some(n) if (min as f64..=max as f64).contains(&n) => Ok(Some(n as i64)),
            _ => Err(bad_argument(
                lua,
                1,
                name,
                &format!("expected integer between {min} and {max}"),
            )),
        },
    };
    let state = shared.clone();
    cjson.raw_set(
        "encode_max_depth",
        lua.create_function(move |lua, args: Variadic<LuaValue>| {
            if let Some(depth) = integer(lua, &args, "encode_max_depth", 1, i64::from(i32::MAX))? {
                update(&state, |c| c.encode_max_depth = depth);
            }
            Ok(config(&state).encode_max_depth)
        })?,
    )?;
    let state = shared.clone();
    cjson.raw_set(
        "decode_max_depth",
        lua.create_function(move |lua, args: Variadic<LuaValue>| {
            if let Some(depth) = integer(lua, &args, "decode_max_depth", 1, i64::from(i32::MAX))? {
                update(&state, |c| c.decode_max_depth = depth);
            }
            Ok(config(&state).decode_max_depth)
        })?,
    )?;
    let state = shared.clone();
    cjson.raw_set(
        "encode_number_precision",
        lua.create_function(move |lua, args: Variadic<LuaValue>| {
            if let Some(precision) = integer(lua, &args, "encode_number_precision", 1, 14)? {
                update(&state, |c| c.number_precision = precision as usize);
            }
            Ok(config(&state).number_precision)
        })?,
    )?;
    let state = shared.clone();
    cjson.raw_set(
        "encode_sparse_array",
        lua.create_function(move |lua, args: Variadic<LuaValue>| {
            if let Some(convert) = args.first().filter(|v| !v.is_nil()) {
                let convert = convert.as_boolean().unwrap_or(true);
                update(&state, |c| c.sparse_convert = convert);
            }
            let rest = args.get(1..).unwrap_or_default();
            if let Some(ratio) = integer(lua, rest, "encode_sparse_array", 0, i64::from(i32::MAX))?
            {
                update(&state, |c| c.sparse_ratio = ratio);
            }
            let rest = args.get(2..).unwrap_or_default();
            if let Some(safe) = integer(lua, rest, "encode_sparse_array", 0, i64::from(i32::MAX))? {
                update(&state, |c| c.sparse_safe = safe);
            }
            let c = config(&state);
            Ok((c.sparse_convert, c.sparse_ratio, c.sparse_safe))
        })?,
    )?;
    let state = shared.clone();
    cjson.raw_set(
        "encode_keep_buffer",
        lua.create_function(move |_, keep: Option<bool>| {
            if let Some(keep) = keep {
                update(&state, |c| c.keep_buffer = keep);
            }
            Ok(config(&state).keep_buffer)
        })?,
    )?;
    let state = shared.clone();
    cjson.raw_set(
        "encode_invalid_numbers",
        lua.create_function(move |lua, args: Variadic<LuaValue>| {
            match args.first() {
                None | Some(LuaValue::Nil) => {}
                Some(LuaValue::String(s)) if s.as_bytes().as_ref() == b"null" => {
                    update(&state, |c| c.encode_invalid_numbers = 2);
                }
                Some(LuaValue::Boolean(b)) => {
                    let b = *b;
                    update(&state, |c| c.encode_invalid_numbers = u8::from(b));
                }
                Some(_) => {
                    return Err(bad_argument(
                        lua,
                        1,
                        "encode_invalid_numbers",
                        "invalid option",
                    ));
                }
            }
            Ok(match config(&state).encode_invalid_numbers {
                0 => LuaValue::Boolean(false),
                1 => LuaValue::Boolean(true),
                _ => LuaValue::String(lua.create_string("null")?),
            })
        })?,
    )?;
    let state = shared;
    cjson.raw_set(
        "decode_invalid_numbers",
        lua.create_function(move |_, decode: Option<bool>| {
            if let Some(decode) = decode {
                update(&state, |c| c.decode_invalid_numbers = decode);
            }
            Ok(config(&state).decode_invalid_numbers)
        })?,
    )?;
    cjson.raw_set(
        "new",
        lua.create_function(|lua, _: Variadic<LuaValue>| table(lua))?,
    )?;
    Ok(cjson)
}
