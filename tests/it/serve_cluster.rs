//! `nxlock serve --cluster` against a real one-node Redis Cluster (redis-server
//! `--cluster-enabled yes` serving every slot), command by command: the cluster's
//! refusals byte for byte, and its topology replies with only the node's id, address
//! and ports told apart.

use crate::support;

use nxlock::server::{Server, ServerOptions};
use nxlock::testing::{RedisServer, skip_or_fail};
use support::raw::{self, Raw};
use tokio::io::AsyncWriteExt;

/// A real one-node cluster that serves every slot.
async fn real_one_node_cluster() -> Option<RedisServer> {
    let state = std::env::temp_dir().join(format!(
        "nxlock-one-node-cluster-{}-{}",
        std::process::id(),
        line!()
    ));
    let args = [
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        &state.to_string_lossy(),
    ]
    .map(String::from);
    let server = match RedisServer::spawn_with(&args) {
        Ok(server) => server,
        Err(why) => {
            skip_or_fail("nxlock serve --cluster against a real cluster node", &why);
            return None;
        }
    };
    let mut raw = Raw::connect(&format!("127.0.0.1:{}", server.port())).await;
    raw.command(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"])
        .await;
    // The node says ok once it has checked its slots; ask until it does.
    for _ in 0..500 {
        let info = raw.command(&["CLUSTER", "INFO"]).await;
        if String::from_utf8_lossy(&info).contains("cluster_state:ok") {
            let _ = std::fs::remove_file(&state);
            return Some(server);
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the one-node cluster never reported cluster_state:ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_mode_answers_as_a_real_cluster_node() {
    let Some(redis) = real_one_node_cluster().await else {
        return;
    };
    // Answering as the real node's version: the cross-slot text in scripts changed in 7.4.
    let redis_addr = format!("127.0.0.1:{}", redis.port());
    let options = ServerOptions {
        cluster: true,
        redis_version: support::side_by_side::version_of(&redis_addr).await,
        ..ServerOptions::default()
    };
    let server = Server::start(options).await.unwrap();
    let mut ours = Raw::connect(&server.addr().to_string()).await;
    let mut theirs = Raw::connect(&format!("127.0.0.1:{}", redis.port())).await;
    let our_id = String::from_utf8_lossy(&ours.command(&["CLUSTER", "MYID"]).await).into_owned();
    let their_id =
        String::from_utf8_lossy(&theirs.command(&["CLUSTER", "MYID"]).await).into_owned();
    assert_eq!(our_id.len(), their_id.len(), "{our_id:?} vs {their_id:?}");
    let their_port = redis.port().to_string();
    let our_port = server.addr().port().to_string();
    // The real node never met another, so it knows no address of its own.
    let normalise = |reply: Vec<u8>| {
        String::from_utf8_lossy(&reply)
            .replace(&their_id[5..45], &our_id[5..45])
            .replace(&(redis.port() as u32 + 10_000).to_string(), "BUS")
            .replace(&(server.addr().port() as u32 + 10_000).to_string(), "BUS")
            .replace(&their_port, &our_port)
            .replace("$9\r\n127.0.0.1\r\n", "$0\r\n\r\n")
            .replace(" 127.0.0.1:", " :")
    };
    let commands: &[&[&str]] = &[
        &["SET", "foo", "1"],
        &["DEL", "foo", "bar"],
        &["MSET", "a", "1", "b", "2"],
        &["EXISTS", "{t}a", "{t}b"],
        &[
            "EVAL",
            "return redis.call('GET', KEYS[1])",
            "2",
            "foo",
            "bar",
        ],
        &[
            "EVAL",
            "return redis.call('DEL', ARGV[1], ARGV[2])",
            "0",
            "k1",
            "k5",
        ],
        &["EVAL", "return redis.call('GET', 'k1')", "1", "foo"],
        // With a shebang, a script keeps to its keys' slot unless it allows others.
        &["EVAL", "#!lua\nreturn redis.call('GET', 'k1')", "1", "foo"],
        &[
            "EVAL",
            "#!lua\nreturn redis.call('GET', '{foo}k1')",
            "1",
            "foo",
        ],
        &["EVAL", "#!lua\nreturn redis.call('GET', 'k1')", "0"],
        &[
            "EVAL",
            "#!lua flags=allow-cross-slot-keys\nreturn redis.call('GET', 'k1')",
            "1",
            "foo",
        ],
        &["SELECT", "1"],
        &["SELECT", "0"],
        &["MULTI"],
        &["SET", "a", "1"],
        &["SET", "b", "2"],
        &["EXEC"],
        &["GET", "a"],
        &["MULTI"],
        &["MSET", "a", "1", "b", "2"],
        &["EXEC"],
        &["MULTI"],
        &["SET", "{x}a", "1"],
        &["SET", "{x}b", "2"],
        &["EXEC"],
        &["CLUSTER", "KEYSLOT", "foo"],
        &["CLUSTER", "KEYSLOT"],
        &["CLUSTER", "INFO", "x"],
        &["CLUSTER", "NOSUCH"],
        &["CLUSTER", "INFO"],
        &["CLUSTER", "SLOTS"],
        &["CLUSTER", "SHARDS"],
        &["CLUSTER", "NODES"],
        &["INFO", "cluster"],
        &["HELLO", "3"],
        &["CLUSTER", "SLOTS"],
    ];
    for command in commands {
        let (a, b) = (ours.command(command).await, theirs.command(command).await);
        let (a, b) = (normalise(a), normalise(b));
        if command == &["CLUSTER", "SHARDS"] {
            // The replication offset counts bytes of a replication stream the double
            // does not keep.
            let offset = |reply: &str| {
                reply
                    .split("replication-offset\r\n")
                    .nth(1)
                    .map(|rest| rest[rest.find("\r\n").unwrap()..].to_string())
            };
            assert_eq!(offset(&a), offset(&b), "CLUSTER SHARDS after the offset");
            assert_eq!(
                a.split("replication-offset").next(),
                b.split("replication-offset").next()
            );
            continue;
        }
        if command == &["CLUSTER", "NODES"] {
            // The address (and so the bulk string's length) was told apart above.
            let line = |reply: &str| reply.split_once("\r\n").map(|(_, line)| line.to_string());
            assert_eq!(line(&a), line(&b), "CLUSTER NODES");
            continue;
        }
        if command[0] == "HELLO" {
            // Connection ids differ; the mode must say cluster.
            assert!(a.contains("$4\r\nmode\r\n$7\r\ncluster\r\n"), "{a}");
            assert!(b.contains("$4\r\nmode\r\n$7\r\ncluster\r\n"), "{b}");
            continue;
        }
        assert_eq!(a, b, "{}", command.join(" "));
    }
    // Pipelined commands take the server's batched path; the refusals stay the same.
    let pipeline: &[&[&str]] = &[
        &["SET", "{p}a", "1"],
        &["DEL", "{p}a", "other"],
        &["EXISTS", "{p}a", "{p}b"],
        &["MSET", "x", "1", "y", "2"],
        &["GET", "{p}a"],
    ];
    let bytes: Vec<u8> = pipeline.iter().flat_map(|c| raw::request(c)).collect();
    for raw in [&mut ours, &mut theirs] {
        raw.stream.write_all(&bytes).await.unwrap();
    }
    for command in pipeline {
        let (a, b) = (ours.read_reply().await, theirs.read_reply().await);
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "pipelined {}",
            command.join(" ")
        );
    }
    server.stop().await;
}

/// `nxlock serve --cluster` has no `SPUBLISH`: ClusterBackend falls back to classic
/// pub/sub there, and a release's wake-up still reaches its subscription.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_client_wakes_waiters_with_classic_pubsub_on_serve() {
    use nxlock::cluster::ClusterBackend;
    use nxlock::prelude::*;
    use nxlock::pubsub::Wait;
    use nxlock::{LockName, LockOptions, TokenLock};

    let options = ServerOptions {
        cluster: true,
        ..ServerOptions::default()
    };
    let server = Server::start(options).await.unwrap();
    let backend = ClusterBackend::connect(&[server.url().as_str()])
        .await
        .unwrap();
    assert!(!backend.sharded_pubsub());
    let name = LockName::new("serve-cluster-wake").unwrap();
    let mut heard = backend.subscribe(&name.key("wake")).await.unwrap();
    let options = LockOptions::new().wait(Wait::Notify);
    let lock = TokenLock::with_options(backend.clone(), &name, options).unwrap();
    lock.acquire().await.unwrap().release().await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(5), heard.recv())
        .await
        .expect("the release's wake-up never arrived")
        .expect("the subscription ended");
    server.stop().await;
}
