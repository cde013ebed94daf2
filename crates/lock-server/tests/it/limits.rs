//! Limits: clients beyond `max_clients`, thousands of subscriptions on one connection, a
//! pipeline longer than one step, a runaway script.

use crate::support;

use std::time::Duration;

use lock_server::{Server, ServerOptions};
use support::raw::{Raw, request};
use tokio::io::AsyncWriteExt;

/// Past `max_clients`, a connection gets Redis's refusal and is closed.
#[tokio::test]
async fn connections_beyond_max_clients_are_refused() {
    let options = ServerOptions {
        max_clients: 1,
        ..ServerOptions::default()
    };
    let server = Server::start(options).await.unwrap();
    let addr = server.addr().to_string();
    let mut first = Raw::connect(&addr).await;
    assert_eq!(first.command(&["PING"]).await, b"+PONG\r\n");
    let mut second = Raw::connect(&addr).await;
    assert_eq!(
        second.read_reply().await,
        b"-ERR max number of clients reached\r\n"
    );
    assert!(
        second.read_reply().await.is_empty(),
        "the refused connection stays open"
    );
    assert_eq!(first.command(&["PING"]).await, b"+PONG\r\n");
    server.stop().await;
}

/// One connection with thousands of subscriptions gets each message once, on the right
/// channel, and none after it leaves; messages published before its UNSUBSCRIBE still
/// arrive, as they would sit in a Redis client's output buffer.
#[tokio::test]
async fn a_connection_with_thousands_of_subscriptions_gets_each_message() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let addr = server.addr().to_string();
    let mut subscriber = Raw::connect(&addr).await;
    let names: Vec<String> = (0..3000).map(|i| format!("c{i}")).collect();
    let mut subscribe = vec!["SUBSCRIBE"];
    subscribe.extend(names.iter().map(String::as_str));
    subscriber.send_only(&subscribe).await;
    for (i, name) in names.iter().enumerate() {
        let confirmation = subscriber.read_reply().await;
        let expected = format!(
            "*3\r\n$9\r\nsubscribe\r\n${}\r\n{name}\r\n:{}\r\n",
            name.len(),
            i + 1
        );
        assert_eq!(String::from_utf8_lossy(&confirmation), expected);
    }
    let mut publisher = Raw::connect(&addr).await;
    assert_eq!(
        publisher.command(&["PUBLISH", "c2999", "last"]).await,
        b":1\r\n"
    );
    assert_eq!(
        publisher.command(&["PUBLISH", "c0", "first"]).await,
        b":1\r\n"
    );
    assert_eq!(
        publisher.command(&["PUBLISH", "c3000", "none"]).await,
        b":0\r\n"
    );
    assert_eq!(
        subscriber.read_reply().await,
        b"*3\r\n$7\r\nmessage\r\n$5\r\nc2999\r\n$4\r\nlast\r\n"
    );
    assert_eq!(
        subscriber.read_reply().await,
        b"*3\r\n$7\r\nmessage\r\n$2\r\nc0\r\n$5\r\nfirst\r\n"
    );
    assert_eq!(
        publisher.command(&["PUBLISH", "c1", "before"]).await,
        b":1\r\n"
    );
    subscriber.send_only(&["UNSUBSCRIBE", "c1"]).await;
    assert_eq!(
        subscriber.read_reply().await,
        b"*3\r\n$7\r\nmessage\r\n$2\r\nc1\r\n$6\r\nbefore\r\n"
    );
    assert_eq!(
        subscriber.read_reply().await,
        b"*3\r\n$11\r\nunsubscribe\r\n$2\r\nc1\r\n:2999\r\n"
    );
    assert_eq!(
        publisher.command(&["PUBLISH", "c1", "gone"]).await,
        b":0\r\n"
    );
    drop(subscriber);
    // The closed connection's subscriptions end with it.
    publisher.await_connected(1).await;
    assert_eq!(
        publisher.command(&["PUBLISH", "c2", "after"]).await,
        b":0\r\n"
    );
    server.stop().await;
}

/// A pipeline longer than one step (1,024 commands) still runs every command once, in
/// order.
#[tokio::test]
async fn a_long_pipeline_runs_in_order_across_steps() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let mut client = Raw::connect(&server.addr().to_string()).await;
    let pipeline = request(&["INCR", "n"]).repeat(3000);
    client.stream.write_all(&pipeline).await.unwrap();
    for expected in 1..=3000 {
        assert_eq!(
            client.read_reply().await,
            format!(":{expected}\r\n").into_bytes()
        );
    }
    server.stop().await;
}

/// A script that never ends is stopped at the time limit; the server keeps serving.
#[tokio::test]
async fn a_runaway_script_is_stopped_at_the_time_limit() {
    let options = ServerOptions {
        script_time_limit: Duration::from_millis(200),
        ..ServerOptions::default()
    };
    let server = Server::start(options).await.unwrap();
    let mut client = Raw::connect(&server.addr().to_string()).await;
    let reply = client.command(&["EVAL", "while true do end", "0"]).await;
    let text = String::from_utf8_lossy(&reply);
    assert!(
        text.starts_with("-ERR nxlock serve stopped the script after its 200 ms time limit"),
        "{text}"
    );
    assert_eq!(client.command(&["SET", "k", "v"]).await, b"+OK\r\n");
    server.stop().await;
}

/// A script that catches the time-limit error with pcall, in a loop, is stopped too; the
/// limit is `busy-reply-threshold`, which CONFIG SET changes.
#[tokio::test]
async fn a_runaway_script_catching_the_error_is_stopped_too() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let mut client = Raw::connect(&server.addr().to_string()).await;
    let set = client
        .command(&["CONFIG", "SET", "busy-reply-threshold", "100"])
        .await;
    assert_eq!(set, b"+OK\r\n");
    let script = "while true do pcall(function() while true do end end) end";
    let reply = client.command(&["EVAL", script, "0"]).await;
    let text = String::from_utf8_lossy(&reply);
    assert!(
        text.starts_with("-ERR nxlock serve stopped the script after its 100 ms time limit"),
        "{text}"
    );
    assert_eq!(client.command(&["EVAL", "return 1", "0"]).await, b":1\r\n");
    server.stop().await;
}
