//! ClusterBackend on a real Redis Cluster (3 primaries with a replica each, spawned on
//! loopback): what the conformance suite does not reach.

use std::time::Duration;

use nxlock::LockOptions;
use nxlock::backend::{Replication, Value};
use nxlock::cluster::ClusterBackend;
use nxlock::cluster::hash_slot;
use nxlock::pubsub::Wait;
use nxlock::script::Script;
use nxlock::testing::{RedisCluster, skip_or_fail};
use nxlock::{ErrorKind, KvBackend, LockAlgorithm, LockGuard, LockName, NamedLock, TokenLock};

fn spawn(test: &str) -> Option<RedisCluster> {
    match RedisCluster::spawn(3, 1) {
        Ok(cluster) => Some(cluster),
        Err(why) => {
            skip_or_fail(test, &why);
            None
        }
    }
}

async fn connect(cluster: &RedisCluster) -> ClusterBackend {
    let urls = cluster.urls();
    ClusterBackend::connect(&[urls[0].as_str()]).await.unwrap()
}

fn set_script() -> Script {
    Script::new("set-key", "return redis.call('SET', KEYS[1], ARGV[1])").with_native(
        |store, keys, args| {
            store.set(keys[0], args[0], Default::default())?;
            Ok(Value::Status("OK".into()))
        },
    )
}

/// WAIT goes to the primary of the script's slot, whose one replica acknowledges; on
/// every shard, not just the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_counts_the_replica_of_the_scripts_own_shard() {
    let Some(cluster) = spawn("wait_counts_the_replica_of_the_scripts_own_shard") else {
        return;
    };
    let backend = connect(&cluster).await;
    let mut shards_seen = std::collections::HashSet::new();
    for n in 0..30 {
        let key = format!("wait-{n}");
        shards_seen.insert(cluster.shard_of(hash_slot(key.as_bytes())).await.unwrap());
        let replicated = backend
            .eval_replicated(
                &set_script(),
                &[key.as_bytes()],
                &[b"v"],
                &Replication::new(1, Duration::from_secs(2)),
            )
            .await
            .unwrap();
        assert_eq!(replicated.reply, Value::Status("OK".into()));
        assert_eq!(replicated.acknowledged, 1, "{key}");
    }
    assert_eq!(shards_seen.len(), 3, "the keys covered every shard");
    // WAITAOF is Redis 7.2's; a 7.0 node refuses it before the script runs.
    let fsync = Replication::new(1, Duration::from_secs(1)).fsync();
    match backend
        .eval_replicated(&set_script(), &[b"aof"], &[b"v"], &fsync)
        .await
    {
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
            assert_eq!(backend.get(b"aof").await.unwrap(), None);
        }
        Ok(replicated) => assert!(replicated.acknowledged <= 1),
    }
    // A replicated script needs a key to route it by.
    let keyless = backend
        .eval_replicated(
            &set_script(),
            &[],
            &[],
            &Replication::new(1, Duration::from_secs(1)),
        )
        .await
        .unwrap_err();
    assert_eq!(keyless.kind(), ErrorKind::InvalidConfig);
}

/// A release `SPUBLISH`es on the lock's own shard, whichever shard that is, and the
/// backend's `SSUBSCRIBE` hears it; a waiter then takes the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_wakes_a_waiter_whatever_shard_the_lock_is_on() {
    let Some(cluster) = spawn("a_release_wakes_a_waiter_whatever_shard_the_lock_is_on") else {
        return;
    };
    let backend = connect(&cluster).await;
    // Redis 7: sharded pub/sub, the wake-up staying within the lock's shard.
    assert!(backend.sharded_pubsub());
    let mut shards_seen = std::collections::HashSet::new();
    for n in 0..9 {
        let name = LockName::new(format!("wake-{n}")).unwrap();
        let channel = name.key("wake");
        shards_seen.insert(cluster.shard_of(hash_slot(&channel)).await.unwrap());
        let mut heard = backend.subscribe(&channel).await.unwrap();
        let options = LockOptions::new()
            .ttl(Duration::from_secs(30))
            .wait(Wait::Notify);
        let holder = TokenLock::with_options(backend.clone(), &name, options.clone()).unwrap();
        let waiter = TokenLock::with_options(backend.clone(), &name, options).unwrap();
        let guard = holder.acquire().await.unwrap();
        let waiting = tokio::spawn(async move { waiter.acquire().await });
        guard.release().await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), heard.recv())
            .await
            .expect("the release's wake-up never arrived")
            .expect("the subscription ended");
        let next = waiting.await.unwrap().unwrap();
        assert!(next.release().await.unwrap());
    }
    assert_eq!(shards_seen.len(), 3, "the locks covered every shard");
}
