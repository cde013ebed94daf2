//! `nxlock serve` with few file descriptors, as `prlimit --nofile=256:256` leaves it:
//! `maxclients` fitted to the limit as Redis fits it, the connections over it answered
//! with Redis's error rather than left waiting, and no core burnt meanwhile.

use std::process::Command;
use std::time::Duration;

use nxlock::testing::{RedisServer, skip_or_fail};

use crate::support::served::{Served, connect, cpu_seconds, exchange};

/// `nxlock serve` under a limit of 256 descriptors.
fn serve_with_256_descriptors() -> Option<Served> {
    match Served::start_under(&["prlimit", "--nofile=256:256"]) {
        Ok(served) => Some(served),
        Err(why) => {
            skip_or_fail("serve under prlimit", &format!("cannot run prlimit: {why}"));
            None
        }
    }
}

#[test]
fn four_hundred_clients_against_256_descriptors_get_redis_s_error_and_serve_stays_idle() {
    let Some(mut served) = serve_with_256_descriptors() else {
        return;
    };
    let warnings = served.warnings(2);
    assert!(
        warnings.contains("maxclients has been reduced to 224"),
        "{warnings}"
    );
    let mut connections = Vec::new();
    let (mut served_count, mut refused) = (0, 0);
    for _ in 0..400 {
        let mut stream = served.connect();
        let reply = exchange(&mut stream, b"PING\r\n");
        match reply.as_slice() {
            b"+PONG\r\n" => served_count += 1,
            b"-ERR max number of clients reached\r\n" => refused += 1,
            other => panic!("an unexpected reply: {:?}", String::from_utf8_lossy(other)),
        }
        connections.push(stream);
    }
    assert_eq!((served_count, refused), (224, 176));
    let mut admin = served.connect();
    assert_eq!(
        exchange(&mut admin, b"PING\r\n"),
        b"-ERR max number of clients reached\r\n"
    );
    // A spinning accept loop burns a whole core; an idle server next to none. The
    // margin is wide: this guards against the spin, it times nothing.
    let pid = served.pid();
    let before = cpu_seconds(pid);
    std::thread::sleep(Duration::from_secs(1));
    let used = cpu_seconds(pid) - before;
    assert!(used < 0.5, "serve used {used} s of CPU in 1 s while idle");
    // With the clients gone, every new one is served again.
    drop(connections);
    let mut later = None;
    for _ in 0..100 {
        let reply = exchange(&mut served.connect(), b"PING\r\n");
        if reply == b"+PONG\r\n" {
            later = Some(reply);
            break;
        }
    }
    assert_eq!(later.as_deref(), Some(&b"+PONG\r\n"[..]));
}

/// `CONFIG SET maxclients` beyond what the descriptors allow is refused with Redis's
/// text, on both servers under the same limit.
#[test]
fn config_set_maxclients_beyond_the_descriptors_is_refused_like_redis() {
    let Some(served) = serve_with_256_descriptors() else {
        return;
    };
    let redis = match RedisServer::spawn() {
        Ok(redis) => redis,
        Err(why) => return skip_or_fail("maxclients on redis-server", &why),
    };
    let pid = redis.pid().unwrap().to_string();
    let lowered = Command::new("prlimit")
        .args(["--pid", &pid, "--nofile=256:256"])
        .status()
        .unwrap();
    assert!(lowered.success());
    let requests: [&[u8]; 4] = [
        b"CONFIG SET maxclients 1000\r\n",
        b"CONFIG GET maxclients\r\n",
        b"CONFIG SET maxclients 100\r\n",
        b"CONFIG GET maxclients\r\n",
    ];
    let mut ours = served.connect();
    let mut theirs = connect(redis.port());
    // Redis lowers maxclients to 224 on its first try; serve did so at start-up.
    let _ = exchange(&mut theirs, b"CONFIG SET maxclients 1000\r\n");
    for request in requests {
        let (a, b) = (exchange(&mut ours, request), exchange(&mut theirs, request));
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "{}",
            String::from_utf8_lossy(request)
        );
    }
}

/// The listener queues 511 connections, Redis's `tcp-backlog` (as `ss` shows a listening
/// socket's backlog in its Send-Q column), and CONFIG GET says so.
#[tokio::test]
async fn the_listen_backlog_is_redis_s_511() {
    let server = lock_server::Server::start(lock_server::ServerOptions::default())
        .await
        .unwrap();
    let port = server.addr().port();
    let shown = Command::new("ss")
        .args(["-ltnH", &format!("sport = :{port}")])
        .output();
    let Ok(shown) = shown else {
        return skip_or_fail("the listen backlog", "cannot run ss");
    };
    let line = String::from_utf8_lossy(&shown.stdout).into_owned();
    let send_q: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(send_q.get(2), Some(&"511"), "{line}");
    let mut raw = crate::support::raw::Raw::connect(&server.addr().to_string()).await;
    assert_eq!(
        raw.command(&["CONFIG", "GET", "tcp-backlog"]).await,
        b"*2\r\n$11\r\ntcp-backlog\r\n$3\r\n511\r\n"
    );
    server.stop().await;
}
