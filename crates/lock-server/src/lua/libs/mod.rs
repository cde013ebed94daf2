//! The Lua libraries Redis embeds besides Lua's own: `bit` (LuaBitOp), `cjson`
//! (lua-cjson 2.1.0), `cmsgpack` (lua-cmsgpack 0.4.0) and `struct` (Roberto
//! Ierusalimschy's struct), each answering as the C library does in Redis 7.0.

mod bit;
mod cjson;
mod cjson_decode;
mod cjson_encode;
mod cmsgpack;
mod struct_pack;

use mlua::{Lua, Value as LuaValue};

/// Creates the global tables `bit`, `cjson`, `cmsgpack` and `struct`.
pub(crate) fn install(lua: &Lua) -> mlua::Result<()> {
    let globals = lua.globals();
    globals.raw_set("bit", bit::table(lua)?)?;
    globals.raw_set("cjson", cjson::table(lua)?)?;
    globals.raw_set("cmsgpack", cmsgpack::table(lua)?)?;
    globals.raw_set("struct", struct_pack::table(lua)?)
}

/// Runs a step of a recursive encoder or decoder with room to recurse: inputs may nest a
/// thousand levels deep, more than a worker thread's stack holds frames for.
pub(crate) fn with_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, f)
}

/// `luaL_error`: a message that starts where the calling script is (`user_script:3: `),
/// as a C library's errors do.
pub(crate) fn lib_error(lua: &Lua, message: impl std::fmt::Display) -> mlua::Error {
    let place = lua
        .inspect_stack(1, |frame| {
            let line = frame.current_line()?;
            let source = frame.source().short_src?.into_owned();
            Some(format!("{source}:{line}: "))
        })
        .flatten()
        .unwrap_or_default();
    mlua::Error::RuntimeError(format!("{place}{message}"))
}

/// `luaL_argerror`: what is wrong with argument `position` of `function`.
pub(crate) fn bad_argument(
    lua: &Lua,
    position: usize,
    function: &str,
    problem: &str,
) -> mlua::Error {
    lib_error(
        lua,
        format!("bad argument #{position} to '{function}' ({problem})"),
    )
}

/// What `luaL_check*` names an argument's type in its message.
pub(crate) fn type_of(args: &[LuaValue], position: usize) -> &'static str {
    match args.get(position - 1) {
        None => "no value",
        Some(value) => value.type_name(),
    }
}

/// `luaL_checknumber`: a number, or a string Lua reads as one.
pub(crate) fn check_number(
    lua: &Lua,
    args: &[LuaValue],
    position: usize,
    function: &str,
) -> mlua::Result<f64> {
    let value = args.get(position - 1).cloned().unwrap_or(LuaValue::Nil);
    lua.coerce_number(value)?.ok_or_else(|| {
        let got = type_of(args, position);
        bad_argument(
            lua,
            position,
            function,
            &format!("number expected, got {got}"),
        )
    })
}

/// `luaL_checklstring`: a string, or a number as Lua writes it.
pub(crate) fn check_bytes(
    lua: &Lua,
    args: &[LuaValue],
    position: usize,
    function: &str,
) -> mlua::Result<Vec<u8>> {
    let value = args.get(position - 1).cloned().unwrap_or(LuaValue::Nil);
    match lua.coerce_string(value)? {
        Some(text) => Ok(text.as_bytes().to_vec()),
        None => {
            let got = type_of(args, position);
            Err(bad_argument(
                lua,
                position,
                function,
                &format!("string expected, got {got}"),
            ))
        }
    }
}
