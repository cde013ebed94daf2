//! One client connection: read requests, run them in order, write the replies. Pipelined
//! requests are all answered in one write. Published messages are written as soon as
//! they arrive, and those a command causes go right before its reply, where Redis writes
//! them.

use lock_core::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch as signal;

use crate::blocking::Ticket;
use crate::commands::pubsub::{self, Subscriptions};
use crate::commands::{
    arity_ok, connection as conn_commands, keyspace, scripting, transaction, unknown_command,
    watch, wrong_arity,
};
use crate::pipeline::Pipeline;
use crate::reply::{
    Protocol, encode, encode_event, encode_in, encode_interleaved, encode_map, encode_push,
};
use crate::request::{ProtocolError, parse};
use crate::server::{DROP_CONNECTION, Shared};
use crate::session::Session;

type StopSignal = signal::Receiver<bool>;

pub(crate) async fn serve(
    stream: TcpStream,
    shared: &Shared,
    id: u64,
    over_limit: bool,
    stopped: StopSignal,
) {
    let mut session = Session::new(id, shared.requires_auth());
    converse(stream, shared, &mut session, over_limit, stopped).await;
    watch::release(shared, &mut session, None).await;
}

async fn converse(
    mut stream: TcpStream,
    shared: &Shared,
    session: &mut Session,
    over_limit: bool,
    mut stopped: StopSignal,
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
    let mut subscriptions = Subscriptions::default();
    let mut buffer = Vec::with_capacity(16 * 1024);
    let mut pipeline = Pipeline::default();
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
                    let args = if plain(session, &subscriptions) {
                        match pipeline.gather(shared, session.db, args) {
                            Some(args) => args,
                            None => continue,
                        }
                    } else {
                        args
                    };
                    if !pipeline
                        .flush(shared, session.protocol, &mut subscriptions, &mut out)
                        .await
                    {
                        return hang_up(&mut stream, &out).await;
                    }
                    let hello = args[0].eq_ignore_ascii_case(b"hello");
                    let subscribing = [
                        &b"subscribe"[..],
                        b"unsubscribe",
                        b"psubscribe",
                        b"punsubscribe",
                    ]
                    .iter()
                    .any(|name| args[0].eq_ignore_ascii_case(name));
                    let may_block =
                        args[0].eq_ignore_ascii_case(b"blpop") && session.transaction.is_none();
                    let command = may_block.then(|| args.clone());
                    // Events already delivered come first; then those the command caused,
                    // before its reply, as Redis writes them when it publishes.
                    write_events(session.protocol, subscriptions.drain(), &mut out);
                    let mut replies = execute(shared, session, &mut subscriptions, args).await;
                    write_events(session.protocol, subscriptions.drain(), &mut out);
                    if let (Some(command), [Value::NilArray]) = (command, replies.as_slice()) {
                        // Everything before this reply must reach the client first.
                        if !out.is_empty() && stream.write_all(&out).await.is_err() {
                            return;
                        }
                        out.clear();
                        let waiting = Waiting {
                            stream: &mut stream,
                            buffer: &mut buffer,
                            stopped: &mut stopped,
                            subscriptions: &mut subscriptions,
                            protocol: session.protocol,
                        };
                        match block(shared, session.db, command, waiting).await {
                            Some(reply) => replies = vec![reply],
                            None => return,
                        }
                    }
                    if replies.iter().any(drops_connection) {
                        return hang_up(&mut stream, &out).await;
                    }
                    let exec_events = std::mem::take(&mut session.exec_events);
                    for reply in replies {
                        match &reply {
                            Value::Array(items) if !exec_events.is_empty() => {
                                encode_interleaved(session.protocol, items, &exec_events, &mut out)
                            }
                            _ => {
                                write_reply(session.protocol, &reply, hello, subscribing, &mut out)
                            }
                        }
                    }
                    if session.quit {
                        close = true;
                        break;
                    }
                }
                Ok(None) => break,
                Err(ProtocolError(text)) => {
                    if !pipeline
                        .flush(shared, session.protocol, &mut subscriptions, &mut out)
                        .await
                    {
                        return hang_up(&mut stream, &out).await;
                    }
                    encode(&Value::Error(text), &mut out);
                    close = true;
                    break;
                }
            }
        }
        if !pipeline
            .flush(shared, session.protocol, &mut subscriptions, &mut out)
            .await
        {
            return hang_up(&mut stream, &out).await;
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
        tokio::select! {
            read = stream.read_buf(&mut buffer) => match read {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
            events = subscriptions.next_events() => {
                write_events(session.protocol, events, &mut out);
            }
            _ = stopped.changed() => return,
        }
    }
}

