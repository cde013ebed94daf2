//! Servers that are shards of one cluster ([`ClusterLayout`]): each describes every
//! shard at the asking client's own address, and answers a key of another shard's slot
//! with `MOVED` to that address, also after the slot migrates.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use lock_core::hash_slot;
use lock_server::{ClusterLayout, Server, ServerOptions};

use crate::support::raw::Raw;

/// Two shards split at `split`; client `n` reaches shard `s` at port `1000 * (s + 1) + n`.
#[derive(Debug)]
struct Halves {
    own: usize,
    split: Arc<Mutex<u16>>,
}

impl ClusterLayout for Halves {
    fn shards(&self) -> usize {
        2
    }
    fn own_shard(&self) -> usize {
        self.own
    }
    fn owner(&self, slot: u16) -> usize {
        usize::from(slot >= *self.split.lock().unwrap())
    }
    fn address(&self, client: Option<usize>, shard: usize) -> SocketAddr {
        let port = 1000 * (shard + 1) + client.unwrap_or(0);
        SocketAddr::from(([127, 0, 0, 1], u16::try_from(port).unwrap()))
    }
}

async fn shard(own: usize, split: &Arc<Mutex<u16>>) -> Server {
    Server::start(ServerOptions {
        cluster_layout: Some(Arc::new(Halves {
            own,
            split: split.clone(),
        })),
        ..ServerOptions::default()
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn each_shard_serves_its_slots_and_redirects_the_others_to_the_clients_own_address() {
    let split = Arc::new(Mutex::new(8192));
    let first = shard(0, &split).await;
    let low = "b"; // slot 3300
    let high = "a"; // slot 15495
    assert!(hash_slot(low.as_bytes()) < 8192 && hash_slot(high.as_bytes()) >= 8192);

    let mut untagged = Raw::connect(&first.addr().to_string()).await;
    assert_eq!(untagged.command(&["SET", low, "1"]).await, b"+OK\r\n");
    assert_eq!(
        untagged.command(&["SET", high, "1"]).await,
        b"-MOVED 15495 127.0.0.1:2000\r\n"
    );
    let port = first.listen_as(3).await.unwrap().to_string();
    let mut client = Raw::connect(&port).await;
    assert_eq!(
        client.command(&["GET", high]).await,
        b"-MOVED 15495 127.0.0.1:2003\r\n",
        "the client's own address of the other shard"
    );
    assert_eq!(
        client.command(&["EVAL", "return 1", "1", high]).await,
        b"-MOVED 15495 127.0.0.1:2003\r\n"
    );
    assert_eq!(client.command(&["PING"]).await, b"+PONG\r\n");
    // In MULTI the redirected command spoils the transaction, as in Redis.
    assert_eq!(client.command(&["MULTI"]).await, b"+OK\r\n");
    assert_eq!(
        client.command(&["INCR", high]).await,
        b"-MOVED 15495 127.0.0.1:2003\r\n"
    );
    assert!(
        client.command(&["EXEC"]).await
            == b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    );

    let slots = String::from_utf8_lossy(&client.command(&["CLUSTER", "SLOTS"]).await).into_owned();
    for part in [
        ":0\r\n:8191\r\n",
        "127.0.0.1",
        ":1003\r\n",
        ":8192\r\n:16383\r\n",
        ":2003\r\n",
    ] {
        assert!(slots.contains(part), "{part:?} in {slots:?}");
    }
    let nodes = String::from_utf8_lossy(&client.command(&["CLUSTER", "NODES"]).await).into_owned();
    assert!(
        nodes.contains("127.0.0.1:1003@11003 myself,master - 0 0 0 connected 0-8191\n"),
        "{nodes}"
    );
    assert!(
        nodes.contains("127.0.0.1:2003@12003 master - 0 0 0 connected 8192-16383\n"),
        "{nodes}"
    );
    let info = String::from_utf8_lossy(&client.command(&["CLUSTER", "INFO"]).await).into_owned();
    assert!(info.contains("cluster_known_nodes:2\r\n"), "{info}");

    // The high slot migrates here: the same command now runs.
    *split.lock().unwrap() = 16_000;
    assert_eq!(client.command(&["SET", high, "2"]).await, b"+OK\r\n");
    let nodes = String::from_utf8_lossy(&client.command(&["CLUSTER", "NODES"]).await).into_owned();
    assert!(
        nodes.contains("connected 0-15999\n") && nodes.contains("connected 16000-16383\n"),
        "{nodes}"
    );
    first.stop().await;
}
