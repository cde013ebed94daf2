//! EVAL, EVALSHA, their read-only forms, and SCRIPT LOAD/EXISTS/FLUSH.

use lock_core::Value;

use super::{NOT_AN_INTEGER, integer, wrong_arity};
use crate::server::Shared;
use crate::session::Session;

const COMMANDS: &super::Table = &[
    ("eval", -3),
    ("evalsha", -3),
    ("eval_ro", -3),
    ("evalsha_ro", -3),
    ("script", -2),
];

/// The lower-case name and arity of a scripting command, if `name` is one.
pub(crate) fn lookup(name: &[u8]) -> Option<(&'static str, i32)> {
    super::find(COMMANDS, name)
}

/// Runs the scripting command `name` (its arity already checked).
pub(crate) async fn run(
    shared: &Shared,
    session: &Session,
    name: &'static str,
    args: &[Vec<u8>],
) -> Value {
    if name == "script" {
        return script(shared, args);
    }
    let Some(numkeys) = integer(&args[2]) else {
        return Value::Error(NOT_AN_INTEGER.into());
    };
    if numkeys < 0 {
        return Value::Error("ERR Number of keys can't be negative".into());
    }
    let numkeys = numkeys as usize;
    if numkeys > args.len() - 3 {
        return Value::Error("ERR Number of keys can't be greater than number of args".into());
    }
    let sha = if name.starts_with("evalsha") {
        let sha = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
        if !shared.lua.exists(&sha) {
            return Value::Error("NOSCRIPT No matching script. Please use EVAL.".into());
        }
        sha
    } else {
        match shared.lua.load(&args[1]) {
            Ok(sha) => sha,
            Err(text) => return Value::Error(text),
        }
    };
    let keys: Vec<&[u8]> = args[3..3 + numkeys].iter().map(Vec::as_slice).collect();
    let read_only: &[u8] = if name.ends_with("_ro") { b"1" } else { b"0" };
    let mut script_args: Vec<&[u8]> = vec![sha.as_bytes(), read_only];
    script_args.extend(args[3 + numkeys..].iter().map(Vec::as_slice));
    shared.run_script(session.db, &keys, &script_args).await
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
