//! The sealed environment scripts run in ([`sandbox.lua`](./sandbox.lua) builds it), and
//! running a script in it.

use mlua::{Function, Lua, Table, Value as LuaValue};

use super::arguments::Arguments;
use super::errors;
use super::raise::Raising;

/// The name of the sandbox's own chunk: its frames are skipped when an error's position
/// is looked for.
pub(crate) const CHUNK_NAME: &str = "=nxlock sandbox";

const SOURCE: &str = include_str!("sandbox.lua");

/// Handles on the sandbox: what a script sees, and the private tables behind it.
pub(crate) struct Sandbox {
    /// The sealed globals: every script's environment.
    sealed: Table,
    /// `xpcall(f, __redis__err__handler)`, with KEYS and ARGV set first in the real
    /// globals behind the sealed ones.
    runner: Function,
    /// `flatten.lua`: a returned table as flat lists.
    pub(crate) flatten: Function,
    handler: Function,
    /// The environment a function library's code is compiled in.
    library_env: Table,
    /// Runs a library's code: `(true, registered)` or `(false, error table)`.
    library_load: Function,
    /// `xpcall(function() return f(keys, args) end, handler)`, the tables made first.
    function_runner: Function,
}

/// One function a library's code registered.
pub(crate) struct Registered {
    pub(crate) name: String,
    pub(crate) callback: Function,
    /// Its flags, in Redis's order.
    pub(crate) flags: Vec<String>,
    pub(crate) description: Option<String>,
}

impl Sandbox {
    pub(crate) fn build(lua: &Lua) -> mlua::Result<Sandbox> {
        let handler = lua.create_function(errors::handler)?;
        let (sealed, globals, library): (Table, Table, Table) = lua
            .load(SOURCE)
            .set_name(CHUNK_NAME)
            .call(handler.clone())?;
        let runner = lua
            .load(
                "local set, env = ...
                return function(f, handler, arguments)
                  set(env, arguments)
                  return xpcall(f, handler)
                end",
            )
            .set_name(CHUNK_NAME)
            .call((super::arguments::setter(lua)?, globals))?;
        let function_runner = lua
            .load(
                "local pack = ...
                return function(f, handler, arguments)
                  local keys, args = pack(arguments)
                  return xpcall(function() return f(keys, args) end, handler)
                end",
            )
            .set_name(CHUNK_NAME)
            .call(super::arguments::packer(lua)?)?;
        let flatten = lua
            .load(include_str!("flatten.lua"))
            .set_name(CHUNK_NAME)
            .eval()?;
        Ok(Sandbox {
            sealed,
            runner,
            flatten,
            handler,
            library_env: library.raw_get("env")?,
            library_load: library.raw_get("load")?,
            function_runner,
        })
    }

    /// Compiles a script body into a function of the sealed environment.
    pub(crate) fn compile(&self, lua: &Lua, source: &[u8]) -> Result<Function, String> {
        self.compile_in(lua, source, "@user_script", &self.sealed)
            .map_err(|message| format!("ERR Error compiling script (new function): {message}"))
    }

    /// Compiles a function library's code (after its shebang line): Redis's error text
    /// when it does not compile.
    pub(crate) fn compile_library(&self, lua: &Lua, source: &[u8]) -> Result<Function, String> {
        self.compile_in(lua, source, "@user_function", &self.library_env)
            .map_err(|message| format!("ERR Error compiling function: {message}"))
    }

    /// Runs a compiled library's code: the functions it registered, or the error table.
    pub(crate) fn load_library(
        &self,
        chunk: &Function,
    ) -> mlua::Result<Result<Vec<Registered>, Table>> {
        let (ok, value): (bool, LuaValue) = self.library_load.call((chunk, &self.handler))?;
        let LuaValue::Table(value) = value else {
            return Ok(Ok(Vec::new()));
        };
        if !ok {
            return Ok(Err(value));
        }
        let mut registered = Vec::new();
        for entry in value.sequence_values::<Table>() {
            let entry = entry?;
            registered.push(Registered {
                name: entry.raw_get("name")?,
                callback: entry.raw_get("callback")?,
                flags: entry
                    .raw_get::<Table>("flags")?
                    .sequence_values()
                    .collect::<mlua::Result<_>>()?,
                description: entry.raw_get("description")?,
            });
        }
        Ok(Ok(registered))
    }

    /// Runs a registered function with `arguments` as its keys and arguments: its return
    /// value, or the error table the handler built.
    pub(crate) fn run_function(
        &self,
        lua: &Lua,
        function: &Function,
        arguments: &Arguments<'_>,
    ) -> mlua::Result<Result<LuaValue, Table>> {
        self.start(&self.function_runner, lua, function, arguments)
    }

    fn compile_in(
        &self,
        lua: &Lua,
        source: &[u8],
        chunk_name: &str,
        environment: &Table,
    ) -> Result<Function, String> {
        if source.first() == Some(&0x1b) {
            // Redis's Lua reads a binary chunk as text.
            let name = chunk_name.trim_start_matches('@');
            return Err(format!("{name}:1: unexpected symbol near 'char(27)'"));
        }
        lua.load(source)
            .set_name(chunk_name)
            .set_environment(environment.clone())
            .into_function()
            .map_err(|e| match &e {
                mlua::Error::SyntaxError { message, .. } => message.clone(),
                other => other.to_string(),
            })
    }

    /// Sets what `redis.call` and `redis.pcall` run (once: see `call_slot`).
    pub(crate) fn set_call(&self, lua: &Lua, call: Function) -> mlua::Result<()> {
        lua.set_named_registry_value(Raising::Call.key(), call)
    }

    /// Runs `function` with `arguments` as KEYS and ARGV: its return value, or the error
    /// table the handler built.
    pub(crate) fn run(
        &self,
        lua: &Lua,
        function: &Function,
        arguments: &Arguments<'_>,
    ) -> mlua::Result<Result<LuaValue, Table>> {
        self.start(&self.runner, lua, function, arguments)
    }

    /// Calls `runner` (a script's or a function's) on `function`, under the handler.
    fn start(
        &self,
        runner: &Function,
        lua: &Lua,
        function: &Function,
        arguments: &Arguments<'_>,
    ) -> mlua::Result<Result<LuaValue, Table>> {
        // `arguments` outlives the call, as the runners' pointer requires.
        let (ok, value): (bool, LuaValue) =
            runner.call((function, &self.handler, arguments.pointer()))?;
        Ok(match (ok, value) {
            (true, value) => Ok(value),
            (false, LuaValue::Table(table)) => Err(table),
            (false, other) => Err(errors::handler(lua, other)?),
        })
    }
}
