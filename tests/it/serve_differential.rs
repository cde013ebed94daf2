//! `nxlock serve` against a real redis-server, command by command: the same requests,
//! byte-identical replies (remaining times may differ by the time between the two calls).

use std::time::Duration;

use tokio::io::AsyncWriteExt;

use crate::support;
use support::raw::{Raw, request};
use support::side_by_side::{
    Scenario, Servers, assert_same_transcripts, both_servers, compare_one_by_one,
    compare_pipelined, lines,
};

/// What a transcript's last request echoes: the end of what the requests before it caused.
const END: &str = "nxlock-test-end-of-transcript";

/// Scenarios: each starts from empty databases on both servers.
fn scenarios() -> Vec<Scenario> {
    vec![
        lines(&[
            "PUBSUB CHANNELS",
            "PUBSUB CHANNELS a*",
            "PUBSUB CHANNELS a b",
            "PUBSUB NUMSUB",
            "PUBSUB NUMSUB a b",
            "PUBSUB NUMPAT",
            "PUBSUB NUMPAT x",
            "PUBSUB FOO",
            "PUBSUB HELP",
            "SETRANGE k 9223372036854775807 A",
            "SETRANGE k 536870911 AB",
            "SETRANGE k 536870911 A",
            "STRLEN k",
            // The 512 MB string: appending past it is refused, and parts of it are cheap.
            "APPEND k x",
            "APPEND k \"\"",
            "GETRANGE k -1 -1",
            "SUBSTR k 0 0",
            "SETRANGE k 0 B",
            "GETRANGE k 0 1",
            "DEL k",
            "APPEND k abc",
            "APPEND k de",
            "SUBSTR k 1 -2",
            "SETRANGE k 7 z",
            "GET k",
            "DEL k",
            "SADD s a b c",
            "SRANDMEMBER s -9223372036854775808",
            "SRANDMEMBER s -9223372036854775807x",
            "SRANDMEMBER missing -9223372036854775807",
            "SRANDMEMBER s x y",
            "SRANDMEMBER s -9223372036854775808 y",
            "SRANDMEMBER missing x y",
            "CONFIG SET maxmemory 1 maxmemory 2",
            "CONFIG SET daemonize yes",
            "CONFIG SET nosuch 1 daemonize yes",
            "CONFIG SET daemonize yes nosuch 1",
            "CONFIG SET list-compress-depth 3",
            "CONFIG GET list-compress-depth",
            "CONFIG SET list-compress-depth 0",
            "CLIENT UNBLOCK 1 2 3",
            "CLIENT UNBLOCK 999999 ERROR",
        ]),
        lines(&[
            "PING",
            "PING hello",
            "PING a b",
            "ECHO hi",
            "ECHO",
            "FOO",
            "FOO a b c",
        ]),
        lines(&[
            "SET k v",
            "GET k",
            "SET k w NX",
            "SET k w XX",
            "GET k",
            "SET n v XX",
            "GET n",
            "SET k v EX 10 EX 20",
            "TTL k",
            "SET k v NX XX",
            "SET k v EX 10 PX 100",
            "SET k v KEEPTTL EX 10",
            "SET k v EX",
            "SET k v EX abc",
            "SET k v EX 0",
            "SET k v PX -5",
            "SET k v PXAT 0",
            "SET k v FOO",
            "SET k x GET",
            "SET k y NX GET",
            "SET missing z GET",
            "SET k v KEEPTTL",
            "PTTL k",
            "SET k v PX 5000",
            "SET k v KEEPTTL",
            "PTTL k",
            "SET k v",
            "PTTL k",
            "set K lower",
            "get K",
            "SET",
            "SET k",
        ]),
        lines(&[
            "SETNX a 1",
            "SETNX a 2",
            "GET a",
            "GETSET a 3",
            "GETSET b 1",
            "GETDEL a",
            "GETDEL a",
            "DEL a b c",
            "EXISTS a b b",
            "SET a 1",
            "EXISTS a a b",
            "DEL a a",
            "TYPE a",
            "TYPE b",
            "SET c 1",
            "TYPE c",
        ]),
        lines(&[
            "INCR n",
            "INCR n",
            "INCRBY n 10",
            "DECR n",
            "DECRBY n 5",
            "INCRBY n x",
            "INCRBY n -0",
            "SET n 1 EX -0",
            "SET s abc",
            "INCR s",
            "SET big 9223372036854775807",
            "INCR big",
            "INCRBY n -9223372036854775808",
            "DECRBY n -9223372036854775808",
            "SET z 012",
            "INCR z",
            "SET p +1",
            "INCR p",
            "SET q 5",
            "PEXPIRE q 10000",
            "INCR q",
            "PTTL q",
        ]),
        lines(&[
            "SET k v",
            "EXPIRE k 100",
            "TTL k",
            "PTTL k",
            "EXPIRE k 100 NX",
            "EXPIRE k 50 XX",
            "EXPIRE k 200 GT",
            "EXPIRE k 10 GT",
            "EXPIRE k 10 LT",
            "TTL k",
            "EXPIRE k 10 NX XX",
            "EXPIRE k 10 GT LT",
            "EXPIRE k 10 FOO",
            "EXPIRE k abc",
            "EXPIRE k 9223372036854775807",
            "PEXPIRE k 9223372036854775807",
            "PERSIST k",
            "PERSIST k",
            "TTL k",
            "PEXPIRE k 0",
            "GET k",
            "SET k v",
            "EXPIREAT k 1",
            "EXISTS k",
            "SET k v",
            "PEXPIREAT k 99999999999999",
            "PTTL k",
            "EXPIRE missing 10",
            "TTL missing",
            "PTTL missing",
            "PERSIST missing",
            "SET k v",
            "PEXPIRE k -1",
            "EXISTS k",
        ]),
        lines(&[
            "SELECT 1",
            "SET k one",
            "SELECT 0",
            "GET k",
            "SELECT 1",
            "GET k",
            "DBSIZE",
            "FLUSHDB x",
            "FLUSHDB ASYNC x",
            "FLUSHALL x",
            "DBSIZE",
            "FLUSHDB SYNC",
            "DBSIZE",
            "SELECT 16",
            "SELECT -1",
            "SELECT x",
            "SELECT -0",
        ]),
        lines(&[
            "CLIENT SETNAME worker-1",
            "CLIENT GETNAME",
            "CLIENT SETNAME",
            "CLIENT FOO",
            "CLIENT SETINFO lib-name x",
            "AUTH x",
            "AUTH a b",
            "HELLO 4",
            "HELLO x",
            "PUBLISH ch m",
        ]),
        lines(&[
            "MULTI", "MULTI", "SET a 1", "INCR a", "GET", "EXEC", "EXEC", "DISCARD", "MULTI",
            "SET a x", "INCR a", "PING", "FOO", "DISCARD", "MULTI", "SET a x", "INCR a", "GET a",
            "EXEC", "MULTI", "EXEC", "MULTI", "WATCH a", "DISCARD", "MULTI", "SET b 1", "PING hi",
            "ECHO e", "INCR b", "EXEC", "GET b",
        ]),
        // The bit commands: offsets, units, negative and empty ranges, missing keys and
        // the wrong type, in Redis's order of checks.
        lines(&[
            "SETBIT b 7 1",
            "SETBIT b 7 1",
            "SETBIT b 100 1",
            "GET b",
            "STRLEN b",
            "GETBIT b 7",
            "GETBIT b 8",
            "GETBIT b 99999",
            "GETBIT nosuch 3",
            "GETBIT b -1",
            "GETBIT b x",
            "GETBIT b 4294967296",
            "SETBIT b 4294967296 1",
            "SETBIT b 1 2",
            "SETBIT b 1 01",
            "SETBIT b x 1",
            "SETBIT b 1 -1",
            "SET s foobar",
            "BITCOUNT s",
            "BITCOUNT s 0 0",
            "BITCOUNT s 1 1",
            "BITCOUNT s -2 -1",
            "BITCOUNT s -1 -2",
            "BITCOUNT s 5 30 BIT",
            "BITCOUNT s 5 30 byte",
            "BITCOUNT s 0 -1 BIT",
            "BITCOUNT s 3 3 BIT",
            "BITCOUNT s 0",
            "BITCOUNT s 0 1 2",
            "BITCOUNT s 0 1 bits",
            "BITCOUNT s x 1",
            "BITCOUNT nosuch 0",
            "BITCOUNT nosuch x y",
            "SET e \"\"",
            "BITCOUNT e",
            "BITCOUNT e 0 -1",
            "BITPOS e 0",
            "BITPOS e 1",
            "SET z \"\\xff\\xf0\\x00\"",
            "BITPOS z 0",
            "BITPOS z 1 2",
            "BITPOS z 1 2 -1 BYTE",
            "BITPOS z 0 0 7 BIT",
            "BITPOS z 0 0 12 BIT",
            "BITPOS z 0 8 11 BIT",
            "BITPOS z 1 17 23 BIT",
            "BITPOS z 0 -1",
            "BITPOS z 0 1 1",
            "SET ones \"\\xff\\xff\"",
            "BITPOS ones 0",
            "BITPOS ones 0 0",
            "BITPOS ones 0 0 -1",
            "BITPOS ones 0 3 BIT",
            "BITPOS ones 0 3 15 BIT",
            "BITPOS ones 1 9 BIT",
            "BITPOS nosuch 0",
            "BITPOS nosuch 1",
            "BITPOS s 2",
            "BITPOS s x",
            "BITPOS s 1 x",
            "BITPOS s 1 0 x",
            "BITPOS s 1 0 1 bits",
            "BITPOS s 1 0 1 BIT extra",
            "BITPOS s 1 -100 -200",
            "LPUSH l a",
            "GETBIT l 0",
            "SETBIT l 0 1",
            "BITCOUNT l",
            "BITPOS l 1",
            "BITPOS l 2",
        ]),
        // Subcommands are checked at queue time too: each refusal spoils the transaction.
        lines(&[
            "MULTI",
            "SCRIPT LOAD v x",
            "FUNCTION bogus -1",
            "CLIENT NOSUCH",
            "CONFIG GET",
            "INCR c",
            "EXEC",
            "GET c",
            "MULTI",
            "INCR c",
            "EXEC extra",
            "EXEC",
            "GET c",
            // Refused outside MULTI too, EXEC is an EXECABORT (Redis's rejectCommand).
            "EXEC extra",
            "EXEC a b",
            "MULTI",
            "OBJECT ENCODING",
            "MEMORY USAGE",
            "PUBSUB NOSUCH",
            "COMMAND GETKEYS",
            "CLUSTER NOSUCH",
            "EXEC",
            "CLIENT",
            "SCRIPT",
        ]),
        lines(&[
            "RPUSH l a b c",
            "LPUSH l z y",
            "LLEN l",
            "TYPE l",
            "LPOP l",
            "LPOP l 2",
            "LPOP l 0",
            "LPOP l -1",
            "LPOP l abc",
            "LPOP l 1 2",
            "LPOP missing",
            "LPOP missing 2",
            "LPOP missing 0",
            "LLEN missing",
            "LPOP l 10",
            "EXISTS l",
            "TYPE l",
            "LPUSH",
            "LPUSH l",
            "RPUSH l",
            "LLEN",
            "LPUSH l 1",
            "EXPIRE l 100",
            "TTL l",
            "PERSIST l",
            "SET s v",
            "LPUSH s x",
            "RPUSH s x",
            "LPOP s",
            "LPOP s 0",
            "LPOP s abc",
            "LLEN s",
            "GET l",
            "GETSET l x",
            "GETDEL l",
            "INCR l",
            "INCRBY l 2",
            "DECR l",
            "SET l v GET",
            "SET l v NX GET",
            "SET l v NX",
            "SET l v XX GET",
            "TYPE l",
            "LPUSH l2 a",
            "SET l2 v",
            "TYPE l2",
            "LPUSH l3 a",
            "SETNX l3 v",
            "EVAL return(redis.call('GET',KEYS[1])) 1 l3",
            "EVAL return(redis.pcall('GET',KEYS[1])) 1 l3",
            "EVAL return(redis.call('LPOP',KEYS[1],'2')) 1 nolist",
            "EVAL return(redis.call('RPUSH',KEYS[1],'b','c')) 1 l3",
            "EVAL return(redis.call('LPOP',KEYS[1],'5')) 1 l3",
            "EVAL return(redis.call('BLPOP',KEYS[1],'0')) 1 l3",
            "EVAL return(redis.call('WATCH',KEYS[1])) 1 l3",
            "EVAL_RO return(redis.call('LPUSH',KEYS[1],'x')) 1 l3",
            "EVAL_RO return(redis.call('LLEN',KEYS[1])) 1 l3",
            "BLPOP s 0",
            "BLPOP missing s 0",
            "RPUSH q 1 2",
            "BLPOP missing q 0",
            "BLPOP q 0.01",
            "BLPOP missing 0.01",
            "BLPOP missing -1",
            "BLPOP missing abc",
            "BLPOP missing nan",
            "BLPOP missing inf",
            "BLPOP missing 1e16",
            "BLPOP missing 1e-5",
            "BLPOP missing",
            "MULTI",
            "BLPOP missing 0",
            "RPUSH q x",
            "BLPOP missing q 0",
            "EXEC",
        ]),
        lines(&[
            "SET a 1",
            "SET b 2",
            "SET abc 3",
            "RPUSH list x",
            "SET h\\x 4",
            "KEYS *",
            "KEYS a*",
            "KEYS ?",
            "KEYS [ab]",
            "KEYS [^a]*",
            "KEYS \\a",
            "KEYS [a-",
            "KEYS *c",
            "KEYS nothing*",
            "KEYS",
            "KEYS a b",
            // An expiry already past: the key is gone on both servers, whatever the clock
            // does between the two commands (PX 1 raced it).
            "SET gone 1 PXAT 1",
            "KEYS gone",
        ]),
        lines(&[
            "WATCH",
            "UNWATCH x",
            "WATCH a b",
            "UNWATCH",
            "WATCH a",
            "MULTI",
            "WATCH a",
            "UNWATCH",
            "SET a 1",
            "EXEC",
            "GET a",
            "WATCH a",
            "SET a 2",
            "MULTI",
            "SET a 3",
            "EXEC",
            "GET a",
            "WATCH a",
            "MULTI",
            "SET a 4",
            "DISCARD",
            "MULTI",
            "SET a 5",
            "EXEC",
            "WATCH missing",
            "SET missing 1",
            "DEL missing",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH gone",
            "DEL gone",
            "MULTI",
            "SET x 1",
            "EXEC",
            "WATCH a",
            "MULTI",
            "SET a 6",
            "FOO",
            "EXEC",
            "MULTI",
            "GET a",
            "EXEC",
            "WATCH a",
            "EXPIRE a 100 NX",
            "MULTI",
            "GET a",
            "EXEC",
            "WATCH a",
            "EXPIRE a 100 NX",
            "MULTI",
            "GET a",
            "EXEC",
            "WATCH a",
            "SELECT 1",
            "SET a 1",
            "MULTI",
            "GET a",
            "EXEC",
            "SELECT 0",
            "WATCH a",
            "SELECT 1",
            "MULTI",
            "GET a",
            "EXEC",
            "SELECT 0",
            "WATCH a",
            "FLUSHDB",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH l",
            "RPUSH l x",
            "MULTI",
            "LLEN l",
            "EXEC",
            "WATCH l",
            "LPOP l 0",
            "MULTI",
            "LLEN l",
            "EXEC",
        ]),
        scripting(),
        across_databases(),
    ]
}

