//! BLPOP waits end by fast-forward, by the server stopping and by `CLIENT UNBLOCK`. Tests wait
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

/// A `CLIENT UNBLOCK` that lands the moment a client is seen blocked ends that wait: it
/// is never forgotten as if it had been meant for an earlier command. The unblocker asks
/// again and again from the moment the BLPOP is sent, so over many rounds it hits every
/// instant of the client's way into the wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unblock_as_the_wait_begins_is_never_lost() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let addr = server.addr().to_string();
    let mut waiter = Raw::connect(&addr).await;
    let id = String::from_utf8_lossy(&waiter.command(&["CLIENT", "ID"]).await)
        .trim_matches(|c: char| !c.is_ascii_digit())
        .to_string();
    let mut unblocker = Raw::connect(&addr).await;
    for round in 0..300 {
        waiter.send_only(&["BLPOP", "nothing", "0"]).await;
        while unblocker.command(&["CLIENT", "UNBLOCK", &id]).await != b":1\r\n" {}
        assert_eq!(waiter.read_reply().await, b"*-1\r\n", "round {round}");
    }
    server.stop().await;
}
