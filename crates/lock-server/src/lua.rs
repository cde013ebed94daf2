//! Scripting: EVAL and friends run real Lua 5.1 (vendored, as Redis embeds it), with
//! `redis.call` reaching the double's keyspace inside the same atomic section.
//!
//! Conversions follow Redis 7.0: Lua numbers become integers by truncation, `false` and
//! `nil` become nil, `{ok=…}` a status and `{err=…}` an error, and an array stops at its
//! first nil. Errors carry Redis's ` script: <sha>, on @user_script:<line>.` suffix.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use lock_core::Value;
use lock_memory::Keyspace;
use mlua::{HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, Value as LuaValue, VmState};

use crate::commands::{Flags, keyspace, lookup};

/// Marks an error raised by `redis.call` so the final reply can be built from its parts:
/// `\x01<line>\x01<reply text>`.
const CALL_ERROR: char = '\u{1}';

/// The server's one Lua interpreter and its script cache (shared by all databases, as in
/// Redis).
pub(crate) struct Engine {
    state: Mutex<State>,
    time_limit: Duration,
}

struct State {
    lua: Lua,
    loaded: HashSet<String>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").finish_non_exhaustive()
    }
}

/// The Lua that sets up the environment Redis gives scripts: `redis.*` helpers, and globals
/// that can be neither created nor read when undefined.
const PRELUDE: &str = r#"
redis = redis or {}
redis.error_reply = function(text) return {err = text} end
redis.status_reply = function(text) return {ok = text} end
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.log = function() end
"#;

const LOCK_GLOBALS: &str = r#"
setmetatable(_G, {
  __newindex = function(_, name) error("Attempt to modify a readonly table", 2) end,
  __index = function(_, name)
    error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
  end,
})
"#;

fn sha1_hex(bytes: &[u8]) -> String {
    sha1_smol::Sha1::from(bytes).digest().to_string()
}

fn function_name(sha: &str) -> String {
    format!("f_{sha}")
}

