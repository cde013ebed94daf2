//! The sharded cluster double: routing by slot, each shard's own failover, and slot
//! migration that moves keys with their TTLs.

use std::time::Duration;

use lock_core::{
    ErrorKind, KvBackend, LockAlgorithm, LockGuard, LockName, LockOptions, NamedLock, SetOptions,
    TokenLock, hash_slot,
};
use lock_memory::{Link, MemoryCluster};

#[tokio::test(start_paused = true)]
async fn each_key_lives_on_its_slots_shard() {
    let cluster = MemoryCluster::new(3, 1);
    let client = cluster.client();
    for key in [&b"{a}:lock"[..], b"{b}:lock", b"{c}:lock", b"plain"] {
        client.set(key, b"v", SetOptions::new()).await.unwrap();
        let shard = cluster.shard_of(hash_slot(key));
        for other in 0..3 {
            let node = cluster.shard(other).unwrap().primary_node().unwrap();
            assert_eq!(
                node.peek(key).is_some(),
                other == shard,
                "{key:?} on shard {other}"
            );
        }
    }
    let refused = client.del(&[b"{a}:lock", b"{b}:lock"]).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::CrossSlot);
    assert_eq!(client.del(&[b"{a}:lock", b"{a}:other"]).await.unwrap(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_shards_failover_loses_only_that_shards_unreplicated_writes() {
    let cluster = MemoryCluster::new(2, 1);
    let client = cluster.client();
    let (here, there) = (b"{x}:k".as_slice(), b"{y}:k".as_slice());
    let shard = cluster.shard_of(hash_slot(here));
    let set = cluster.shard(shard).unwrap();
    // Find a key on the other shard.
    let there = if cluster.shard_of(hash_slot(there)) != shard {
        there
    } else {
        b"{z}:k".as_slice()
    };
    assert_ne!(cluster.shard_of(hash_slot(there)), shard);
    for replica in set.replicas() {
        set.set_link(replica, Link::Paused);
    }
    client.set(here, b"1", SetOptions::new()).await.unwrap();
    client.set(there, b"1", SetOptions::new()).await.unwrap();
    set.fail_over();
    assert_eq!(
        client.get(here).await.unwrap(),
        None,
        "not replicated: lost"
    );
    assert_eq!(client.get(there).await.unwrap(), Some(b"1".to_vec()));
}

#[tokio::test(start_paused = true)]
async fn a_migrated_lock_keeps_its_holder_and_its_ttl() {
    let cluster = MemoryCluster::new(3, 1);
    let client = cluster.client();
    let name = LockName::new("jobs").unwrap();
    let options = LockOptions::new().ttl(Duration::from_secs(10));
    let lock = TokenLock::with_options(client.clone(), &name, options).unwrap();
    let guard = lock.acquire().await.unwrap();
    let slot = hash_slot(guard.key());
    let to = (cluster.shard_of(slot) + 1) % 3;
    assert_eq!(cluster.migrate(slot, to), 1);
    assert_eq!(cluster.shard_of(slot), to);
    assert!(
        lock.try_acquire().await.unwrap().acquired().is_none(),
        "still held"
    );
    tokio::time::advance(Duration::from_secs(5)).await;
    let left = client.pttl(guard.key()).await.unwrap();
    assert!((4_000..=5_000).contains(&left), "{left}");
    // The release's script runs on the new shard, whose rules now own the slot.
    assert!(guard.release().await.unwrap());
    assert_eq!(cluster.migrate(slot, to), 0, "already there");
}
