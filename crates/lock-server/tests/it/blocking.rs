//! BLPOP waits end by fast-forward and by the server stopping. Tests wait for the client
//! to block by asking the server (`INFO clients`), never by sleeping.

use crate::support;

use lock_server::{Server, ServerOptions};
use support::raw::Raw;

/// `NXLOCK.FASTFORWARD` ends a BLPOP wait as if its timeout had passed.
#[tokio::test]
async fn fast_forward_ends_a_blpop_wait() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let addr = server.addr().to_string();
    let mut waiter = Raw::connect(&addr).await;
    let mut admin = Raw::connect(&addr).await;
    waiter.send_only(&["BLPOP", "jobs", "3600"]).await;
    admin.await_blocked(1).await;
    assert_eq!(
        admin.command(&["NXLOCK.FASTFORWARD", "3600000"]).await,
        b"+OK\r\n"
    );
    assert_eq!(waiter.read_reply().await, b"*-1\r\n");
    server.stop().await;
}

/// Stopping the server closes a connection that is waiting in BLPOP.
#[tokio::test]
async fn stop_closes_a_connection_waiting_in_blpop() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let mut waiter = Raw::connect(&server.addr().to_string()).await;
    let mut admin = Raw::connect(&server.addr().to_string()).await;
    waiter.send_only(&["BLPOP", "jobs", "0"]).await;
    admin.await_blocked(1).await;
    server.stop().await;
    assert_eq!(waiter.read_reply().await, b"", "still waiting after stop");
}
