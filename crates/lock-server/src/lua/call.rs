//! `redis.call` and `redis.pcall`: a script's arguments read as a command and handed to
//! the callback its run was given (the engine knows no command), the reply converted
//! back for Lua.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use lock_core::Value;
use mlua::{Lua, Table, Value as LuaValue};

use super::convert;
use crate::state::scripts::{CallCommand, ScriptCall};

/// One run's `redis.call`: where its commands go and what the script may do.
pub(crate) struct Call<'c, 'f> {
    pub(crate) command: &'c mut CallCommand<'f>,
    /// EVAL_RO, or a script declared `no-writes`.
    pub(crate) read_only: bool,
    /// A script declared `allow-cross-slot-keys`.
    pub(crate) allow_cross_slot: bool,
    /// `redis.setresp`: the protocol replies reach the script in.
    pub(crate) resp: Arc<AtomicU8>,
}

impl Call<'_, '_> {
    /// The reply as Lua sees it, and whether it is an error (which `redis.call`
    /// raises and `redis.pcall` returns).
    pub(crate) fn run(
        &mut self,
        lua: &Lua,
        arguments: Table,
        count: usize,
    ) -> mlua::Result<(LuaValue, bool)> {
        let resp = self.resp.load(Ordering::Relaxed);
        let reply = match arguments_of(&arguments, count)? {
            Ok(args) => (self.command)(ScriptCall {
                args: &args,
                resp,
                read_only: self.read_only,
                allow_cross_slot: self.allow_cross_slot,
            }),
            Err(refused) => refused,
        };
        let failed = matches!(reply, Value::Error(_));
        Ok((convert::to_lua(lua, &reply, resp)?, failed))
    }
}

/// The arguments as bytes, read one at a time (a script may pass thousands), or the
/// error for a call without any or with one of the wrong type.
fn arguments_of(arguments: &Table, count: usize) -> mlua::Result<Result<Vec<Vec<u8>>, Value>> {
    if count == 0 {
        return Ok(Err(error(
            "ERR Please specify at least one argument for this redis lib call",
        )));
    }
    let mut args = Vec::with_capacity(count);
    for i in 1..=count {
        match convert::argument(&arguments.raw_get::<LuaValue>(i)?) {
            Some(bytes) => args.push(bytes),
            None => {
                return Ok(Err(error(
                    "ERR Lua redis lib command arguments must be strings or integers",
                )));
            }
        }
    }
    Ok(Ok(args))
}

fn error(text: &str) -> Value {
    Value::Error(text.into())
}
