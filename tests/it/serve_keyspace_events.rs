//! Keyspace notifications (`notify-keyspace-events`) on nxlock serve and redis-server,
//! side by side: the same commands raise the same events, on the same channels, in the
//! same order, byte for byte.

use super::support::raw::Raw;
use super::support::side_by_side::{Servers, both_servers};

/// Commands that raise every class of event serve's commands can raise: generic,
/// string, list, set, hash, sorted set and `new`, in two databases, from a script and
/// from a transaction, and the commands' quiet cases (nothing changed, wrong type).
const SCENARIO: &[&[&str]] = &[
    // Strings.
    &["SET", "s", "1"],
    &["SET", "s", "2", "EX", "100"],
    &["SET", "s", "3", "KEEPTTL"],
    &["SET", "s", "4", "XX"],
    &["SET", "s", "5", "NX"],
    &["SET", "g", "1", "NX", "GET"],
    &["SETNX", "s", "6"],
    &["SETNX", "s2", "x"],
    &["GETSET", "s2", "y"],
    &["INCR", "n"],
    &["INCRBY", "n", "5"],
    &["DECR", "n"],
    &["DECRBY", "n", "2"],
    &["INCR", "s2"],
    &["INCRBYFLOAT", "f", "1.5"],
    &["APPEND", "a", "hello"],
    &["APPEND", "a", "x"],
    &["SETRANGE", "a", "1", "Z"],
    &["SETRANGE", "a", "0", ""],
    &["SETRANGE", "sr", "2", "x"],
    &["MSET", "m1", "1", "m2", "2"],
    &["MSETNX", "m1", "1", "m3", "3"],
    &["MSETNX", "m3", "3", "m4", "4", "m5", "5"],
    &["SETEX", "se", "100", "v"],
    &["PSETEX", "pse", "100000", "v"],
    &["GETEX", "se", "PERSIST"],
    &["GETEX", "se", "PERSIST"],
    &["GETEX", "s2", "EX", "100"],
    &["GETEX", "s2", "PXAT", "1"],
    &["GETEX", "missing"],
    &["GETDEL", "m1"],
    &["GETDEL", "missing"],
    // Generic.
    &["DEL", "m2", "m3", "missing"],
    &["UNLINK", "m4"],
    &["EXPIRE", "m5", "100"],
    &["PEXPIRE", "m5", "100", "GT"],
    &["PEXPIREAT", "m5", "99999999999999", "XX"],
    &["PERSIST", "m5"],
    &["PERSIST", "m5"],
    &["EXPIRE", "m5", "-1"],
    &["EXPIRE", "missing", "10"],
    &["RENAME", "a", "a2"],
    &["SET", "t", "1"],
    &["RENAME", "a2", "t"],
    &["RENAMENX", "t", "a2"],
    &["SET", "t2", "1"],
    &["RENAMENX", "a2", "t2"],
    &["RENAME", "t2", "t2"],
    &["COPY", "a2", "c1"],
    &["COPY", "a2", "c1"],
    &["COPY", "a2", "c1", "REPLACE"],
    &["EXPIREAT", "c1", "1"],
    // Lists.
    &["LPUSH", "l", "a", "b", "c"],
    &["RPUSH", "l", "d"],
    &["LPUSHX", "nolist", "x"],
    &["RPUSHX", "l", "e"],
    &["LPOP", "l"],
    &["RPOP", "l", "2"],
    &["LPOP", "l", "0"],
    &["LSET", "l", "0", "z"],
    &["LINSERT", "l", "BEFORE", "z", "y"],
    &["LINSERT", "l", "BEFORE", "nope", "q"],
    &["LREM", "l", "1", "y"],
    &["LREM", "l", "1", "nope"],
    &["RPUSH", "l", "w"],
    &["LTRIM", "l", "0", "0"],
    &["LMOVE", "l", "l2", "LEFT", "RIGHT"],
    &["RPOPLPUSH", "l2", "l2"],
    &["LMPOP", "2", "nolist", "l2", "LEFT", "COUNT", "5"],
    &["RPUSH", "bl", "a", "b"],
    &["BLPOP", "bl", "1"],
    &["BRPOP", "bl", "1"],
    &["RPUSH", "tr", "a"],
    &["LTRIM", "tr", "1", "0"],
    &["LPUSH", "s", "x"],
    // Sets.
    &["SADD", "s1", "a", "b", "c"],
    &["SADD", "s1", "a"],
    &["SREM", "s1", "a"],
    &["SREM", "s1", "zz"],
    &["SMOVE", "s1", "s2", "b"],
    &["SMOVE", "s1", "s2", "c"],
    &["SADD", "s3", "x"],
    &["SINTERSTORE", "d", "s2", "s3"],
    &["SUNIONSTORE", "d", "s2", "s3"],
    &["SUNIONSTORE", "d", "s2", "s3"],
    &["SINTERSTORE", "d", "s2", "s3"],
    &["SDIFFSTORE", "d", "s2", "s3"],
    // SPOP's choice is random: one member at a time.
    &["SADD", "sp", "a"],
    &["SPOP", "sp", "0"],
    &["SPOP", "sp"],
    &["SADD", "sp", "b"],
    &["SPOP", "sp", "10"],
    // Hashes.
    &["HSET", "h", "f", "1", "g", "2"],
    &["HSET", "h", "f", "1"],
    &["HSETNX", "h", "f", "9"],
    &["HSETNX", "h", "z", "9"],
    &["HMSET", "h", "a", "1"],
    &["HINCRBY", "h", "n", "5"],
    &["HINCRBYFLOAT", "h", "fl", "1.5"],
    &["HDEL", "h", "missing"],
    &["HDEL", "h", "f", "g", "missing"],
    &["HDEL", "h", "a", "z", "n", "fl"],
    // Sorted sets.
    &["ZADD", "z", "1", "a", "2", "b"],
    &["ZADD", "z", "XX", "5", "nope"],
    &["ZADD", "zx", "XX", "1", "a"],
    &["ZADD", "z", "NX", "1", "a"],
    &["ZADD", "z", "1", "a"],
    &["ZINCRBY", "z", "0", "a"],
    &["ZINCRBY", "z", "1", "a"],
    &["ZADD", "z", "INCR", "1", "b"],
    &["ZADD", "z", "GT", "CH", "0", "b"],
    &["ZREM", "z", "nope"],
    &["ZREM", "z", "a"],
    &["ZADD", "z", "1", "c", "3", "d", "4", "e"],
    &["ZREMRANGEBYSCORE", "z", "3", "3"],
    &["ZREMRANGEBYSCORE", "z", "100", "200"],
    &["ZREMRANGEBYRANK", "z", "0", "0"],
    &["ZADD", "z", "0", "aa", "0", "ab"],
    &["ZREMRANGEBYLEX", "z", "[aa", "[ab"],
    &["ZPOPMIN", "z"],
    &["ZPOPMIN", "z", "0"],
    &["ZPOPMAX", "z", "5"],
    &["ZINCRBY", "zi", "2", "m"],
    &["ZUNIONSTORE", "zu", "2", "zi", "s3"],
    &["ZINTERSTORE", "zu", "2", "zi", "s3"],
    &["ZINTERSTORE", "zu", "2", "zi", "s3"],
    &["ZDIFFSTORE", "zu", "1", "zi"],
    &["ZRANGESTORE", "zr", "zi", "0", "-1"],
    &["ZRANGESTORE", "zr", "zi", "5", "6"],
    &["ZADD", "zp", "1", "a", "2", "b", "3", "c"],
    &["ZMPOP", "2", "nokey", "zp", "MIN"],
    &["BZPOPMAX", "zp", "0"],
    &["BZMPOP", "0", "1", "zp", "MIN", "COUNT", "5"],
    // Wrong types raise nothing.
    &["SADD", "zi", "x"],
    &["HSET", "zi", "f", "v"],
    // Another database, a script and a transaction.
    &["SELECT", "3"],
    &["SET", "x", "1"],
    &["DEL", "x"],
    &["SELECT", "0"],
    &[
        "EVAL",
        "redis.call('SET', KEYS[1], 'v'); redis.call('RPUSH', KEYS[2], 'e'); return redis.call('DEL', KEYS[1], KEYS[2])",
        "2",
        "ks",
        "kl",
    ],
    &["MULTI"],
    &["SET", "tx", "1"],
    &["INCR", "tx"],
    &["EXEC"],
];

