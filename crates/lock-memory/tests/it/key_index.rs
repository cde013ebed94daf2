//! The key index a server keeps (`MemoryBackend::index_keys`): expired keys are reaped a
//! few at a time, going round the keyspace, as Redis's active expiry reaps them.

use std::time::Duration;

use lock_core::{KvBackend, SetOptions};
use lock_memory::MemoryBackend;

#[tokio::test]
async fn expired_keys_are_reaped_a_few_at_a_time() {
    let backend = MemoryBackend::new();
    backend.index_keys();
    for i in 0..1000 {
        let key = format!("short-{i}");
        backend
            .set(key.as_bytes(), b"v", SetOptions::new().px(1000))
            .await
            .unwrap();
    }
    for i in 0..10 {
        backend
            .set(format!("long-{i}").as_bytes(), b"v", SetOptions::new())
            .await
            .unwrap();
    }
    assert_eq!(backend.reap_expired(0), 1010);
    backend.advance(Duration::from_secs(2));
    // 200 keys looked at per call: the count falls as the cursor goes round.
    let mut left = Vec::new();
    for _ in 0..8 {
        left.push(backend.reap_expired(200));
    }
    assert!(left.windows(2).all(|w| w[1] <= w[0]), "{left:?}");
    assert_eq!(*left.last().unwrap(), 10, "{left:?}");
    // Only the live keys are left.
    let dump = backend.dump();
    assert_eq!(dump.keys.len(), 10);
    assert!(dump.keys.iter().all(|k| k.key.starts_with(b"long-")));
}
