//! Connection and server commands: they need the session or every database, so they run
//! outside the store's atomic section.

use std::time::Duration;

use lock_core::Value;

use super::{NOT_AN_INTEGER, integer, wrong_arity};
use crate::reply::Protocol;
use crate::server::{DATABASES, Shared};
use crate::session::Session;

/// The version `INFO` and `HELLO` report: the Redis whose behaviour the server matches.
pub const REDIS_VERSION: &str = "7.0.15";

/// The admin command that moves every database's clock forward by `ms` milliseconds
/// (`NXLOCK.FASTFORWARD 30000`), like miniredis's `FastForward`.
pub const FAST_FORWARD: &str = "nxlock.fastforward";

const COMMANDS: &super::Table = &[
    ("ping", -1),
    ("echo", 2),
    ("quit", -1),
    ("select", 2),
    ("auth", -2),
    ("hello", -1),
    ("client", -2),
    ("info", -1),
    ("reset", 1),
    ("dbsize", 1),
    ("flushdb", -1),
    ("flushall", -1),
    ("time", 1),
    ("watch", -2),
    ("unwatch", 1),
    (FAST_FORWARD, 2),
];

/// The lower-case name of a connection command, if `name` is one.
pub(crate) fn lookup(name: &[u8]) -> Option<(&'static str, i32)> {
    super::find(COMMANDS, name)
}