/// Runs the scenario on one server, with every class on (`AKEn`), and returns the
/// replies to the commands, then every notification a pattern subscriber received.
async fn events_of(addr: &str, expiry: bool) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut subscriber = Raw::connect(addr).await;
    let mut client = Raw::connect(addr).await;
    subscriber.command(&["PSUBSCRIBE", "__key*__:*"]).await;
    subscriber.command(&["SUBSCRIBE", "end"]).await;
    let mut replies = vec![
        client
            .command(&["CONFIG", "SET", "notify-keyspace-events", "AKEn"])
            .await,
    ];
    for command in SCENARIO {
        replies.push(client.command(command).await);
    }
    if expiry {
        // A key whose TTL passes: found by active expiry or by the next read, once.
        replies.push(client.command(&["SET", "e", "v", "PX", "20"]).await);
        let asked = std::time::Instant::now();
        while client.command(&["EXISTS", "e"]).await != b":0\r\n" {
            assert!(
                asked.elapsed() < std::time::Duration::from_secs(10),
                "the key never expired"
            );
            tokio::task::yield_now().await;
        }
    }
    client.command(&["PUBLISH", "end", "."]).await;
    let mut events = Vec::new();
    loop {
        let message = subscriber.read_reply().await;
        assert!(!message.is_empty(), "the subscriber's connection closed");
        if message.starts_with(b"*3\r\n$7\r\nmessage\r\n$3\r\nend\r\n") {
            break;
        }
        events.push(message);
    }
    (replies, events)
}

