//! [`Server`]: the listener and its accept loop.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use lock_memory::MemoryBackend;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::connection;
use crate::lua::Engine;
use crate::state::options::ServerOptions;
use crate::state::shared::Shared;
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
    pub async fn start(options: ServerOptions) -> std::io::Result<Server> {
        let listener = TcpListener::bind((options.bind, options.port)).await?;
        let addr = listener.local_addr()?;
        let lua =
            Engine::new(options.redis_version, table::knows).map_err(std::io::Error::other)?;
        let shared = Arc::new(Shared::new(options, addr.port(), Box::new(lua)));
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(accept_loop(listener, shared.clone(), stopped));
        Ok(Server {
            shared,
            addr,
            stop,
            task: Some(task),
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

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, stopped: watch::Receiver<bool>) {
    let mut stop = stopped.clone();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.changed() => return,
        };
        let Ok((stream, peer)) = accepted else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (id, over_limit) = shared.connected();
        let (shared, stopped) = (shared.clone(), stopped.clone());
        tokio::spawn(async move {
            connection::serve(stream, peer, &shared, id, over_limit, stopped).await;
            shared.disconnected();
        });
    }
}