/// Writes pub/sub events: pushes under RESP3.
fn write_events(protocol: Protocol, events: Vec<Value>, out: &mut Vec<u8>) {
    for event in &events {
        encode_event(protocol, event, out);
    }
}

/// An injected connection fault: the client gets the replies of the commands that ran
/// before it, then the connection closes where the faulted command's reply would be.
async fn hang_up(stream: &mut TcpStream, out: &[u8]) {
    let _ = stream.write_all(out).await;
}

/// Whether the session is in its ordinary state, where a keyspace command may join the
/// pipeline: authenticated, no MULTI open, not restricted by a RESP2 subscription.
fn plain(session: &Session, subscriptions: &Subscriptions) -> bool {
    session.authenticated
        && session.transaction.is_none()
        && !(subscriptions.active() && session.protocol == Protocol::Resp2)
}

/// Whether `reply` carries the injected-connection-fault marker, at any depth: EXEC
/// nests the replies of the commands it ran.
fn drops_connection(reply: &Value) -> bool {
    match reply {
        Value::Error(text) => text == DROP_CONNECTION,
        Value::Array(items) => items.iter().any(drops_connection),
        _ => false,
    }
}

/// What a blocked client keeps watching: its socket (requests that arrive meanwhile are
/// buffered, as Redis does), the server's stop signal, and its subscriptions (a RESP3
/// client gets its pushes while blocked).
struct Waiting<'a> {
    stream: &'a mut TcpStream,
    buffer: &'a mut Vec<u8>,
    stopped: &'a mut StopSignal,
    subscriptions: &'a mut Subscriptions,
    protocol: Protocol,
}

/// BLPOP found every list empty: wait, in line with other blocked clients, for an
/// element or the timeout (on the server's clock, so fast-forward ends it). `None` when
/// the client leaves or the server stops meanwhile.
async fn block(
    shared: &Shared,
    db: usize,
    command: Vec<Vec<u8>>,
    waiting: Waiting<'_>,
) -> Option<Value> {
    let timeout_arg = command.last().cloned().unwrap_or_default();
    let timeout_ms = keyspace::blpop_timeout(&timeout_arg, shared.clock.now_ms()).unwrap_or(0);
    let mut ticket = shared.blocked.enqueue(db, command).await;
    // A push may have landed between the first try and joining the queue.
    shared.blocked.serve(shared, db).await;
    let timeout = async {
        match timeout_ms {
            0 => std::future::pending().await,
            ms => {
                shared
                    .clock
                    .sleep(std::time::Duration::from_millis(ms))
                    .await
            }
        }
    };
    tokio::pin!(timeout);
    let client_left = loop {
        tokio::select! {
            reply = &mut ticket.reply => return Some(reply.unwrap_or(Value::NilArray)),
            _ = &mut timeout => break false,
            read = waiting.stream.read_buf(waiting.buffer) => match read {
                Ok(0) | Err(_) => break true,
                Ok(_) => {}
            },
            _ = waiting.stopped.changed() => break true,
            events = waiting.subscriptions.next_events() => {
                let mut pushes = Vec::new();
                write_events(waiting.protocol, events, &mut pushes);
                if waiting.stream.write_all(&pushes).await.is_err() {
                    break true;
                }
            }
        }
    };
    let reply = leave(shared, &mut ticket).await;
    if client_left {
        if let Value::Array(popped) = &reply {
            shared.unpop(db, popped).await;
        }
        return None;
    }
    Some(reply)
}

/// Leaves the queue: a null array, or the element that was handed over just before.
async fn leave(shared: &Shared, ticket: &mut Ticket) -> Value {
    if shared.blocked.leave(ticket).await {
        return Value::NilArray;
    }
    ticket.reply.try_recv().unwrap_or(Value::NilArray)
}

