//! `OBJECT IDLETIME` follows use, on the server's clock: commands that read or write a key
//! make it fresh; TTL, PTTL, TYPE, EXISTS and OBJECT look without touching it; TOUCH
//! touches. Redis's rule, checked here with `NXLOCK.FASTFORWARD` instead of waiting.

use crate::support;

use lock_server::{Server, ServerOptions};
use support::raw::Raw;

#[tokio::test]
async fn idle_time_follows_use_but_not_inspection() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let mut client = Raw::connect(&server.addr().to_string()).await;
    let idle = async |client: &mut Raw| client.command(&["OBJECT", "IDLETIME", "foo"]).await;
    assert_eq!(client.command(&["SET", "foo", "bar"]).await, b"+OK\r\n");
    assert_eq!(idle(&mut client).await, b":0\r\n");
    client.command(&["NXLOCK.FASTFORWARD", "3000"]).await;
    for look in [
        &["TTL", "foo"][..],
        &["PTTL", "foo"],
        &["TYPE", "foo"],
        &["EXISTS", "foo"],
        &["EXPIRETIME", "foo"],
        &["OBJECT", "ENCODING", "foo"],
    ] {
        client.command(look).await;
    }
    assert_eq!(
        idle(&mut client).await,
        b":3\r\n",
        "inspection touched the key"
    );
    assert_eq!(client.command(&["GET", "foo"]).await, b"$3\r\nbar\r\n");
    assert_eq!(
        idle(&mut client).await,
        b":0\r\n",
        "GET did not touch the key"
    );
    client.command(&["NXLOCK.FASTFORWARD", "5000"]).await;
    assert_eq!(idle(&mut client).await, b":5\r\n");
    assert_eq!(client.command(&["TOUCH", "foo", "nokey"]).await, b":1\r\n");
    assert_eq!(
        idle(&mut client).await,
        b":0\r\n",
        "TOUCH did not touch the key"
    );
    client.command(&["NXLOCK.FASTFORWARD", "2000"]).await;
    client
        .command(&["EVAL", "return redis.call('GET', KEYS[1])", "1", "foo"])
        .await;
    assert_eq!(
        idle(&mut client).await,
        b":0\r\n",
        "a script's GET did not touch it"
    );
    assert_eq!(
        client.command(&["OBJECT", "IDLETIME", "nokey"]).await,
        b"$-1\r\n"
    );
    server.stop().await;
}
