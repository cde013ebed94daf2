//! The `redis` table's functions and constants, as Redis 7.0 defines them. Those that
//! raise errors answer `(reply, failed)` and are wrapped by [`raise`], so a script's
//! pcall catches Redis's error table.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use mlua::{Function, Lua, Table, Value as LuaValue, Variadic};

use super::raise::{self, Raising};

use lock_core::RedisVersion;

/// Sets `redis.<name>` to a function that raises what `implementation` reports as failed.
fn install_raising(
    lua: &Lua,
    redis: &Table,
    name: &str,
    which: Raising,
    implementation: Function,
) -> mlua::Result<()> {
    lua.set_named_registry_value(which.key(), implementation)?;
    redis.raw_set(name, raise::function(lua, which, true)?)
}

/// An error table `{err = "ERR <text>"}`, and the flag that makes the sandbox raise it.
fn raise(lua: &Lua, text: &str) -> mlua::Result<(LuaValue, bool)> {
    Ok((error_table(lua, &format!("ERR {text}"))?, true))
}

fn error_table(lua: &Lua, text: &str) -> mlua::Result<LuaValue> {
    let table = lua.create_table()?;
    table.raw_set("err", text)?;
    Ok(LuaValue::Table(table))
}

fn fine(value: LuaValue) -> mlua::Result<(LuaValue, bool)> {
    Ok((value, false))
}

/// A number argument as Lua's `lua_tonumber` reads it (numbers and numeric strings).
fn number(lua: &Lua, value: &LuaValue) -> Option<f64> {
    lua.coerce_number(value.clone()).ok().flatten()
}

/// Creates the global `redis` table; `resp` is where `setresp` records its choice,
/// `version` the Redis version scripts see.
pub(crate) fn install(
    lua: &Lua,
    resp: Arc<AtomicU8>,
    version: RedisVersion,
    knows: fn(RedisVersion, &[u8]) -> bool,
) -> mlua::Result<()> {
    let redis = lua.create_table()?;
    for (name, value) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.raw_set(name, value)?;
    }
    redis.raw_set("REDIS_VERSION_NUM", version.release_number())?;
    redis.raw_set("REDIS_VERSION", version.release())?;
    install_raising(
        lua,
        &redis,
        "sha1hex",
        Raising::Sha1hex,
        lua.create_function(|lua, (args, count): (Table, usize)| {
            let args = raise::arguments(&args, count)?;
            let [value] = args.as_slice() else {
                return raise(lua, "wrong number of arguments");
            };
            let bytes = match lua.coerce_string(value.clone())? {
                Some(s) => s.as_bytes().to_vec(),
                None => Vec::new(),
            };
            fine(LuaValue::String(
                lua.create_string(super::sha1_hex(&bytes))?,
            ))
        })?,
    )?;
    redis.raw_set("call", raise::function(lua, Raising::Call, true)?)?;
    redis.raw_set("pcall", raise::function(lua, Raising::Call, false)?)?;
    redis.raw_set("error_reply", lua.create_function(error_reply)?)?;
    redis.raw_set("status_reply", lua.create_function(status_reply)?)?;
    install_raising(
        lua,
        &redis,
        "log",
        Raising::Log,
        lua.create_function(|lua, (args, count): (Table, usize)| {
            let args = raise::arguments(&args, count)?;
            if args.len() < 2 {
                return raise(lua, "redis.log() requires two arguments or more.");
            }
            match number(lua, &args[0]) {
                None => raise(lua, "First argument must be a number (log level)."),
                Some(level) if !(0.0..=3.0).contains(&level) => raise(lua, "Invalid debug level."),
                // Redis writes to its log file; the double has none.
                Some(_) => fine(LuaValue::Nil),
            }
        })?,
    )?;
    install_raising(
        lua,
        &redis,
        "setresp",
        Raising::Setresp,
        lua.create_function(move |lua, (args, count): (Table, usize)| {
            let args = raise::arguments(&args, count)?;
            let [value] = args.as_slice() else {
                return raise(lua, "redis.setresp() requires one argument.");
            };
            match number(lua, value) {
                Some(version) if version == 2.0 || version == 3.0 => {
                    resp.store(version as u8, Ordering::Relaxed);
                    fine(LuaValue::Nil)
                }
                _ => raise(lua, "RESP version must be 2 or 3."),
            }
        })?,
    )?;
    install_raising(
        lua,
        &redis,
        "set_repl",
        Raising::SetRepl,
        lua.create_function(|lua, (args, count): (Table, usize)| {
            let args = raise::arguments(&args, count)?;
            let [value] = args.as_slice() else {
                return raise(lua, "redis.set_repl() requires one argument.");
            };
            match number(lua, value) {
                Some(flags) if (0.0..=3.0).contains(&flags) && flags.fract() == 0.0 => {
                    fine(LuaValue::Nil)
                }
                _ => raise(
                    lua,
                    "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                ),
            }
        })?,
    )?;
    // Every client is the default user, who may run everything.
    install_raising(
        lua,
        &redis,
        "acl_check_cmd",
        Raising::AclCheckCmd,
        lua.create_function(move |lua, (args, count): (Table, usize)| {
            let args = raise::arguments(&args, count)?;
            let name = args.first().and_then(super::convert::argument);
            match name.filter(|name| knows(version, name)) {
                Some(_) => fine(LuaValue::Boolean(true)),
                None if args.is_empty() => raise(
                    lua,
                    "Please specify at least one argument for this redis lib call",
                ),
                None => raise(lua, "Invalid command passed to redis.acl_check_cmd()"),
            }
        })?,
    )?;
    redis.raw_set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    // No debugger: breakpoint reports that none is attached, debug prints nowhere.
    redis.raw_set("breakpoint", lua.create_function(|_, ()| Ok(false))?)?;
    redis.raw_set(
        "debug",
        lua.create_function(|_, _: Variadic<LuaValue>| Ok(()))?,
    )?;
    lua.globals().raw_set("redis", redis)
}

/// `redis.error_reply(text)`: `{err = "CODE message"}`. As in Redis, `-CODE message` and
/// `CODE message` keep their code, a text of one word gets `ERR`, and CR/LF around the
/// message are trimmed.
fn error_reply(lua: &Lua, args: Variadic<LuaValue>) -> mlua::Result<LuaValue> {
    let [LuaValue::String(text)] = args.as_slice() else {
        return error_table(lua, "ERR wrong number or type of arguments");
    };
    let text = text.to_string_lossy();
    let text = text.strip_prefix('-').unwrap_or(&text);
    let (code, message) = text.split_once(' ').unwrap_or(("ERR", text));
    let message = message.trim_matches(['\r', '\n']);
    error_table(lua, &format!("{code} {message}"))
}

/// `redis.status_reply(text)`: `{ok = text}`.
fn status_reply(lua: &Lua, args: Variadic<LuaValue>) -> mlua::Result<LuaValue> {
    let [LuaValue::String(text)] = args.as_slice() else {
        return error_table(lua, "ERR wrong number or type of arguments");
    };
    let table = lua.create_table()?;
    table.raw_set("ok", text.clone())?;
    Ok(LuaValue::Table(table))
}