/// COPY into another database, and SELECT inside a script, which moves the script and not
/// its client (Redis 7): both span databases in one atomic step.
fn across_databases() -> Vec<Vec<&'static str>> {
    let mut commands: Vec<Vec<&'static str>> = [
        "SET src v",
        "RPUSH list a b",
        "COPY src dst DB 3",
        "COPY src dst DB 3",
        "COPY src dst DB 3 REPLACE",
        "COPY src src DB 0",
        "COPY src src DB 3",
        "COPY list list DB 4",
        "COPY src x DB 16",
        "COPY src x DB -1",
        "COPY src x DB abc",
        "COPY src x DB",
        "COPY nosuch x DB 3",
        "SELECT 3",
        "GET dst",
        "GET src",
        "SELECT 4",
        "LRANGE list 0 -1",
        "SELECT 0",
        "MULTI",
        "COPY src y DB 5",
        "SET z 1",
        "EXEC",
        "SELECT 5",
        "GET y",
        "SELECT 0",
    ]
    .iter()
    .map(|line| line.split(' ').collect())
    .collect();
    for script in [
        "redis.call('SELECT', 6); redis.call('SET', 'inscript', 'x'); return redis.call('GET', 'inscript')",
        "return redis.call('GET', 'inscript')",
        "return redis.call('SELECT', 16)",
        "return redis.call('SELECT', 'a')",
        "redis.call('SELECT', 6); return redis.call('COPY', 'inscript', 'copied', 'DB', '7')",
        "redis.call('SELECT', 7); return redis.call('GET', 'copied')",
        "redis.pcall('SELECT', 99); return redis.call('GET', 'src')",
    ] {
        commands.push(vec!["EVAL", script, "0"]);
    }
    commands.extend([
        vec!["GET", "inscript"],
        vec!["SELECT", "6"],
        vec!["GET", "inscript"],
        vec!["SELECT", "0"],
    ]);
    commands
}

/// EVAL and friends: conversions both ways, errors with their suffixes, read-only scripts,
/// the script cache.
fn scripting() -> Vec<Vec<&'static str>> {
    let eval = |script: &'static str| vec!["EVAL", script, "1", "s", "arg1", "2"];
    let mut commands = vec![vec!["SET", "s", "abc"]];
    for script in [
        "return redis.call('INCR', KEYS[1])",
        "return redis.call('FOO')",
        "return redis.pcall('INCR', KEYS[1])",
        "error('boom')",
        "return {1,2,nil,3}",
        "return 3.99",
        "return -3.99",
        "return {ok='fine'}",
        "return {err='MY bad'}",
        "return redis.error_reply('X y')",
        "return redis.status_reply('S')",
        "return true",
        "return false",
        "return nil",
        "x = 1",
        "return undefined_global",
        "return redis.call('GET')",
        "return redis.sha1hex('a')",
        "return redis.call()",
        "return redis.call(1)",
        "return redis.call('SET', KEYS[1], {})",
        "local t = redis.pcall('FOO'); return t['err']",
        "return 'a' .. nil",
        "syntax error here",
        "return {1.5, 'x', true, false}",
        "return redis.call('SET', KEYS[1], 1.5)",
        "return redis.call('GET', KEYS[1])",
        "return {KEYS[1], ARGV[1], ARGV[2], #KEYS, #ARGV}",
        "return redis.call('SET', KEYS[1], 'v', 'PX', 5000)",
        "return redis.call('PTTL', KEYS[1]) > 4000",
        "return redis.call('DEL', KEYS[1], 'nothing')",
        "return redis.call('EXISTS', KEYS[1])",
        "return redis.call('PING')",
        "return redis.call('EVAL', 'return 1', 0)",
        "return tonumber(ARGV[2]) + 1",
        "return string.format('%d-%s', 7, 'x')",
        "local n = 0\nfor i = 1, 10 do n = n + i end\nreturn n",
        "\n\nreturn redis.call('INCR', KEYS[1])",
    ] {
        commands.push(eval(script));
    }
    commands.extend([
        vec!["EVAL", "return 1", "2", "a"],
        vec!["EVAL", "return 1", "-1"],
        vec!["EVAL", "return 1", "x"],
        vec!["EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"],
        vec!["SCRIPT", "LOAD", "return 1"],
        vec![
            "SCRIPT",
            "EXISTS",
            "e0e1f9fabfc9d4800c877a703b823ac0578ff8db",
            "abc",
        ],
        vec!["EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"],
        vec!["EVALSHA", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", "0"],
        vec!["SCRIPT", "FLUSH"],
        vec!["EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"],
        vec!["SCRIPT", "FOO"],
        vec!["SCRIPT", "LOAD"],
        vec!["SCRIPT", "FLUSH", "NOW"],
        vec![
            "EVAL_RO",
            "return redis.call('SET', KEYS[1], 'x')",
            "1",
            "s",
        ],
        vec!["EVAL_RO", "return redis.call('GET', KEYS[1])", "1", "s"],
        vec!["EVAL_RO", "return redis.call('PUBLISH', 'c', 'x')", "0"],
    ]);
    commands
}

#[tokio::test]
async fn every_command_replies_like_redis() {
    let Some(servers) = both_servers("every_command_replies_like_redis").await else {
        return;
    };
    let compared = compare_one_by_one(&servers, &scenarios(), "").await;
    println!("{compared} commands answered byte for byte like redis-server");
}

/// The same scenarios, each sent as one pipeline (a single write): consecutive keyspace
/// commands then run as one step, and the replies must still be Redis's, in order.
#[tokio::test]
async fn pipelined_scenarios_reply_like_redis() {
    let Some(servers) = both_servers("pipelined_scenarios_reply_like_redis").await else {
        return;
    };
    compare_pipelined(&servers, &scenarios()).await;
}

