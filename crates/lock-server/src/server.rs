//! [`Server`]: the listener and its accept loop.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use lock_memory::MemoryBackend;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::watch;

use crate::connection;
use crate::lua::Engine;
use crate::state::options::{ServerOptions, TCP_BACKLOG};
use crate::state::shared::Shared;
use crate::state::{descriptors, protected_mode};
use crate::table;

/// A Redis-protocol server over nxlock's in-memory double. It stops when dropped (or by
/// [`Server::stop`], which also waits for the listener to close).
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
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Server {
    /// Binds and starts serving in the background (on the current tokio runtime).
    ///
    /// Like Redis, it first fits [`ServerOptions::max_clients`] to the process's file
    /// descriptors (raising the soft limit where the hard one allows):
    /// [`Server::warnings`] says when it had to lower it.
    pub async fn start(mut options: ServerOptions) -> std::io::Result<Server> {
        options.cluster |= options.cluster_layout.is_some();
        let fitted = descriptors::fit(options.max_clients);
        options.max_clients = fitted.max_clients;
        let listener = listen(SocketAddr::new(options.bind, options.port))?;
        let addr = listener.local_addr()?;
        let lua =
            Engine::new(options.redis_version, table::knows).map_err(std::io::Error::other)?;
        let mut warnings = fitted.warnings;
        warnings.extend(protected_mode::warning(
            options.bind,
            options.protected_mode,
            options.requirepass.is_some(),
        ));
        let mut shared = Shared::new(options, addr.port(), Box::new(lua));
        shared.warnings = warnings;
        let shared = Arc::new(shared);
        let (stop, stopped) = watch::channel(false);
        tokio::spawn(active_expiry(shared.clone(), stopped.clone()));
        let task = tokio::spawn(accept_loop(listener, shared.clone(), stopped, None));
        Ok(Server {
            shared,
            addr,
            stop,
            task: Some(task),
        })
    }

    /// What to warn of at start-up about this server's settings: that `maxclients` was
    /// lowered to fit the descriptor limit (as Redis logs it), or that the server is
    /// bound beyond loopback without a password. Empty when all is well.
    pub fn warnings(&self) -> &[String] {
        &self.shared.warnings
    }

    /// Listens on one more free port of the same interface for explored client
    /// `client`: every connection made to it is that client's, whose commands and
    /// markers [`ServerOptions::observer`] sees. The listener closes with the server.
    pub async fn listen_as(&self, client: usize) -> std::io::Result<SocketAddr> {
        let listener = listen(SocketAddr::new(self.addr.ip(), 0))?;
        let addr = listener.local_addr()?;
        tokio::spawn(accept_loop(
            listener,
            self.shared.clone(),
            self.stop.subscribe(),
            Some(client),
        ));
        Ok(addr)
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `redis://host:port`, for any client.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Database 0, the one clients use unless they SELECT another, as a
    /// [`MemoryBackend`]: dump it, inject faults into it (they apply to every keyspace
    /// command and script the server runs in that database).
    pub fn db(&self) -> &MemoryBackend {
        self.shared.db(0)
    }

    /// Database `index` (0–15; `None` beyond), as [`Server::db`] gives database 0.
    pub fn db_at(&self, index: usize) -> Option<&MemoryBackend> {
        self.shared.dbs().get(index)
    }

    /// Closes every connection that waits on this server without a command in flight of
    /// its own: blocked (BLPOP and its kin, WAIT) or subscribed. What the death of a
    /// primary that failed over does to its waiting clients, which would otherwise wait
    /// on a node nobody writes to any more (a connection that sends a command learns it
    /// then). How many were closed.
    pub fn disconnect_waiting(&self) -> usize {
        self.shared.registry.kill_waiting()
    }

    /// Moves every database's clock forward: keys expire as if `by` had passed.
    pub fn advance(&self, by: Duration) {
        self.shared.clock.advance(by);
    }

    /// Stops accepting, closes every connection, and waits for the listener to close.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Every connection and the accept loop watch this; they end on their own.
        let _ = self.stop.send(true);
    }
}

/// A listener on `addr` with Redis's backlog (tokio's `bind` takes the system's).
fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(TCP_BACKLOG)
}

/// Redis's active expiry, ten times a second (`hz 10`): each database reaps the expired
/// keys among the next 200, so that DBSIZE stops counting keys whose TTL has passed even
/// when no command touches them, and clients tracking them are told at once (no
/// client's command did it: the writer is none of them).
async fn active_expiry(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let mut every = tokio::time::interval(Duration::from_millis(100));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = stopped.changed() => return,
        }
        for db in shared.dbs() {
            db.reap_expired(200);
        }
        let own = shared
            .tracking
            .invalidate(NO_CLIENT, shared.dbs(), &shared.registry);
        debug_assert!(own.is_empty(), "no connection has id 0");
        shared
            .tracking
            .limit(shared.config.tracking_max_keys(), &shared.registry);
    }
}

/// Client ids start at 1: this one is the server's own doing.
const NO_CLIENT: u64 = 0;

/// The longest wait before accepting again after the process ran out of descriptors.
const MAX_ACCEPT_BACKOFF: Duration = Duration::from_secs(1);

/// How long to wait after a failed accept, `previous` being the last wait (zero after a
/// success). Out of descriptors or memory, accepting again at once fails again at once:
/// the wait doubles from 1 ms up to a second, and the queued connections wait in the
/// backlog meanwhile. Other failures (a peer that reset before it was accepted) concern
/// one connection only.
fn accept_backoff(error: &std::io::Error, previous: Duration) -> Duration {
    let exhausted = matches!(error.raw_os_error(), Some(code) if is_exhaustion(code))
        || error.kind() == std::io::ErrorKind::OutOfMemory;
    if !exhausted {
        return Duration::ZERO;
    }
    (previous * 2).clamp(Duration::from_millis(1), MAX_ACCEPT_BACKOFF)
}

/// EMFILE, ENFILE, ENOBUFS or ENOMEM.
fn is_exhaustion(code: i32) -> bool {
    #[cfg(target_os = "linux")]
    {
        matches!(code, 24 | 23 | 105 | 12)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = code;
        false
    }
}

/// Accepts connections until the server stops; each is client `tag`'s when it has one.
async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    stopped: watch::Receiver<bool>,
    tag: Option<usize>,
) {
    let mut stop = stopped.clone();
    let mut backoff = Duration::ZERO;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.changed() => return,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => {
                backoff = Duration::ZERO;
                accepted
            }
            Err(error) => {
                backoff = accept_backoff(&error, backoff);
                if !backoff.is_zero() {
                    tokio::select! {
                        () = tokio::time::sleep(backoff) => {}
                        _ = stop.changed() => return,
                    }
                }
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (id, over_limit) = shared.connected();
        let (shared, stopped) = (shared.clone(), stopped.clone());
        tokio::spawn(async move {
            connection::serve(stream, peer, &shared, id, tag, over_limit, stopped).await;
            shared.disconnected();
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepting_backs_off_only_when_descriptors_run_out() {
        let emfile = std::io::Error::from_raw_os_error(24);
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionAborted);
        let mut wait = Duration::ZERO;
        let mut waits = Vec::new();
        for _ in 0..12 {
            wait = accept_backoff(&emfile, wait);
            waits.push(wait.as_millis());
        }
        assert_eq!(
            waits,
            [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 1000],
            "doubling from 1 ms, capped at a second"
        );
        assert_eq!(accept_backoff(&reset, wait), Duration::ZERO);
    }
}
