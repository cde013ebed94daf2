//! Expired keys do not accumulate: memory follows the live keys, whatever the churn.

use std::time::Duration;

use lock_core::{Clock, KvBackend, SetOptions};
use lock_memory::MemoryBackend;

#[tokio::test]
async fn a_million_short_lived_keys_leave_memory_bounded() {
    let clock = Clock::system();
    let backend = MemoryBackend::with_clock(clock.clone());
    let mut peak = 0;
    for batch in 0..1_000u32 {
        for i in 0..1_000u32 {
            let key = format!("short:{batch}:{i}");
            backend
                .set(key.as_bytes(), b"x", SetOptions::new().px(1))
                .await
                .unwrap();
        }
        // Every key of this batch is now past its 1 ms TTL; nobody ever reads them again.
        clock.advance(Duration::from_millis(2));
        peak = peak.max(backend.stats().stored_keys);
    }
    let stats = backend.stats();
    println!("after 1,000,000 short-lived keys: peak {peak} stored, now {stats:?}");
    assert!(
        peak <= 3_000,
        "expired keys piled up: peak {peak} stored keys"
    );
    assert!(
        stats.capacity <= 8_192,
        "map capacity {} never shrank",
        stats.capacity
    );
    assert!(
        backend.dump().keys.len() <= 1_000,
        "live keys are only the last batch"
    );
}

#[tokio::test]
async fn live_keys_survive_sweeps() {
    let clock = Clock::system();
    let backend = MemoryBackend::with_clock(clock.clone());
    backend
        .set(b"forever", b"1", SetOptions::new())
        .await
        .unwrap();
    backend
        .set(b"long", b"2", SetOptions::new().px(3_600_000))
        .await
        .unwrap();
    for i in 0..10_000u32 {
        backend
            .set(
                format!("churn:{i}").as_bytes(),
                b"x",
                SetOptions::new().px(1),
            )
            .await
            .unwrap();
        clock.advance(Duration::from_millis(2));
    }
    assert_eq!(backend.get(b"forever").await.unwrap(), Some(b"1".to_vec()));
    assert_eq!(backend.get(b"long").await.unwrap(), Some(b"2".to_vec()));
    assert!(backend.stats().stored_keys < 2_100);
}

#[tokio::test]
async fn a_replica_set_nobody_looks_at_keeps_its_stream_bounded() {
    // Commands to the primary leave replication to whoever looks at a replica next; a
    // set nobody looks at still delivers once the backlog grows.
    let set = lock_memory::MemoryReplicaSet::with_clock(2, Clock::system());
    let client = set.client();
    let mut peak = 0;
    for i in 0..10_000u32 {
        client
            .set(format!("k{i}").as_bytes(), b"v", SetOptions::new())
            .await
            .unwrap();
        peak = peak.max(set.backlog());
    }
    assert!(peak <= 257, "the stream grew to {peak} writes");
    // Looking at a replica delivers everything that has arrived.
    assert_eq!(
        set.node(1).get(b"k9999").await.unwrap(),
        Some(b"v".to_vec())
    );
    assert_eq!(set.backlog(), 0);
}