/// Malformed requests: the same `ERR Protocol error: …` and the connection closes.
#[tokio::test]
async fn malformed_requests_are_refused_like_redis() {
    let Some(Servers {
        server,
        redis_addr,
        _redis,
        ..
    }) = both_servers("malformed_requests_are_refused_like_redis").await
    else {
        return;
    };
    let inputs: [&[u8]; 8] = [
        b"*x\r\n",
        b"*-0\r\n",
        b"*1\r\n+PING\r\n",
        b"*1\r\n$-5\r\n",
        b"*1\r\n$536870913\r\n",
        b"*3000000000\r\n",
        b"PING \"unbalanced\r\n",
        b"SET k \"a\"b\r\n",
    ];
    for input in inputs {
        let mut ours = Raw::connect(&server.addr().to_string()).await;
        let mut redis = Raw::connect(&redis_addr).await;
        let (a, b) = (ours.send_bytes(input).await, redis.send_bytes(input).await);
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "reply to {:?}",
            String::from_utf8_lossy(input)
        );
        // Redis closes the connection after a protocol error; so must we.
        assert!(
            ours.read_reply().await.is_empty(),
            "still open after {input:?}"
        );
    }
    // Inline commands work like multibulk ones.
    let mut ours = Raw::connect(&server.addr().to_string()).await;
    assert_eq!(ours.send_bytes(b"SET k \"a b\"\r\n").await, b"+OK\r\n");
    assert_eq!(ours.send_bytes(b"GET k\r\n").await, b"$3\r\na b\r\n");
    server.stop().await;
}

/// Where a request ends, read as Redis reads it: a `\r` ends a count or length line and
/// the byte after it is skipped unread; a NUL hides any `\r` or `\n` behind it (Redis
/// searches its buffer with `strchr`), so such a request never completes; a bulk length's
/// `$` is checked only once its line is complete.
#[tokio::test]
async fn requests_are_framed_like_redis() {
    let Some(Servers {
        server,
        redis_addr,
        _redis,
        ..
    }) = both_servers("requests_are_framed_like_redis").await
    else {
        return;
    };
    let inputs: [&[u8]; 8] = [
        b"*1\rX$4\r\nPING\r\n",
        b"*1\r\n$4\rXPING\r\n",
        b"*1\r\n$4\0\r\nPING\r\n",
        b"*1\0\r\n$4\r\nPING\r\n",
        b"*1\r\nX",
        b"*1\r\nX\r\n",
        b"PING\0\r\n",
        b"ECHO \"a\0b\"\r\n",
    ];
    let ours_addr = server.addr().to_string();
    let mut exchanges = Vec::new();
    for input in inputs {
        for addr in [ours_addr.clone(), redis_addr.clone()] {
            exchanges.push(tokio::spawn(async move {
                let mut client = Raw::connect(&addr).await;
                client.stream.write_all(input).await.unwrap();
                // What the request alone gets, even nothing: the server answers what it
                // can, then closes once the client has finished.
                client.finish().await
            }));
        }
    }
    let mut received = Vec::new();
    for exchange in exchanges {
        received.push(exchange.await.unwrap());
    }
    for (input, pair) in inputs.iter().zip(received.chunks(2)) {
        assert_eq!(
            String::from_utf8_lossy(&pair[0]),
            String::from_utf8_lossy(&pair[1]),
            "what each server answers to {:?}",
            String::from_utf8_lossy(input)
        );
    }
    server.stop().await;
}

/// A RESP3 connection publishing to its own subscriptions gets each push where Redis
/// writes it: before the reply of the command that published, also inside a pipeline, a
/// script, and an EXEC array (channel first, then patterns); and while blocked in BLPOP.
#[tokio::test]
async fn resp3_pushes_land_where_redis_writes_them() {
    let Some(Servers {
        server,
        redis_addr,
        _redis,
        ..
    }) = both_servers("resp3_pushes_land_where_redis_writes_them").await
    else {
        return;
    };
    // HELLO's reply is read apart: it carries the connection's id, which differs.
    let setup = [request(&["SUBSCRIBE", "c"]), request(&["PSUBSCRIBE", "c*"])].concat();
    let pipelines: [Vec<Vec<&str>>; 4] = [
        vec![vec!["PUBLISH", "c", "m"], vec!["PING"]],
        vec![
            vec!["SET", "k", "v"],
            vec!["PUBLISH", "cx", "n"],
            vec!["GET", "k"],
        ],
        vec![vec![
            "EVAL",
            "redis.call('publish','c','1') redis.call('publish','c','2') return 7",
            "0",
        ]],
        vec![
            vec!["MULTI"],
            vec!["SET", "k", "v"],
            vec!["PUBLISH", "c", "m"],
            vec!["EVAL", "return redis.call('publish','cx','z')", "0"],
            vec!["PUBLISH", "cy", "n"],
            vec!["EXEC"],
        ],
    ];
    let mut transcripts = Vec::new();
    for addr in [server.addr().to_string(), redis_addr] {
        let mut transcript = Vec::new();
        // Every subscriber stays connected to the end, so that each PUBLISH counts the
        // same receivers on both servers (a closed one may not have been noticed yet).
        let mut subscribers = Vec::new();
        for pipeline in &pipelines {
            let mut client = Raw::connect(&addr).await;
            client.command(&["HELLO", "3"]).await;
            let commands: Vec<Vec<u8>> = pipeline.iter().map(|c| request(c)).collect();
            // Everything the pipeline causes comes before the reply to this.
            let end = request(&["ECHO", END]);
            client
                .stream
                .write_all(&[setup.clone(), commands.concat(), end].concat())
                .await
                .unwrap();
            transcript.push(client.read_through(END.as_bytes()).await);
            subscribers.push(client);
        }
        // Blocked in BLPOP, the client still gets its pushes.
        let mut blocked = Raw::connect(&addr).await;
        let mut other = Raw::connect(&addr).await;
        blocked.command(&["HELLO", "3"]).await;
        blocked.stream.write_all(&setup).await.unwrap();
        transcript.push(blocked.read_reply().await);
        transcript.push(blocked.read_reply().await);
        blocked.send_only(&["BLPOP", "list", "0"]).await;
        other.await_blocked(1).await;
        other.command(&["PUBLISH", "c", "while blocked"]).await;
        transcript.push(blocked.read_reply().await);
        transcript.push(blocked.read_reply().await);
        other.command(&["RPUSH", "list", "x"]).await;
        transcript.push(blocked.read_reply().await);
        transcripts.push(transcript);
    }
    for (ours, redis) in transcripts[0].iter().zip(&transcripts[1]) {
        assert_eq!(
            String::from_utf8_lossy(ours),
            String::from_utf8_lossy(redis)
        );
    }
    server.stop().await;
}

/// Pub/sub: confirmations, delivery, what a subscribed connection may run, and leaving.
#[tokio::test]
async fn pubsub_behaves_like_redis() {
    let Some(Servers {
        server,
        redis_addr,
        _redis,
        ..
    }) = both_servers("pubsub_behaves_like_redis").await
    else {
        return;
    };
    let mut transcripts = Vec::new();
    for addr in [server.addr().to_string(), redis_addr] {
        let mut subscriber = Raw::connect(&addr).await;
        let mut publisher = Raw::connect(&addr).await;
        let mut transcript = Vec::new();
        transcript.push(subscriber.command(&["SUBSCRIBE", "a", "b"]).await);
        transcript.push(subscriber.read_reply().await);
        transcript.push(publisher.command(&["PUBLISH", "a", "hello"]).await);
        transcript.push(subscriber.read_reply().await);
        transcript.push(publisher.command(&["SELECT", "3"]).await);
        transcript.push(publisher.command(&["PUBLISH", "b", "from db 3"]).await);
        transcript.push(subscriber.read_reply().await);
        transcript.push(
            publisher
                .command(&["EVAL", "return redis.call('PUBLISH', 'a', 'lua')", "0"])
                .await,
        );
        transcript.push(subscriber.read_reply().await);
        transcript.push(publisher.command(&["PUBLISH", "nobody", "x"]).await);
        transcript.push(subscriber.command(&["GET", "k"]).await);
        transcript.push(subscriber.command(&["PING"]).await);
        transcript.push(subscriber.command(&["PING", "hi"]).await);
        transcript.push(subscriber.command(&["SUBSCRIBE", "a"]).await);
        transcript.push(subscriber.command(&["UNSUBSCRIBE", "a"]).await);
        transcript.push(subscriber.command(&["UNSUBSCRIBE"]).await);
        transcript.push(subscriber.command(&["UNSUBSCRIBE"]).await);
        transcript.push(subscriber.command(&["PING"]).await);
        transcript.push(publisher.command(&["PUBLISH", "a", "gone"]).await);
        // Patterns.
        transcript.push(
            subscriber
                .command(&["PSUBSCRIBE", "lock:*:wake", "h?llo"])
                .await,
        );
        transcript.push(subscriber.read_reply().await);
        transcript.push(publisher.command(&["PUBLISH", "lock:a:wake", "x"]).await);
        transcript.push(subscriber.read_reply().await);
        transcript.push(publisher.command(&["PUBLISH", "hello", "y"]).await);
        transcript.push(subscriber.read_reply().await);
        transcript.push(publisher.command(&["PUBLISH", "lock:a:sleep", "z"]).await);
        transcript.push(subscriber.command(&["SUBSCRIBE", "plain"]).await);
        transcript.push(subscriber.command(&["GET", "k"]).await);
        transcript.push(subscriber.command(&["PUNSUBSCRIBE", "h?llo"]).await);
        transcript.push(subscriber.command(&["PUNSUBSCRIBE"]).await);
        transcript.push(subscriber.command(&["PUNSUBSCRIBE"]).await);
        transcript.push(subscriber.command(&["UNSUBSCRIBE"]).await);
        transcript.push(subscriber.command(&["PSUBSCRIBE"]).await);
        transcript.push(subscriber.command(&["PUNSUBSCRIBE"]).await);
        transcript.push(publisher.command(&["PUBLISH", "lock:a:wake", "gone"]).await);
        transcripts.push(transcript);
    }
    assert_same_transcripts(&transcripts, "pub/sub");
    server.stop().await;
}

/// `text` with every run of digits replaced by one `#`: client ids differ between servers.
fn digits_masked(reply: &[u8]) -> Vec<u8> {
    let mut masked = Vec::new();
    for &byte in reply {
        if !byte.is_ascii_digit() {
            masked.push(byte);
        } else if masked.last() != Some(&b'#') {
            masked.push(b'#');
        }
    }
    masked
}

