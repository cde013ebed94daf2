//! `nxlock serve` never panics, hangs or goes down, whatever it is sent: every command it
//! knows with extreme numbers in every argument position, random commands with random
//! arguments (each must get exactly one reply on a live connection), and random bytes
//! (after which a new connection must still be served).

use std::time::Duration;

use nxlock::server::{Server, ServerOptions};
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support;
use support::raw::{reply_end, request};
use support::side_by_side::Resp;

const NAMES: &[&str] = &[
    "GET",
    "SET",
    "SETNX",
    "GETSET",
    "GETDEL",
    "DEL",
    "EXISTS",
    "INCR",
    "INCRBY",
    "DECR",
    "DECRBY",
    "EXPIRE",
    "PEXPIRE",
    "EXPIREAT",
    "PEXPIREAT",
    "TTL",
    "PTTL",
    "PERSIST",
    "TYPE",
    "PUBLISH",
    "PING",
    "ECHO",
    "SELECT",
    "CLIENT",
    "HELLO",
    "INFO",
    "DBSIZE",
    "TIME",
    "EVAL",
    "EVALSHA",
    "EVAL_RO",
    "SCRIPT",
    "NXLOCK.FASTFORWARD",
    "AUTH",
    "FLUSHDB",
    "UNSUBSCRIBE",
    "NOSUCH",
];
const WORDS: &[&str] = &[
    "k",
    "v",
    "NX",
    "XX",
    "GET",
    "EX",
    "PX",
    "EXAT",
    "PXAT",
    "KEEPTTL",
    "GT",
    "LT",
    "0",
    "1",
    "-1",
    "10",
    "9223372036854775807",
    "-9223372036854775808",
    "abc",
    "",
    "LOAD",
    "EXISTS",
    "FLUSH",
    "SETNAME",
    "GETNAME",
    "return redis.call('GET', KEYS[1])",
    "return redis.call('SET', KEYS[1], ARGV[1])",
    "return {1, 'x', {ok='s'}, {err='e'}}",
    "error('x')",
    "return",
    "while true do end",
];

