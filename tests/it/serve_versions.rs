//! `nxlock serve --redis-version` against real servers of those versions, request by
//! request: the 7.0 profile against redis-server 7.0.15, the 7.2 profile against Valkey
//! 8.0.1 (which reports `redis_version:7.2.4`). Where Valkey 8 already answers as Redis 7.4
//! (scripts may call WAITAOF), the 7.4 profile is compared with it instead. Each
//! transcript is what lock code and lock libraries send that differs between versions,
//! and the lock commands around it.

use nxlock::backend::RedisVersion;
use nxlock::server::{Server, ServerOptions};
use nxlock::testing::{RedisServer, RedisTarget, announce_skip, skip_or_fail};

use crate::support;
use support::raw::Raw;
use support::side_by_side::{Resp, bulk_text, client_fields, mismatch, same};

/// Requests whose replies differ between 7.0, 7.2 and 7.4, and lock commands around them.
const SHARED: &[&str] = &[
    "INFO server",
    "EVAL return redis.REDIS_VERSION 0",
    "EVAL return redis.REDIS_VERSION_NUM 0",
    "SET lock token-1 NX PX 30000",
    "SET lock token-2 NX PX 30000",
    "WAIT 0 0",
    "WAIT -1 0",
    "WAIT 1 20",
    "WAIT a 0",
    "WAIT 0 a",
    "WAIT 0 -1",
    "WAIT 0 9223372036854775807",
    "WAIT 0",
    "WAITAOF 0 0 0",
    "WAITAOF 0 1 20",
    "WAITAOF 1 0 0",
    "WAITAOF 2 0 0",
    "WAITAOF -1 0 0",
    "WAITAOF a 0 0",
    "WAITAOF 0 -1 0",
    "WAITAOF 0 a 0",
    "WAITAOF 0 0 -1",
    "WAITAOF 0 0 a",
    "WAITAOF 0 0",
    "EVAL return redis.call('WAIT',0,0) 0",
    "EVAL return redis.call('WAIT',1,0) 0",
    "EVAL return redis.acl_check_cmd('waitaof') 0",
    "MULTI",
    "WAIT 1 0",
    "WAITAOF 0 1 0",
    "EXEC",
    "EVAL if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) end return false 1 lock token-1",
    "GET lock",
    "CLIENT SETINFO LIB-NAME nxlock-test",
    "CLIENT SETINFO lib-ver 1.2.3",
    "CLIENT SETINFO foo x",
    "CLIENT SETINFO LIB-NAME",
    "EVAL return redis.pcall('BLPOP','q',0) 0",
    "RPUSH q a b",
    "EVAL return redis.pcall('BLPOP','q',0) 0",
    "EVAL return redis.pcall('BLMOVE','q','r','LEFT','RIGHT',0) 0",
    "EVAL return redis.pcall('BRPOPLPUSH','r','q',0) 0",
];

/// Timeouts too large to add to now: refused from 7.2, taken by 7.0 (which then waits
/// for ever: the 7.0 test compares that).
const REFUSED_FROM_7_2: &[&str] = &["BLPOP empty 9223372036854775", "WAIT 1 9223372036854775807"];

/// Scripts calling WAITAOF: refused by 7.2, allowed from 7.4 (and by Valkey 8).
const WAITAOF_IN_SCRIPTS: &[&str] = &[
    "EVAL return redis.call('WAITAOF',0,0,0) 0",
    "EVAL return redis.call('WAITAOF',0,1,0) 0",
    "EVAL return redis.pcall('WAITAOF',1,0,0) 0",
];

/// Runs `requests` on both, from empty databases, and asserts the same replies
/// (`INFO server`: the `redis_version` line); with `describe`, then the same
/// `COMMAND INFO` of the commands whose description changed (name, arity, flags, keys
/// and categories).
async fn compare(ours: &str, theirs: &str, requests: &[&str], describe: bool, what: &str) {
    let mut a = Raw::connect(ours).await;
    let mut b = Raw::connect(theirs).await;
    a.command(&["FLUSHALL"]).await;
    b.command(&["FLUSHALL"]).await;
    for request in requests {
        let command = split(request);
        let (x, y) = (a.command(&command).await, b.command(&command).await);
        let (x, y) = match request.split(' ').next() {
            Some("INFO") => (redis_version_line(&x), redis_version_line(&y)),
            _ => (x, y),
        };
        assert!(
            same(&command, &x, &y),
            "{}",
            mismatch(what, &command, &x, &y)
        );
    }
    if !describe {
        return;
    }
    let commands = [
        "COMMAND",
        "INFO",
        "wait",
        "waitaof",
        "blpop",
        "brpop",
        "blmove",
        "brpoplpush",
        "client|setinfo",
    ];
    let (x, y) = (a.command(&commands).await, b.command(&commands).await);
    assert_eq!(described(&x), described(&y), "{what}COMMAND INFO");
}

