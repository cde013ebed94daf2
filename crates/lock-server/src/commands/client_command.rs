//! `CLIENT`: the connection's name and id, the list of connections and killing them,
//! `REPLY ON|OFF|SKIP` and `NO-EVICT`.

use lock_core::Value;

use super::{SYNTAX_ERROR, integer, ok, wrong_arity};
use crate::client::{Client, Replies, UnblockMode};
use crate::clients::Filter;
use crate::shared::Shared;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Subcommands and their arity (Redis's convention: negative is a minimum).
const SUBCOMMANDS: &[(&str, i32)] = &[
    ("setname", 3),
    ("getname", 2),
    ("id", 2),
    ("info", 2),
    ("list", -2),
    ("kill", -3),
    ("reply", 3),
    ("no-evict", 3),
    ("help", 2),
    ("caching", 3),
    ("getredir", 2),
    ("pause", -3),
    ("unpause", 2),
    ("unblock", -3),
    ("tracking", -3),
    ("trackinginfo", 2),
];

/// Runs `CLIENT <subcommand> …` for `client`.
pub(crate) fn run(shared: &Shared, client: &mut Client, args: &[Vec<u8>]) -> Value {
    let sub = text(&args[1]).to_ascii_lowercase();
    let Some((_, arity)) = SUBCOMMANDS.iter().find(|(name, _)| *name == sub) else {
        return Value::Error(format!(
            "ERR unknown subcommand '{}'. Try CLIENT HELP.",
            text(&args[1])
        ));
    };
    let argc = args.len() as i32;
    if (*arity >= 0 && argc != *arity) || (*arity < 0 && argc < -arity) {
        return wrong_arity(&format!("client|{sub}"));
    }
    match sub.as_str() {
        "setname" => {
            let name = &args[2];
            if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
                return Value::Error(
                    "ERR Client names cannot contain spaces, newlines or special characters."
                        .into(),
                );
            }
            client.name = (!name.is_empty()).then(|| name.clone());
            ok()
        }
        "getname" => client.name.clone().map_or(Value::Nil, Value::Data),
        "id" => Value::Int(client.id as i64),
        "info" => {
            shared.registry.record(client, &args[..2]);
            Value::Data(shared.registry.info(client.id).into_bytes())
        }
        "list" => {
            shared.registry.record(client, &args[..2]);
            match list_filter(&args[2..]) {
                Ok(filter) => Value::Data(shared.registry.list(&filter).into_bytes()),
                Err(error) => Value::Error(error),
            }
        }
        "kill" => kill(shared, client, &args[2..]),
        "reply" => match text(&args[2]).to_ascii_lowercase().as_str() {
            "on" => {
                client.replies = Replies::On;
                ok()
            }
            // The reply to these is not sent: the connection sees the new mode.
            "off" => {
                client.replies = Replies::Off;
                ok()
            }
            // As in Redis, SKIP does nothing while replies are off.
            "skip" => {
                if client.replies != Replies::Off {
                    client.replies = Replies::SkipNext;
                }
                ok()
            }
            _ => Value::Error(SYNTAX_ERROR.into()),
        },
        "no-evict" => match text(&args[2]).to_ascii_lowercase().as_str() {
            "on" => {
                client.no_evict = true;
                ok()
            }
            "off" => {
                client.no_evict = false;
                ok()
            }
            _ => Value::Error(SYNTAX_ERROR.into()),
        },
        "unblock" => unblock(shared, &args[1], &args[2..]),
        "help" => Value::Array(
            HELP.iter()
                .map(|line| Value::Status((*line).into()))
                .collect(),
        ),
        other => Value::Error(format!(
            "ERR nxlock serve does not support CLIENT {}",
            other.to_ascii_uppercase()
        )),
    }
}

