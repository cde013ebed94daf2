#![cfg(feature = "cluster")]
use lock_core::{KvBackend, SetOptions, hash_slot};
use lock_redis::{ClusterBackend, RedisCluster};

#[tokio::test(flavor = "multi_thread")]
async fn smoke() {
    let cluster = RedisCluster::spawn(3, 1).unwrap();
    let urls = cluster.urls();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    let backend = ClusterBackend::connect(&urls[..1]).await.unwrap();
    for k in ["a", "b", "c", "foo"] {
        backend
            .set(k.as_bytes(), b"1", SetOptions::new().nx().px(10000))
            .await
            .unwrap();
    }
    assert_eq!(cluster.shard_of(hash_slot(b"foo")).await.unwrap(), 2);
    let slot = hash_slot(b"foo");
    cluster.start_migration(slot, 0).await.unwrap();
    assert_eq!(backend.get(b"foo").await.unwrap(), Some(b"1".to_vec()));
    cluster.move_keys(slot, 0).await.unwrap();
    assert_eq!(backend.get(b"foo").await.unwrap(), Some(b"1".to_vec()));
    cluster.finish_migration(slot, 0).await.unwrap();
    assert_eq!(cluster.shard_of(slot).await.unwrap(), 0);
    assert_eq!(backend.get(b"foo").await.unwrap(), Some(b"1".to_vec()));
    let t = std::time::Instant::now();
    cluster.fail_over(slot).await.unwrap();
    println!("failover {:?}", t.elapsed());
    assert_eq!(backend.get(b"foo").await.unwrap(), Some(b"1".to_vec()));
    assert_eq!(
        backend.del(&[b"a", b"b"]).await.unwrap_err().message(),
        "CROSSSLOT Keys in request don't hash to the same slot"
    );
}