/// A request line as arguments: words, except that an EVAL's script is the words up to
/// its key count.
fn split(request: &str) -> Vec<&str> {
    let Some(rest) = request.strip_prefix("EVAL ") else {
        return request.split(' ').collect();
    };
    let words: Vec<&str> = rest.split(' ').collect();
    let count = words
        .iter()
        .position(|w| w.parse::<usize>().is_ok())
        .unwrap_or(words.len());
    let script_end = words[..count].iter().map(|w| w.len() + 1).sum::<usize>() - 1;
    let mut args = vec!["EVAL", &rest[..script_end]];
    args.extend(&words[count..]);
    args
}

fn redis_version_line(info: &[u8]) -> Vec<u8> {
    String::from_utf8_lossy(info)
        .lines()
        .find(|line| line.starts_with("redis_version:"))
        .unwrap_or("no redis_version")
        .as_bytes()
        .to_vec()
}

/// Each command's name, arity, flags, key positions and categories (serve leaves tips,
/// key specifications and subcommands of these empty).
fn described(reply: &[u8]) -> Vec<Resp> {
    let Resp::Many(_, commands) = Resp::parse(reply) else {
        panic!("COMMAND INFO answers an array");
    };
    commands
        .into_iter()
        .flat_map(|command| match command {
            Resp::Many(_, fields) => fields.into_iter().take(7).collect(),
            other => vec![other],
        })
        .collect()
}

/// The field names of `CLIENT INFO`, and its `lib-name` and `lib-ver` fields, after a
/// `CLIENT SETINFO` of each where the server has it.
async fn library_fields(addr: &str) -> (Vec<String>, Vec<String>) {
    let mut client = Raw::connect(addr).await;
    client
        .command(&["CLIENT", "SETINFO", "LIB-NAME", "nxlock-test"])
        .await;
    client
        .command(&["CLIENT", "SETINFO", "LIB-VER", "1.2.3"])
        .await;
    let fields = client_fields(&bulk_text(&client.command(&["CLIENT", "INFO"]).await));
    let names = fields.iter().map(|(name, _)| name.clone()).collect();
    let library = fields
        .iter()
        .filter(|(name, _)| name.starts_with("lib-"))
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    (names, library)
}

/// What `request` answers on a connection of its own once another connection ends its
/// wait with `CLIENT UNBLOCK` (asked again until the request is blocked).
async fn answer_once_unblocked(addr: &str, request: &[&str]) -> Vec<u8> {
    let mut client = Raw::connect(addr).await;
    let id = String::from_utf8_lossy(&client.command(&["CLIENT", "ID"]).await)
        .trim_start_matches(':')
        .trim()
        .to_string();
    client.send_only(request).await;
    let mut other = Raw::connect(addr).await;
    let mut asked = 0;
    while other.command(&["CLIENT", "UNBLOCK", &id]).await != b":1\r\n" {
        asked += 1;
        assert!(asked < 10_000, "{request:?} never blocked on {addr}");
        tokio::task::yield_now().await;
    }
    client.read_reply().await
}

