//! EVAL, EVALSHA, their read-only forms, and SCRIPT LOAD/EXISTS/FLUSH.

use lock_core::Value;
use lock_memory::MemoryBackend;

use super::{NOT_AN_INTEGER, integer, keyspace, wrong_arity};
use crate::client::Client;
use crate::lua::RunOptions;
use crate::reply::{Hangup, from_store};
use crate::shared::Shared;

/// The scripting commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scripting {
    Eval,
    EvalSha,
    EvalRo,
    EvalShaRo,
    Script,
}

/// Runs `which` (its arity already checked).
pub(crate) async fn run(
    shared: &Shared,
    client: &mut Client,
    which: Scripting,
    args: &[Vec<u8>],
) -> Result<Value, Hangup> {
    let (by_sha, read_only) = match which {
        Scripting::Script => return Ok(script(shared, args)),
        Scripting::Eval => (false, false),
        Scripting::EvalSha => (true, false),
        Scripting::EvalRo => (false, true),
        Scripting::EvalShaRo => (true, true),
    };
    let Some(numkeys) = integer(&args[2]) else {
        return Ok(Value::Error(NOT_AN_INTEGER.into()));
    };
    if numkeys < 0 {
        return Ok(Value::Error("ERR Number of keys can't be negative".into()));
    }
    let numkeys = numkeys as usize;
    if numkeys > args.len() - 3 {
        return Ok(Value::Error(
            "ERR Number of keys can't be greater than number of args".into(),
        ));
    }
    let sha = if by_sha {
        let sha = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
        if !shared.lua.exists(&sha) {
            return Ok(Value::Error(
                "NOSCRIPT No matching script. Please use EVAL.".into(),
            ));
        }
        sha
    } else {
        match shared.lua.load(&args[1]) {
            Ok(sha) => sha,
            Err(text) => return Ok(Value::Error(text)),
        }
    };
    if read_only && shared.lua.refuses_read_only(&sha) {
        return Ok(Value::Error(
            "ERR Can not execute a script with write flag using *_ro command.".into(),
        ));
    }
    let keys: Vec<&[u8]> = args[3..3 + numkeys].iter().map(Vec::as_slice).collect();
    let argv: Vec<&[u8]> = args[3 + numkeys..].iter().map(Vec::as_slice).collect();
    let db = client.db;
    let options = RunOptions {
        read_only,
        time_limit: shared.config.script_time_limit(),
        context: keyspace::context(shared, db, client.protocol),
    };
    // Every database is in the script's atomic step: it may SELECT another.
    let ran = MemoryBackend::atomically_across(shared.dbs(), db, |databases| {
        let (reply, read) = shared.lua.run(databases, &sha, &keys, &argv, options);
        client.script_read = read;
        reply
    })
    .await;
    for index in 0..shared.dbs().len() {
        crate::blocking::serve(shared, index).await;
    }
    from_store(ran)
}

fn script(shared: &Shared, args: &[Vec<u8>]) -> Value {
    let sub = args[1].to_ascii_lowercase();
    let arity_error = || wrong_arity(&format!("script|{}", String::from_utf8_lossy(&sub)));
    match sub.as_slice() {
        b"load" if args.len() == 3 => match shared.lua.load(&args[2]) {
            Ok(sha) => Value::Data(sha.into_bytes()),
            Err(text) => Value::Error(text),
        },
        b"exists" if args.len() >= 3 => Value::Array(
            args[2..]
                .iter()
                .map(|sha| Value::Int(shared.lua.exists(&String::from_utf8_lossy(sha)).into()))
                .collect(),
        ),
        b"flush" if args.len() <= 3 => {
            let mode = args.get(2).map(|m| m.to_ascii_lowercase());
            match mode.as_deref() {
                None | Some(b"async") | Some(b"sync") => {
                    shared.lua.flush();
                    Value::Status("OK".into())
                }
                Some(_) => Value::Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option".into()),
            }
        }
        b"load" | b"exists" | b"flush" => arity_error(),
        _ => Value::Error(format!(
            "ERR unknown subcommand '{}'. Try SCRIPT HELP.",
            String::from_utf8_lossy(&args[1])
        )),
    }
}