/// `CLIENT UNBLOCK <id> [TIMEOUT|ERROR]`: 1 if that client was blocked and now is not.
fn unblock(shared: &Shared, sub: &[u8], args: &[Vec<u8>]) -> Value {
    if args.len() > 2 {
        return Value::Error(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
            text(sub)
        ));
    }
    let mode = match args.get(1).map(|m| m.to_ascii_lowercase()) {
        None => UnblockMode::Timeout,
        Some(m) if m == b"timeout" => UnblockMode::Timeout,
        Some(m) if m == b"error" => UnblockMode::Error,
        Some(_) => {
            return Value::Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR".into());
        }
    };
    let Some(id) = integer(&args[0]) else {
        return Value::Error(super::NOT_AN_INTEGER.into());
    };
    let unblocked = u64::try_from(id).is_ok_and(|id| shared.registry.unblock(id, mode));
    Value::Int(i64::from(unblocked))
}

/// A `TYPE` argument: `Some(true)` pubsub, `Some(false)` normal, `None` for the kinds of
/// connection the double never has (master, replica).
fn client_type(arg: &[u8]) -> Result<Option<bool>, String> {
    match text(arg).to_ascii_lowercase().as_str() {
        "normal" => Ok(Some(false)),
        "pubsub" => Ok(Some(true)),
        "master" | "replica" | "slave" => Ok(None),
        _ => Err(format!("ERR Unknown client type '{}'", text(arg))),
    }
}

fn list_filter(options: &[Vec<u8>]) -> Result<Filter, String> {
    let mut filter = Filter::default();
    match options {
        [] => {}
        [option, kind] if option.eq_ignore_ascii_case(b"type") => match client_type(kind)? {
            Some(pubsub) => filter.pubsub = Some(pubsub),
            None => filter.nobody = true,
        },
        [option, ids @ ..] if option.eq_ignore_ascii_case(b"id") && !ids.is_empty() => {
            let ids = ids
                .iter()
                .map(|id| integer(id).filter(|id| *id > 0).map(|id| id as u64))
                .collect::<Option<Vec<u64>>>()
                .ok_or("ERR Invalid client ID")?;
            filter.ids = Some(ids);
        }
        _ => return Err(SYNTAX_ERROR.into()),
    }
    Ok(filter)
}

/// `CLIENT KILL addr` (the old form: OK or an error) or `CLIENT KILL <filter> <value> …`
/// (how many were killed). A connection that kills itself is closed after the reply.
fn kill(shared: &Shared, client: &mut Client, options: &[Vec<u8>]) -> Value {
    if let [addr] = options {
        let filter = Filter {
            addr: Some(text(addr)),
            ..Filter::default()
        };
        let (killed, myself) = shared.registry.kill(&filter, client.id);
        client.quit |= myself;
        return if killed == 0 {
            Value::Error("ERR No such client".into())
        } else {
            ok()
        };
    }
    if options.len() % 2 != 0 {
        return Value::Error(SYNTAX_ERROR.into());
    }
    let mut filter = Filter {
        skip: Some(client.id),
        ..Filter::default()
    };
    for pair in options.chunks(2) {
        let (option, value) = (text(&pair[0]).to_ascii_lowercase(), &pair[1]);
        match option.as_str() {
            "id" => match integer(value).filter(|id| *id > 0) {
                Some(id) => filter.ids = Some(vec![id as u64]),
                None => return Value::Error("ERR client-id should be greater than 0".into()),
            },
            "addr" => filter.addr = Some(text(value)),
            "laddr" => filter.laddr = Some(text(value)),
            "type" => match client_type(value) {
                Ok(Some(pubsub)) => filter.pubsub = Some(pubsub),
                Ok(None) => filter.nobody = true,
                Err(error) => return Value::Error(error),
            },
            "user" if value.as_slice() == b"default" => {}
            "user" => return Value::Error(format!("ERR No such user '{}'", text(value))),
            "skipme" => match text(value).to_ascii_lowercase().as_str() {
                "yes" => filter.skip = Some(client.id),
                "no" => filter.skip = None,
                _ => return Value::Error(SYNTAX_ERROR.into()),
            },
            _ => return Value::Error(SYNTAX_ERROR.into()),
        }
    }
    let (killed, myself) = shared.registry.kill(&filter, client.id);
    client.quit |= myself;
    Value::Int(killed as i64)
}

const HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "HELP",
    "    Prints this help.",
];
