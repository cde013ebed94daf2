//! `nxlock serve` never panics or goes down, whatever it is sent: random commands with
//! random arguments (each must get exactly one reply on a live connection), and random
//! bytes (after which a new connection must still be served).

use std::time::Duration;

use nxlock::server::{Server, ServerOptions};
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod support;
use support::raw::{reply_end, request};

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