impl Engine {
    /// An interpreter whose scripts are stopped after `time_limit`.
    pub(crate) fn new(time_limit: Duration) -> mlua::Result<Engine> {
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH;
        let lua = Lua::new_with(libs, LuaOptions::default())?;
        lua.load(PRELUDE).set_name("@nxlock_prelude").exec()?;
        let redis: Table = lua.globals().get("redis")?;
        redis.set(
            "sha1hex",
            lua.create_function(|_, text: mlua::LuaString| Ok(sha1_hex(&text.as_bytes())))?,
        )?;
        // Redis removes these from the script environment.
        for name in ["loadfile", "dofile", "print"] {
            lua.globals().raw_set(name, LuaValue::Nil)?;
        }
        // From here on the engine writes globals with raw_set, which the lock lets through.
        lua.load(LOCK_GLOBALS).set_name("@nxlock_prelude").exec()?;
        Ok(Engine {
            state: Mutex::new(State {
                lua,
                loaded: HashSet::new(),
            }),
            time_limit,
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic inside Lua code cannot leave our maps half-updated.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Compiles and caches `body` (SCRIPT LOAD, EVAL); the SHA1, or Redis's error text.
    pub(crate) fn load(&self, body: &[u8]) -> Result<String, String> {
        let sha = sha1_hex(body);
        let mut state = self.state();
        if state.loaded.contains(&sha) {
            return Ok(sha);
        }
        let function = state
            .lua
            .load(body)
            .set_name("@user_script")
            .into_function()
            .map_err(|e| {
                let message = match &e {
                    mlua::Error::SyntaxError { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                format!("ERR Error compiling script (new function): {message}")
            })?;
        state
            .lua
            .set_named_registry_value(&function_name(&sha), function)
            .map_err(|e| format!("ERR {e}"))?;
        state.loaded.insert(sha.clone());
        Ok(sha)
    }

    pub(crate) fn exists(&self, sha: &str) -> bool {
        self.state().loaded.contains(&sha.to_ascii_lowercase())
    }

    pub(crate) fn flush(&self) {
        let mut state = self.state();
        let names: Vec<String> = state.loaded.drain().collect();
        for sha in names {
            let _ = state
                .lua
                .set_named_registry_value(&function_name(&sha), LuaValue::Nil);
        }
    }

    /// Runs the cached script `sha` against `store`; the script's reply.
    pub(crate) fn run(
        &self,
        store: &mut dyn Keyspace,
        sha: &str,
        keys: &[&[u8]],
        args: &[&[u8]],
        read_only: bool,
    ) -> Value {
        let state = self.state();
        let lua = &state.lua;
        let store = RefCell::new(store);
        let outcome = lua.scope(|scope| {
            let function: mlua::Function = lua.named_registry_value(&function_name(sha))?;
            let globals = lua.globals();
            globals.raw_set("KEYS", string_table(lua, keys)?)?;
            globals.raw_set("ARGV", string_table(lua, args)?)?;
            let redis: Table = globals.raw_get("redis")?;
            let call = |raise: bool| {
                let store = &store;
                scope.create_function_mut(move |lua, arguments: MultiValue| {
                    let reply = call_command(&mut **store.borrow_mut(), lua, arguments, read_only);
                    match reply {
                        Value::Error(text) if raise => {
                            let line = lua
                                .inspect_stack(1, |d| d.current_line())
                                .flatten()
                                .unwrap_or(0);
                            Err(mlua::Error::RuntimeError(format!(
                                "{CALL_ERROR}{line}{CALL_ERROR}{text}"
                            )))
                        }
                        reply => to_lua(lua, &reply),
                    }
                })
            };
            redis.raw_set("call", call(true)?)?;
            redis.raw_set("pcall", call(false)?)?;
            // Redis lets a runaway script run on (answering BUSY to everyone else until
            // SCRIPT KILL); a test double stops it instead, so one bad script cannot hold a
            // database and a worker thread forever.
            let (deadline, limit) = (Instant::now() + self.time_limit, self.time_limit);
            lua.set_hook(
                HookTriggers::new().every_nth_instruction(10_000),
                move |_, _| {
                    if Instant::now() > deadline {
                        return Err(mlua::Error::RuntimeError(format!(
                            "{CALL_ERROR}0{CALL_ERROR}ERR nxlock serve stopped the script after its {} ms time limit",
                            limit.as_millis()
                        )));
                    }
                    Ok(VmState::Continue)
                },
            )?;
            let result = function.call::<LuaValue>(());
            lua.remove_hook();
            result.map(|value| from_lua(&value))
        });
        match outcome {
            Ok(value) => value,
            Err(error) => Value::Error(error_reply(&error, sha)),
        }
    }
}

fn string_table(lua: &Lua, items: &[&[u8]]) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        table.raw_set(i + 1, lua.create_string(item)?)?;
    }
    Ok(table)
}

/// `redis.call`/`redis.pcall`: the arguments as a command, run on the keyspace.
fn call_command(
    store: &mut dyn Keyspace,
    lua: &Lua,
    arguments: MultiValue,
    read_only: bool,
) -> Value {
    if arguments.is_empty() {
        return Value::Error(
            "ERR Please specify at least one argument for this redis lib call".into(),
        );
    }
    let mut args: Vec<Vec<u8>> = Vec::with_capacity(arguments.len());
    for argument in arguments {
        match argument {
            LuaValue::String(s) => args.push(s.as_bytes().to_vec()),
            LuaValue::Integer(_) | LuaValue::Number(_) => match lua.coerce_string(argument) {
                Ok(Some(s)) => args.push(s.as_bytes().to_vec()),
                _ => return arguments_error(),
            },
            _ => return arguments_error(),
        }
    }
    let Some(command) = lookup(&args[0]).filter(|command| command.on_keyspace()) else {
        return match lookup(&args[0]) {
            Some(command) if command.flags.has(Flags::NOSCRIPT) => not_allowed(),
            _ => Value::Error("ERR Unknown Redis command called from script".into()),
        };
    };
    if !command.arity_ok(args.len()) {
        return Value::Error("ERR Wrong number of args calling Redis command from script".into());
    }
    if command.flags.has(Flags::BLOCKING) {
        return not_allowed();
    }
    if read_only && command.flags.has(Flags::WRITE) {
        return Value::Error("ERR Write commands are not allowed from read-only scripts.".into());
    }
    let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    keyspace::run(store, command, &args)
}

fn not_allowed() -> Value {
    Value::Error("ERR This Redis command is not allowed from script".into())
}

fn arguments_error() -> Value {
    Value::Error("ERR Lua redis lib command arguments must be strings or integers".into())
}

/// A command's reply as Redis hands it to Lua.
fn to_lua(lua: &Lua, value: &Value) -> mlua::Result<LuaValue> {
    Ok(match value {
        Value::Nil | Value::NilArray => LuaValue::Boolean(false),
        Value::Int(n) => LuaValue::Number(*n as f64),
        Value::Data(bytes) => LuaValue::String(lua.create_string(bytes)?),
        Value::Status(text) => {
            let table = lua.create_table()?;
            table.raw_set("ok", lua.create_string(text)?)?;
            LuaValue::Table(table)
        }
        Value::Error(text) => {
            let table = lua.create_table()?;
            table.raw_set("err", lua.create_string(text)?)?;
            LuaValue::Table(table)
        }
        Value::Array(items) => {
            let table = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                table.raw_set(i + 1, to_lua(lua, item)?)?;
            }
            LuaValue::Table(table)
        }
    })
}

/// A script's return value as Redis replies with it.
fn from_lua(value: &LuaValue) -> Value {
    match value {
        LuaValue::Nil | LuaValue::Boolean(false) => Value::Nil,
        LuaValue::Boolean(true) => Value::Int(1),
        LuaValue::Integer(n) => Value::Int(*n),
        // Redis casts to long long: truncation toward zero.
        LuaValue::Number(n) => Value::Int(*n as i64),
        LuaValue::String(s) => Value::Data(s.as_bytes().to_vec()),
        LuaValue::Table(table) => {
            if let Ok(LuaValue::String(err)) = table.raw_get::<LuaValue>("err") {
                return Value::Error(err.to_string_lossy());
            }
            if let Ok(LuaValue::String(ok)) = table.raw_get::<LuaValue>("ok") {
                return Value::Status(ok.to_string_lossy());
            }
            let mut items = Vec::new();
            for i in 1.. {
                match table.raw_get::<LuaValue>(i) {
                    Ok(LuaValue::Nil) | Err(_) => break,
                    Ok(item) => items.push(from_lua(&item)),
                }
            }
            Value::Array(items)
        }
        _ => Value::Nil,
    }
}

/// Redis's reply for a script that raised an error.
fn error_reply(error: &mlua::Error, sha: &str) -> String {
    let message = match error {
        mlua::Error::CallbackError { cause, .. } => return error_reply(cause, sha),
        mlua::Error::RuntimeError(message) => message.clone(),
        other => other.to_string(),
    };
    // mlua appends Lua's traceback; Redis's reply has none.
    let message = match message.split_once("\nstack traceback:") {
        Some((message, _)) => message.to_string(),
        None => message,
    };
    if let Some(rest) = message.strip_prefix(CALL_ERROR) {
        if let Some((line, text)) = rest.split_once(CALL_ERROR) {
            return format!("{text} script: {sha}, on @user_script:{line}.");
        }
    }
    // A Lua runtime error reads "user_script:<line>: <message>".
    let line = message
        .strip_prefix("user_script:")
        .and_then(|rest| rest.split(':').next())
        .unwrap_or("0");
    format!("ERR {message} script: {sha}, on @user_script:{line}.")
}