async fn serve(version: RedisVersion) -> Server {
    let options = ServerOptions {
        redis_version: version,
        ..ServerOptions::default()
    };
    Server::start(options).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_7_0_profile_answers_as_redis_7_0() {
    let redis = match RedisTarget::from_env() {
        Ok(redis) => redis,
        Err(why) => return skip_or_fail("the 7.0 profile against redis-server", &why),
    };
    let theirs = redis.url().trim_start_matches("redis://").to_string();
    if support::side_by_side::version_of(&theirs).await != RedisVersion::V7_0 {
        return announce_skip(
            "the 7.0 profile against redis-server",
            "the redis-server on PATH is not 7.0",
        );
    }
    let server = serve(RedisVersion::V7_0).await;
    let ours = server.addr().to_string();
    let mut requests = SHARED.to_vec();
    requests.extend(WAITAOF_IN_SCRIPTS);
    compare(&ours, &theirs, &requests, true, "7.0: ").await;
    // A timeout too large to add to now: 7.0 takes it, and its deadline, wrapped, never
    // comes (7.2 refuses it: SHARED compares that with Valkey).
    for request in [
        &["BLPOP", "empty", "9223372036854775"][..],
        &["WAIT", "1", "9223372036854775807"][..],
    ] {
        assert_eq!(
            answer_once_unblocked(&ours, request).await,
            answer_once_unblocked(&theirs, request).await,
            "{request:?}"
        );
    }
    let (ours, theirs) = (library_fields(&ours).await, library_fields(&theirs).await);
    assert_eq!(ours, theirs, "CLIENT INFO's fields");
    assert!(ours.1.is_empty(), "7.0 has no lib-name: {ours:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_7_2_profile_answers_as_valkey_8() {
    let binary = match support::valkey_server() {
        Ok(binary) => binary,
        Err(why) => return skip_or_fail("the 7.2 profile against Valkey 8", &why),
    };
    let valkey = RedisServer::spawn_from(&binary, &[]).unwrap();
    let theirs = format!("127.0.0.1:{}", valkey.port());
    let server = serve(RedisVersion::V7_2).await;
    // Valkey 8 describes WAIT and WAITAOF as 7.4 does (below).
    let ours = server.addr().to_string();
    let mut requests = SHARED.to_vec();
    requests.extend(REFUSED_FROM_7_2);
    compare(&ours, &theirs, &requests, false, "7.2 against Valkey 8: ").await;
    // HELLO names the server and its own version: Valkey says valkey 8.0.1.
    let mut ours = Raw::connect(&server.addr().to_string()).await;
    let hello = String::from_utf8_lossy(&ours.command(&["HELLO", "2"]).await).into_owned();
    assert!(
        hello.contains("$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.2.4\r\n"),
        "{hello}"
    );
    // Valkey 8 lets scripts call WAITAOF and describes WAIT and WAITAOF as blocking, as
    // Redis 7.4 does: so does the 7.4 profile.
    let newest = serve(RedisVersion::V7_4).await;
    let mut requests = WAITAOF_IN_SCRIPTS.to_vec();
    requests.extend(["EVAL return redis.call('WAIT',0,0) 0", "GET lock"]);
    compare(
        &newest.addr().to_string(),
        &theirs,
        &requests,
        true,
        "7.4 against Valkey 8: ",
    )
    .await;
    // CLIENT LIST's fields: 7.4's (with `watch`), and Valkey's own byte counters.
    let (ours, library) = library_fields(&newest.addr().to_string()).await;
    let (mut valkeys, valkey_library) = library_fields(&theirs).await;
    valkeys.retain(|name| !["tot-net-in", "tot-net-out", "tot-cmds"].contains(&name.as_str()));
    assert_eq!(ours, valkeys, "CLIENT INFO's fields");
    assert_eq!(library, valkey_library);
    assert_eq!(library, ["lib-name=nxlock-test", "lib-ver=1.2.3"]);
}

/// Without any real server: what each profile answers where they differ, from the
/// texts read off redis-server 7.0.15 and Valkey 8.0.1 (the tests above compare them
/// live).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_profile_answers_its_own_version() {
    for version in RedisVersion::ALL {
        let server = serve(version).await;
        let mut client = Raw::connect(&server.addr().to_string()).await;
        let mut ask = async |line: &str| {
            String::from_utf8_lossy(&client.command(&split(line)).await).into_owned()
        };
        let info = ask("INFO server").await;
        assert!(
            info.contains(&format!("redis_version:{}\r\n", version.release())),
            "{version}: {info}"
        );
        let hello = ask("HELLO 2").await;
        let release = version.release();
        assert!(
            hello.contains(&format!(
                "$7\r\nversion\r\n${}\r\n{release}\r\n",
                release.len()
            )),
            "{version}: {hello}"
        );
        let reported = ask("EVAL return redis.REDIS_VERSION 0").await;
        assert!(
            reported.contains(version.release()),
            "{version}: {reported}"
        );
        let waitaof = ask("WAITAOF 0 0 0").await;
        let in_script = ask("EVAL return redis.call('WAITAOF',0,0,0) 0").await;
        let wait_in_script = ask("EVAL return redis.call('WAIT',0,0) 0").await;
        match version {
            RedisVersion::V7_0 => {
                assert_eq!(
                    waitaof,
                    "-ERR unknown command 'WAITAOF', with args beginning with: '0' '0' '0' \r\n"
                );
                assert!(in_script.starts_with("-ERR Unknown Redis command called from script"));
                assert!(wait_in_script.starts_with("-ERR This Redis command is not allowed"));
            }
            RedisVersion::V7_2 => {
                assert_eq!(waitaof, "*2\r\n:0\r\n:0\r\n");
                assert!(in_script.starts_with("-ERR This Redis command is not allowed"));
                assert_eq!(wait_in_script, ":0\r\n");
            }
            RedisVersion::V7_4 => {
                assert_eq!(waitaof, "*2\r\n:0\r\n:0\r\n");
                assert_eq!(in_script, "*2\r\n:0\r\n:0\r\n");
                assert_eq!(wait_in_script, ":0\r\n");
            }
        }
    }
}

/// A WAIT that asks for a replica waits out its timeout on the server's clock, which
/// `NXLOCK.FASTFORWARD` moves: no replica ever acknowledges, so it answers 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_a_replica_answers_none_when_its_timeout_ends() {
    let server = serve(RedisVersion::V7_4).await;
    let addr = server.addr().to_string();
    let mut waiter = Raw::connect(&addr).await;
    waiter.send_only(&["WAIT", "1", "60000"]).await;
    let mut other = Raw::connect(&addr).await;
    // The waiter is blocked: INFO counts it (asked until it does; never a sleep).
    loop {
        let info = String::from_utf8_lossy(&other.command(&["INFO", "clients"]).await).into_owned();
        if info.contains("blocked_clients:1\r\n") {
            break;
        }
        tokio::task::yield_now().await;
    }
    // A push to a list does not wake it.
    other.command(&["RPUSH", "q", "x"]).await;
    other.command(&["NXLOCK.FASTFORWARD", "60001"]).await;
    assert_eq!(waiter.read_reply().await, b":0\r\n");
    waiter.send_only(&["WAITAOF", "0", "1", "0"]).await;
    loop {
        let info = String::from_utf8_lossy(&other.command(&["INFO", "clients"]).await).into_owned();
        if info.contains("blocked_clients:1\r\n") {
            break;
        }
        tokio::task::yield_now().await;
    }
    let id = String::from_utf8_lossy(&other.command(&["CLIENT", "LIST"]).await)
        .lines()
        .find(|line| line.contains("cmd=waitaof"))
        .and_then(|line| line.split(' ').find_map(|f| f.strip_prefix("id=")))
        .map(str::to_owned);
    let Some(id) = id else {
        panic!("the blocked WAITAOF is listed");
    };
    // CLIENT UNBLOCK ends the wait as its timeout would.
    assert_eq!(other.command(&["CLIENT", "UNBLOCK", &id]).await, b":1\r\n");
    assert_eq!(waiter.read_reply().await, b"*2\r\n:0\r\n:0\r\n");
}

