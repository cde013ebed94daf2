//! Script errors as Redis 7.0 reports them: every error becomes a table
//! `{err = "CODE message", source = …, line = …}` in the error handler (Redis's
//! `__redis__err__handler`), and the reply reads
//! `-CODE message script: <sha>, on <source>:<line>.`

use mlua::{Lua, Table, Value as LuaValue};

use super::display;
use super::sandbox::CHUNK_NAME;

/// An error whose text is a whole Redis error (`ERR …`), raised from Rust: the handler
/// uses it as is.
#[derive(Debug)]
pub(crate) struct ScriptError(pub(crate) String);

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScriptError {}

/// The Redis error text of an error raised from Rust or by mlua.
pub(crate) fn text_of(error: &mlua::Error) -> String {
    match error {
        mlua::Error::CallbackError { cause, .. } => text_of(cause),
        mlua::Error::ExternalError(inner) => match inner.downcast_ref::<ScriptError>() {
            Some(ScriptError(text)) => text.clone(),
            None => format!("ERR {inner}"),
        },
        mlua::Error::RuntimeError(message) => format!("ERR {}", without_traceback(message)),
        other => format!("ERR {}", without_traceback(&other.to_string())),
    }
}

/// mlua appends Lua's traceback to some messages; Redis's have none.
fn without_traceback(message: &str) -> &str {
    message
        .split_once("\nstack traceback:")
        .map_or(message, |(message, _)| message)
}

/// `__redis__err__handler`: turns any error into Redis's error table, with where the
/// script was when it was raised.
pub(crate) fn handler(lua: &Lua, error: LuaValue) -> mlua::Result<Table> {
    let table = match error {
        LuaValue::Table(table) => table,
        LuaValue::Error(error) => {
            let table = lua.create_table()?;
            table.raw_set("err", text_of(&error))?;
            table
        }
        other => {
            let table = lua.create_table()?;
            table.raw_set("err", format!("ERR {}", display(&other)))?;
            table
        }
    };
    if let Some((source, line)) = position(lua) {
        table.raw_set("source", source)?;
        table.raw_set("line", line)?;
    }
    Ok(table)
}

/// The innermost script function on the stack: Redis skips the C function that raised
/// (`error`, a library function); the sandbox's own Lua wrappers are skipped the same
/// way, since in Redis they are C.
fn position(lua: &Lua) -> Option<(String, i64)> {
    (1..64).find_map(|level| {
        lua.inspect_stack(level, |frame| {
            let source = frame.source();
            let name = source.source.as_deref().unwrap_or("?");
            (source.what != "C" && name != CHUNK_NAME).then(|| {
                let line = frame.current_line().map_or(-1, |line| line as i64);
                (name.to_string(), line)
            })
        })?
    })
}

/// The reply for a script that failed with `table` (from [`handler`]).
pub(crate) fn reply(table: &Table, sha: &str) -> String {
    let text = |key: &str| match table.raw_get::<LuaValue>(key) {
        Ok(LuaValue::String(s)) => Some(s.to_string_lossy()),
        Ok(LuaValue::Integer(n)) => Some(n.to_string()),
        Ok(LuaValue::Number(n)) => Some(display(&LuaValue::Number(n))),
        _ => None,
    };
    let message = text("err").unwrap_or_else(|| "ERR unknown error".into());
    let source = text("source").unwrap_or_else(|| "?".into());
    let line = text("line").unwrap_or_else(|| "?".into());
    format!("{message} script: {sha}, on {source}:{line}.")
}
