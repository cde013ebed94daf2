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

/// A script stopped at the time limit leaves nothing behind: the keys it set, changed,
/// deleted or expired are as they were, in its own database and in one it SELECTed,
/// or COPY'd into, after a FLUSHDB too, even when the script caught the error with pcall and returned.
#[tokio::test]
async fn a_stopped_script_takes_back_every_write() {
    let options = ServerOptions {
        script_time_limit: Duration::from_millis(100),
        ..ServerOptions::default()
    };
    let server = Server::start(options).await.unwrap();
    let mut client = Raw::connect(&server.addr().to_string()).await;
    let writes_then_spins = [
        // Sets, changes, deletes, expires, then never ends.
        "redis.call('SET', KEYS[1], 'partial'); redis.call('INCR', KEYS[2]); \
         redis.call('DEL', KEYS[3]); redis.call('PEXPIRE', KEYS[4], 1); \
         redis.call('SET', 'new-key', 'x'); while true do end",
        // The same, caught with pcall, and a reply after it.
        "redis.call('SET', KEYS[1], 'partial'); redis.call('INCR', KEYS[2]); \
         redis.call('DEL', KEYS[3]); redis.call('PEXPIRE', KEYS[4], 1); \
         redis.call('SET', 'new-key', 'x'); \
         pcall(function() while true do end end) return 'finished'",
        // Another database, a copy into a third, then the database flushed.
        "redis.call('SELECT', 1); redis.call('SET', 'elsewhere', 'x'); \
         redis.call('SELECT', 0); redis.call('COPY', KEYS[1], KEYS[1], 'DB', 2); \
         redis.call('SET', KEYS[1], 'partial'); \
         redis.call('FLUSHDB'); redis.call('SET', 'after-flush', 'x'); while true do end",
    ];
    for script in writes_then_spins {
        client.command(&["FLUSHALL"]).await;
        client
            .command(&["SET", "a", "original", "PX", "500000"])
            .await;
        client.command(&["SET", "n", "41"]).await;
        client.command(&["SET", "gone", "still-here"]).await;
        client.command(&["SET", "kept", "v"]).await;
        let reply = client
            .command(&["EVAL", script, "4", "a", "n", "gone", "kept"])
            .await;
        let text = String::from_utf8_lossy(&reply);
        assert!(
            text.starts_with("-ERR nxlock serve stopped the script")
                || text.starts_with("$8\r\nfinished"),
            "{text}"
        );
        assert_eq!(
            client.command(&["GET", "a"]).await,
            b"$8\r\noriginal\r\n",
            "{script}"
        );
        let ttl = String::from_utf8_lossy(&client.command(&["PTTL", "a"]).await).into_owned();
        assert!(
            ttl.starts_with(":4") && ttl.len() == 9,
            "the TTL stays: {ttl}"
        );
        assert_eq!(client.command(&["GET", "n"]).await, b"$2\r\n41\r\n");
        assert_eq!(
            client.command(&["GET", "gone"]).await,
            b"$10\r\nstill-here\r\n"
        );
        assert_eq!(client.command(&["PTTL", "kept"]).await, b":-1\r\n");
        assert_eq!(
            client.command(&["EXISTS", "new-key", "after-flush"]).await,
            b":0\r\n"
        );
        assert_eq!(client.command(&["DBSIZE"]).await, b":4\r\n");
        for other in ["1", "2"] {
            client.command(&["SELECT", other]).await;
            assert_eq!(
                client.command(&["DBSIZE"]).await,
                b":0\r\n",
                "database {other}"
            );
        }
        client.command(&["SELECT", "0"]).await;
    }
    // A script that ends in time keeps its writes.
    let reply = client
        .command(&["EVAL", "return redis.call('INCR', KEYS[1])", "1", "n"])
        .await;
    assert_eq!(reply, b":42\r\n");
    server.stop().await;
}

/// A value too large to copy before each script writes it is the one exception: the
/// stopped script's error names the key whose writes stay; every other write is taken
/// back.
#[tokio::test]
async fn a_stopped_script_names_the_large_values_whose_writes_stay() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let mut client = Raw::connect(&server.addr().to_string()).await;
    // Filled within the default limit (a loaded debug build may need more than 100 ms).
    let fill = "for i = 1, 5000 do redis.call('ZADD', KEYS[1], i, 'm' .. i) end return 1";
    assert_eq!(client.command(&["EVAL", fill, "1", "big"]).await, b":1\r\n");
    let limit = client
        .command(&["CONFIG", "SET", "busy-reply-threshold", "100"])
        .await;
    assert_eq!(limit, b"+OK\r\n");
    client.command(&["SET", "small", "before"]).await;
    let script = "redis.call('ZADD', KEYS[1], 0, 'new'); redis.call('SET', KEYS[2], 'after'); \
                  while true do end";
    let reply = client.command(&["EVAL", script, "2", "big", "small"]).await;
    let text = String::from_utf8_lossy(&reply);
    assert!(
        text.starts_with("-ERR nxlock serve stopped the script"),
        "{text}"
    );
    assert!(text.contains("Its writes to 'big' stay"), "{text}");
    assert_eq!(client.command(&["GET", "small"]).await, b"$6\r\nbefore\r\n");
    assert_eq!(client.command(&["ZCARD", "big"]).await, b":5001\r\n");
    server.stop().await;
}
