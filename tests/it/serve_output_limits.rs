//! A subscriber that never reads, as Redis meets it: its messages queue up to the
//! pub/sub class of `client-output-buffer-limit` (32 MB), and then the server closes the
//! connection instead of growing without bound. Both servers are driven the same way.

use std::io::Read;

use nxlock::testing::{RedisServer, skip_or_fail};

use crate::support::served::{Served, call, connect, status_mb};

/// Subscribes a client that then never reads, and publishes 1 MB messages until no one
/// receives them: how many were published by then (`None`: still received after 200).
fn publish_to_a_subscriber_that_never_reads(port: u16) -> Option<usize> {
    let mut subscriber = connect(port);
    assert_eq!(
        call(&mut subscriber, &[b"SUBSCRIBE", b"ch"]),
        b"*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"
    );
    let mut publisher = connect(port);
    let payload = vec![b'x'; 1 << 20];
    let gone =
        (1..=200).find(|_| call(&mut publisher, &[b"PUBLISH", b"ch", &payload]) == b":0\r\n");
    // The subscriber's connection was closed: reading it ends, after what was sent.
    let mut drained = Vec::new();
    let ended = matches!(subscriber.read_to_end(&mut drained), Ok(_) | Err(_));
    assert!(ended);
    gone
}

#[test]
fn a_subscriber_that_never_reads_is_disconnected_at_the_pubsub_limit_like_redis() {
    let served = Served::start(&[]);
    let ours = publish_to_a_subscriber_that_never_reads(served.port);
    // The most memory the process has held.
    let peak = status_mb(served.pid(), "VmHWM:");
    let redis = match RedisServer::spawn() {
        Ok(redis) => redis,
        Err(why) => return skip_or_fail("the pub/sub output limit on redis-server", &why),
    };
    let theirs = publish_to_a_subscriber_that_never_reads(redis.port());
    println!(
        "no receiver after {ours:?} messages on serve (peak RSS {peak} MB), {theirs:?} on redis-server"
    );
    // Past 32 MB queued (plus what the sockets' buffers hold), within a few dozen
    // messages on both.
    assert!(matches!(ours, Some(n) if n >= 32), "serve: {ours:?}");
    assert!(
        matches!(theirs, Some(n) if n >= 32),
        "redis-server: {theirs:?}"
    );
    assert!(peak < 200, "serve's memory peaked at {peak} MB");
}

/// A smaller limit set with CONFIG SET applies to a client already subscribed.
#[test]
fn config_set_changes_the_limit_of_subscribers_at_once() {
    let served = Served::start(&[]);
    let mut subscriber = served.connect();
    call(&mut subscriber, &[b"SUBSCRIBE", b"ch"]);
    let mut admin = served.connect();
    assert_eq!(
        call(
            &mut admin,
            &[
                b"CONFIG",
                b"SET",
                b"client-output-buffer-limit",
                b"pubsub 64kb 0 0"
            ]
        ),
        b"+OK\r\n"
    );
    let payload = vec![b'x'; 16 << 10];
    let gone = (1..=2000).find(|_| call(&mut admin, &[b"PUBLISH", b"ch", &payload]) == b":0\r\n");
    assert!(
        gone.is_some(),
        "still subscribed after 2,000 messages of 16 KB"
    );
}

/// Sends `GET big` for a 64 MB value, reads the reply's first megabytes only, sends
/// `DEL big` behind it, reads 16 MB more (so the server went on writing after the DEL
/// arrived), and closes with the rest unread. Whether the DEL ran, seen from another
/// connection.
fn runs_behind_an_unread_reply(port: u16) -> bool {
    use std::io::Write;
    let size = 64 << 20;
    let mut setter = connect(port);
    let value = vec![b'v'; size];
    assert_eq!(call(&mut setter, &[b"SET", b"big", &value]), b"+OK\r\n");
    let mut reader = connect(port);
    reader.write_all(b"GET big\r\n").unwrap();
    let mut chunk = vec![0; 1 << 20];
    reader.read_exact(&mut chunk).unwrap();
    reader.write_all(b"DEL big\r\n").unwrap();
    for _ in 0..16 {
        reader.read_exact(&mut chunk).unwrap();
    }
    drop(reader);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if call(&mut setter, &[b"EXISTS", b"big"]) == b":0\r\n" {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

#[test]
fn a_command_sent_behind_an_unread_reply_runs_when_the_client_goes() {
    let served = Served::start(&[]);
    assert!(
        runs_behind_an_unread_reply(served.port),
        "serve: the DEL behind the unread GET never ran"
    );
    let redis = match RedisServer::spawn() {
        Ok(server) => server,
        Err(why) => return skip_or_fail("the unread reply on redis-server", &why),
    };
    assert!(
        runs_behind_an_unread_reply(redis.port()),
        "redis-server: the DEL did not run"
    );
}
