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

/// `NXLOCK.FAULT` faults the clients of one name, and no other: a lost reply is a SET
/// that took effect unanswered, a disconnect a command that never ran, and both befall
/// one command unless counted. The named client, reconnected, is itself again.
#[tokio::test]
async fn nxlock_fault_befalls_the_named_client_only() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let address = server.addr().to_string();
    let mut admin = Raw::connect(&address).await;
    let named = |name: &'static str| {
        let address = address.clone();
        async move {
            let mut client = Raw::connect(&address).await;
            assert_eq!(
                client.command(&["CLIENT", "SETNAME", name]).await,
                b"+OK\r\n"
            );
            client
        }
    };
    let mut a = named("a").await;
    let mut b = named("b").await;
    assert_eq!(
        admin.command(&["NXLOCK.FAULT", "a", "LOSE-REPLY"]).await,
        b"+OK\r\n"
    );
    assert_eq!(b.command(&["SET", "kb", "1"]).await, b"+OK\r\n");
    assert_eq!(a.command(&["SET", "ka", "1", "NX"]).await, b"");
    assert_eq!(admin.command(&["GET", "ka"]).await, b"$1\r\n1\r\n");

    let mut a = named("a").await;
    assert_eq!(
        admin
            .command(&["NXLOCK.FAULT", "a", "DISCONNECT", "COUNT", "1"])
            .await,
        b"+OK\r\n"
    );
    assert_eq!(a.command(&["DEL", "ka"]).await, b"");
    assert_eq!(admin.command(&["EXISTS", "ka"]).await, b":1\r\n");
    let mut a = named("a").await;
    assert_eq!(a.command(&["DEL", "ka"]).await, b":1\r\n");
    server.stop().await;
}

/// A delay holds each of the client's commands on the server's clock until cleared:
/// `NXLOCK.FASTFORWARD` ends a held one, as it ends a TTL, with no real waiting.
#[tokio::test]
async fn an_nxlock_fault_delay_is_ended_by_fastforward_and_by_clear() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let address = server.addr().to_string();
    let mut admin = Raw::connect(&address).await;
    let mut a = Raw::connect(&address).await;
    assert_eq!(a.command(&["CLIENT", "SETNAME", "a"]).await, b"+OK\r\n");
    assert_eq!(
        admin
            .command(&["NXLOCK.FAULT", "a", "DELAY", "600000"])
            .await,
        b"+OK\r\n"
    );
    a.send_only(&["SET", "k", "1"]).await;
    // Not run yet: the SET waits out ten minutes of the server's clock.
    assert_eq!(admin.command(&["EXISTS", "k"]).await, b":0\r\n");
    assert_eq!(
        admin.command(&["NXLOCK.FASTFORWARD", "600000"]).await,
        b"+OK\r\n"
    );
    assert_eq!(a.read_reply().await, b"+OK\r\n");
    assert_eq!(
        admin.command(&["NXLOCK.FAULT", "a", "CLEAR"]).await,
        b"+OK\r\n"
    );
    assert_eq!(a.command(&["GET", "k"]).await, b"$1\r\n1\r\n");
    server.stop().await;
}

/// NXLOCK.FAULT's arguments are checked: a wrong word, a negative delay, a count below
/// one; RESET clears every fault.
#[tokio::test]
async fn nxlock_fault_checks_its_arguments() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let mut admin = Raw::connect(&server.addr().to_string()).await;
    for (args, reply) in [
        (
            &["NXLOCK.FAULT"][..],
            &b"-ERR wrong number of arguments for 'nxlock.fault' command\r\n"[..],
        ),
        (&["NXLOCK.FAULT", "x"], b"-ERR syntax error\r\n"),
        (&["NXLOCK.FAULT", "a", "CRASH"], b"-ERR syntax error\r\n"),
        (&["NXLOCK.FAULT", "a", "DELAY"], b"-ERR syntax error\r\n"),
        (
            &["NXLOCK.FAULT", "a", "DELAY", "-1"],
            b"-ERR NXLOCK.FAULT DELAY takes milliseconds, 0 or more\r\n",
        ),
        (
            &["NXLOCK.FAULT", "a", "DISCONNECT", "COUNT", "0"],
            b"-ERR NXLOCK.FAULT COUNT takes a number of commands, 1 or more\r\n",
        ),
        (
            &["NXLOCK.FAULT", "a", "DISCONNECT", "TIMES", "2"],
            b"-ERR syntax error\r\n",
        ),
        (
            &["NXLOCK.FAULT", "a", "CLEAR", "now"],
            b"-ERR syntax error\r\n",
        ),
        (
            &["NXLOCK.FAULT", "a", "DISCONNECT", "COUNT", "5"],
            b"+OK\r\n",
        ),
        (&["NXLOCK.FAULT", "RESET"], b"+OK\r\n"),
    ] {
        assert_eq!(admin.command(args).await, reply, "{args:?}");
    }
    let mut a = Raw::connect(&server.addr().to_string()).await;
    assert_eq!(a.command(&["CLIENT", "SETNAME", "a"]).await, b"+OK\r\n");
    assert_eq!(a.command(&["PING"]).await, b"+PONG\r\n");
    server.stop().await;
}