/// After `HELLO 3`: the map reply, RESP3 nulls, pub/sub events as pushes, and commands
/// allowed while subscribed.
#[tokio::test]
async fn resp3_after_hello_3_is_spoken_like_redis() {
    let Some(Servers {
        server,
        redis_addr,
        _redis,
        ..
    }) = both_servers("resp3_after_hello_3_is_spoken_like_redis").await
    else {
        return;
    };
    let mut transcripts = Vec::new();
    for addr in [server.addr().to_string(), redis_addr] {
        let mut client = Raw::connect(&addr).await;
        let mut publisher = Raw::connect(&addr).await;
        let hello = client.command(&["HELLO", "3"]).await;
        // The client id differs between servers; everything else must not.
        let hello = digits_masked(&hello);
        let mut transcript = vec![hello];
        for command in [
            vec!["DEL", "nokey"],
            vec!["GET", "nokey"],
            vec!["SET", "k", "v"],
            vec!["EVAL", "return {1, false, 'x'}", "0"],
            vec!["SUBSCRIBE", "ch"],
            vec!["GET", "k"],
            vec!["PING"],
        ] {
            transcript.push(client.command(&command).await);
        }
        transcript.push(publisher.command(&["PUBLISH", "ch", "hi"]).await);
        transcript.push(client.read_reply().await);
        transcript.push(client.command(&["UNSUBSCRIBE"]).await);
        transcript.push(client.command(&["PSUBSCRIBE", "c*"]).await);
        transcript.push(publisher.command(&["PUBLISH", "ch", "pattern"]).await);
        transcript.push(client.read_reply().await);
        transcript.push(client.command(&["PUNSUBSCRIBE"]).await);
        let hello = client.command(&["HELLO", "2"]).await;
        let hello = digits_masked(&hello);
        transcript.push(hello);
        transcript.push(client.command(&["GET", "nokey"]).await);
        transcripts.push(transcript);
    }
    assert_same_transcripts(&transcripts, "RESP3");
    server.stop().await;
}

/// BLPOP waits: served by a later push, oldest waiter first, timing out with a null
/// array, and giving nothing away when the waiting client leaves.
#[tokio::test]
async fn blpop_blocks_and_is_served_like_redis() {
    let Some(Servers {
        server,
        redis_addr,
        _redis,
        ..
    }) = both_servers("blpop_blocks_and_is_served_like_redis").await
    else {
        return;
    };
    let mut transcripts = Vec::new();
    for addr in [server.addr().to_string(), redis_addr] {
        let mut first = Raw::connect(&addr).await;
        let mut second = Raw::connect(&addr).await;
        let mut pusher = Raw::connect(&addr).await;
        let mut transcript = vec![pusher.command(&["FLUSHALL"]).await];
        // Two waiters on the same list; the first to block is served first.
        first.send_only(&["BLPOP", "jobs", "other", "0"]).await;
        pusher.await_blocked(1).await;
        second.send_only(&["BLPOP", "jobs", "5"]).await;
        pusher.await_blocked(2).await;
        transcript.push(pusher.command(&["RPUSH", "jobs", "a", "b", "c"]).await);
        transcript.push(first.read_reply().await);
        transcript.push(second.read_reply().await);
        transcript.push(pusher.command(&["LLEN", "jobs"]).await);
        // A push inside MULTI serves the waiter when EXEC runs.
        first.send_only(&["BLPOP", "other", "0"]).await;
        pusher.await_blocked(1).await;
        transcript.push(pusher.command(&["MULTI"]).await);
        transcript.push(pusher.command(&["LPUSH", "other", "x"]).await);
        transcript.push(pusher.command(&["EXEC"]).await);
        transcript.push(first.read_reply().await);
        // Pushed by a script.
        first.send_only(&["BLPOP", "other", "0"]).await;
        pusher.await_blocked(1).await;
        transcript.push(
            pusher
                .command(&[
                    "EVAL",
                    "return redis.call('RPUSH', KEYS[1], 'lua')",
                    "1",
                    "other",
                ])
                .await,
        );
        transcript.push(first.read_reply().await);
        // Timeout.
        transcript.push(first.command(&["BLPOP", "nothing", "0.05"]).await);
        // A waiter that leaves takes nothing with it.
        let mut leaver = Raw::connect(&addr).await;
        leaver.send_only(&["BLPOP", "kept", "0"]).await;
        pusher.await_blocked(1).await;
        drop(leaver);
        pusher.await_blocked(0).await;
        transcript.push(pusher.command(&["RPUSH", "kept", "v"]).await);
        transcript.push(pusher.command(&["LLEN", "kept"]).await);
        transcripts.push(transcript);
    }
    assert_same_transcripts(&transcripts, "BLPOP");
    server.stop().await;
}

