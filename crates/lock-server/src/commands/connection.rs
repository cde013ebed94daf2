//! Connection commands: PING, ECHO, QUIT, SELECT, AUTH, HELLO, CLIENT and RESET. All but
//! PING and ECHO need the client.

use lock_core::{RedisVersion, Value};

use crate::protocol::args::{NOT_AN_INTEGER, SYNTAX_ERROR, integer, ok, wrong_arity};
use crate::protocol::reply::Protocol;
use crate::state::client::Client;
use crate::state::options::DATABASES;
use crate::state::protected_mode::password_matches;
use crate::state::shared::Shared;

/// The connection commands that need the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Connection {
    Quit,
    Select,
    Auth,
    Hello,
    Client,
    Reset,
}

/// The database `SELECT index` picks, or Redis's refusal.
pub(crate) fn select_index(index: &[u8], cluster: bool) -> Result<usize, &'static str> {
    match integer(index) {
        None => Err(NOT_AN_INTEGER),
        Some(db) if db != 0 && cluster => Err("ERR SELECT is not allowed in cluster mode"),
        Some(db) if (0..DATABASES as i64).contains(&db) => Ok(db as usize),
        Some(_) => Err("ERR DB index is out of range"),
    }
}

/// `PING [message]`: from a client, a pipeline, EXEC or a script alike.
pub(crate) fn ping(args: &[&[u8]], _: RedisVersion) -> Result<Value, String> {
    match args {
        [_] => Ok(Value::Status("PONG".into())),
        [_, message] => Ok(Value::Data(message.to_vec())),
        _ => Err(crate::protocol::args::wrong_arity_text("ping")),
    }
}

/// `ECHO message`.
pub(crate) fn echo(args: &[&[u8]], _: RedisVersion) -> Result<Value, String> {
    Ok(Value::Data(args[1].to_vec()))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `which` for `client` (its arity already checked; for RESET, its watches already
/// ended).
pub(crate) fn run(
    shared: &Shared,
    client: &mut Client,
    which: Connection,
    args: &[Vec<u8>],
) -> Value {
    match which {
        Connection::Quit => {
            client.quit = true;
            ok()
        }
        Connection::Select => match select_index(&args[1], shared.options.cluster) {
            Ok(db) => {
                client.db = db;
                ok()
            }
            Err(text) => Value::Error(text.into()),
        },
        Connection::Auth => auth(shared, client, args),
        Connection::Hello => hello(shared, client, args),
        Connection::Client => super::client_command::run(shared, client, args),
        Connection::Reset => reset(shared, client),
    }
}

/// `RESET`, once the runner has ended the client's watches (which runs commands): the
/// connection as new, but for its id and the signals and inbox the server knows it by.
fn reset(shared: &Shared, client: &mut Client) -> Value {
    client.subscriptions.clear(shared);
    shared.tracking.disable(client.id, shared.dbs());
    // The connection's signals and inbox stay: the server holds their addresses.
    let fresh = Client::new(client.id, shared.requires_auth());
    let old = std::mem::replace(client, fresh);
    client.kill = old.kill;
    client.unblock = old.unblock;
    client.subscriptions = old.subscriptions;
    client.set_protocol(client.protocol);
    Value::Status("RESET".into())
}

fn auth(shared: &Shared, client: &mut Client, args: &[Vec<u8>]) -> Value {
    if args.len() > 3 {
        return Value::Error(SYNTAX_ERROR.into());
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
    if user == b"default" && password_matches(given, password.as_bytes()) {
        client.authenticated = true;
        ok()
    } else {
        wrong_pass()
    }
}

fn wrong_pass() -> Value {
    Value::Error("WRONGPASS invalid username-password pair or user is disabled.".into())
}

/// `HELLO [2|3 [AUTH user pass] [SETNAME name]]`: a map (a flat array in RESP2).
fn hello(shared: &Shared, client: &mut Client, args: &[Vec<u8>]) -> Value {
    let mut i = 1;
    let mut protocol = client.protocol;
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
                client,
                &[b"auth".to_vec(), args[i + 1].clone(), args[i + 2].clone()],
            );
            if matches!(reply, Value::Error(_)) {
                return reply;
            }
            i += 3;
        } else if option == b"setname" && i + 1 < args.len() {
            client.name = Some(args[i + 1].clone());
            i += 2;
        } else {
            return Value::Error(format!(
                "ERR Syntax error in HELLO option '{}'",
                text(&args[i])
            ));
        }
    }
    if !client.authenticated {
        return Value::Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time".into());
    }
    client.set_protocol(protocol);
    let field = |s: &str| Value::Data(s.as_bytes().to_vec());
    Value::Map(vec![
        (field("server"), field("redis")),
        (
            field("version"),
            field(shared.options.redis_version.release()),
        ),
        (
            field("proto"),
            Value::Int(if protocol == Protocol::Resp3 { 3 } else { 2 }),
        ),
        (field("id"), Value::Int(client.id as i64)),
        (field("mode"), field(super::cluster::mode(shared))),
        (field("role"), field("master")),
        (field("modules"), Value::Array(Vec::new())),
    ])
}