/// Reads until one complete reply has arrived (or the connection closed: `false`).
async fn one_reply(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> bool {
    loop {
        if reply_end(buffer, 0).is_some_and(|end| {
            buffer.drain(..end);
            true
        }) {
            return true;
        }
        match tokio::time::timeout(Duration::from_secs(5), stream.read_buf(buffer)).await {
            Ok(Ok(n)) if n > 0 => {}
            _ => return false,
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn cases() -> u32 {
    std::env::var("NXLOCK_PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300)
}

#[test]
fn random_commands_each_get_one_reply() {
    let rt = runtime();
    let server = rt
        .block_on(Server::start(ServerOptions::default()))
        .unwrap();
    let addr = server.addr().to_string();
    let command = (0..NAMES.len(), prop::collection::vec(0..WORDS.len(), 0..6));
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(cases()));
    let result = runner.run(&prop::collection::vec(command, 1..12), |commands| {
        rt.block_on(async {
            let mut stream = TcpStream::connect(&addr).await.unwrap();
            let mut buffer = Vec::new();
            for (name, words) in &commands {
                let mut args = vec![NAMES[*name].to_string()];
                args.extend(words.iter().map(|w| WORDS[*w].to_string()));
                // A script that never ends runs to the 5 s time limit: too slow for a fuzz case.
                if args.iter().any(|a| a.contains("while true")) {
                    continue;
                }
                stream.write_all(&request(&args)).await.unwrap();
                prop_assert!(
                    one_reply(&mut stream, &mut buffer).await,
                    "no reply to {args:?}: the connection died"
                );
            }
            Ok(())
        })
    });
    rt.block_on(server.stop());
    result.unwrap();
}

#[test]
fn random_bytes_never_take_the_server_down() {
    let rt = runtime();
    let server = rt
        .block_on(Server::start(ServerOptions::default()))
        .unwrap();
    let addr = server.addr().to_string();
    let bytes = prop::collection::vec(
        prop_oneof![
            any::<u8>(),
            Just(b'*'),
            Just(b'$'),
            Just(b'\r'),
            Just(b'\n'),
            Just(b'"'),
            Just(b'1')
        ],
        0..200,
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(cases()));
    let result = runner.run(&bytes, |bytes| {
        rt.block_on(async {
            let mut garbage = TcpStream::connect(&addr).await.unwrap();
            let _ = garbage.write_all(&bytes).await;
            let _ = garbage.shutdown().await;
            let mut probe = TcpStream::connect(&addr).await.unwrap();
            probe.write_all(b"*1\r\n$4\r\nPING\r\n").await.unwrap();
            let mut buffer = Vec::new();
            prop_assert!(
                one_reply(&mut probe, &mut buffer).await,
                "server stopped answering"
            );
            Ok(())
        })
    });
    rt.block_on(server.stop());
    result.unwrap();
}

/// Numbers that size allocations, loops and ranges wrongly when handled carelessly.
const EXTREMES: &[&str] = &[
    "9223372036854775807",
    "-9223372036854775808",
    "-9223372036854775807",
    "4294967296",
    "-4294967296",
    "536870912",
    "536870911",
    "-1",
    "1e308",
    "inf",
    "nan",
];

/// Commands the sweep leaves out, each for a reason of the harness, not of the server:
/// they change what a reply is (subscribed mode, RESP3, silenced replies, a closed or
/// reset connection, a MULTI queue) or who may connect (CONFIG SET maxclients).
const NOT_SWEPT: &[&str] = &[
    "subscribe",
    "psubscribe",
    "unsubscribe",
    "punsubscribe",
    "quit",
    "reset",
    "hello",
    "auth",
    "client",
    "config",
    "multi",
    "exec",
    "discard",
    "watch",
    "unwatch",
];

/// Every command the server describes (`COMMAND`), with its arity, but those not swept.
async fn commands(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Vec<(String, i64)> {
    stream.write_all(&request(&["COMMAND"])).await.unwrap();
    assert!(one_reply_kept(stream, buffer).await);
    let end = reply_end(buffer, 0).unwrap();
    let Resp::Many(_, entries) = Resp::parse(&buffer[..end]) else {
        panic!("COMMAND is not an array");
    };
    buffer.drain(..end);
    entries
        .into_iter()
        .filter_map(|entry| match entry {
            Resp::Many(_, fields) => match &fields[..2] {
                [Resp::Bulk(name), Resp::Line(arity)] => Some((
                    String::from_utf8(name.clone()).unwrap(),
                    std::str::from_utf8(&arity[1..]).unwrap().parse().unwrap(),
                )),
                _ => None,
            },
            _ => None,
        })
        .filter(|(name, _)| !NOT_SWEPT.contains(&name.as_str()))
        .collect()
}

/// [`one_reply`] that leaves the reply in `buffer`.
async fn one_reply_kept(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> bool {
    loop {
        if reply_end(buffer, 0).is_some() {
            return true;
        }
        match tokio::time::timeout(Duration::from_secs(5), stream.read_buf(buffer)).await {
            Ok(Ok(n)) if n > 0 => {}
            _ => return false,
        }
    }
}

/// A list, a set, a sorted set, a hash and a string, each under a key of its own (one hash
/// tag), so that every command meets data of the kind it works on.
const SETUP: &[&[&str]] = &[
    &["FLUSHALL"],
    &["RPUSH", "{k}l", "a", "b", "c"],
    &["SADD", "{k}s", "a", "b", "c"],
    &["ZADD", "{k}z", "1", "a", "2", "b"],
    &["HSET", "{k}h", "f", "v", "g", "w"],
    &["SET", "{k}str", "hello"],
];
const KEYS: &[&str] = &["{k}l", "{k}s", "{k}z", "{k}h", "{k}str", "{k}none"];

/// Every command the server lists, on each kind of key, with each extreme number in each
/// argument position after the key (as many arguments as its arity asks, at least one
/// more than the position; the others `1`): each gets exactly one reply, and the
/// connection stays up. A blocking command still waiting after a moment is ended by
/// `CLIENT UNBLOCK` from a second connection (a huge timeout is not a hang). Afterwards
/// the server answers a new connection.
#[test]
fn every_command_with_extreme_numbers_in_every_position_gets_one_reply() {
    let rt = runtime();
    let server = rt
        .block_on(Server::start(ServerOptions::default()))
        .unwrap();
    let addr = server.addr().to_string();
    let swept = rt.block_on(async {
        let mut stream = TcpStream::connect(&addr).await.unwrap();
        let mut buffer = Vec::new();
        let mut control = TcpStream::connect(&addr).await.unwrap();
        let mut control_buffer = Vec::new();
        stream.write_all(&request(&["CLIENT", "ID"])).await.unwrap();
        assert!(one_reply_kept(&mut stream, &mut buffer).await);
        let end = reply_end(&buffer, 0).unwrap();
        let id = String::from_utf8_lossy(&buffer[1..end - 2]).into_owned();
        buffer.clear();
        let commands = commands(&mut stream, &mut buffer).await;
        assert!(commands.len() > 100, "{commands:?}");
        let setup: Vec<u8> = SETUP.iter().flat_map(|args| request(args)).collect();
        let mut swept = 0;
        for (name, arity) in &commands {
            for position in 0..3usize {
                // Arguments after the name and the key.
                let count = if *arity >= 0 {
                    let count = usize::try_from(*arity).unwrap().saturating_sub(2);
                    if position >= count {
                        continue;
                    }
                    count
                } else {
                    (usize::try_from(-arity).unwrap().saturating_sub(2)).max(position + 1)
                };
                for key in KEYS {
                    for extreme in EXTREMES {
                        let mut args = vec![name.as_str(), key];
                        args.extend(
                            (0..count).map(|at| if at == position { extreme } else { &"1" }),
                        );
                        let mut sent = setup.clone();
                        sent.extend(request(&args));
                        stream.write_all(&sent).await.unwrap();
                        for _ in SETUP {
                            assert!(one_reply(&mut stream, &mut buffer).await);
                        }
                        let replied = tokio::time::timeout(
                            Duration::from_millis(200),
                            one_reply(&mut stream, &mut buffer),
                        )
                        .await;
                        let replied = match replied {
                            Ok(replied) => replied,
                            Err(_) => {
                                // Still waiting: a blocking command, or a hang.
                                control
                                    .write_all(&request(&["CLIENT", "UNBLOCK", &id]))
                                    .await
                                    .unwrap();
                                assert!(one_reply(&mut control, &mut control_buffer).await);
                                one_reply(&mut stream, &mut buffer).await
                            }
                        };
                        assert!(replied, "no reply to {args:?}: the connection died");
                        swept += 1;
                    }
                }
            }
        }
        let mut probe = TcpStream::connect(&addr).await.unwrap();
        probe.write_all(&request(&["PING"])).await.unwrap();
        assert!(one_reply(&mut probe, &mut Vec::new()).await);
        swept
    });
    rt.block_on(server.stop());
    println!("swept {swept} commands");
}
