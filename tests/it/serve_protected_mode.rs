//! Protected mode, as a client on another interface meets it: bound to every address
//! without a password, serve refuses that client with Redis's own `DENIED` text and
//! closes the connection, as redis-server does; loopback clients are served, and
//! `CONFIG SET protected-mode no` lets the other one in.

use std::net::{IpAddr, SocketAddr, UdpSocket};

use lock_server::{Server, ServerOptions};
use nxlock::testing::{RedisServer, announce_skip, skip_or_fail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::raw::Raw;

/// This machine's address on a non-loopback interface, if it has one: the source
/// address a datagram to a documentation address would leave from (none is sent).
fn non_loopback_address() -> Option<IpAddr> {
    let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// Everything the server sends to a client at `addr` that sends PING, until it closes
/// the connection or answers.
async fn ping_from_outside(addr: SocketAddr) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let _ = stream.write_all(b"PING\r\n").await;
    let mut received = Vec::new();
    let mut chunk = [0; 4096];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return received,
            Ok(n) => {
                received.extend_from_slice(&chunk[..n]);
                if received == b"+PONG\r\n" {
                    return received;
                }
            }
        }
    }
}

#[tokio::test]
async fn a_client_off_loopback_is_denied_like_redis_until_protected_mode_is_off() {
    let Some(outside) = non_loopback_address() else {
        return announce_skip("protected mode from another interface", "no such interface");
    };
    let options = ServerOptions {
        bind: "0.0.0.0".parse().unwrap(),
        ..ServerOptions::default()
    };
    let server = Server::start(options).await.unwrap();
    assert!(
        server
            .warnings()
            .iter()
            .any(|w| w.contains("without a password")),
        "{:?}",
        server.warnings()
    );
    let port = server.addr().port();
    let ours = ping_from_outside(SocketAddr::new(outside, port)).await;
    let redis = match RedisServer::spawn_with(&[
        "--bind".into(),
        "0.0.0.0".into(),
        "--protected-mode".into(),
        "yes".into(),
    ]) {
        Ok(redis) => redis,
        Err(why) => return skip_or_fail("protected mode on redis-server", &why),
    };
    let theirs = ping_from_outside(SocketAddr::new(outside, redis.port())).await;
    assert!(
        theirs.starts_with(b"-DENIED"),
        "{}",
        String::from_utf8_lossy(&theirs)
    );
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs)
    );
    // Loopback clients are served; one of them turns protected mode off.
    let mut local = Raw::connect(&format!("127.0.0.1:{port}")).await;
    assert_eq!(local.command(&["PING"]).await, b"+PONG\r\n");
    assert_eq!(
        local
            .command(&["CONFIG", "SET", "protected-mode", "NO"])
            .await,
        b"+OK\r\n"
    );
    assert_eq!(
        local.command(&["CONFIG", "GET", "protected-mode"]).await,
        b"*2\r\n$14\r\nprotected-mode\r\n$2\r\nno\r\n"
    );
    assert_eq!(
        ping_from_outside(SocketAddr::new(outside, port)).await,
        b"+PONG\r\n"
    );
    server.stop().await;
}

/// With a password, protected mode lets every client connect (and AUTH decides).
#[tokio::test]
async fn a_password_lets_clients_off_loopback_connect() {
    let Some(outside) = non_loopback_address() else {
        return announce_skip("protected mode from another interface", "no such interface");
    };
    let options = ServerOptions {
        bind: "0.0.0.0".parse().unwrap(),
        requirepass: Some("secret".into()),
        ..ServerOptions::default()
    };
    let server = Server::start(options).await.unwrap();
    assert!(server.warnings().is_empty(), "{:?}", server.warnings());
    let mut remote =
        Raw::connect(&SocketAddr::new(outside, server.addr().port()).to_string()).await;
    assert_eq!(
        remote.command(&["PING"]).await,
        b"-NOAUTH Authentication required.\r\n"
    );
    assert_eq!(remote.command(&["AUTH", "secret"]).await, b"+OK\r\n");
    assert_eq!(remote.command(&["PING"]).await, b"+PONG\r\n");
    server.stop().await;
}

/// An unauthenticated client is told of an unknown command or a wrong arity before it is
/// asked to authenticate, and a refused EXEC is an EXECABORT, as Redis's processCommand
/// orders its checks: byte for byte against redis-server with the same password.
#[tokio::test]
async fn an_unauthenticated_client_gets_redis_replies_in_redis_order() {
    // The spawner asks a server whether it is up without a password: the password is set
    // once it answers, and asked of connections made after.
    let redis = match RedisServer::spawn() {
        Ok(redis) => redis,
        Err(why) => return skip_or_fail("requirepass on redis-server", &why),
    };
    let mut admin = Raw::connect(&format!("127.0.0.1:{}", redis.port())).await;
    assert_eq!(
        admin
            .command(&["CONFIG", "SET", "requirepass", "secret"])
            .await,
        b"+OK\r\n"
    );
    let options = ServerOptions {
        requirepass: Some("secret".into()),
        ..ServerOptions::default()
    };
    let server = Server::start(options).await.unwrap();
    let commands: &[&[&str]] = &[
        &["NOSUCH"],
        &["GET"],
        &["GET", "k"],
        &["EXEC"],
        &["EXEC", "extra"],
        &["MULTI"],
        &["AUTH", "wrong"],
        &["AUTH", "secret"],
        &["EXEC", "extra"],
        &["MULTI"],
        &["EXEC", "extra"],
        &["EXEC"],
    ];
    let mut ours = Raw::connect(&server.addr().to_string()).await;
    let mut theirs = Raw::connect(&format!("127.0.0.1:{}", redis.port())).await;
    for command in commands {
        assert_eq!(
            String::from_utf8_lossy(&ours.command(command).await),
            String::from_utf8_lossy(&theirs.command(command).await),
            "{command:?}"
        );
    }
    server.stop().await;
}