/// A watched key that expires before EXEC aborts it, as in Redis 7.0; one that was
/// already expired when watched does not. Redis's clock is real, so its side waits out
/// the TTL; ours fast-forwards.
#[tokio::test]
async fn a_watched_key_that_expires_aborts_exec_like_redis() {
    let Some(Servers {
        server,
        redis_addr,
        _redis,
        ..
    }) = both_servers("a_watched_key_that_expires_aborts_exec_like_redis").await
    else {
        return;
    };
    let mut transcripts = Vec::new();
    for (addr, ours) in [(server.addr().to_string(), true), (redis_addr, false)] {
        let mut client = Raw::connect(&addr).await;
        let pass_time = async |client: &mut Raw| {
            if ours {
                client.command(&["NXLOCK.FASTFORWARD", "1000"]).await;
            } else {
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        };
        let mut transcript = vec![client.command(&["FLUSHALL"]).await];
        for step in [
            // Live when watched, expired at EXEC: aborted.
            &["SET", "k", "v", "PX", "100"][..],
            &["WATCH", "k"],
        ] {
            transcript.push(client.command(step).await);
        }
        pass_time(&mut client).await;
        for step in [&["MULTI"][..], &["SET", "other", "1"], &["EXEC"]] {
            transcript.push(client.command(step).await);
        }
        // Already expired when watched, and reaped since: not a change.
        transcript.push(client.command(&["SET", "k", "v", "PX", "100"]).await);
        pass_time(&mut client).await;
        transcript.push(client.command(&["WATCH", "k"]).await);
        transcript.push(client.command(&["GET", "k"]).await);
        for step in [&["MULTI"][..], &["SET", "other", "2"], &["EXEC"]] {
            transcript.push(client.command(step).await);
        }
        transcripts.push(transcript);
    }
    assert_same_transcripts(&transcripts, "WATCH expiry");
    server.stop().await;
}

/// `CLIENT REPLY OFF` and `SKIP` silence replies but not pub/sub pushes: subscription
/// confirmations and messages still arrive, in RESP2 and RESP3; `CLIENT REPLY ON` right
/// after `SKIP` answers, and `SKIP` while replies are off keeps them off.
#[tokio::test]
async fn client_reply_off_silences_replies_not_pushes_like_redis() {
    let Some(Servers {
        server,
        redis_addr,
        _redis,
        ..
    }) = both_servers("client_reply_off_silences_replies_not_pushes_like_redis").await
    else {
        return;
    };
    let mut transcripts = Vec::new();
    for addr in [server.addr().to_string(), redis_addr] {
        let mut transcript = Vec::new();
        for protocol in ["2", "3"] {
            let mut subscriber = Raw::connect(&addr).await;
            let mut publisher = Raw::connect(&addr).await;
            transcript.push(digits_masked(
                &subscriber.command(&["HELLO", protocol]).await,
            ));
            subscriber.send_only(&["CLIENT", "REPLY", "OFF"]).await;
            transcript.push(subscriber.command(&["SUBSCRIBE", "ch"]).await);
            transcript.push(subscriber.command(&["PSUBSCRIBE", "c*"]).await);
            transcript.push(publisher.command(&["PUBLISH", "ch", "hello"]).await);
            transcript.push(subscriber.read_reply().await);
            transcript.push(subscriber.read_reply().await);
            // PING's reply is silenced: the next thing to arrive is UNSUBSCRIBE's push.
            subscriber.send_only(&["PING"]).await;
            transcript.push(subscriber.command(&["UNSUBSCRIBE", "ch"]).await);
            transcript.push(subscriber.command(&["PUNSUBSCRIBE", "c*"]).await);
            // Replies off, SKIP changes nothing; ON answers.
            subscriber.send_only(&["CLIENT", "REPLY", "SKIP"]).await;
            subscriber.send_only(&["SET", "k", "silenced"]).await;
            transcript.push(subscriber.command(&["CLIENT", "REPLY", "ON"]).await);
            transcript.push(subscriber.command(&["GET", "k"]).await);
            // ON right after SKIP unsets the skip and answers itself.
            subscriber.send_only(&["CLIENT", "REPLY", "SKIP"]).await;
            transcript.push(subscriber.command(&["CLIENT", "REPLY", "ON"]).await);
            subscriber.send_only(&["CLIENT", "REPLY", "SKIP"]).await;
            subscriber.send_only(&["GET", "k"]).await;
            transcript.push(subscriber.command(&["PING"]).await);
        }
        transcripts.push(transcript);
    }
    assert_same_transcripts(&transcripts, "CLIENT REPLY");
    server.stop().await;
}

/// An element a served BLMOVE (or BRPOPLPUSH) pushes serves a client blocked on its
/// destination in the same turn; a blocked BRPOPLPUSH whose destination turned out not to
/// be a list gets WRONGTYPE and the element stays; CLIENT UNBLOCK ends a wait as a
/// timeout or with an error.
#[tokio::test]
async fn blocked_moves_and_unblocks_are_served_like_redis() {
    let Some(Servers {
        server,
        redis_addr,
        _redis,
        ..
    }) = both_servers("blocked_moves_and_unblocks_are_served_like_redis").await
    else {
        return;
    };
    let mut transcripts = Vec::new();
    for addr in [server.addr().to_string(), redis_addr] {
        let mut mover = Raw::connect(&addr).await;
        let mut popper = Raw::connect(&addr).await;
        let mut pusher = Raw::connect(&addr).await;
        let mut transcript = vec![pusher.command(&["FLUSHALL"]).await];
        for (command, from, to) in [
            ("BLMOVE", "LEFT", "LEFT"),
            ("BLMOVE", "RIGHT", "LEFT"),
            ("BRPOPLPUSH", "", ""),
        ] {
            popper.send_only(&["BLPOP", "target{t}", "0"]).await;
            pusher.await_blocked(1).await;
            if command == "BLMOVE" {
                mover
                    .send_only(&["BLMOVE", "source{t}", "target{t}", from, to, "0"])
                    .await;
            } else {
                mover
                    .send_only(&["BRPOPLPUSH", "source{t}", "target{t}", "0"])
                    .await;
            }
            pusher.await_blocked(2).await;
            transcript.push(pusher.command(&["RPUSH", "source{t}", "foo"]).await);
            transcript.push(mover.read_reply().await);
            transcript.push(popper.read_reply().await);
            transcript.push(pusher.command(&["EXISTS", "target{t}", "source{t}"]).await);
        }
        transcript.push(pusher.command(&["SET", "target{t}", "not a list"]).await);
        mover
            .send_only(&["BRPOPLPUSH", "source{t}", "target{t}", "0"])
            .await;
        pusher.await_blocked(1).await;
        transcript.push(pusher.command(&["RPUSH", "source{t}", "foo"]).await);
        transcript.push(mover.read_reply().await);
        transcript.push(pusher.command(&["LRANGE", "source{t}", "0", "-1"]).await);
        let id = String::from_utf8_lossy(&mover.command(&["CLIENT", "ID"]).await)
            .trim_matches(|c: char| !c.is_ascii_digit())
            .to_string();
        for mode in [None, Some("TIMEOUT"), Some("ERROR")] {
            mover.send_only(&["BLPOP", "nothing", "0"]).await;
            pusher.await_blocked(1).await;
            let mut unblock = vec!["CLIENT", "UNBLOCK", id.as_str()];
            unblock.extend(mode);
            transcript.push(pusher.command(&unblock).await);
            transcript.push(mover.read_reply().await);
        }
        transcript.push(pusher.command(&["CLIENT", "UNBLOCK", &id]).await);
        transcript.push(pusher.command(&["CLIENT", "UNBLOCK", &id, "LATER"]).await);
        transcript.push(pusher.command(&["CLIENT", "UNBLOCK", "x"]).await);
        transcripts.push(transcript);
    }
    assert_same_transcripts(&transcripts, "blocked moves");
    server.stop().await;
}

/// A tracked key whose TTL passes is invalidated by active expiry, with no command after
/// it to carry the invalidation.
#[tokio::test]
async fn an_expired_tracked_key_is_invalidated_without_another_command() {
    let Some(Servers {
        server,
        redis_addr,
        _redis,
        ..
    }) = both_servers("an_expired_tracked_key_is_invalidated_without_another_command").await
    else {
        return;
    };
    let mut transcripts = Vec::new();
    for addr in [server.addr().to_string(), redis_addr] {
        let mut t = Vec::new();
        let mut reader = Raw::connect(&addr).await;
        let mut writer = Raw::connect(&addr).await;
        t.push(reader.command(&["HELLO", "3"]).await);
        t.push(reader.command(&["CLIENT", "TRACKING", "ON", "BCAST"]).await);
        t.push(writer.command(&["SET", "short", "v", "PX", "20"]).await);
        t.push(reader.read_reply().await);
        // Nothing is sent to either server now: the reply waits on active expiry.
        t.push(reader.read_reply().await);
        transcripts.push(t);
    }
    // HELLO's reply differs in ids and versions: only that it came is compared.
    transcripts.iter_mut().for_each(|t| t[0].clear());
    assert_same_transcripts(&transcripts, "expired tracked key");
    server.stop().await;
}

/// `tracking-table-max-keys`: past the limit, keys are forgotten (picked at random) and
/// their readers told, before the next command runs, as Redis does.
#[tokio::test]
async fn a_full_tracking_table_forgets_keys_and_tells_their_readers() {
    let Some(Servers {
        server,
        redis_addr,
        _redis,
        ..
    }) = both_servers("a_full_tracking_table_forgets_keys_and_tells_their_readers").await
    else {
        return;
    };
    let mut outcomes = Vec::new();
    for addr in [server.addr().to_string(), redis_addr] {
        let mut reader = Raw::connect(&addr).await;
        let mut listener = Raw::connect(&addr).await;
        let id = String::from_utf8_lossy(&listener.command(&["CLIENT", "ID"]).await)
            .trim_start_matches(':')
            .trim()
            .to_string();
        listener
            .command(&["SUBSCRIBE", "__redis__:invalidate"])
            .await;
        let mut t = vec![
            reader
                .command(&["CONFIG", "GET", "tracking-table-max-keys"])
                .await,
            reader
                .command(&["CLIENT", "TRACKING", "ON", "REDIRECT", &id])
                .await,
            reader
                .command(&["MSET", "a", "1", "b", "2", "c", "3"])
                .await,
            reader.command(&["MGET", "a", "b", "c"]).await,
        ];
        // INFO's counts of the table, and of a BCAST client's prefixes.
        let mut bcast = Raw::connect(&addr).await;
        bcast
            .command(&[
                "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p:", "PREFIX", "q:",
            ])
            .await;
        let info = String::from_utf8_lossy(&reader.command(&["INFO"]).await).to_string();
        for field in [
            "tracking_clients",
            "tracking_total_keys",
            "tracking_total_items",
            "tracking_total_prefixes",
        ] {
            let value = info
                .lines()
                .find_map(|line| line.strip_prefix(&format!("{field}:")))
                .unwrap_or("missing");
            t.push(format!("{field}:{value}").into_bytes());
        }
        t.extend([
            reader
                .command(&["CONFIG", "SET", "tracking-table-max-keys", "1"])
                .await,
            reader.command(&["PING"]).await,
        ]);
        // Two of the three keys are forgotten: which two is the server's choice.
        let mut forgotten = Vec::new();
        for _ in 0..2 {
            let message = listener.read_reply().await;
            let text = String::from_utf8_lossy(&message).to_string();
            let key = ["a", "b", "c"]
                .into_iter()
                .find(|key| text.ends_with(&format!("*1\r\n$1\r\n{key}\r\n")));
            forgotten.push(key.unwrap_or("?").to_string());
        }
        forgotten.sort();
        forgotten.dedup();
        t.push(format!("{} distinct keys forgotten", forgotten.len()).into_bytes());
        // The one key left is still tracked: its change is sent.
        reader
            .command(&["CONFIG", "SET", "tracking-table-max-keys", "0"])
            .await;
        let kept = ["a", "b", "c"]
            .into_iter()
            .find(|key| !forgotten.iter().any(|f| f == key))
            .unwrap_or("a");
        t.push(reader.command(&["SET", kept, "changed"]).await);
        let message = listener.read_reply().await;
        t.push(
            String::from_utf8_lossy(&message)
                .replace(&format!("$1\r\n{kept}\r\n"), "$1\r\nKEPT\r\n")
                .into_bytes(),
        );
        t.push(
            reader
                .command(&["CONFIG", "SET", "tracking-table-max-keys", "-1"])
                .await,
        );
        outcomes.push(t);
    }
    assert_same_transcripts(&outcomes, "tracking table limit");
    server.stop().await;
}

/// A blocked RESP3 client's reply lands where Redis writes it among its pushes: a
/// tracking client blocked in BLMOVE gets its reply, then the invalidation of the
/// destination its own move changed; a subscriber blocked in BLPOP gets a message
/// published before the push that served it ahead of its reply (the publish and the
/// push arrive in one write, so both run before the blocked connection next reads its
/// inbox).
#[tokio::test]
async fn a_served_blocked_client_gets_its_reply_among_its_pushes_as_redis_writes_it() {
    let Some(servers) =
        both_servers("a_served_blocked_client_gets_its_reply_among_its_pushes_as_redis_writes_it")
            .await
    else {
        return;
    };
    let mut transcripts = Vec::new();
    for addr in [servers.ours(), servers.redis_addr.clone()] {
        let mut client = Raw::connect(&addr).await;
        let mut mover = Raw::connect(&addr).await;
        let mut subscriber = Raw::connect(&addr).await;
        client.command(&["RPUSH", "list2", "a"]).await;
        mover.command(&["HELLO", "3"]).await;
        subscriber.command(&["HELLO", "3"]).await;
        let mut t = vec![
            mover.command(&["CLIENT", "TRACKING", "ON"]).await,
            mover.command(&["LRANGE", "list2", "0", "-1"]).await,
            subscriber.command(&["SUBSCRIBE", "c"]).await,
        ];
        mover
            .send_only(&["BLMOVE", "list1", "list2", "LEFT", "LEFT", "0"])
            .await;
        until_blocked(&mut client).await;
        t.push(client.command(&["RPUSH", "list1", "foo"]).await);
        t.push(mover.read_reply().await);
        t.push(mover.read_reply().await);
        subscriber.send_only(&["BLPOP", "list", "0"]).await;
        until_blocked(&mut client).await;
        let both = [
            request(&["PUBLISH", "c", "before"]),
            request(&["RPUSH", "list", "x"]),
        ]
        .concat();
        client.stream.write_all(&both).await.unwrap();
        t.push(client.read_reply().await);
        t.push(client.read_reply().await);
        t.push(subscriber.read_reply().await);
        t.push(subscriber.read_reply().await);
        transcripts.push(t);
    }
    assert_same_transcripts(&transcripts, "served blocked clients");
}

/// CLIENT TRACKINGINFO: BCAST without a prefix lists the empty one, and turning tracking
/// off forgets a pending CLIENT CACHING.
#[tokio::test]
async fn tracking_info_reports_like_redis() {
    let Some(servers) = both_servers("tracking_info_reports_like_redis").await else {
        return;
    };
    let script: &[&[&str]] = &[
        &["CLIENT", "TRACKING", "ON", "BCAST"],
        &["CLIENT", "TRACKINGINFO"],
        &["CLIENT", "TRACKING", "OFF"],
        &["CLIENT", "TRACKING", "ON", "OPTIN"],
        &["CLIENT", "CACHING", "YES"],
        &["CLIENT", "TRACKINGINFO"],
        &["CLIENT", "TRACKING", "OFF"],
        &["CLIENT", "TRACKING", "ON", "OPTOUT"],
        &["CLIENT", "TRACKINGINFO"],
        &["CLIENT", "CACHING", "NO"],
        &["CLIENT", "TRACKINGINFO"],
    ];
    let mut transcripts = Vec::new();
    for addr in [servers.ours(), servers.redis_addr.clone()] {
        let mut client = Raw::connect(&addr).await;
        let mut t = Vec::new();
        for command in script {
            t.push(client.command(command).await);
        }
        transcripts.push(t);
    }
    assert_same_transcripts(&transcripts, "CLIENT TRACKINGINFO");
}

/// Client-side caching: `CLIENT TRACKING` in default, BCAST, OPTIN and NOLOOP modes, over
/// RESP3 and redirected to a RESP2 subscriber, its refusals, what RESET and a flush do,
/// and a redirect target that went away, as Redis 7.0 does them.
#[tokio::test]
async fn client_side_caching_invalidates_like_redis() {
    let Some(Servers {
        server,
        redis_addr,
        _redis,
        ..
    }) = both_servers("client_side_caching_invalidates_like_redis").await
    else {
        return;
    };
    let mut transcripts = Vec::new();
    for addr in [server.addr().to_string(), redis_addr] {
        let mut t = Vec::new();
        let mut reader = Raw::connect(&addr).await;
        let mut writer = Raw::connect(&addr).await;
        t.push(writer.command(&["FLUSHALL"]).await);
        t.push(digits_masked(&reader.command(&["HELLO", "3"]).await));
        // Refusals.
        for refused in [
            &["CLIENT", "CACHING", "YES"][..],
            &["CLIENT", "TRACKING", "ON", "PREFIX", "a"],
            &["CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"],
            &["CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"],
            &["CLIENT", "TRACKING", "ON", "REDIRECT", "999999"],
            &[
                "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab", "PREFIX", "a",
            ],
            &["CLIENT", "TRACKING", "MAYBE"],
            &["CLIENT", "TRACKING", "ON", "FOO"],
            &["CLIENT", "GETREDIR"],
            &["CLIENT", "TRACKINGINFO"],
        ] {
            t.push(reader.command(refused).await);
        }
        // Default mode: a read key is invalidated once, by another client's write.
        t.push(reader.command(&["CLIENT", "TRACKING", "ON"]).await);
        t.push(reader.command(&["CLIENT", "TRACKINGINFO"]).await);
        t.push(reader.command(&["CLIENT", "GETREDIR"]).await);
        t.push(reader.command(&["GET", "k"]).await);
        t.push(reader.command(&["MGET", "k2", "k3"]).await);
        t.push(writer.command(&["SET", "k", "1"]).await);
        t.push(writer.command(&["SET", "k", "2"]).await);
        t.push(writer.command(&["MSET", "k2", "x", "k3", "y"]).await);
        t.push(reader.read_reply().await);
        t.push(reader.read_reply().await);
        t.push(reader.read_reply().await);
        t.push(reader.command(&["PING"]).await);
        // Its own write: the invalidation follows the reply.
        t.push(reader.command(&["GET", "k"]).await);
        t.push(reader.command(&["SET", "k", "3"]).await);
        t.push(reader.read_reply().await);
        // A script that reads tracks its declared keys.
        t.push(
            reader
                .command(&["EVAL", "return redis.call('GET', KEYS[1])", "1", "s"])
                .await,
        );
        t.push(writer.command(&["SET", "s", "1"]).await);
        t.push(reader.read_reply().await);
        // NOLOOP: its own writes are not sent.
        t.push(
            reader
                .command(&["CLIENT", "TRACKING", "ON", "NOLOOP"])
                .await,
        );
        t.push(reader.command(&["GET", "k"]).await);
        t.push(reader.command(&["SET", "k", "4"]).await);
        t.push(reader.command(&["PING"]).await);
        t.push(reader.command(&["CLIENT", "TRACKING", "OFF"]).await);
        // OPTIN: only after CLIENT CACHING YES, for the next command.
        t.push(reader.command(&["CLIENT", "TRACKING", "ON", "OPTIN"]).await);
        t.push(reader.command(&["CLIENT", "CACHING", "NO"]).await);
        t.push(reader.command(&["GET", "k"]).await);
        t.push(reader.command(&["CLIENT", "CACHING", "YES"]).await);
        t.push(reader.command(&["CLIENT", "TRACKINGINFO"]).await);
        t.push(reader.command(&["GET", "o"]).await);
        t.push(writer.command(&["SET", "k", "5"]).await);
        t.push(writer.command(&["SET", "o", "1"]).await);
        t.push(reader.read_reply().await);
        t.push(reader.command(&["PING"]).await);
        t.push(reader.command(&["CLIENT", "TRACKING", "OFF"]).await);
        // BCAST: every change under a prefix, one invalidation per prefix and command.
        t.push(
            reader
                .command(&[
                    "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "b",
                ])
                .await,
        );
        t.push(reader.command(&["CLIENT", "TRACKINGINFO"]).await);
        t.push(
            writer
                .command(&["MSET", "b2", "1", "a2", "1", "a1", "1", "c", "1"])
                .await,
        );
        t.push(reader.read_reply().await);
        t.push(reader.read_reply().await);
        t.push(reader.command(&["PING"]).await);
        // A flush invalidates everything at once.
        t.push(writer.command(&["FLUSHDB"]).await);
        t.push(reader.read_reply().await);
        // RESET turns tracking off.
        t.push(reader.command(&["RESET"]).await);
        t.push(reader.command(&["CLIENT", "TRACKINGINFO"]).await);
        // Redirected to a RESP2 subscriber of __redis__:invalidate.
        let mut subscriber = Raw::connect(&addr).await;
        let id = String::from_utf8_lossy(&subscriber.command(&["CLIENT", "ID"]).await)
            .trim_matches(|c: char| !c.is_ascii_digit())
            .to_string();
        t.push(
            subscriber
                .command(&["SUBSCRIBE", "__redis__:invalidate"])
                .await,
        );
        t.push(
            reader
                .command(&["CLIENT", "TRACKING", "ON", "REDIRECT", &id])
                .await,
        );
        t.push(digits_masked(
            &reader.command(&["CLIENT", "GETREDIR"]).await,
        ));
        t.push(reader.command(&["GET", "r"]).await);
        t.push(writer.command(&["SET", "r", "1"]).await);
        t.push(subscriber.read_reply().await);
        t.push(writer.command(&["FLUSHALL"]).await);
        t.push(subscriber.read_reply().await);
        // The redirect target leaves: the RESP3 tracking client hears of it.
        t.push(
            reader
                .command(&["HELLO", "3"])
                .await
                .is_empty()
                .to_string()
                .into_bytes(),
        );
        t.push(reader.command(&["GET", "r"]).await);
        drop(subscriber);
        writer.await_connected(2).await;
        t.push(writer.command(&["SET", "r", "2"]).await);
        t.push(digits_masked(&reader.read_reply().await));
        t.push(
            reader
                .command(&["CLIENT", "TRACKINGINFO"])
                .await
                .len()
                .to_string()
                .into_bytes(),
        );
        transcripts.push(t);
    }
    assert_same_transcripts(&transcripts, "client-side caching");
    server.stop().await;
}

/// Where Redis checks one thing before another (the key's type before an argument, a
/// missing key before either), and how it treats a transaction or an unknown command
/// that a queue-time error refuses.
fn error_order() -> Vec<Scenario> {
    vec![
        lines(&["MULTI", "EXEC extra", "INCR c", "EXEC", "GET c"]),
        lines(&["MULTI", "INCR c", "SUBSCRIBE ch", "EXEC", "GET c"]),
        lines(&["MULTI", "INCR c", "NOSUCH", "EXEC", "GET c"]),
        lines(&["MULTI", "INCR c", "GET", "EXEC", "GET c"]),
        lines(&["MULTI", "INCR c", "MULTI", "EXEC", "GET c"]),
        lines(&["MULTI", "INCR c", "WATCH c", "EXEC", "GET c"]),
        lines(&[
            "HINCRBYFLOAT h f inf",
            "HINCRBYFLOAT h f -inf",
            "HINCRBYFLOAT h f nan",
            "SADD a m",
            "SINTERCARD 1 a LIMIT x",
            "SINTERCARD 1 a LIMIT",
            "SINTERCARD 1 a LIMIT 1 LIMIT -1",
            "SINTERCARD 1 a LIMIT 5 LIMIT 0",
            "MEMORY USAGE missing",
            "MEMORY USAGE a SAMPLES x",
            "MEMORY USAGE a SAMPLES -1",
            "MEMORY USAGE a BOGUS",
            "MEMORY USAGE",
            "MEMORY BOGUS",
            "MEMORY DOCTOR x",
            "MEMORY HELP",
        ]),
        lines(&[
            "LINDEX missing x",
            "SADD s m",
            "LINDEX s x",
            "LSET s x v",
            "LSET missing x v",
            "RPUSH l a",
            "INCRBYFLOAT l notafloat",
            "INCRBYFLOAT missing notafloat",
            "SSCAN missing 0 bogus",
            "SSCAN s 0 bogus",
            "ZSCAN l 0 bogus",
            "ZSCAN missing 0 bogus",
            "HSCAN missing 0 bogus",
            "SCAN 0 bogus",
            "SMOVE missing l m",
            "SMOVE s l m",
            "SMOVE s missing nope",
            "EVALSHA_RO xyz 1",
            "EVALSHA xyz 1",
            "EVALSHA xyz notanumber",
            "ZADD z 1 a",
            "ZCOUNT z x 1",
            "ZCOUNT missing x 1",
            "ZRANGEBYSCORE z x 1",
            "ZRANGEBYSCORE missing x 1",
            "LRANGE s x 1",
            "LRANGE missing x 1",
            "LTRIM s x 1",
            "SRANDMEMBER l x",
            "SPOP l x",
            "HINCRBY l f x",
            "HINCRBY missing f x",
            "INCRBY l x",
            "ZINCRBY l x m",
            "ZRANGE l x 1",
            "EXPIRE missing x",
            "GETEX missing EX x",
            "GETRANGE l x 1",
            "SETRANGE l x v",
            "LPOS l a RANK x",
            "LPOS missing a RANK x",
        ]),
        lines(&[
            "SCRIPT KILL",
            "FUNCTION KILL",
            "SCRIPT KILL x",
            "FUNCTION KILL x",
        ]),
        vec![
            vec!["CONFIG", "GET", "client-output-buffer-limit"],
            vec![
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "pubsub 1mb 512kb 10",
            ],
            vec!["CONFIG", "GET", "client-output-buffer-limit"],
            vec![
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "pubsub 1mb 512kb",
            ],
            vec![
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "master 1 1 1",
            ],
            vec![
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "pubsub 1x 1 1",
            ],
            vec![
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "pubsub 1 1 -1",
            ],
            vec![
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "normal 1 1 1 replica 2 2 2 slave 3 3 3",
            ],
            vec!["CONFIG", "GET", "client-output-buffer-limit"],
            vec![
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
            ],
            vec!["CONFIG", "SET", "protected-mode", "maybe"],
            vec!["CONFIG", "GET", "tcp-backlog"],
        ],
        vec![
            vec!["ZADD", "z", "1", "a"],
            vec!["ZCOUNT", "z", " ", "1"],
            vec!["ZCOUNT", "z", "1", ""],
            vec!["ZCOUNT", "z", "(", "1"],
            vec!["ZRANGEBYSCORE", "z", " ", "1"],
            vec!["ZREMRANGEBYSCORE", "z", "1 ", "1"],
        ],
    ]
}

#[tokio::test]
async fn errors_come_in_redis_order() {
    let Some(servers) = both_servers("errors_come_in_redis_order").await else {
        return;
    };
    let found = support::side_by_side::mismatches(&servers, &error_order()).await;
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD: weights, aggregates,
/// sets as inputs, infinities, and Redis's order of errors.
#[tokio::test]
async fn sorted_set_algebra_answers_like_redis() {
    let Some(servers) = both_servers("sorted_set_algebra_answers_like_redis").await else {
        return;
    };
    let scenarios = vec![
        lines(&[
            "ZADD a 1 x 2 y 3 z",
            "ZADD b 10 y 20 z 30 w",
            "SADD s y w q",
            "SET str v",
            "ZUNIONSTORE d 2 a b",
            "ZRANGE d 0 -1 WITHSCORES",
            "ZINTERSTORE d 2 a b WEIGHTS 2 0.5",
            "ZRANGE d 0 -1 WITHSCORES",
            "ZUNIONSTORE d 3 a b s AGGREGATE MAX",
            "ZRANGE d 0 -1 WITHSCORES",
            "ZINTERSTORE d 2 a s AGGREGATE min",
            "ZRANGE d 0 -1 WITHSCORES",
            "ZDIFFSTORE d 2 a b",
            "ZRANGE d 0 -1 WITHSCORES",
            "ZDIFFSTORE d 2 missing a",
            "EXISTS d",
            "ZUNION 2 a b WITHSCORES",
            "ZINTER 2 a b",
            "ZINTER 2 a b WITHSCORES AGGREGATE SUM WEIGHTS 1 -1",
            "ZDIFF 3 b a s WITHSCORES",
            "ZINTERCARD 2 a b",
            "ZINTERCARD 2 a b LIMIT 1",
            "ZINTERCARD 2 a b LIMIT 0",
            "ZINTERCARD 2 a b LIMIT -1",
            "ZINTERCARD 1 missing",
            "ZADD i1 inf m",
            "ZADD i2 -inf m",
            "ZUNIONSTORE d 2 i1 i2",
            "ZSCORE d m",
            "ZINTERSTORE d 2 i1 i2 WEIGHTS 1 0",
            "ZSCORE d m",
            "ZUNIONSTORE d 2 i1 i2 WEIGHTS 0 0",
            "ZSCORE d m",
        ]),
        lines(&[
            "ZADD a 1 x",
            "SET str v",
            "ZUNIONSTORE d x a",
            "ZUNIONSTORE d 0 a",
            "ZUNIONSTORE d -1 a",
            "ZUNIONSTORE d 3 a",
            "ZUNIONSTORE d 1 str",
            "ZUNIONSTORE d 1 str WEIGHTS x",
            "ZUNIONSTORE d 1 a WEIGHTS x",
            "ZUNIONSTORE d 1 a WEIGHTS nan",
            "ZUNIONSTORE d 1 a WEIGHTS",
            "ZUNIONSTORE d 1 a AGGREGATE avg",
            "ZUNIONSTORE d 1 a AGGREGATE",
            "ZUNIONSTORE d 1 a WITHSCORES",
            "ZDIFFSTORE d 1 a WEIGHTS 1",
            "ZDIFF 1 a AGGREGATE SUM",
            "ZINTER 0 a",
            "ZINTERCARD 0 a",
            "ZINTERCARD 1 a LIMIT x",
            "ZINTERCARD 1 a WITHSCORES",
            "ZINTER 1 a WITHSCORES WITHSCORES",
            "ZUNION 2 a str",
            "ZDIFF 1 str",
            "ZUNIONSTORE a 1 a WEIGHTS 3",
            "ZRANGE a 0 -1 WITHSCORES",
        ]),
        lines(&[
            "ZADD z 1 a 2 b 3 c 4 d",
            "ZRANGESTORE d z 1 2",
            "ZRANGE d 0 -1 WITHSCORES",
            "ZRANGESTORE d z (1 +inf BYSCORE LIMIT 1 1",
            "ZRANGE d 0 -1 WITHSCORES",
            "ZRANGESTORE d z +inf 2 BYSCORE REV",
            "ZRANGE d 0 -1 WITHSCORES",
            "ZADD lex 0 a 0 b 0 c 0 d",
            "ZRANGESTORE d lex [b [c BYLEX",
            "ZRANGE d 0 -1",
            // Unequal scores in the members' byte order: Redis's search finds them.
            "ZRANGESTORE d z [b [c BYLEX",
            "ZRANGEBYLEX z (a [c",
            "ZREVRANGEBYLEX z + (b",
            "ZLEXCOUNT z [b +",
            "ZRANGE d 0 -1",
            "ZRANGESTORE d z 5 10",
            "EXISTS d",
            "ZRANGESTORE d missing 0 -1",
            "SET str v",
            "ZRANGESTORE d str 0 -1",
            "ZRANGESTORE d z 0 -1 WITHSCORES",
            "ZRANGESTORE d z 0 -1 WITHSCORES LIMIT x y",
            "ZRANGESTORE d z 0 -1 LIMIT 0 1",
            "ZRANGESTORE d z 0 -1 BYSCORE BYLEX",
            "ZRANGESTORE d z 0",
            "ZRANGESTORE str z 0 0",
            "TYPE str",
        ]),
    ];
    let found = support::side_by_side::mismatches(&servers, &scenarios).await;
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// HRANDFIELD and ZRANDMEMBER: counts of every sign, their options, Redis's order of
/// errors; picks compared by shape (one-letter members), RESP2 and RESP3.
#[tokio::test]
async fn random_fields_and_members_answer_like_redis() {
    let Some(servers) = both_servers("random_fields_and_members_answer_like_redis").await else {
        return;
    };
    let scenario = lines(&[
        "HSET h a 1 b 2 c 3",
        "ZADD z 1 a 1 b 1 c",
        "HSET one f v",
        "ZADD zone 1.5 m",
        "SET str v",
        "HRANDFIELD one",
        "HRANDFIELD one 1 WITHVALUES",
        "HRANDFIELD one -3 WITHVALUES",
        "HRANDFIELD one 5",
        "ZRANDMEMBER zone",
        "ZRANDMEMBER zone 1 WITHSCORES",
        "ZRANDMEMBER zone -2 WITHSCORES",
        "ZRANDMEMBER zone 9",
        "HRANDFIELD h",
        "HRANDFIELD h 2",
        "HRANDFIELD h -5",
        "HRANDFIELD h 2 WITHVALUES",
        "HRANDFIELD h 0",
        "ZRANDMEMBER z 2 WITHSCORES",
        "ZRANDMEMBER z -4",
        "ZRANDMEMBER z 0 WITHSCORES",
        "HRANDFIELD missing",
        "HRANDFIELD missing 3",
        "ZRANDMEMBER missing",
        "ZRANDMEMBER missing -3 WITHSCORES",
        "HRANDFIELD str",
        "HRANDFIELD str 1",
        "ZRANDMEMBER str 1",
        "HRANDFIELD h x",
        "HRANDFIELD h 1 bogus",
        "HRANDFIELD h 1 WITHVALUES extra",
        "HRANDFIELD h -9223372036854775808",
        "HRANDFIELD h 9223372036854775807 WITHVALUES",
        "HRANDFIELD missing x",
        "ZRANDMEMBER z 1 WITHVALUES",
        "ZRANDMEMBER z -4611686018427387904 WITHSCORES",
        "ZRANDMEMBER missing 1 bogus",
    ]);
    let found = support::side_by_side::mismatches(&servers, std::slice::from_ref(&scenario)).await;
    assert!(found.is_empty(), "{}", found.join("\n"));
    // RESP3: pairs come as nested arrays, scores as doubles.
    let mut replies = Vec::new();
    for addr in [servers.ours(), servers.redis_addr.clone()] {
        let mut client = Raw::connect(&addr).await;
        client.command(&["FLUSHALL"]).await;
        client.command(&["HELLO", "3"]).await;
        let mut transcript = Vec::new();
        for command in &scenario {
            transcript.push(client.command(command).await);
        }
        replies.push(transcript);
    }
    for (command, (ours, redis)) in scenario.iter().zip(replies[0].iter().zip(&replies[1])) {
        assert!(
            support::side_by_side::same(command, ours, redis),
            "RESP3 {command:?}: serve {:?}, redis-server {:?}",
            String::from_utf8_lossy(ours),
            String::from_utf8_lossy(redis)
        );
    }
}

/// Waits, by asking, until the server counts a blocked client.
async fn until_blocked(client: &mut Raw) {
    for _ in 0..100_000 {
        let info = client.command(&["INFO", "clients"]).await;
        if String::from_utf8_lossy(&info).contains("blocked_clients:1") {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("the client never blocked");
}

/// ZMPOP, BZPOPMIN, BZPOPMAX and BZMPOP: what each pops and answers, in RESP2 and RESP3,
/// their errors in Redis's order, a pop that waits for a ZADD, and a timeout.
#[tokio::test]
async fn multi_key_and_blocking_sorted_set_pops_answer_like_redis() {
    let Some(servers) =
        both_servers("multi_key_and_blocking_sorted_set_pops_answer_like_redis").await
    else {
        return;
    };
    let script: &[&str] = &[
        "ZADD z 1 a 2 b 3 c 4 d",
        "ZADD y 10 q",
        "SET str v",
        "ZMPOP 2 missing z MIN",
        "ZMPOP 2 z y MAX COUNT 2",
        "ZMPOP 1 y MIN COUNT 5",
        "EXISTS y",
        "ZMPOP 1 missing MIN",
        "ZMPOP 2 missing str MIN",
        "ZMPOP 2 str z MIN",
        "ZMPOP 0 z MIN",
        "ZMPOP x z MIN",
        "ZMPOP 3 z MIN",
        "ZMPOP 1 z bogus",
        "ZMPOP 1 z MIN COUNT 0",
        "ZMPOP 1 z MIN COUNT x",
        "ZMPOP 1 z MIN COUNT 1 COUNT 2",
        "ZMPOP 1 z MIN COUNT",
        "BZPOPMIN missing z 0",
        "ZADD z 7 e 8 f 9 g",
        "BZPOPMAX z 0",
        "BZPOPMIN missing 0.01",
        "BZPOPMIN z -1",
        "BZPOPMIN z x",
        "BZPOPMIN str 0",
        "BZMPOP 0 1 z MAX",
        "BZMPOP 0.01 1 missing MIN COUNT 2",
        "BZMPOP x 1 z MIN",
        "BZMPOP -1 1 z MIN",
        "BZMPOP 0 0 z MIN",
        "BZMPOP x 1 z bogus",
        "BZMPOP 0 1 z MIN COUNT 0",
    ];
    let mut transcripts = Vec::new();
    for resp in ["2", "3"] {
        for addr in [servers.ours(), servers.redis_addr.clone()] {
            let mut client = Raw::connect(&addr).await;
            let mut waiter = Raw::connect(&addr).await;
            client.command(&["FLUSHALL"]).await;
            client.command(&["HELLO", resp]).await;
            waiter.command(&["HELLO", resp]).await;
            let mut t = Vec::new();
            for line in script {
                let command: Vec<&str> = line.split(' ').collect();
                t.push(client.command(&command).await);
            }
            // A pop that waits: answered by the ZADD that comes after it.
            waiter.send_only(&["BZPOPMAX", "empty", "other", "0"]).await;
            until_blocked(&mut client).await;
            t.push(client.command(&["ZADD", "other", "5", "m", "6", "n"]).await);
            t.push(waiter.read_reply().await);
            waiter
                .send_only(&["BZMPOP", "0", "2", "e1", "e2", "MIN", "COUNT", "3"])
                .await;
            until_blocked(&mut client).await;
            t.push(client.command(&["ZADD", "e2", "1", "x", "2", "y"]).await);
            t.push(waiter.read_reply().await);
            t.push(client.command(&["EXISTS", "e2"]).await);
            transcripts.push(t);
        }
    }
    for pair in transcripts.chunks(2) {
        assert_same_transcripts(pair, "sorted-set pops");
    }
}

/// INFO commandstats: calls, refusals and failures per command (subcommands apart),
/// inside MULTI and scripts, a blocking pop counted once; the times are not compared.
#[tokio::test]
async fn command_stats_count_like_redis() {
    let Some(servers) = both_servers("command_stats_count_like_redis").await else {
        return;
    };
    let script: &[&[&str]] = &[
        &["CONFIG", "RESETSTAT"],
        &["SET", "foo", "bar"],
        &["GET", "foo"],
        &["LPUSH", "foo", "x"],
        &["GET"],
        &["EXPIRE", "foo", "0"],
        &["MULTI"],
        &["SET", "a", "1"],
        &["INCR", "a"],
        &["EXEC"],
        &[
            "EVAL",
            "redis.call('set', KEYS[1], 0); redis.call('expire', KEYS[1], 0)",
            "1",
            "k",
        ],
        &["LPUSH", "list", "foo"],
        &["BRPOP", "list", "0"],
        &["CONFIG", "GET", "maxclients"],
        &["CONFIG", "SET", "maxclients", "x"],
        &["OBJECT", "ENCODING", "a"],
    ];
    let mut stats = Vec::new();
    for addr in [servers.ours(), servers.redis_addr.clone()] {
        let mut client = Raw::connect(&addr).await;
        for command in script {
            client.command(command).await;
        }
        let info =
            String::from_utf8_lossy(&client.command(&["INFO", "commandstats"]).await).to_string();
        let default = String::from_utf8_lossy(&client.command(&["INFO"]).await).to_string();
        let all = String::from_utf8_lossy(&client.command(&["INFO", "all"]).await).to_string();
        let mut lines: Vec<String> = info
            .lines()
            .filter(|line| line.starts_with("cmdstat_"))
            .map(|line| {
                line.split(',')
                    .filter(|field| !field.starts_with("usec"))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect();
        lines.sort();
        lines.push(format!(
            "default has them: {}",
            default.contains("cmdstat_")
        ));
        lines.push(format!("all has them: {}", all.contains("cmdstat_")));
        stats.push(lines);
    }
    assert_eq!(stats[0], stats[1], "serve, then redis-server");
}

/// Inline commands split as `sdssplitargs` splits them: a quote inside a word opens a
/// quoted part, a closing quote needs white space after it, and an unbalanced quote is
/// a protocol error that closes the connection. What each stores is compared too.
#[tokio::test]
async fn inline_commands_are_split_like_redis() {
    let Some(servers) = both_servers("inline_commands_are_split_like_redis").await else {
        return;
    };
    let inputs: [&[u8]; 10] = [
        b"SET k\"v a\"\r\n",
        b"SET k\"v a\" x\r\n",
        b"SET 'a b'c x\r\n",
        b"SET a'b c' \"x\\x41\\n\"\r\n",
        b"SET \"k\\\"q\" 'it\\'s'\r\n",
        b"SET k \"open\r\n",
        b"SET k 'open\r\n",
        b"SET \x0bk\x0b v\r\n",
        b"SET k\tv\r\n",
        b"SET k \"\"\r\n",
    ];
    for input in inputs {
        let mut answers = Vec::new();
        for addr in [servers.ours(), servers.redis_addr.clone()] {
            let mut setup = Raw::connect(&addr).await;
            setup.command(&["FLUSHALL"]).await;
            let mut client = Raw::connect(&addr).await;
            let reply = client.send_bytes(input).await;
            let mut check = Raw::connect(&addr).await;
            let keys = check.command(&["KEYS", "*"]).await;
            let values = check
                .command(&["MGET", "k", "kv a", "a bc", "ab c", "k\"q", "\x0bk\x0b"])
                .await;
            answers.push((reply, keys, values));
        }
        assert_eq!(
            format!("{:?}", answers[0]),
            format!("{:?}", answers[1]),
            "what each server did with {:?}",
            String::from_utf8_lossy(input)
        );
    }
}

/// An unknown command's error as Redis words it: name and arguments cut at 128 bytes,
/// a NUL ending each, CR and LF turned into spaces, other bytes kept as sent.
#[tokio::test]
async fn unknown_commands_are_quoted_like_redis() {
    let Some(servers) = both_servers("unknown_commands_are_quoted_like_redis").await else {
        return;
    };
    let many: Vec<Vec<u8>> = std::iter::once(b"NOSUCH".to_vec())
        .chain((0..100_000).map(|i| format!("argument-{i}").into_bytes()))
        .collect();
    let long = vec![b'x'; 300];
    let requests: Vec<Vec<Vec<u8>>> = vec![
        many,
        vec![b"NO\xffSUCH\xfe".to_vec(), b"\xc3(".to_vec()],
        vec![long.clone(), long.clone()],
        vec![b"NOSUCH".to_vec(), long.clone(), b"after".to_vec()],
        vec![b"NOSUCH".to_vec(), b"a\r\nb".to_vec(), b"c\0d".to_vec()],
        vec![b"NO\0SUCH".to_vec()],
        vec![
            b"NOSUCH".to_vec(),
            vec![b'y'; 120],
            b"0123456789".to_vec(),
            b"z".to_vec(),
        ],
    ];
    for args in requests {
        let mut ours = Raw::connect(&servers.ours()).await;
        let mut redis = Raw::connect(&servers.redis_addr).await;
        let (a, b) = (
            ours.send_bytes(&request(&args)).await,
            redis.send_bytes(&request(&args)).await,
        );
        assert_eq!(a, b, "replies to {} arguments", args.len());
    }
}

/// Sorted sets under a seeded stream of random commands, byte for byte as redis-server
/// answers them: ranks, score and lex ranges (exclusive bounds, infinities, REV, LIMIT),
/// counts, pops and range removals, on sets that grow past the listpack limit.
#[tokio::test]
async fn sorted_sets_answer_like_redis_under_random_operations() {
    let Some(servers) = both_servers("sorted_sets_answer_like_redis_under_random_operations").await
    else {
        return;
    };
    let mut rng = fastrand::Rng::with_seed(7);
    let scores = [
        "0", "-0", "1", "1.5", "2", "-3", "10", "inf", "-inf", "2.5e3",
    ];
    let bound = |rng: &mut fastrand::Rng| -> String {
        let score = scores[rng.usize(..scores.len())];
        match rng.u8(..4) {
            0 => format!("({score}"),
            1 => "-inf".into(),
            2 => "+inf".into(),
            _ => score.into(),
        }
    };
    let member = |rng: &mut fastrand::Rng| format!("m{}", rng.u32(..300));
    let lex = |rng: &mut fastrand::Rng| match rng.u8(..4) {
        0 => "-".to_string(),
        1 => "+".to_string(),
        2 => format!("(m{}", rng.u32(..300)),
        _ => format!("[m{}", rng.u32(..300)),
    };
    let mut commands: Vec<Vec<String>> = Vec::new();
    for _ in 0..3000 {
        let key = if rng.bool() { "z" } else { "same" };
        let index = |rng: &mut fastrand::Rng| rng.i64(-40..40).to_string();
        let command: Vec<String> = match rng.u8(..14) {
            0..=3 => {
                // "same" keeps every score equal, where lex ranges are defined.
                let score = if key == "same" {
                    "0"
                } else {
                    scores[rng.usize(..scores.len())]
                };
                vec!["ZADD".into(), key.into(), score.into(), member(&mut rng)]
            }
            4 => vec![
                "ZRANGE".into(),
                key.into(),
                index(&mut rng),
                index(&mut rng),
                "WITHSCORES".into(),
            ],
            5 => vec![
                "ZREVRANGE".into(),
                key.into(),
                index(&mut rng),
                index(&mut rng),
            ],
            6 => {
                let mut c = vec![
                    "ZRANGEBYSCORE".into(),
                    key.into(),
                    bound(&mut rng),
                    bound(&mut rng),
                ];
                if rng.bool() {
                    c.extend([
                        "LIMIT".into(),
                        rng.i64(-2..5).to_string(),
                        rng.i64(-2..6).to_string(),
                    ]);
                }
                c
            }
            7 => vec![
                "ZREVRANGEBYSCORE".into(),
                key.into(),
                bound(&mut rng),
                bound(&mut rng),
                "WITHSCORES".into(),
            ],
            8 => vec![
                "ZCOUNT".into(),
                key.into(),
                bound(&mut rng),
                bound(&mut rng),
            ],
            9 => vec![
                if rng.bool() { "ZRANK" } else { "ZREVRANK" }.into(),
                key.into(),
                member(&mut rng),
            ],
            10 => vec![
                if rng.bool() { "ZPOPMIN" } else { "ZPOPMAX" }.into(),
                key.into(),
                rng.u8(1..4).to_string(),
            ],
            11 => match rng.u8(..3) {
                0 => vec![
                    "ZREMRANGEBYRANK".into(),
                    key.into(),
                    index(&mut rng),
                    index(&mut rng),
                ],
                1 => vec![
                    "ZREMRANGEBYSCORE".into(),
                    key.into(),
                    bound(&mut rng),
                    bound(&mut rng),
                ],
                _ => vec![
                    "ZREMRANGEBYLEX".into(),
                    "same".into(),
                    lex(&mut rng),
                    lex(&mut rng),
                ],
            },
            12 => vec![
                "ZRANGEBYLEX".into(),
                "same".into(),
                lex(&mut rng),
                lex(&mut rng),
            ],
            _ => vec![
                "ZLEXCOUNT".into(),
                "same".into(),
                lex(&mut rng),
                lex(&mut rng),
            ],
        };
        commands.push(command);
    }
    let mut ours = Raw::connect(&servers.ours()).await;
    let mut redis = Raw::connect(&servers.redis_addr).await;
    ours.command(&["FLUSHALL"]).await;
    redis.command(&["FLUSHALL"]).await;
    for command in &commands {
        let args: Vec<&str> = command.iter().map(String::as_str).collect();
        let (a, b) = (ours.command(&args).await, redis.command(&args).await);
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "{}",
            args.join(" ")
        );
    }
}
