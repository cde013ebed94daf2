//! One client connection: read requests, hand each to dispatch in order, write the
//! replies. Pipelined requests are all answered in one write. Published messages are
//! written as soon as they arrive, and those a command causes go right before its reply,
//! where Redis writes them. A BLPOP with nothing to pop waits here, on the socket.

use std::net::SocketAddr;
use std::sync::Arc;

use lock_core::Value;
use lock_memory::{MemoryReplicaSet, OverflowSignal, WriteOffset};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::sync::watch as signal;

use crate::commands::replication::Wait;
use crate::protocol::reply::{self, Protocol, Reply, encode, encode_event, encode_in};
use crate::protocol::request::{Parsed, ProtocolError, Request, read, read_rest};
use crate::run::pipeline::Pipeline;
use crate::run::steering::Steering;
use crate::run::{blocked, caching, dispatch, replicas, transaction};
use crate::state::blocked::Ticket;
use crate::state::client::{Buffers, Client, Replies, Unblock, UnblockMode};
use crate::state::clients::Reach;
use crate::state::observer::{After, Before};
use crate::state::protected_mode;
use crate::state::shared::Shared;
use crate::state::subscriptions::Subscriptions;
use crate::table;

type StopSignal = signal::Receiver<bool>;

/// A connection's read buffer to begin with.
const READ_BUFFER: usize = 16 * 1024;

/// A read buffer larger than this is dropped once its requests are read (a big value
/// made it grow).
const LARGE_BUFFER: usize = 1024 * 1024;

pub(crate) async fn serve(
    mut stream: TcpStream,
    peer: SocketAddr,
    shared: &Shared,
    id: u64,
    tag: Option<usize>,
    over_limit: bool,
    stopped: StopSignal,
) {
    // Redis refuses a client over `maxclients` first, then one protected mode keeps out.
    if !over_limit
        && protected_mode::refuses(shared.config.protected_mode(), shared.requires_auth(), peer)
    {
        shared.stats.rejected_connection();
        let _ = stream.write_all(protected_mode::DENIED.as_bytes()).await;
        return;
    }
    let mut client = Client::new(id, shared.requires_auth());
    client.tag = tag;
    let local = stream.local_addr().unwrap_or(peer);
    let reach = Reach {
        kill: client.kill.clone(),
        unblock: client.unblock.clone(),
        inbox: client.subscriptions.address().clone(),
    };
    shared
        .registry
        .open(id, peer, local, raw_fd(&stream), reach);
    converse(stream, shared, &mut client, over_limit, stopped).await;
    shared.registry.close(id);
    shared.tracking.disable(id, shared.dbs());
    let _ = transaction::release_watches(shared, &mut client, None).await;
    client.subscriptions.clear(shared);
}

/// A request's arguments: those read before a big argument was handed over, then the
/// rest.
fn joined(before: Option<(Vec<Vec<u8>>, usize)>, rest: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    match before {
        None => rest,
        Some((mut args, _)) => {
            args.extend(rest);
            args
        }
    }
}

