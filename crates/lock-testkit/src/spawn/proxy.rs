//! [`Proxy`]: a TCP forwarder on a free loopback port that a test can stall, cut or point
//! elsewhere, to make a replication link lose data on purpose (not by timing luck) and to
//! move clients to a new primary after a failover.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What the proxy does now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct State {
    upstream: SocketAddr,
    /// Bytes stop moving, both ways (they wait in the proxy and the kernel's buffers).
    paused: bool,
    /// Bytes are read and thrown away, both ways: a black hole.
    dropping: bool,
    /// Connections opened under an older generation are closed.
    generation: u64,
}

/// Forwards every connection it accepts to its upstream, both ways, until told to pause
/// (nothing moves, nothing is lost: it moves again on [`Proxy::resume`]), to cut (every
/// open connection closes), or to redirect (open connections close, new ones go to the
/// new upstream). Stops when dropped.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    state: watch::Sender<State>,
    accepting: JoinHandle<()>,
}

impl Proxy {
    /// A proxy on a free loopback port, forwarding to `upstream`. Needs a tokio runtime.
    pub async fn start(upstream: SocketAddr) -> io::Result<Proxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let (state, watching) = watch::channel(State {
            upstream,
            paused: false,
            dropping: false,
            generation: 0,
        });
        let accepting = tokio::spawn(accept(listener, watching));
        Ok(Proxy {
            addr,
            state,
            accepting,
        })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The upstream it forwards to now.
    pub fn upstream(&self) -> SocketAddr {
        self.state.borrow().upstream
    }

    /// Stops moving bytes, both ways, on every connection.
    pub fn pause(&self) {
        self.state.send_modify(|state| state.paused = true);
    }

    /// Moves bytes again; what waited arrives.
    pub fn resume(&self) {
        self.state.send_modify(|state| state.paused = false);
    }

    /// Throws away every byte, both ways, on every connection (old and new): requests
    /// never reach the server and nothing answers, as in a partition that drops packets.
    pub fn blackhole(&self) {
        self.state.send_modify(|state| state.dropping = true);
    }

    /// Ends [`Proxy::blackhole`]. Open connections close (a client waiting for replies
    /// that were thrown away could never match them up again); new ones work.
    pub fn heal(&self) {
        self.state.send_modify(|state| {
            state.dropping = false;
            state.generation += 1;
        });
    }

    /// Closes every open connection (new ones are still accepted).
    pub fn cut(&self) {
        self.state.send_modify(|state| state.generation += 1);
    }

    /// Closes every open connection and sends new ones to `upstream`.
    pub fn redirect(&self, upstream: SocketAddr) {
        self.state.send_modify(|state| {
            state.upstream = upstream;
            state.generation += 1;
        });
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accepting.abort();
        // Connection tasks see the sender go and stop.
    }
}

async fn accept(listener: TcpListener, state: watch::Receiver<State>) {
    loop {
        let Ok((inbound, _)) = listener.accept().await else {
            continue;
        };
        let now = *state.borrow();
        let state = state.clone();
        tokio::spawn(async move {
            let Ok(outbound) = TcpStream::connect(now.upstream).await else {
                return;
            };
            let _ = inbound.set_nodelay(true);
            let _ = outbound.set_nodelay(true);
            let (in_read, in_write) = inbound.into_split();
            let (out_read, out_write) = outbound.into_split();
            tokio::spawn(forward(in_read, out_write, state.clone(), now.generation));
            forward(out_read, in_write, state, now.generation).await;
        });
    }
}

/// Waits while paused; false once the connection must close (cut, redirected, or the
/// proxy is gone).
async fn may_move(state: &mut watch::Receiver<State>, generation: u64) -> bool {
    loop {
        let now = *state.borrow_and_update();
        if now.generation != generation {
            return false;
        }
        if !now.paused {
            return true;
        }
        if state.changed().await.is_err() {
            return false;
        }
    }
}

async fn forward(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    mut state: watch::Receiver<State>,
    generation: u64,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        if !may_move(&mut state, generation).await {
            return;
        }
        let read = tokio::select! {
            read = from.read(&mut buffer) => read,
            changed = state.changed() => {
                if changed.is_err() {
                    return;
                }
                continue;
            }
        };
        let n = match read {
            Ok(0) | Err(_) => {
                let _ = to.shutdown().await;
                return;
            }
            Ok(n) => n,
        };
        // Read before a pause: held here until the link moves again.
        if !may_move(&mut state, generation).await {
            return;
        }
        if state.borrow().dropping {
            continue;
        }
        if to.write_all(&buffer[..n]).await.is_err() {
            return;
        }
    }
}
