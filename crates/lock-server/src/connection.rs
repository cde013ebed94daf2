//! One client connection: read requests, hand each to dispatch in order, write the
//! replies. Pipelined requests are all answered in one write. Published messages are
//! written as soon as they arrive, and those a command causes go right before its reply,
//! where Redis writes them. A BLPOP with nothing to pop waits here, on the socket.

use lock_core::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch as signal;

use crate::blocking::{self, Ticket};
use crate::client::Client;
use crate::commands::pubsub::Subscriptions;
use crate::commands::{dispatch, lists, transaction};
use crate::pipeline::Pipeline;
use crate::reply::{self, Protocol, Reply, encode, encode_event, encode_in};
use crate::request::{ProtocolError, parse};
use crate::shared::Shared;

type StopSignal = signal::Receiver<bool>;

pub(crate) async fn serve(
    stream: TcpStream,
    shared: &Shared,
    id: u64,
    over_limit: bool,
    stopped: StopSignal,
) {
    let mut client = Client::new(id, shared.requires_auth());
    converse(stream, shared, &mut client, over_limit, stopped).await;
    let _ = transaction::release_watches(shared, &mut client, None).await;
    client.subscriptions.clear(shared);
}

async fn converse(
    mut stream: TcpStream,
    shared: &Shared,
    client: &mut Client,
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
    let mut buffer = Vec::with_capacity(16 * 1024);
    let mut pipeline = Pipeline::default();
    loop {
        let mut used = 0;
        let mut close = false;
        loop {
            let args = match parse(&buffer[used..], client.authenticated) {
                Ok(Some((args, length))) => {
                    used += length;
                    args
                }
                Ok(None) => break,
                Err(ProtocolError(text)) => {
                    let flushed = flush(shared, client, &mut pipeline, &mut out).await;
                    if flushed.is_err() {
                        return hang_up(&mut stream, &out).await;
                    }
                    encode(&Value::Error(text), &mut out);
                    close = true;
                    break;
                }
            };
            if args.is_empty() {
                continue;
            }
            let args = if client.plain() {
                match pipeline.gather(shared, client.db, args) {
                    Some(args) => args,
                    None => continue,
                }
            } else {
                args
            };
            if flush(shared, client, &mut pipeline, &mut out)
                .await
                .is_err()
            {
                return hang_up(&mut stream, &out).await;
            }
            // Events already delivered come first; then those the command caused, before
            // its reply, as Redis writes them when it publishes.
            write_events(client.protocol, client.subscriptions.drain(), &mut out);
            let replies = dispatch::execute(shared, client, args, true).await;
            write_events(client.protocol, client.subscriptions.drain(), &mut out);
            let Ok(replies) = replies else {
                return hang_up(&mut stream, &out).await;
            };
            for reply in replies {
                let Reply::Block(command) = reply else {
                    reply::write(client.protocol, &reply, &mut out);
                    continue;
                };
                // Everything before this reply must reach the client first.
                if !out.is_empty() && stream.write_all(&out).await.is_err() {
                    return;
                }
                out.clear();
                let waiting = Waiting {
                    stream: &mut stream,
                    buffer: &mut buffer,
                    stopped: &mut stopped,
                    subscriptions: &mut client.subscriptions,
                    protocol: client.protocol,
                };
                match block(shared, client.db, command, waiting).await {
                    Some(value) => encode_in(client.protocol, &value, &mut out),
                    None => return,
                }
            }
            if client.quit {
                close = true;
                break;
            }
        }
        if flush(shared, client, &mut pipeline, &mut out)
            .await
            .is_err()
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
            events = client.subscriptions.next_events() => {
                write_events(client.protocol, events, &mut out);
            }
            _ = stopped.changed() => return,
        }
    }
}

/// Runs the pipelined commands gathered so far.
async fn flush(
    shared: &Shared,
    client: &mut Client,
    pipeline: &mut Pipeline,
    out: &mut Vec<u8>,
) -> Result<(), reply::Hangup> {
    let protocol = client.protocol;
    pipeline
        .flush(shared, protocol, &mut client.subscriptions, out)
        .await
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
    let timeout_ms = lists::blpop_timeout(&timeout_arg, shared.clock.now_ms()).unwrap_or(0);
    let mut ticket = shared.blocked.enqueue(db, command).await;
    // A push may have landed between the first try and joining the queue.
    blocking::serve(shared, db).await;
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
            blocking::unpop(shared, db, popped).await;
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
