//! Faults injected into a database reach network clients: error replies with their kind
//! in the text, closed sockets for connection faults, one by one even in a pipeline, and
//! never a watch left behind.

use crate::support;

use lock_core::ErrorKind;
use lock_server::{Server, ServerOptions};
use support::raw::{Raw, request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Faults injected into a database reach network clients as error replies, once each.
#[tokio::test]
async fn injected_faults_reach_network_clients() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let db = server.db();
    db.faults().fail_next(1, ErrorKind::Timeout);
    let mut client = Raw::connect(&server.addr().to_string()).await;
    assert_eq!(
        client.command(&["SET", "k", "v"]).await,
        b"-ERR injected fault (Timeout): command timed out\r\n"
    );
    assert_eq!(client.command(&["SET", "k", "v"]).await, b"+OK\r\n");
    assert!(server.db_at(16).is_none());
    server.stop().await;
}

/// An injected connection fault closes the client's socket instead of replying.
#[tokio::test]
async fn an_injected_connection_fault_closes_the_socket() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    server.db().faults().fail_next(1, ErrorKind::Connection);
    let mut client = Raw::connect(&server.addr().to_string()).await;
    assert_eq!(client.command(&["SET", "k", "v"]).await, b"");
    let mut again = Raw::connect(&server.addr().to_string()).await;
    assert_eq!(again.command(&["SET", "k", "v"]).await, b"+OK\r\n");
    server.stop().await;
}

/// A connection fault that hits a command inside EXEC also closes the socket: no reply,
/// and no internal marker, reaches the client.
#[tokio::test]
async fn a_connection_fault_inside_exec_closes_the_socket() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let mut client = Raw::connect(&server.addr().to_string()).await;
    for command in [&["MULTI"][..], &["SET", "k", "v"], &["PING"]] {
        client.command(command).await;
    }
    server.db().faults().fail_next(1, ErrorKind::Connection);
    assert_eq!(client.command(&["EXEC"]).await, b"");
    server.stop().await;
}

/// EXEC ends its watches whatever happens, also when an injected fault fails it: nothing
/// stays watched in the store, and the next transaction on the key runs.
#[tokio::test]
async fn an_exec_failed_by_a_fault_still_ends_its_watches() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let db = server.db();
    let mut client = Raw::connect(&server.addr().to_string()).await;
    assert_eq!(client.command(&["WATCH", "k", "j"]).await, b"+OK\r\n");
    assert_eq!(db.stats().watched_keys, 2);
    assert_eq!(client.command(&["MULTI"]).await, b"+OK\r\n");
    assert_eq!(client.command(&["SET", "k", "v"]).await, b"+QUEUED\r\n");
    db.faults().fail_command("EVALSHA", 1, ErrorKind::Timeout);
    assert_eq!(
        client.command(&["EXEC"]).await,
        b"-ERR injected fault (Timeout): command timed out\r\n"
    );
    assert_eq!(db.stats().watched_keys, 0);
    assert_eq!(client.command(&["EXISTS", "k"]).await, b":0\r\n");
    server.stop().await;
}

/// Pipelined commands meet armed faults one by one, as if sent one at a time: a rule for
/// the next command fails only the first of a pipeline, and a connection fault on the
/// second closes the socket after the first's reply.
#[tokio::test]
async fn armed_faults_hit_pipelined_commands_one_by_one() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let db = server.db();
    let pipeline = [
        request(&["SET", "a", "1"]),
        request(&["SET", "b", "2"]),
        request(&["GET", "a"]),
        request(&["GET", "b"]),
    ]
    .concat();
    db.faults().fail_next(1, ErrorKind::Timeout);
    let mut client = Raw::connect(&server.addr().to_string()).await;
    client.stream.write_all(&pipeline).await.unwrap();
    let mut replies = Vec::new();
    for _ in 0..4 {
        replies.push(client.read_reply().await);
    }
    assert_eq!(
        replies,
        [
            &b"-ERR injected fault (Timeout): command timed out\r\n"[..],
            b"+OK\r\n",
            b"$-1\r\n",
            b"$1\r\n2\r\n",
        ]
    );
    db.faults().fail_next(1, ErrorKind::Connection);
    let mut client = Raw::connect(&server.addr().to_string()).await;
    client
        .stream
        .write_all(&[request(&["PING"]), pipeline].concat())
        .await
        .unwrap();
    let mut received = Vec::new();
    client.stream.read_to_end(&mut received).await.unwrap();
    assert_eq!(
        received, b"+PONG\r\n",
        "the fault closes the socket, later commands never run"
    );
    let keys: Vec<Vec<u8>> = db.dump().keys.into_iter().map(|k| k.key).collect();
    assert_eq!(
        keys,
        [b"b".to_vec()],
        "the faulted SET a, and all after it, never ran"
    );
    server.stop().await;
}
