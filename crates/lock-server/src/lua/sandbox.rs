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
}

impl Sandbox {
    pub(crate) fn build(lua: &Lua) -> mlua::Result<Sandbox> {
        let handler = lua.create_function(errors::handler)?;
        let (sealed, globals): (Table, Table) = lua
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
        let flatten = lua
            .load(include_str!("flatten.lua"))
            .set_name(CHUNK_NAME)
            .eval()?;
        Ok(Sandbox {
            sealed,
            runner,
            flatten,
            handler,
        })
    }

    /// Compiles a script body into a function of the sealed environment.
    pub(crate) fn compile(&self, lua: &Lua, source: &[u8]) -> Result<Function, String> {
        if source.first() == Some(&0x1b) {
            // Redis's Lua reads a binary chunk as text.
            return Err(
                "ERR Error compiling script (new function): user_script:1: unexpected symbol near 'char(27)'"
                    .into(),
            );
        }
        lua.load(source)
            .set_name("@user_script")
            .set_environment(self.sealed.clone())
            .into_function()
            .map_err(|e| {
                let message = match &e {
                    mlua::Error::SyntaxError { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                format!("ERR Error compiling script (new function): {message}")
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
        // `arguments` outlives the call, as the setter's pointer requires.
        let (ok, value): (bool, LuaValue) =
            self.runner
                .call((function, &self.handler, arguments.pointer()))?;
        Ok(match (ok, value) {
            (true, value) => Ok(value),
            (false, LuaValue::Table(table)) => Err(table),
            (false, other) => Err(errors::handler(lua, other)?),
        })
    }
}