fn ok() -> Value {
    Value::Status("OK".into())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs the connection command `name` for `session` (its arity already checked).
pub(crate) async fn run(
    shared: &Shared,
    session: &mut Session,
    name: &'static str,
    args: &[Vec<u8>],
) -> Value {
    match name {
        "ping" => match args.len() {
            1 => Value::Status("PONG".into()),
            2 => Value::Data(args[1].clone()),
            _ => wrong_arity(name),
        },
        "echo" => Value::Data(args[1].clone()),
        "quit" => {
            session.quit = true;
            ok()
        }
        "select" => match integer(&args[1]) {
            None => Value::Error(NOT_AN_INTEGER.into()),
            Some(db) if (0..DATABASES as i64).contains(&db) => {
                session.db = db as usize;
                ok()
            }
            Some(_) => Value::Error("ERR DB index is out of range".into()),
        },
        "auth" => auth(shared, session, args),
        "hello" => hello(shared, session, args),
        "client" => client(session, args),
        "info" => Value::Data(info(shared).into_bytes()),
        "watch" => super::watch::watch(shared, session, args).await,
        "unwatch" => {
            super::watch::release(shared, session, None).await;
            ok()
        }
        "reset" => {
            super::watch::release(shared, session, None).await;
            *session = Session::new(session.id, shared.requires_auth());
            Value::Status("RESET".into())
        }
        "dbsize" => Value::Int(shared.db(session.db).dump().keys.len() as i64),
        "flushdb" => {
            shared.db(session.db).flush();
            ok()
        }
        "flushall" => {
            for db in 0..DATABASES {
                shared.db(db).flush();
            }
            ok()
        }
        "time" => {
            let us = shared.clock.now_us();
            Value::Array(vec![
                Value::Data(us.div_euclid(1_000_000).to_string().into_bytes()),
                Value::Data(us.rem_euclid(1_000_000).to_string().into_bytes()),
            ])
        }
        FAST_FORWARD => match integer(&args[1]) {
            Some(ms) if ms >= 0 => {
                shared.clock.advance(Duration::from_millis(ms as u64));
                ok()
            }
            _ => Value::Error(NOT_AN_INTEGER.into()),
        },
        _ => Value::Error(format!("ERR unknown command '{name}'")),
    }
}

fn auth(shared: &Shared, session: &mut Session, args: &[Vec<u8>]) -> Value {
    if args.len() > 3 {
        return Value::Error(super::SYNTAX_ERROR.into());
    }
    let Some(password) = &shared.options.requirepass else {
        if args.len() == 2 {
            return Value::Error(
                "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?".into(),
            );
        }
        return wrong_pass();
    };
    let (user, given) = match args {
        [_, given] => (b"default".as_slice(), given),
        [_, user, given] => (user.as_slice(), given),
        _ => return wrong_arity("auth"),
    };
    if user == b"default" && given.as_slice() == password.as_bytes() {
        session.authenticated = true;
        ok()
    } else {
        wrong_pass()
    }
}

fn wrong_pass() -> Value {
    Value::Error("WRONGPASS invalid username-password pair or user is disabled.".into())
}

/// `HELLO [2|3 [AUTH user pass] [SETNAME name]]`: the reply is a map (a flat array in
/// RESP2), written as such by the connection.
fn hello(shared: &Shared, session: &mut Session, args: &[Vec<u8>]) -> Value {
    let mut i = 1;
    let mut protocol = session.protocol;
    if let Some(version) = args.get(1) {
        match integer(version) {
            Some(2) => protocol = Protocol::Resp2,
            Some(3) => protocol = Protocol::Resp3,
            Some(_) => return Value::Error("NOPROTO unsupported protocol version".into()),
            None => {
                return Value::Error(
                    "ERR Protocol version is not an integer or out of range".into(),
                );
            }
        }
        i = 2;
    }
    while i < args.len() {
        let option = args[i].to_ascii_lowercase();
        if option == b"auth" && i + 2 < args.len() {
            let reply = auth(
                shared,
                session,
                &[b"auth".to_vec(), args[i + 1].clone(), args[i + 2].clone()],
            );
            if matches!(reply, Value::Error(_)) {
                return reply;
            }
            i += 3;
        } else if option == b"setname" && i + 1 < args.len() {
            session.name = Some(args[i + 1].clone());
            i += 2;
        } else {
            return Value::Error(format!(
                "ERR Syntax error in HELLO option '{}'",
                text(&args[i])
            ));
        }
    }
    if !session.authenticated {
        return Value::Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time".into());
    }
    session.protocol = protocol;
    let field = |s: &str| Value::Data(s.as_bytes().to_vec());
    Value::Array(vec![
        field("server"),
        field("redis"),
        field("version"),
        field(REDIS_VERSION),
        field("proto"),
        Value::Int(if protocol == Protocol::Resp3 { 3 } else { 2 }),
        field("id"),
        Value::Int(session.id as i64),
        field("mode"),
        field("standalone"),
        field("role"),
        field("master"),
        field("modules"),
        Value::Array(Vec::new()),
    ])
}

fn client(session: &mut Session, args: &[Vec<u8>]) -> Value {
    let sub = args[1].to_ascii_lowercase();
    let arity_error = || wrong_arity(&format!("client|{}", text(&sub)));
    match sub.as_slice() {
        b"setname" => {
            if args.len() != 3 {
                return arity_error();
            }
            let name = &args[2];
            if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
                return Value::Error(
                    "ERR Client names cannot contain spaces, newlines or special characters."
                        .into(),
                );
            }
            session.name = (!name.is_empty()).then(|| name.clone());
            ok()
        }
        b"getname" if args.len() == 2 => session.name.clone().map_or(Value::Nil, Value::Data),
        b"id" if args.len() == 2 => Value::Int(session.id as i64),
        // Redis 7.0 has no CLIENT SETINFO (7.2 added it); clients that send it ignore the
        // error, so the 7.0 reply below is what they get here too.
        b"getname" | b"id" => arity_error(),
        _ => Value::Error(format!(
            "ERR unknown subcommand '{}'. Try CLIENT HELP.",
            text(&args[1])
        )),
    }
}

fn info(shared: &Shared) -> String {
    format!(
        "# Server\r\nredis_version:{REDIS_VERSION}\r\nredis_mode:standalone\r\nnxlock_version:{}\r\nprocess_id:{}\r\ntcp_port:{}\r\n\r\n# Clients\r\nconnected_clients:{}\r\n\r\n# Keyspace\r\n",
        env!("CARGO_PKG_VERSION"),
        std::process::id(),
        shared.port,
        shared.clients()
    )
}