/// The socket's file descriptor, as CLIENT LIST shows it (-1 where there is none).
fn raw_fd(stream: &TcpStream) -> i32 {
    #[cfg(unix)]
    {
        std::os::fd::AsRawFd::as_raw_fd(stream)
    }
    #[cfg(not(unix))]
    {
        let _ = stream;
        -1
    }
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
    let mut buffer = Vec::with_capacity(READ_BUFFER);
    // A request cut after a big argument handed over: its arguments so far, and how
    // many are still to come.
    let mut partial: Option<(Vec<Vec<u8>>, usize)> = None;
    let mut pipeline = Pipeline::default();
    let overflow = client.subscriptions.overflow_signal();
    // The peer went away while its replies were being written: the requests it sent
    // before it went still run (as Redis runs what it read), their replies dropped.
    let mut gone = false;
    loop {
        let mut used = 0;
        let mut close = false;
        loop {
            let unread = buffer.len() - used;
            let parsed = match &partial {
                Some((_, remaining)) => {
                    read_rest(&buffer[used..], *remaining, client.authenticated)
                }
                None => read(&buffer[used..], client.authenticated),
            };
            let args = match parsed {
                Ok(Parsed::Frame((args, length))) => {
                    used += length;
                    joined(partial.take(), args)
                }
                Ok(Parsed::Handoff(mut args, range, remaining)) => {
                    // The big value is the rest of the buffer: the buffer becomes the
                    // argument (its other bytes cut away), and reading starts afresh,
                    // with the request's other arguments still to come, if any.
                    let mut value = std::mem::replace(&mut buffer, Vec::with_capacity(READ_BUFFER));
                    value.truncate(used + range.end);
                    value.drain(..used + range.start);
                    *args.last_mut().expect("a last argument") = value;
                    used = 0;
                    let args = joined(partial.take(), args);
                    if remaining > 0 {
                        partial = Some((args, remaining));
                        continue;
                    }
                    args
                }
                Ok(Parsed::More(needed)) => {
                    // A big value still arriving: make room for exactly the rest of it.
                    if let Some(needed) = needed {
                        buffer.reserve_exact((used + needed).saturating_sub(buffer.len()));
                    }
                    break;
                }
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
            // A large request read whole: its buffer is let go before the command runs,
            // so that a big value is not held twice while it is stored.
            if used == buffer.len() && buffer.capacity() > LARGE_BUFFER {
                buffer = Vec::with_capacity(READ_BUFFER);
                used = 0;
            }
            if args.is_empty() {
                continue;
            }
            // The request's one lookup: everything after carries the command's place.
            let found = table::lookup_in(shared.options.redis_version, &args[0]);
            // An observed or faulted client's commands run one by one, each steered on
            // its own. The NXLOCK commands are never faulted: a test can always clear.
            let steering = match (client.tag, &shared.options.observer, &client.name) {
                (Some(tag), Some(observer), _) => Some(Steering::Explored {
                    tag,
                    observer: observer.as_ref(),
                }),
                (_, _, Some(name))
                    if shared.client_faults.applies(name) && !table::is_nxlock(&args[0]) =>
                {
                    Some(Steering::Faulted {
                        name: name.clone(),
                        faults: &shared.client_faults,
                    })
                }
                _ => None,
            };
            let args = if client.plain() && steering.is_none() {
                shared.registry.record(client, &args);
                match pipeline.gather(shared, client.db, found, args) {
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
            // Events already delivered come first; then those the command caused: before
            // its reply in Redis 7.0, which writes them when it publishes, and after it
            // from 7.2, which holds back pushes to the client whose command runs.
            let events = client.subscriptions.drain();
            write_events(client, events, &mut out);
            let named = args[..args.len().min(2)].to_vec();
            // CLIENT REPLY SKIP silences the command after it.
            client.replies = client.replies.starting();
            client.buffers = Buffers {
                query: unread,
                query_free: buffer.capacity() - buffer.len(),
                arguments: args.iter().map(Vec::len).sum(),
                reply: out.capacity(),
            };
            let observed = steering.map(|steering| (steering, args.clone()));
            if let Some((steering, args)) = &observed {
                let mut verdict = steering.before(args);
                loop {
                    match verdict {
                        Before::Run => break,
                        Before::Hold(pause) => {
                            if !out.is_empty() && stream.write_all(&out).await.is_err() {
                                return;
                            }
                            out.clear();
                            tokio::select! {
                                () = shared.clock.sleep(pause) => {}
                                _ = stopped.changed() => return,
                            }
                            verdict = match steering.held(args) {
                                Before::Hold(_) => Before::Run,
                                other => other,
                            };
                        }
                        Before::Refuse => return hang_up(&mut stream, &out).await,
                        Before::Unanswered(wait) => {
                            // The replies before it were sent: only this command is lost.
                            if !out.is_empty() && stream.write_all(&out).await.is_err() {
                                return;
                            }
                            tokio::select! {
                                () = shared.clock.sleep(wait) => {}
                                _ = stopped.changed() => {}
                            }
                            return;
                        }
                    }
                }
            }
            let reply_from = out.len();
            let caching_args = client.tracks.then(|| args.clone());
            // As Redis does before each command: a tracking table over its limit
            // forgets keys (their readers are told).
            if shared.tracking.active() {
                shared
                    .tracking
                    .limit(shared.config.tracking_max_keys(), &shared.registry);
            }
            let before = replicas::before_command(shared);
            let replies = dispatch::execute(shared, client, found, args, true).await;
            replicas::after_command(shared, client, before);
            client.buffers = Buffers::default();
            shared.registry.record(client, &named);
            if let (Some(args), Some(id)) = (&caching_args, found) {
                caching::remember_reads(shared, client, id, args);
            }
            // CLIENT CACHING counts for the one command after it.
            if !named[0].eq_ignore_ascii_case(b"client") && client.transaction.is_none() {
                client.caching = false;
            }
            let silent = client.replies != Replies::On;
            client.replies = client.replies.ended();
            let caused = client.subscriptions.drain();
            let caused = if shared.options.redis_version.pushes_after_reply() {
                Some(caused)
            } else {
                write_events(client, caused, &mut out);
                None
            };
            let Ok(replies) = replies else {
                return hang_up(&mut stream, &out).await;
            };
            for reply in replies {
                let Reply::Block(request) = reply else {
                    match &reply {
                        Reply::Value(value) => shared.stats.command(value),
                        Reply::ErrorBytes(_) => shared.stats.command(&Value::Error("ERR".into())),
                        _ => {}
                    }
                    // Pub/sub confirmations are pushes, which CLIENT REPLY does not
                    // silence.
                    if !silent || matches!(reply, Reply::Push(_)) {
                        reply::write(client.protocol, &reply, &mut out);
                    }
                    reply.release();
                    continue;
                };
                // Everything before this reply must reach the client first.
                if !out.is_empty() && stream.write_all(&out).await.is_err() {
                    return;
                }
                out.clear();
                let last_write = shared
                    .options
                    .replication
                    .as_ref()
                    .map(|set| (set, replicas::last_write(set, client)));
                let waiting = Waiting {
                    stream: &mut stream,
                    buffer: &mut buffer,
                    stopped: &mut stopped,
                    subscriptions: &mut client.subscriptions,
                    protocol: client.protocol,
                    kill: client.kill.clone(),
                    unblock: client.unblock.clone(),
                };
                let name =
                    table::introspection::stat_name(table::command(request.command), &request.args);
                let waited = std::time::Instant::now();
                // A CLIENT UNBLOCK meant for an earlier command is forgotten before this
                // one can be seen blocked: forgotten later, it could drop one meant for it.
                client.unblock.forget();
                shared.registry.set_blocked(client.id, true);
                let reply = match (replicas::waiting(shared, &request), last_write) {
                    (Some(wait), Some((set, last_write))) => {
                        block_on_replicas(shared, set, &last_write, &wait, waiting).await
                    }
                    _ => block(shared, client.db, request, waiting).await,
                };
                shared.registry.set_blocked(client.id, false);
                match reply {
                    Some(value) => {
                        shared.stats.command(&value);
                        let failed = matches!(value, Value::Error(_));
                        shared.stats.called(name, waited.elapsed(), failed);
                        if !silent {
                            encode_in(client.protocol, &value, &mut out);
                        }
                    }
                    None => return,
                }
            }
            if let Some(caused) = caused {
                write_events(client, caused, &mut out);
            }
            // Client-side caching: this client's own invalidations follow its reply.
            for invalidation in caching::invalidations(shared, client) {
                encode_event(client.protocol, &invalidation, &mut out);
            }
            if let Some((steering, args)) = &observed {
                // A blocked command wrote what came before it already.
                let reply_from = reply_from.min(out.len());
                match steering.after(args, &out[reply_from..]) {
                    After::Send => {}
                    After::Late(delay) => {
                        if stream.write_all(&out[..reply_from]).await.is_err() {
                            return;
                        }
                        out.drain(..reply_from);
                        tokio::select! {
                            () = shared.clock.sleep(delay) => {}
                            _ = stopped.changed() => return,
                        }
                    }
                    After::Lose => {
                        out.truncate(reply_from);
                        return hang_up(&mut stream, &out).await;
                    }
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
        for invalidation in caching::invalidations(shared, client) {
            encode_event(client.protocol, &invalidation, &mut out);
        }
        buffer.drain(..used);
        if gone {
            return;
        }
        if close {
            let _ = write_out(&mut stream, &mut out, None, &overflow, &client.kill).await;
            return;
        }
        if !out.is_empty() {
            match write_out(
                &mut stream,
                &mut out,
                Some(&mut buffer),
                &overflow,
                &client.kill,
            )
            .await
            {
                // Requests read while writing, and not run yet, run now.
                Written::All if !buffer.is_empty() => continue,
                Written::All => {}
                // What arrived is read before the rest of the replies is written.
                Written::Read => continue,
                Written::Gone => {
                    gone = true;
                    continue;
                }
                Written::Cut => return,
            }
        }
        tokio::select! {
            read = stream.read_buf(&mut buffer) => match read {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
            events = client.subscriptions.next_events() => {
                write_events(client, events, &mut out);
            }
            _ = stopped.changed() => return,
            () = client.kill.notified() => return,
            () = overflow.wait() => return,
        }
    }
}

/// How [`write_out`] ended.
enum Written {
    /// Every byte was written.
    All,
    /// Requests arrived while the client did not read its replies: they are in the
    /// buffer, and what was not written yet stays in `out`, ahead of their replies.
    Read,
    /// The peer went away (its socket closed or failed) before it had every reply.
    Gone,
    /// The client was killed, or passed its output-buffer limit: Redis then closes the
    /// connection without writing the rest.
    Cut,
}

/// Requests read while a reply is still unwritten are kept to this much; past it, the
/// socket is left unread until the client reads. Redis reads on and lets its output
/// buffer grow (to 1.2 GB for a 1M-command pipeline that is never read); this keeps such
/// a client near what it has in flight, while a request sent behind a big unread reply
/// (`GET big` then `DEL big`) is still read, and runs.
const READ_WHILE_WRITING: usize = 1024 * 1024;

/// Unsent replies past which requests read meanwhile wait, unrun, for the client to
/// read (or to go, when they run with their replies dropped).
const UNSENT_TO_RUN_MORE: usize = 1024 * 1024;

/// Writes `out` to the client, and drains from it what was written. With `buffer`, the
/// client's requests are read meanwhile, as Redis reads a client whose replies wait:
/// when some arrive (and the replies still unsent are not too many to add to), the
/// write stops so that they can run. A subscriber that never reads waits here while
/// its messages queue up, so this is where the output-buffer limit must cut in.
async fn write_out(
    stream: &mut TcpStream,
    out: &mut Vec<u8>,
    mut buffer: Option<&mut Vec<u8>>,
    overflow: &OverflowSignal,
    kill: &Notify,
) -> Written {
    let mut sent = 0;
    let ended = loop {
        if sent == out.len() {
            break Written::All;
        }
        let reading = buffer
            .as_ref()
            .is_some_and(|buffer| buffer.len() < READ_WHILE_WRITING);
        tokio::select! {
            ready = stream.writable() => {
                if ready.is_err() {
                    break Written::Gone;
                }
                match stream.try_write(&out[sent..]) {
                    Ok(n) => sent += n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => break Written::Gone,
                }
            }
            ready = stream.readable(), if reading => {
                let Some(buffer) = buffer.as_deref_mut() else { continue };
                if ready.is_err() {
                    break Written::Gone;
                }
                match stream.try_read_buf(buffer) {
                    // Redis too closes a client whose socket reads its end.
                    Ok(0) => break Written::Gone,
                    Ok(_) if out.len() - sent <= UNSENT_TO_RUN_MORE => break Written::Read,
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => break Written::Gone,
                }
            }
            () = overflow.wait() => break Written::Cut,
            () = kill.notified() => break Written::Cut,
        }
    };
    out.drain(..sent);
    // A big reply written, its buffer goes too: kept, it would hold the memory of the
    // biggest reply the connection ever sent for as long as the connection lives.
    if out.is_empty() && out.capacity() > LARGE_BUFFER {
        *out = Vec::new();
    }
    ended
}

/// Runs the pipelined commands gathered so far.
async fn flush(
    shared: &Shared,
    client: &mut Client,
    pipeline: &mut Pipeline,
    out: &mut Vec<u8>,
) -> Result<(), reply::Hangup> {
    let protocol = client.protocol;
    let before = replicas::before_command(shared);
    let flushed = pipeline
        .flush(shared, protocol, &mut client.subscriptions, out)
        .await;
    replicas::after_command(shared, client, before);
    flushed
}

/// Writes pub/sub events: pushes under RESP3. `CLIENT REPLY OFF` does not silence them.
fn write_events(client: &Client, events: Vec<Value>, out: &mut Vec<u8>) {
    for event in &events {
        encode_event(client.protocol, event, out);
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
    kill: Arc<Notify>,
    unblock: Arc<Unblock>,
}

/// What ended a blocked client's wait.
enum Waited<T> {
    /// What it waited for came.
    Done(T),
    /// The client left (or was killed), or the server stops.
    Left,
    /// `CLIENT UNBLOCK` picked it.
    Unblocked(UnblockMode),
}

/// What a blocked client unblocked by `CLIENT UNBLOCK … ERROR` is answered.
const UNBLOCKED: &str = "UNBLOCKED client unblocked via CLIENT UNBLOCK";

impl Waiting<'_> {
    /// Waits for `done` (polled first) while watching what every blocked client
    /// watches: its socket, the server's stop, `CLIENT KILL` and `CLIENT UNBLOCK`; the
    /// pushes of its subscriptions are written as they come.
    async fn until<T>(&mut self, done: impl std::future::Future<Output = T>) -> Waited<T> {
        tokio::pin!(done);
        loop {
            tokio::select! {
                biased;
                value = &mut done => return Waited::Done(value),
                read = self.stream.read_buf(self.buffer) => match read {
                    Ok(0) | Err(_) => return Waited::Left,
                    Ok(_) => {}
                },
                _ = self.stopped.changed() => return Waited::Left,
                () = self.kill.notified() => return Waited::Left,
                mode = self.unblock.requested() => return Waited::Unblocked(mode),
                events = self.subscriptions.next_events() => {
                    if !self.write_events(&events).await {
                        return Waited::Left;
                    }
                }
            }
        }
    }

    /// Writes `events` as pushes: false if the client has gone.
    async fn write_events(&mut self, events: &[Value]) -> bool {
        if events.is_empty() {
            return true;
        }
        let mut pushes = Vec::new();
        for event in events {
            encode_event(self.protocol, event, &mut pushes);
        }
        self.stream.write_all(&pushes).await.is_ok()
    }
}

/// A blocking command found nothing: wait, in line with other blocked clients, for an
/// element or the timeout (on the server's clock, so fast-forward ends it). `None` when
/// the client leaves or the server stops meanwhile.
async fn block(
    shared: &Shared,
    db: usize,
    request: Request,
    mut waiting: Waiting<'_>,
) -> Option<Value> {
    let (timeout_ms, on_timeout) = blocked::timeout(
        &request,
        shared.clock.now_ms(),
        shared.options.redis_version,
    );
    let mut ticket = shared
        .blocked
        .enqueue(
            db,
            request.clone(),
            waiting.protocol,
            waiting.subscriptions.address().clone(),
        )
        .await;
    // A push may have landed between the first try and joining the queue.
    blocked::serve(shared, db).await;
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
    // The reply first: when a push serves this client, the invalidations and events the
    // serving caused follow its reply, as Redis writes them; what was delivered before
    // the serving began goes before it.
    let served = async {
        tokio::select! {
            biased;
            served = &mut ticket.reply => Some(served),
            () = &mut timeout => None,
        }
    };
    let mut unblocked = None;
    let client_left = match waiting.until(served).await {
        Waited::Done(Some(served)) => {
            let Ok(served) = served else {
                return Some(Value::NilArray);
            };
            let before = waiting.subscriptions.drain_before(served.after);
            if !waiting.write_events(&before).await {
                return None;
            }
            return Some(served.reply);
        }
        Waited::Done(None) => false,
        Waited::Left => true,
        Waited::Unblocked(mode) => {
            unblocked = Some(mode);
            false
        }
    };
    let (reply, was_waiting) = leave(shared, &mut ticket, on_timeout).await;
    if client_left {
        blocked::unpop(shared, db, &request, &reply).await;
        return None;
    }
    // CLIENT UNBLOCK ... ERROR, unless an element was handed over first.
    if was_waiting && unblocked == Some(UnblockMode::Error) {
        return Some(Value::Error(UNBLOCKED.into()));
    }
    Some(reply)
}

/// A WAIT or WAITAOF on a replica set's node that asked for more replicas than have the
/// connection's last write: it waits for them or its timeout (on the set's clock), while
/// it watches its socket as any blocked client does. `None` when the client leaves, the
/// server stops, or the primary fails over (its connections die with it).
async fn block_on_replicas(
    shared: &Shared,
    set: &MemoryReplicaSet,
    last_write: &WriteOffset,
    wait: &Wait,
    mut waiting: Waiting<'_>,
) -> Option<Value> {
    let timeout = std::time::Duration::from_millis(wait.timeout_ms);
    let _counted = Counted::new(&shared.waiting_for_replicas);
    match waiting
        .until(set.wait_for(last_write, wait.replicas, timeout))
        .await
    {
        Waited::Done(acknowledged) => acknowledged.ok().map(|n| wait.reply_with(n)),
        Waited::Left => None,
        Waited::Unblocked(UnblockMode::Error) => Some(Value::Error(UNBLOCKED.into())),
        Waited::Unblocked(UnblockMode::Timeout) => Some(replicas::count_now(set, last_write, wait)),
    }
}

/// One more in a count for as long as it lives.
struct Counted<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> Counted<'a> {
    fn new(count: &'a std::sync::atomic::AtomicUsize) -> Self {
        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self(count)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Leaves the queue: `on_timeout` (what the command answers when its time is up) and
/// true, or the reply that was handed over just before and false.
async fn leave(shared: &Shared, ticket: &mut Ticket, on_timeout: Value) -> (Value, bool) {
    if shared.blocked.leave(ticket).await {
        return (on_timeout, true);
    }
    // Served just before it left: the rare events delivered meanwhile follow the reply.
    let served = ticket.reply.try_recv();
    (served.map_or(Value::NilArray, |served| served.reply), false)
}
