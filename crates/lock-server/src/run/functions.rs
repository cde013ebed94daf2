//! Redis 7 functions: FUNCTION LOAD, DELETE, FLUSH, LIST, STATS and KILL, and FCALL and
//! FCALL_RO, which run a function as EVAL runs a script (see [`super::scripting`]).

use lock_core::Value;
use lock_memory::glob_match;

use super::scripting;
use crate::protocol::args::{integer, wrong_arity};
use crate::protocol::reply::Hangup;
use crate::state::client::Client;
use crate::state::scripts::LibraryInfo;
use crate::state::shared::Shared;

/// FUNCTION and its subcommands (the arity of FUNCTION itself already checked).
pub(crate) fn function(shared: &Shared, args: &[Vec<u8>]) -> Value {
    let sub = args[1].to_ascii_lowercase();
    let engine = &shared.scripts;
    let arity = |ok: bool, name: &str| (!ok).then(|| wrong_arity(&format!("function|{name}")));
    match sub.as_slice() {
        b"load" => arity(args.len() >= 3, "load").unwrap_or_else(|| load(shared, args)),
        b"delete" => arity(args.len() == 3, "delete").unwrap_or_else(|| {
            if engine.delete_library(&args[2]) {
                Value::Status("OK".into())
            } else {
                Value::Error("ERR Library not found".into())
            }
        }),
        b"flush" => flush(shared, args),
        b"list" => list(shared, args),
        b"stats" => arity(args.len() == 2, "stats").unwrap_or_else(|| stats(shared)),
        b"kill" => arity(args.len() == 2, "kill")
            .unwrap_or_else(|| Value::Error("NOTBUSY No scripts in execution right now.".into())),
        b"help" => arity(args.len() == 2, "help").unwrap_or_else(|| {
            let header = format!(
                "{} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                String::from_utf8_lossy(&args[0]).to_ascii_uppercase()
            );
            let lines = std::iter::once(header)
                .chain(HELP.iter().map(|line| (*line).to_owned()))
                .chain(["HELP".to_owned(), "    Prints this help.".to_owned()]);
            Value::Array(lines.map(Value::Status).collect())
        }),
        b"dump" | b"restore" => Value::Error(format!(
            "ERR nxlock serve has no FUNCTION {}: its payload is Redis's RDB format",
            String::from_utf8_lossy(&args[1]).to_ascii_uppercase()
        )),
        _ => Value::Error(format!(
            "ERR unknown subcommand '{}'. Try FUNCTION HELP.",
            String::from_utf8_lossy(&args[1])
        )),
    }
}

/// FUNCTION HELP's lines between its header and its own entry: Redis's, DUMP and RESTORE
/// included (serve refuses those two, with a reason).
const HELP: &[&str] = &[
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
];

/// FUNCTION LOAD [REPLACE] code.
fn load(shared: &Shared, args: &[Vec<u8>]) -> Value {
    let mut replace = false;
    let last = args.len() - 1;
    for option in &args[2..last] {
        if !option.eq_ignore_ascii_case(b"replace") {
            return Value::Error(format!(
                "ERR Unknown option given: {}",
                String::from_utf8_lossy(option)
            ));
        }
        replace = true;
    }
    match shared.scripts.load_library(&args[last], replace) {
        Ok(name) => Value::Data(name.into_bytes()),
        Err(text) => Value::Error(text),
    }
}

