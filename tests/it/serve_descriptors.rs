//! `nxlock serve` with few file descriptors, as `prlimit --nofile=256:256` leaves it:
//! `maxclients` fitted to the limit as Redis fits it, the connections over it answered
//! with Redis's error rather than left waiting, and no core burnt meanwhile.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nxlock::testing::{RedisServer, skip_or_fail};

use crate::support::raw::reply_end;

/// A process killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `nxlock serve` under a limit of 256 descriptors: the process, its port and what it
/// printed on stderr before it listened.
fn serve_with_256_descriptors() -> Option<(Killed, u16, String)> {
    let spawned = Command::new("prlimit")
        .args([
            "--nofile=256:256",
            env!("CARGO_BIN_EXE_nxlock"),
            "serve",
            "--port",
            "0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(why) => {
            skip_or_fail("serve under prlimit", &format!("cannot run prlimit: {why}"));
            return None;
        }
    };
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().rsplit(':').next().unwrap().parse().unwrap();
    // The warnings come before the listening line, and the pipe holds them whole.
    let mut stderr = child.stderr.take().unwrap();
    let mut warnings = vec![0; 4096];
    let read = stderr.read(&mut warnings).unwrap_or(0);
    warnings.truncate(read);
    Some((
        Killed(child),
        port,
        String::from_utf8_lossy(&warnings).into_owned(),
    ))
}

/// One request's reply on `stream`, read to its CRLF.
fn exchange(stream: &mut TcpStream, request: &[u8]) -> Vec<u8> {
    stream.write_all(request).unwrap();
    let mut reply = Vec::new();
    let mut byte = [0];
    while !reply.ends_with(b"\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => reply.push(byte[0]),
            _ => break,
        }
    }
    reply
}

/// CPU seconds the process `pid` has used (user and system), from /proc.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command's closing parenthesis; utime and stime are 14th and 15th.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

#[test]
fn four_hundred_clients_against_256_descriptors_get_redis_s_error_and_serve_stays_idle() {
    let Some((served, port, warnings)) = serve_with_256_descriptors() else {
        return;
    };
    assert!(
        warnings.contains("maxclients has been reduced to 224"),
        "{warnings}"
    );
    let mut connections = Vec::new();
    let (mut served_count, mut refused) = (0, 0);
    for _ in 0..400 {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let reply = exchange(&mut stream, b"PING\r\n");
        match reply.as_slice() {
            b"+PONG\r\n" => served_count += 1,
            b"-ERR max number of clients reached\r\n" => refused += 1,
            other => panic!("an unexpected reply: {:?}", String::from_utf8_lossy(other)),
        }
        connections.push(stream);
    }
    assert_eq!((served_count, refused), (224, 176));
    let mut admin = TcpStream::connect(("127.0.0.1", port)).unwrap();
    admin
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(
        exchange(&mut admin, b"PING\r\n"),
        b"-ERR max number of clients reached\r\n"
    );
    // A spinning accept loop burns a whole core; an idle server next to none. The
    // margin is wide: this guards against the spin, it times nothing.
    let pid = served.0.id();
    let before = cpu_seconds(pid);
    std::thread::sleep(Duration::from_secs(1));
    let used = cpu_seconds(pid) - before;
    assert!(used < 0.5, "serve used {used} s of CPU in 1 s while idle");
    // With the clients gone, every new one is served again.
    drop(connections);
    let mut later = None;
    for _ in 0..100 {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let reply = exchange(&mut stream, b"PING\r\n");
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
    let Some((_served, port, _)) = serve_with_256_descriptors() else {
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
    let mut ours = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut theirs = TcpStream::connect(("127.0.0.1", redis.port())).unwrap();
    for stream in [&mut ours, &mut theirs] {
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
    }
    // Redis lowers maxclients to 224 on its first try; serve did so at start-up.
    let _ = exchange(&mut theirs, b"CONFIG SET maxclients 1000\r\n");
    for request in requests {
        let read = |stream: &mut TcpStream| {
            stream.write_all(request).unwrap();
            let mut reply = Vec::new();
            let mut chunk = [0; 1024];
            while reply_end(&reply, 0) != Some(reply.len()) {
                let n = stream.read(&mut chunk).unwrap();
                assert!(n > 0, "the server closed the connection");
                reply.extend_from_slice(&chunk[..n]);
            }
            reply
        };
        let (a, b) = (read(&mut ours), read(&mut theirs));
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