/// What a RESP3 client that publishes to its own subscription reads after `requests`,
/// up to the PONG of a final PING: Redis 7.0 writes the message before PUBLISH's reply
/// (inside EXEC's), 7.2 and later after it (after EXEC's).
async fn own_publish(addr: &str, requests: &[&[&str]]) -> Vec<u8> {
    let mut client = Raw::connect(addr).await;
    client.command(&["HELLO", "3"]).await;
    client.command(&["SUBSCRIBE", "c"]).await;
    for request in requests {
        client.send_only(request).await;
    }
    client.send_only(&["PING"]).await;
    let mut read = Vec::new();
    loop {
        let reply = client.read_reply().await;
        read.extend(&reply);
        if reply == b"+PONG\r\n" {
            return read;
        }
    }
}

const PUBLISH: &[&[&str]] = &[&["PUBLISH", "c", "m"]];
const PUBLISH_IN_MULTI: &[&[&str]] = &[&["MULTI"], &["PUBLISH", "c", "m"], &["EXEC"]];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_the_command_caused_follow_its_reply_from_7_2() {
    let message = b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n".as_slice();
    let published = b":1\r\n".as_slice();
    let pong = b"+PONG\r\n".as_slice();
    for (version, order) in [
        (RedisVersion::V7_0, [message, published, pong]),
        (RedisVersion::V7_2, [published, message, pong]),
        (RedisVersion::V7_4, [published, message, pong]),
    ] {
        let server = serve(version).await;
        let read = own_publish(&server.addr().to_string(), PUBLISH).await;
        assert_eq!(
            String::from_utf8_lossy(&read),
            String::from_utf8_lossy(&order.concat()),
            "{version}"
        );
    }
    // And the real servers agree, alone and inside MULTI.
    let mut real = Vec::new();
    if let Ok(redis) = RedisTarget::from_env() {
        let addr = redis.url().trim_start_matches("redis://").to_string();
        let version = support::side_by_side::version_of(&addr).await;
        real.push((addr, version, Some(redis), None));
    }
    if let Ok(binary) = support::valkey_server() {
        let valkey = RedisServer::spawn_from(&binary, &[]).unwrap();
        let addr = format!("127.0.0.1:{}", valkey.port());
        real.push((addr, RedisVersion::V7_2, None, Some(valkey)));
    }
    for (theirs, version, _redis, _valkey) in &real {
        let ours = serve(*version).await;
        for requests in [PUBLISH, PUBLISH_IN_MULTI] {
            let (x, y) = (
                own_publish(&ours.addr().to_string(), requests).await,
                own_publish(theirs, requests).await,
            );
            assert_eq!(
                String::from_utf8_lossy(&x),
                String::from_utf8_lossy(&y),
                "{requests:?} against {theirs}, as {version}"
            );
        }
    }
}
