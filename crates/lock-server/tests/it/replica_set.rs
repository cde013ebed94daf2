//! A server whose database is a replica set's primary: `WAIT` and `WAITAOF` count the
//! set's replicas that have the connection's last write, block until enough have, and
//! end with the connection when the primary fails over.

use lock_memory::MemoryReplicaSet;
use lock_server::{Server, ServerOptions};

use crate::support::raw::Raw;

async fn primary_of(set: &MemoryReplicaSet) -> Server {
    Server::start(ServerOptions {
        db: set.primary_node(),
        replication: Some(set.clone()),
        ..ServerOptions::default()
    })
    .await
    .unwrap()
}

#[tokio::test(start_paused = true)]
async fn wait_counts_the_replicas_that_have_the_connections_last_write() {
    let set = MemoryReplicaSet::new(2);
    let server = primary_of(&set).await;
    let addr = server.addr().to_string();
    let mut client = Raw::connect(&addr).await;
    assert_eq!(client.command(&["SET", "k", "v"]).await, b"+OK\r\n");
    assert_eq!(client.command(&["WAIT", "2", "0"]).await, b":2\r\n");
    assert_eq!(
        client.command(&["WAITAOF", "0", "2", "0"]).await,
        b"*2\r\n:0\r\n:2\r\n",
        "no local fsync: appendonly is off"
    );

    set.pause_all();
    assert_eq!(client.command(&["SET", "k", "w"]).await, b"+OK\r\n");
    assert_eq!(
        client.command(&["WAIT", "1", "100"]).await,
        b":0\r\n",
        "stalled: the timeout ends it"
    );
    assert_eq!(client.command(&["WAIT", "0", "0"]).await, b":0\r\n");
    let mut fresh = Raw::connect(&addr).await;
    assert_eq!(
        fresh.command(&["WAIT", "2", "0"]).await,
        b":2\r\n",
        "a connection that never wrote waits for nothing"
    );
    assert_eq!(
        fresh.command(&["GET", "k"]).await,
        b"$1\r\nw\r\n",
        "a read moves nothing"
    );
    assert_eq!(fresh.command(&["WAIT", "2", "0"]).await, b":2\r\n");

    // In MULTI it may not block: it answers the count at once.
    assert_eq!(client.command(&["MULTI"]).await, b"+OK\r\n");
    assert_eq!(client.command(&["WAIT", "2", "0"]).await, b"+QUEUED\r\n");
    assert_eq!(client.command(&["EXEC"]).await, b"*1\r\n:0\r\n");

    // A wait for ever ends when the replicas catch up.
    client.send_only(&["WAIT", "2", "0"]).await;
    fresh.await_blocked(1).await;
    set.resume_all();
    assert_eq!(client.read_reply().await, b":2\r\n");
    fresh.await_blocked(0).await;

    // Refused arguments keep Redis's texts.
    assert_eq!(
        client.command(&["WAIT", "x", "0"]).await,
        b"-ERR value is not an integer or out of range\r\n"
    );
    server.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_failover_while_wait_blocks_closes_the_connection() {
    let set = MemoryReplicaSet::new(1);
    let server = primary_of(&set).await;
    let addr = server.addr().to_string();
    let mut client = Raw::connect(&addr).await;
    let mut look = Raw::connect(&addr).await;
    set.pause_all();
    assert_eq!(client.command(&["SET", "lock", "t1"]).await, b"+OK\r\n");
    client.send_only(&["WAIT", "1", "0"]).await;
    look.await_blocked(1).await;
    set.fail_over();
    assert_eq!(client.read_reply().await, b"", "closed without a reply");
    assert_eq!(
        set.primary_node().unwrap().peek(b"lock"),
        None,
        "the new primary never got the lock"
    );
    server.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_primary_nobody_waits_on_keeps_its_replication_backlog_bounded() {
    let set = MemoryReplicaSet::new(1);
    let server = primary_of(&set).await;
    let mut client = Raw::connect(&server.addr().to_string()).await;
    let mut peak = 0;
    for n in 0..2_000 {
        let n = n.to_string();
        assert_eq!(client.command(&["SET", &n, "v"]).await, b"+OK\r\n");
        peak = peak.max(set.backlog());
    }
    assert!(peak <= 300, "the backlog reached {peak} writes");
    server.stop().await;
}

/// What a failed-over primary's death does to its clients that wait: a subscriber and a
/// blocked pop are closed; a connection between commands stays (its next command
/// learns the news from whoever explores it).
#[tokio::test]
async fn disconnect_waiting_closes_the_subscribers_and_the_blocked_only() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let addr = server.addr().to_string();
    let mut subscriber = Raw::connect(&addr).await;
    assert!(
        subscriber
            .command(&["SUBSCRIBE", "wake"])
            .await
            .starts_with(b"*3\r\n")
    );
    let mut blocked = Raw::connect(&addr).await;
    blocked.send_only(&["BLPOP", "queue", "0"]).await;
    let mut idle = Raw::connect(&addr).await;
    idle.await_blocked(1).await;
    assert_eq!(server.disconnect_waiting(), 2);
    assert_eq!(subscriber.read_reply().await, b"", "closed");
    assert_eq!(blocked.read_reply().await, b"", "closed");
    assert_eq!(idle.command(&["PING"]).await, b"+PONG\r\n");
    server.stop().await;
}