/// FUNCTION FLUSH [ASYNC|SYNC].
fn flush(shared: &Shared, args: &[Vec<u8>]) -> Value {
    match args.len() {
        2 => {}
        3 if args[2].eq_ignore_ascii_case(b"sync") || args[2].eq_ignore_ascii_case(b"async") => {}
        3 => return Value::Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option".into()),
        _ => {
            return Value::Error(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
                String::from_utf8_lossy(&args[1])
            ));
        }
    }
    shared.scripts.flush_libraries();
    Value::Status("OK".into())
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE], each option once, in any order.
fn list(shared: &Shared, args: &[Vec<u8>]) -> Value {
    let mut with_code = false;
    let mut pattern: Option<&[u8]> = None;
    let mut i = 2;
    while i < args.len() {
        let arg = &args[i];
        if !with_code && arg.eq_ignore_ascii_case(b"withcode") {
            with_code = true;
        } else if pattern.is_none() && arg.eq_ignore_ascii_case(b"libraryname") {
            let Some(given) = args.get(i + 1) else {
                return Value::Error("ERR library name argument was not given".into());
            };
            pattern = Some(given);
            i += 1;
        } else {
            return Value::Error(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(arg)
            ));
        }
        i += 1;
    }
    let libraries = shared
        .scripts
        .libraries()
        .into_iter()
        // Redis matches the pattern without regard to case.
        .filter(|library| {
            pattern.is_none_or(|p| {
                glob_match(
                    &p.to_ascii_lowercase(),
                    &library.name.to_ascii_lowercase().into_bytes(),
                )
            })
        })
        .map(|library| library_entry(library, with_code))
        .collect();
    Value::Array(libraries)
}

fn data(text: &str) -> Value {
    Value::Data(text.as_bytes().to_vec())
}

/// One library of FUNCTION LIST's reply.
fn library_entry(library: LibraryInfo, with_code: bool) -> Value {
    let functions = library
        .functions
        .into_iter()
        .map(|function| {
            Value::Map(vec![
                (data("name"), Value::Data(function.name.into_bytes())),
                (
                    data("description"),
                    function
                        .description
                        .map_or(Value::Nil, |d| Value::Data(d.into_bytes())),
                ),
                (
                    data("flags"),
                    Value::Set(function.flags.into_iter().map(Value::Status).collect()),
                ),
            ])
        })
        .collect();
    let mut entry = vec![
        (data("library_name"), Value::Data(library.name.into_bytes())),
        (data("engine"), data("LUA")),
        (data("functions"), Value::Array(functions)),
    ];
    if with_code {
        entry.push((data("library_code"), Value::Data(library.code)));
    }
    Value::Map(entry)
}

/// FUNCTION STATS: no script is ever running when a command is served.
fn stats(shared: &Shared) -> Value {
    let (libraries, functions) = shared.scripts.function_counts();
    let count = |n: usize| Value::Int(i64::try_from(n).unwrap_or(i64::MAX));
    Value::Map(vec![
        (data("running_script"), Value::Nil),
        (
            data("engines"),
            Value::Map(vec![(
                data("LUA"),
                Value::Map(vec![
                    (data("libraries_count"), count(libraries)),
                    (data("functions_count"), count(functions)),
                ]),
            )]),
        ),
    ])
}

/// FCALL and FCALL_RO (`read_only`): the function, then its number of keys, checked in
/// Redis's order.
pub(crate) async fn fcall(
    shared: &Shared,
    client: &mut Client,
    args: &[Vec<u8>],
    read_only: bool,
) -> Result<Value, Hangup> {
    let Some(refuses_read_only) = shared.scripts.function_refuses_read_only(&args[1]) else {
        return Ok(Value::Error("ERR Function not found".into()));
    };
    let Some(numkeys) = integer(&args[2]) else {
        return Ok(Value::Error("ERR Bad number of keys provided".into()));
    };
    if numkeys > (args.len() - 3) as i64 {
        return Ok(Value::Error(
            "ERR Number of keys can't be greater than number of args".into(),
        ));
    }
    if numkeys < 0 {
        return Ok(Value::Error("ERR Number of keys can't be negative".into()));
    }
    if read_only && refuses_read_only {
        return Ok(Value::Error(
            "ERR Can not execute a script with write flag using *_ro command.".into(),
        ));
    }
    let numkeys = numkeys as usize;
    let keys: Vec<&[u8]> = args[3..3 + numkeys].iter().map(Vec::as_slice).collect();
    let argv: Vec<&[u8]> = args[3 + numkeys..].iter().map(Vec::as_slice).collect();
    scripting::execute(shared, client, &keys, read_only, |limits, call| {
        shared
            .scripts
            .run_function(&args[1], &keys, &argv, limits, call)
    })
    .await
}
