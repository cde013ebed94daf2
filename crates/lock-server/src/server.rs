//! [`Server`]: the listener, its databases and its clients.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use lock_core::{Clock, ErrorKind, KvBackend, Script, Value, WatchMark};
use lock_memory::MemoryBackend;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::blocking::Blocked;
use crate::commands::keyspace;
use crate::connection;
use crate::lua::Engine;

/// Redis's 16 databases (`SELECT 0` … `SELECT 15`).
pub const DATABASES: usize = 16;

/// How to run a [`Server`].
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Address to listen on. Default 127.0.0.1: the double is for tests, not networks.
    pub bind: IpAddr,
    /// Port; 0 (the default) picks a free one.
    pub port: u16,
    /// Password clients must AUTH with; `None` (default) lets everyone in.
    pub requirepass: Option<String>,
    /// Connections served at once; more are refused with Redis's error. Default 10,000.
    pub max_clients: usize,
    /// A Lua script running longer is stopped with an error reply (Redis would keep it
    /// running and answer BUSY to others). Default 5 s, Redis's `lua-time-limit`.
    pub script_time_limit: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            requirepass: None,
            max_clients: 10_000,
            script_time_limit: Duration::from_secs(5),
        }
    }
}

/// Runs one keyspace command inside a database's atomic section. Its "Lua" is never sent
/// anywhere: the server only runs the native body.
static KEYSPACE_COMMAND: LazyLock<Script> = LazyLock::new(|| {
    Script::new("nxlock-server-command", "-- runs natively in nxlock serve")
        .with_native(|store, _keys, args| Ok(keyspace::run(store, args)))
});

/// Starts watching every key in `KEYS`: the reply is each key's stamp and liveness.
static WATCH_KEYS: LazyLock<Script> = LazyLock::new(|| {
    Script::new("nxlock-server-watch", "-- runs natively in nxlock serve").with_native(
        |store, keys, _args| {
            let mut marks = Vec::new();
            for key in keys {
                let mark = store.watch(key)?;
                marks.push(Value::Int(mark.stamp as i64));
                marks.push(Value::Int(mark.live.into()));
            }
            Ok(Value::Array(marks))
        },
    )
});

/// The reply for a failed store call. An injected connection fault becomes
/// [`DROP_CONNECTION`], so the client sees its connection reset, as with a real server.
pub(crate) fn error_reply(error: lock_core::Error) -> Value {
    if error.kind() == ErrorKind::Connection {
        return Value::Error(DROP_CONNECTION.into());
    }
    Value::Error(error.message().to_string())
}

/// A reply the connection never sends: it closes the socket instead. The NUL cannot
/// occur in a Redis error, so no real reply is mistaken for it.
pub(crate) const DROP_CONNECTION: &str = "\0nxlock: drop the connection";

/// What every connection shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) options: ServerOptions,
    pub(crate) port: u16,
    pub(crate) clock: Clock,
    dbs: Vec<MemoryBackend>,
    /// The Lua interpreter and script cache.
    pub(crate) lua: Arc<Engine>,
    /// Runs a cached Lua script natively inside a database's atomic section: `ARGV[1]` is
    /// its SHA1, `ARGV[2]` 1 for read-only, the rest its arguments.
    lua_runner: Script,
    clients: AtomicUsize,
    next_client_id: AtomicU64,
    /// Clients waiting in BLPOP.
    pub(crate) blocked: Blocked,
}

impl Shared {
    pub(crate) fn db(&self, index: usize) -> &MemoryBackend {
        &self.dbs[index]
    }

    pub(crate) fn requires_auth(&self) -> bool {
        self.options.requirepass.is_some()
    }

    pub(crate) fn clients(&self) -> usize {
        self.clients.load(Ordering::Relaxed)
    }

    /// Runs a cached script atomically in database `db` (see `lua_runner`).
    pub(crate) async fn run_script(&self, db: usize, keys: &[&[u8]], args: &[&[u8]]) -> Value {
        let reply = self.dbs[db].eval(&self.lua_runner, keys, args).await;
        self.serve_blocked(db).await;
        reply.unwrap_or_else(error_reply)
    }

    /// Checks and ends `watches` of database `db`, then (unless one changed) runs keyspace
    /// commands one after another, all in one atomic section (MULTI/EXEC), calling
    /// `after_each` with each command's index once it ran. The reply is the commands'
    /// replies, or a null array when a watched key changed (then nothing runs).
    pub(crate) async fn keyspace_batch(
        &self,
        db: usize,
        watches: &[(&[u8], WatchMark)],
        commands: &[Vec<Vec<u8>>],
        after_each: &mut (dyn FnMut(usize) + Send),
    ) -> Value {
        let ran = self.dbs[db]
            .atomically(|store| {
                let mut broken = false;
                for (key, mark) in watches {
                    broken |= store.watch_broken(key, *mark)?;
                    store.unwatch(key)?;
                }
                if broken {
                    return Ok(Value::NilArray);
                }
                let mut args: Vec<&[u8]> = Vec::new();
                let mut replies = Vec::with_capacity(commands.len());
                for (index, command) in commands.iter().enumerate() {
                    args.clear();
                    args.extend(command.iter().map(Vec::as_slice));
                    replies.push(keyspace::run(store, &args));
                    after_each(index);
                }
                Ok(Value::Array(replies))
            })
            .await;
        if ran.is_err() {
            // An injected fault stopped the step before it ended the watches; EXEC ends
            // them whatever happens, so they must not stay behind in the store.
            let keys: Vec<&[u8]> = watches.iter().map(|(key, _)| *key).collect();
            self.dbs[db].unwatch(&keys);
        }
        if !commands.is_empty() {
            self.serve_blocked(db).await;
        }
        ran.and_then(|reply| reply).unwrap_or_else(error_reply)
    }

