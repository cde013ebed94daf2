//! One client connection: read requests, run them in order, write the replies. Pipelined
//! requests are all answered in one write.

use lock_core::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::commands::{connection as conn_commands, keyspace, unknown_command};
use crate::reply::encode;
use crate::request::{ProtocolError, parse};
use crate::server::Shared;
use crate::session::Session;

pub(crate) async fn serve(
    mut stream: TcpStream,
    shared: &Shared,
    id: u64,
    over_limit: bool,
    mut stopped: watch::Receiver<bool>,
) {
    let mut out = Vec::new();
    if over_limit {
        encode(
            &Value::Error("ERR max number of clients reached".into()),
            &mut out,
        );
        let _ = stream.write_all(&out).await;
        return;
    }
    let mut session = Session::new(id, shared.requires_auth());
    let mut buffer = Vec::with_capacity(16 * 1024);
    loop {
        let mut used = 0;
        let mut close = false;
        loop {
            match parse(&buffer[used..], session.authenticated) {
                Ok(Some((args, length))) => {
                    used += length;
                    if args.is_empty() {
                        continue;
                    }
                    let reply = execute(shared, &mut session, args).await;
                    encode(&reply, &mut out);
                    if session.quit {
                        close = true;
                        break;
                    }
                }
                Ok(None) => break,
                Err(ProtocolError(text)) => {
                    encode(&Value::Error(text), &mut out);
                    close = true;
                    break;
                }
            }
        }
        buffer.drain(..used);
        if !out.is_empty() {
            if stream.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
        if close {
            return;
        }
        let read = tokio::select! {
            read = stream.read_buf(&mut buffer) => read,
            _ = stopped.changed() => return,
        };
        match read {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Runs one request.
async fn execute(shared: &Shared, session: &mut Session, args: Vec<Vec<u8>>) -> Value {
    let name = &args[0];
    let connection_command = conn_commands::lookup(name);
    if !session.authenticated && !matches!(connection_command, Some(("auth" | "hello" | "quit", _)))
    {
        return Value::Error("NOAUTH Authentication required.".into());
    }
    if let Some((name, arity)) = connection_command {
        return conn_commands::run(shared, session, name, arity, &args).await;
    }
    if keyspace::lookup(name).is_some() {
        return shared.keyspace(session.db, &args).await;
    }
    unknown_command(&args)
}
