//! `CLIENT`: the connection's name and id, the list of connections and killing them,
//! `REPLY ON|OFF|SKIP` and `NO-EVICT`.

use lock_core::Value;

use crate::protocol::args::{SYNTAX_ERROR, integer, ok, wrong_arity};
use crate::state::client::{Client, Replies, UnblockMode};
use crate::state::clients::Filter;
use crate::state::shared::Shared;
use crate::state::tracking::Mode;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Subcommands and their arity (Redis's convention: negative is a minimum).
const SUBCOMMANDS: &[(&str, i32)] = &[
    ("setname", 3),
    ("setinfo", 4),
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
    let known = SUBCOMMANDS
        .iter()
        .find(|(name, _)| *name == sub)
        .filter(|(name, _)| *name != "setinfo" || shared.options.redis_version.has_setinfo());
    let Some((_, arity)) = known else {
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
        "setinfo" => set_info(client, &args[2], &args[3]),
        "getname" => client.name.clone().map_or(Value::Nil, Value::Data),
        "id" => Value::Int(client.id as i64),
        "info" => {
            shared.registry.record(client, &args[..2]);
            Value::Data(
                shared
                    .registry
                    .info(client.id, &shared.tracking, shared.options.redis_version)
                    .into_bytes(),
            )
        }
        "list" => {
            shared.registry.record(client, &args[..2]);
            match list_filter(&args[2..]) {
                Ok(filter) => {
                    let version = shared.options.redis_version;
                    let list = shared.registry.list(&filter, &shared.tracking, version);
                    Value::Data(list.into_bytes())
                }
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
        "tracking" => tracking(shared, client, &args[2..]),
        "caching" => caching(shared, client, &args[2]),
        "getredir" => Value::Int(
            shared
                .tracking
                .mode(client.id)
                .map_or(-1, |mode| i64::try_from(mode.redirect).unwrap_or(-1)),
        ),
        "trackinginfo" => tracking_info(shared, client),
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

/// `CLIENT SETINFO LIB-NAME|LIB-VER value` (Redis 7.2 and later): the library's name or
/// version, checked as a client name is; an empty value clears it.
fn set_info(client: &mut Client, attribute: &[u8], value: &[u8]) -> Value {
    let slot = match attribute.to_ascii_lowercase().as_slice() {
        b"lib-name" => &mut client.library.name,
        b"lib-ver" => &mut client.library.version,
        _ => {
            return Value::Error(format!("ERR Unrecognized option '{}'", text(attribute)));
        }
    };
    if value.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
        return Value::Error(format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            text(attribute)
        ));
    }
    *slot = (!value.is_empty()).then(|| value.to_vec());
    ok()
}

/// `CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p …] [OPTIN] [OPTOUT] [NOLOOP]`,
/// with Redis's checks in Redis's order.
fn tracking(shared: &Shared, client: &mut Client, args: &[Vec<u8>]) -> Value {
    let mut mode = Mode::default();
    let mut options = args[1..].iter();
    while let Some(option) = options.next() {
        let more = options.len() > 0;
        match text(option).to_ascii_lowercase().as_str() {
            "redirect" if more => {
                if mode.redirect != 0 {
                    return Value::Error(
                        "ERR A client can only redirect to a single other client".into(),
                    );
                }
                let Some(id) = integer(options.next().expect("checked")) else {
                    return Value::Error(crate::protocol::args::NOT_AN_INTEGER.into());
                };
                match u64::try_from(id) {
                    Ok(id) if shared.registry.exists(id) => mode.redirect = id,
                    _ => {
                        return Value::Error(
                            "ERR The client ID you want redirect to does not exist".into(),
                        );
                    }
                }
            }
            "bcast" => mode.bcast = true,
            "optin" => mode.optin = true,
            "optout" => mode.optout = true,
            "noloop" => mode.noloop = true,
            "prefix" if more => mode.prefixes.push(options.next().expect("checked").clone()),
            _ => return Value::Error(SYNTAX_ERROR.into()),
        }
    }
    match text(&args[0]).to_ascii_lowercase().as_str() {
        "on" => {}
        "off" => {
            shared.tracking.disable(client.id, shared.dbs());
            client.tracks = false;
            // Turning tracking off forgets a CLIENT CACHING still pending, as in Redis.
            client.caching = false;
            return ok();
        }
        _ => return Value::Error(SYNTAX_ERROR.into()),
    }
    let current = shared.tracking.mode(client.id);
    let refusal = if !mode.bcast && !mode.prefixes.is_empty() {
        Some("ERR PREFIX option requires BCAST mode to be enabled")
    } else if current.as_ref().is_some_and(|now| now.bcast != mode.bcast) {
        Some(
            "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.",
        )
    } else if mode.bcast && (mode.optin || mode.optout) {
        Some("ERR OPTIN and OPTOUT are not compatible with BCAST")
    } else if mode.optin && mode.optout {
        Some("ERR You can't specify both OPTIN mode and OPTOUT mode")
    } else if current
        .as_ref()
        .is_some_and(|now| (mode.optin && now.optout) || (mode.optout && now.optin))
    {
        Some(
            "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.",
        )
    } else {
        None
    };
    if let Some(refusal) = refusal {
        return Value::Error(refusal.into());
    }
    if mode.bcast
        && let Some(overlap) = prefix_overlap(current.as_ref(), &mode.prefixes)
    {
        return Value::Error(overlap);
    }
    mode.prefixes.sort();
    shared.tracking.enable(client.id, mode, shared.dbs());
    client.tracks = true;
    ok()
}

/// Redis's refusal of BCAST prefixes where one is the start of another.
fn prefix_overlap(current: Option<&Mode>, prefixes: &[Vec<u8>]) -> Option<String> {
    let overlaps = |a: &[u8], b: &[u8]| a.starts_with(b) || b.starts_with(a);
    for (i, prefix) in prefixes.iter().enumerate() {
        for existing in current.map_or(&[][..], |mode| &mode.prefixes) {
            if overlaps(existing, prefix) {
                return Some(format!(
                    "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                    text(prefix),
                    text(existing)
                ));
            }
        }
        // Redis 7.0 refuses an overlap among the given prefixes only when the first of
        // the pair is the first prefix given (its check returns the index as success).
        for other in &prefixes[i + 1..] {
            if overlaps(prefix, other) && i == 0 {
                return Some(format!(
                    "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                    text(prefix),
                    text(other)
                ));
            }
        }
    }
    None
}

/// `CLIENT CACHING YES|NO`: whether the next command's keys are tracked, in OPTIN or
/// OPTOUT mode.
fn caching(shared: &Shared, client: &mut Client, arg: &[u8]) -> Value {
    let Some(mode) = shared.tracking.mode(client.id) else {
        return Value::Error(
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"
                .into(),
        );
    };
    match text(arg).to_ascii_lowercase().as_str() {
        "yes" if mode.optin => client.caching = true,
        "yes" => {
            return Value::Error(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
                    .into(),
            );
        }
        "no" if mode.optout => client.caching = true,
        "no" => {
            return Value::Error(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
                    .into(),
            );
        }
        _ => return Value::Error(SYNTAX_ERROR.into()),
    }
    ok()
}

/// `CLIENT TRACKINGINFO`.
fn tracking_info(shared: &Shared, client: &Client) -> Value {
    let mode = shared.tracking.mode(client.id);
    let data = |text: &str| Value::Data(text.as_bytes().to_vec());
    let mut flags = vec![data(if mode.is_some() { "on" } else { "off" })];
    if let Some(mode) = &mode {
        let caching = client.caching;
        for (set, name) in [
            (mode.bcast, "bcast"),
            (mode.optin, "optin"),
            (mode.optin && caching, "caching-yes"),
            (mode.optout, "optout"),
            (mode.optout && caching, "caching-no"),
            (mode.noloop, "noloop"),
            (mode.broken_redirect, "broken_redirect"),
        ] {
            if set {
                flags.push(data(name));
            }
        }
    }
    Value::Map(vec![
        (data("flags"), Value::Set(flags)),
        (
            data("redirect"),
            Value::Int(
                mode.as_ref()
                    .map_or(-1, |mode| i64::try_from(mode.redirect).unwrap_or(-1)),
            ),
        ),
        (
            data("prefixes"),
            Value::Array(match mode {
                // BCAST without a prefix tracks the empty prefix, as Redis lists it.
                Some(mode) if mode.bcast && mode.prefixes.is_empty() => vec![data("")],
                Some(mode) => mode.prefixes.into_iter().map(Value::Data).collect(),
                None => Vec::new(),
            }),
        ),
    ])
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
        return Value::Error(crate::protocol::args::NOT_AN_INTEGER.into());
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
    if !options.len().is_multiple_of(2) {
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
