//! [`PrimaryEndpoint`]: one client's address in front of a replicated set, as a managed
//! Redis's primary endpoint. Each connection it accepts is joined to the node that is
//! primary then (to that node's server, on the client's own port there, so the client
//! stays told apart), and the client's next connection after a failover reaches the new
//! primary on the same address.
//!
//! A failover does not close the connections joined to the old primary here: the old
//! node's server refuses their next command (closing the connection, as the old
//! primary's death does), but still takes their markers, which are the client's own
//! doings and no traffic of the failed node; the run closes the connections that wait
//! there without a command (subscribers, blocked ones).

use std::io;
use std::net::SocketAddr;

use lock_explore::ExternalRun;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// The node that is primary now in each group (`None` while one has none), as the run
/// publishes them.
pub(crate) type PrimaryWatch = watch::Receiver<Vec<Option<usize>>>;

/// Each group's primary (a replicated set's, or each cluster shard's), published after
/// every operation (a step it anchors may fail a group over) for the endpoints and the
/// run to follow.
#[derive(Debug)]
pub(crate) struct Primaries {
    now: watch::Sender<Vec<Option<usize>>>,
}

impl Primaries {
    /// The primaries of `run` as they are now.
    pub(crate) fn new(run: &ExternalRun) -> Self {
        Self {
            now: watch::channel(run.primaries()).0,
        }
    }

    /// Sends the primaries if one changed.
    pub(crate) fn publish(&self, run: &ExternalRun) {
        let now = run.primaries();
        self.now.send_if_modified(|published| {
            let changed = *published != now;
            *published = now;
            changed
        });
    }

    /// The primaries, as they change.
    pub(crate) fn watch(&self) -> PrimaryWatch {
        self.now.subscribe()
    }
}

/// One client's stable address; it stops (and its connections close) when dropped.
#[derive(Debug)]
pub(crate) struct PrimaryEndpoint {
    addr: SocketAddr,
    accepting: JoinHandle<()>,
}

impl PrimaryEndpoint {
    /// Listens on a fresh loopback port for group `group`; `nodes[n]` is where the
    /// client reaches node `n`'s server, and `primaries` names the node to join each
    /// connection to.
    pub(crate) async fn start(
        nodes: Vec<SocketAddr>,
        primaries: PrimaryWatch,
        group: usize,
    ) -> io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let accepting = tokio::spawn(accept(listener, nodes, primaries, group));
        Ok(Self { addr, accepting })
    }

    /// The address the client is given.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for PrimaryEndpoint {
    fn drop(&mut self) {
        // The joined connections are the accepting task's: they end with it.
        self.accepting.abort();
    }
}

async fn accept(
    listener: TcpListener,
    nodes: Vec<SocketAddr>,
    primaries: PrimaryWatch,
    group: usize,
) {
    let mut joined = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((client, _)) = accepted else { continue };
                // No primary (between a crash and a promotion): the connection is
                // refused, as a dead endpoint's would be.
                let Some(node) = primaries.borrow().get(group).copied().flatten() else {
                    continue;
                };
                if let Some(&target) = nodes.get(node) {
                    joined.spawn(join(client, target));
                }
            }
            // Reap the connections that ended, so a long run keeps none of them.
            Some(_) = joined.join_next(), if !joined.is_empty() => {}
        }
    }
}

/// Carries bytes both ways between `client` and a node's server until either closes.
async fn join(mut client: TcpStream, target: SocketAddr) {
    let Ok(mut server) = TcpStream::connect(target).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server that answers each connection with its own name, then echoes.
    async fn named(name: &'static [u8]) -> SocketAddr {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    let mut byte = [0u8; 1];
                    while socket.read_exact(&mut byte).await.is_ok() {
                        if socket.write_all(name).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    async fn ask(socket: &mut TcpStream) -> Option<Vec<u8>> {
        socket.write_all(b"?").await.ok()?;
        let mut reply = [0u8; 2];
        socket.read_exact(&mut reply).await.ok()?;
        Some(reply.to_vec())
    }

    #[tokio::test]
    async fn each_connection_reaches_the_node_that_was_primary_when_it_was_made() {
        let nodes = vec![named(b"n0").await, named(b"n1").await];
        let (publish, primaries) = watch::channel(vec![Some(0)]);
        let endpoint = PrimaryEndpoint::start(nodes, primaries, 0).await.unwrap();
        let mut first = TcpStream::connect(endpoint.addr()).await.unwrap();
        assert_eq!(ask(&mut first).await.unwrap(), b"n0");
        publish.send(vec![Some(1)]).unwrap();
        let mut second = TcpStream::connect(endpoint.addr()).await.unwrap();
        assert_eq!(ask(&mut second).await.unwrap(), b"n1");
        assert_eq!(
            ask(&mut first).await.unwrap(),
            b"n0",
            "the old node's server decides what its connections get"
        );
        publish.send(vec![None]).unwrap();
        let mut refused = TcpStream::connect(endpoint.addr()).await.unwrap();
        assert_eq!(ask(&mut refused).await, None, "no primary: closed at once");
        drop(endpoint);
        assert_eq!(
            ask(&mut second).await,
            None,
            "the endpoint's end closes them"
        );
    }
}