/// The difference between two event lists, as a person reads it.
fn first_difference(ours: &[Vec<u8>], redis: &[Vec<u8>]) -> Option<String> {
    let show = |m: Option<&Vec<u8>>| m.map(|m| String::from_utf8_lossy(m).replace("\r\n", " "));
    (0..ours.len().max(redis.len()))
        .find(|&i| ours.get(i) != redis.get(i))
        .map(|i| {
            format!(
                "event {i}: serve sent {:?}, redis-server {:?} (previous: {:?})",
                show(ours.get(i)),
                show(redis.get(i)),
                i.checked_sub(1).and_then(|p| show(redis.get(p)))
            )
        })
}

#[tokio::test]
async fn every_command_raises_redis_s_events_in_redis_s_order() {
    let Some(Servers {
        server,
        redis_addr,
        _redis,
        ..
    }) = both_servers("every_command_raises_redis_s_events_in_redis_s_order").await
    else {
        return;
    };
    let (our_replies, ours) = events_of(&server.addr().to_string(), true).await;
    let (redis_replies, redis) = events_of(&redis_addr, true).await;
    for (i, (a, b)) in our_replies.iter().zip(&redis_replies).enumerate() {
        assert_eq!(
            String::from_utf8_lossy(a),
            String::from_utf8_lossy(b),
            "reply {i}"
        );
    }
    assert!(
        ours.len() > 150,
        "the scenario raises many events ({})",
        ours.len()
    );
    if let Some(difference) = first_difference(&ours, &redis) {
        panic!("{difference}");
    }
    let expired = b"$22\r\n__keyevent@0__:expired\r\n$1\r\ne\r\n";
    assert!(
        ours.iter().any(|m| m.ends_with(expired)),
        "the expired key raised `expired`"
    );
    server.stop().await;
}

/// CONFIG SET and GET of the classes, valid and not, as Redis spells them back.
#[tokio::test]
async fn the_setting_reads_back_as_redis_spells_it() {
    let Some(Servers {
        server,
        redis_addr,
        _redis,
        ..
    }) = both_servers("the_setting_reads_back_as_redis_spells_it").await
    else {
        return;
    };
    let mut transcripts = Vec::new();
    for addr in [server.addr().to_string(), redis_addr] {
        let mut client = Raw::connect(&addr).await;
        let mut transcript = Vec::new();
        for value in [
            "KEA",
            "AKEmn",
            "Ex",
            "g$lshzxetdKE",
            "zgK",
            "nK",
            "KEq",
            "",
            "A",
            "m",
        ] {
            transcript.push(
                client
                    .command(&["CONFIG", "SET", "notify-keyspace-events", value])
                    .await,
            );
            transcript.push(
                client
                    .command(&["CONFIG", "GET", "notify-keyspace-events"])
                    .await,
            );
        }
        transcripts.push(transcript);
    }
    super::support::side_by_side::assert_same_transcripts(&transcripts, "notify-keyspace-events");
    server.stop().await;
}

/// Classes left out raise nothing; `K` and `E` alone choose the channels.
#[tokio::test]
async fn only_the_classes_asked_for_are_published() {
    let Some(Servers {
        server,
        redis_addr,
        _redis,
        ..
    }) = both_servers("only_the_classes_asked_for_are_published").await
    else {
        return;
    };
    let mut transcripts = Vec::new();
    for addr in [server.addr().to_string(), redis_addr] {
        let mut subscriber = Raw::connect(&addr).await;
        let mut client = Raw::connect(&addr).await;
        subscriber.command(&["PSUBSCRIBE", "__key*__:*"]).await;
        let mut transcript = Vec::new();
        for classes in ["Kl", "Eg", "K$", "Elsz", "g", "Kh"] {
            client
                .command(&["CONFIG", "SET", "notify-keyspace-events", classes])
                .await;
            for command in [
                &["SET", "k", "v"][..],
                &["LPUSH", "l", "a"],
                &["SADD", "s", "a"],
                &["HSET", "h", "f", "v"],
                &["ZADD", "z", "1", "a"],
                &["DEL", "k", "l", "s", "h", "z"],
            ] {
                client.command(command).await;
            }
            client
                .command(&["CONFIG", "SET", "notify-keyspace-events", "KEg"])
                .await;
            client.command(&["DEL", classes]).await;
            client.command(&["SET", classes, "x"]).await;
            client.command(&["DEL", classes]).await;
            // Everything up to this `del` of the marker key is what the classes raised.
            let marker = format!("__keyevent@0__:del\r\n${}\r\n{classes}\r\n", classes.len());
            transcript.push(subscriber.read_through(marker.as_bytes()).await);
        }
        transcripts.push(transcript);
    }
    super::support::side_by_side::assert_same_transcripts(&transcripts, "class filter");
    server.stop().await;
}