/// MULTI/EXEC/DISCARD, and queueing while a transaction is open; `None` when the request
/// is not part of a transaction.
async fn transaction_step(
    shared: &Shared,
    session: &mut Session,
    subscriptions: &mut Subscriptions,
    name: &[u8],
    args: &[Vec<u8>],
) -> Option<Value> {
    match name {
        b"multi" => return Some(transaction::multi(session, args)),
        b"discard" => {
            let reply = transaction::discard(session);
            if reply == Value::Status("OK".into()) {
                watch::release(shared, session, None).await;
            }
            return Some(reply);
        }
        b"watch" if session.transaction.is_some() => {
            return Some(Value::Error("ERR WATCH inside MULTI is not allowed".into()));
        }
        b"exec" => {
            let Some(block) = session.transaction.take() else {
                return Some(Value::Error("ERR EXEC without MULTI".into()));
            };
            // Watches elsewhere are checked first; this database's atomically with the block.
            let db = session.db;
            let broken_elsewhere = watch::release(shared, session, Some(db)).await;
            let here = std::mem::take(&mut session.watched);
            let watches = watch::marks_of(&here, db);
            if block.refused || broken_elsewhere {
                if !watches.is_empty() {
                    shared.keyspace_batch(db, &watches, &[], &mut |_| {}).await;
                }
                return Some(if block.refused {
                    Value::Error(
                        "EXECABORT Transaction discarded because of previous errors.".into(),
                    )
                } else {
                    Value::NilArray
                });
            }
            // Events a command causes go inside the EXEC reply, before its element.
            let mut events = Vec::new();
            if transaction::all_keyspace(&block.queued) {
                let mut observe = |index: usize| subscriptions.drain_into(index, &mut events);
                let reply = shared
                    .keyspace_batch(db, &watches, &block.queued, &mut observe)
                    .await;
                session.exec_events = events;
                return Some(reply);
            }
            if !watches.is_empty()
                && shared.keyspace_batch(db, &watches, &[], &mut |_| {}).await == Value::NilArray
            {
                return Some(Value::NilArray);
            }
            let mut replies = Vec::new();
            for command in block.queued {
                let mut results = Box::pin(execute(shared, session, subscriptions, command)).await;
                subscriptions.drain_into(replies.len(), &mut events);
                replies.append(&mut results);
            }
            session.exec_events = events;
            return Some(Value::Array(replies));
        }
        _ => {}
    }
    let block = session.transaction.as_mut()?;
    if transaction::controls_transaction(name) {
        return None;
    }
    Some(transaction::queue(block, name, args.to_vec()))
}

/// Writes one reply in the connection's protocol: HELLO's as a map and pub/sub events as
/// pushes under RESP3.
fn write_reply(protocol: Protocol, reply: &Value, hello: bool, event: bool, out: &mut Vec<u8>) {
    match reply {
        Value::Array(items) if hello => encode_map(protocol, items, out),
        Value::Array(items) if event && pubsub::is_event(reply) => {
            encode_push(protocol, items, out)
        }
        _ => encode_in(protocol, reply, out),
    }
}

/// Runs one request; most have one reply, (UN)SUBSCRIBE one per channel.
async fn execute(
    shared: &Shared,
    session: &mut Session,
    subscriptions: &mut Subscriptions,
    args: Vec<Vec<u8>>,
) -> Vec<Value> {
    let name = args[0].to_ascii_lowercase();
    let connection_command = conn_commands::lookup(&name);
    if !session.authenticated && !matches!(connection_command, Some(("auth" | "hello" | "quit", _)))
    {
        return vec![Value::Error("NOAUTH Authentication required.".into())];
    }
    // RESP3 connections may run anything while subscribed (events arrive as pushes).
    let restricted = subscriptions.active() && session.protocol == Protocol::Resp2;
    if restricted && !pubsub::allowed_while_subscribed(&name) {
        let known = connection_command.is_some()
            || scripting::lookup(&name).is_some()
            || keyspace::lookup(&name).is_some();
        if !known {
            return vec![unknown_command(&args)];
        }
        return vec![Value::Error(format!(
            "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
            String::from_utf8_lossy(&name)
        ))];
    }
    if let Some(reply) = transaction_step(shared, session, subscriptions, &name, &args).await {
        return vec![reply];
    }
    match name.as_slice() {
        b"subscribe" => return subscriptions.subscribe(shared, &args).await,
        b"unsubscribe" => return subscriptions.unsubscribe(shared, &args),
        b"psubscribe" => return subscriptions.psubscribe(shared, &args).await,
        b"punsubscribe" => return subscriptions.punsubscribe(shared, &args),
        b"ping" if restricted => return vec![pubsub::subscribed_ping(&args)],
        b"reset" => subscriptions.clear(shared),
        _ => {}
    }
    // Keyspace commands check their arity where they run, since Lua calls them too.
    let reply = match connection_command.or_else(|| scripting::lookup(&name)) {
        Some((name, arity)) if !arity_ok(arity, args.len()) => wrong_arity(name),
        Some((name, _)) if connection_command.is_some() => {
            conn_commands::run(shared, session, name, &args).await
        }
        Some((name, _)) => scripting::run(shared, session, name, &args).await,
        None if keyspace::lookup(&name).is_some() => shared.keyspace(session.db, &args).await,
        None => unknown_command(&args),
    };
    vec![reply]
}