    /// Starts watching `keys` in database `db`.
    pub(crate) async fn watch(&self, db: usize, keys: &[Vec<u8>]) -> Result<Vec<WatchMark>, Value> {
        let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let reply = self.dbs[db].eval(&WATCH_KEYS, &keys, &[]).await;
        match reply.map_err(error_reply)? {
            Value::Array(numbers) => Ok(numbers
                .chunks(2)
                .map(|pair| WatchMark {
                    stamp: pair[0].as_int().unwrap_or(0) as u64,
                    live: pair.get(1).and_then(Value::as_int) == Some(1),
                })
                .collect()),
            other => Err(other),
        }
    }

    /// Runs a keyspace command atomically in database `db`.
    pub(crate) async fn keyspace(&self, db: usize, args: &[Vec<u8>]) -> Value {
        let reply = self.keyspace_unserved(db, args).await;
        if self.blocked.any() && keyspace::lookup(&args[0]).is_some_and(keyspace::writes) {
            self.blocked.serve(self, db).await;
        }
        reply
    }

    /// [`Shared::keyspace`] without serving blocked clients afterwards.
    pub(crate) async fn keyspace_unserved(&self, db: usize, args: &[Vec<u8>]) -> Value {
        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let reply = self.dbs[db].eval(&KEYSPACE_COMMAND, &[], &args).await;
        // Injected faults and the like: the error's text is the reply.
        reply.unwrap_or_else(error_reply)
    }

    /// Puts back a `[key, element]` that BLPOP took for a client that has gone.
    pub(crate) async fn unpop(&self, db: usize, popped: &[Value]) {
        if let [Value::Data(key), Value::Data(element)] = popped {
            let command = [b"lpush".to_vec(), key.clone(), element.clone()];
            self.keyspace_unserved(db, &command).await;
        }
    }

    /// Hands elements pushed to database `db` to the clients blocked on them.
    pub(crate) async fn serve_blocked(&self, db: usize) {
        if self.blocked.any() {
            self.blocked.serve(self, db).await;
        }
    }
}

/// A Redis-protocol server over nxlock's in-memory double.
///
/// ```no_run
/// # async fn demo() -> std::io::Result<()> {
/// use lock_server::{Server, ServerOptions};
/// let server = Server::start(ServerOptions::default()).await?;
/// let url = server.url(); // redis://127.0.0.1:<free port>
/// server.advance(std::time::Duration::from_secs(30)); // keys expire, no waiting
/// server.stop().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Server {
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Binds and starts serving in the background (on the current tokio runtime).
    pub async fn start(options: ServerOptions) -> std::io::Result<Server> {
        let listener = TcpListener::bind((options.bind, options.port)).await?;
        let addr = listener.local_addr()?;
        let clock = Clock::system();
        let lua = Arc::new(Engine::new(options.script_time_limit).map_err(std::io::Error::other)?);
        let engine = lua.clone();
        let lua_runner = Script::new("nxlock-server-lua", "-- runs natively in nxlock serve")
            .with_native(move |store, keys, args| {
                let sha = String::from_utf8_lossy(args[0]).into_owned();
                Ok(engine.run(store, &sha, keys, &args[2..], args[1] == b"1"))
            });
        let shared = Arc::new(Shared {
            lua,
            lua_runner,
            dbs: {
                let first = MemoryBackend::with_clock(clock.clone());
                let mut dbs: Vec<_> = (1..DATABASES)
                    .map(|_| MemoryBackend::with_shared_pubsub(clock.clone(), &first))
                    .collect();
                dbs.insert(0, first);
                dbs
            },
            clock,
            options,
            port: addr.port(),
            clients: AtomicUsize::new(0),
            next_client_id: AtomicU64::new(1),
            blocked: Blocked::default(),
        });
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(accept_loop(listener, shared.clone(), stopped));
        Ok(Server {
            shared,
            addr,
            stop,
            task,
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `redis://host:port`, for any client.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Database `index` (0–15; `None` beyond) as a [`MemoryBackend`]: dump it, inject
    /// faults into it. Faults apply to every keyspace command and script the server runs
    /// in that database.
    pub fn db(&self, index: usize) -> Option<&MemoryBackend> {
        self.shared.dbs.get(index)
    }

    /// Moves every database's clock forward: keys expire as if `by` had passed.
    pub fn advance(&self, by: Duration) {
        self.shared.clock.advance(by);
    }

    /// Stops accepting and closes every connection.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, stopped: watch::Receiver<bool>) {
    let mut stop = stopped.clone();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.changed() => return,
        };
        let Ok((stream, _)) = accepted else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let id = shared.next_client_id.fetch_add(1, Ordering::Relaxed);
        let over_limit =
            shared.clients.fetch_add(1, Ordering::AcqRel) >= shared.options.max_clients;
        let (shared, stopped) = (shared.clone(), stopped.clone());
        tokio::spawn(async move {
            connection::serve(stream, &shared, id, over_limit, stopped).await;
            shared.clients.fetch_sub(1, Ordering::AcqRel);
        });
    }
}
