//! `redis.call` and `redis.pcall`: a script's arguments as a command, checked against
//! the server's command table and run on the keyspace, as from a client.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use lock_core::Value;
use lock_memory::Databases;
use mlua::{Lua, Table, Value as LuaValue};

use super::convert;
use crate::commands::{Context, Flags, cluster, connection, keyspace, lookup};
use crate::reply::Protocol;

/// One run's `redis.call`: the databases it reaches and what the script may do.
pub(crate) struct Call<'a, 'd> {
    pub(crate) databases: &'a mut Databases<'d>,
    pub(crate) read_only: bool,
    /// Its `db` is the database the script works in now (`SELECT` changes it).
    pub(crate) context: Context,
    /// `redis.setresp`: the protocol replies reach the script in.
    pub(crate) resp: Arc<AtomicU8>,
    /// Whether a read-only command ran: a tracking caller then tracks the script's KEYS.
    pub(crate) read: bool,
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
        let reply = self.execute(&arguments, count, resp)?;
        let failed = matches!(reply, Value::Error(_));
        Ok((convert::to_lua(lua, &reply, resp)?, failed))
    }

    fn execute(&mut self, arguments: &Table, count: usize, resp: u8) -> mlua::Result<Value> {
        Ok(match arguments_of(arguments, count)? {
            Ok(args) => self.command(&args, resp),
            Err(refused) => refused,
        })
    }

    fn command(&mut self, args: &[Vec<u8>], resp: u8) -> Value {
        // The checks run in Redis's order: known, arity, allowed in scripts, writes.
        let Some(command) = lookup(&args[0]) else {
            return error("ERR Unknown Redis command called from script");
        };
        if !command.arity_ok(args.len()) {
            return error("ERR Wrong number of args calling Redis command from script");
        }
        // Redis looks subcommands up as commands of their own.
        if let Some(arity) = subcommand_arity(command.name, args) {
            match arity {
                None => return error("ERR Unknown Redis command called from script"),
                Some(arity) if arity != args.len() => {
                    return error("ERR Wrong number of args calling Redis command from script");
                }
                Some(_) => {}
            }
        }
        if command.flags.has(Flags::NOSCRIPT) {
            return error("ERR This Redis command is not allowed from script");
        }
        // As in Redis 7, SELECT moves the script to another database, not its client.
        if command.name == "select" {
            return match connection::select_index(&args[1], self.context.cluster) {
                Ok(db) => {
                    self.context.db = db;
                    Value::Status("OK".into())
                }
                Err(text) => error(text),
            };
        }
        if !command.on_keyspace() {
            return Value::Error(format!(
                "ERR nxlock serve cannot run '{}' from a script",
                command.name
            ));
        }
        if self.context.cluster && cluster::cross_slot(command, args) {
            return error(cluster::NON_LOCAL);
        }
        if self.read_only && command.flags.has(Flags::WRITE) {
            return error("ERR Write commands are not allowed from read-only scripts.");
        }
        let context = Context {
            protocol: if resp == 3 {
                Protocol::Resp3
            } else {
                Protocol::Resp2
            },
            ..self.context
        };
        self.read |= crate::commands::introspection::reads_keys(command.name);
        keyspace::run_across(self.databases, args, context)
    }
}

/// For a command with subcommands that runs in scripts (OBJECT): the subcommand's
/// arity, `None` inside when there is no such subcommand.
fn subcommand_arity(name: &str, args: &[Vec<u8>]) -> Option<Option<usize>> {
    if name != "object" {
        return None;
    }
    let sub = args[1].to_ascii_lowercase();
    Some(match sub.as_slice() {
        b"help" => Some(2),
        b"encoding" | b"refcount" | b"idletime" | b"freq" => Some(3),
        _ => None,
    })
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
