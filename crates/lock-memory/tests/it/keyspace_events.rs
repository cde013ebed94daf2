//! Keyspace notifications on the double's own pub/sub: what a lock library that waits
//! for `expired` or `del` events receives from a [`MemoryBackend`], on virtual time.

use std::time::Duration;

use lock_core::{ExpireCondition, KvBackend, Missed, SetOptions, Subscription};
use lock_memory::{KeyspaceEvents, MemoryBackend};

/// The messages already delivered to `subscription` (the double publishes inside the
/// command, so nothing more is coming).
async fn delivered(subscription: &mut Subscription) -> Vec<String> {
    let mut messages = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_millis(1), subscription.recv()).await {
            Ok(Ok(message)) => messages.push(String::from_utf8_lossy(&message).into_owned()),
            Ok(Err(Missed::Lagged(n))) => panic!("lagged by {n}"),
            Ok(Err(Missed::Closed)) | Err(_) => return messages,
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_lock_key_s_expiry_and_deletion_reach_subscribers() {
    let backend = MemoryBackend::new();
    backend.set_keyspace_events(KeyspaceEvents::parse(b"KEgx").unwrap());
    let mut expired = backend.subscribe(b"__keyevent@0__:expired").await.unwrap();
    let mut deleted = backend.subscribe(b"__keyevent@0__:del").await.unwrap();
    let mut lock_key = backend.subscribe(b"__keyspace@0__:lock").await.unwrap();

    backend
        .set(b"lock", b"token", SetOptions::new().nx().px(1000))
        .await
        .unwrap();
    backend
        .pexpire(b"lock", 2000, ExpireCondition::Always)
        .await
        .unwrap();
    backend.advance(Duration::from_millis(2500));
    // Found expired by the next command that touches it.
    assert_eq!(backend.get(b"lock").await.unwrap(), None);
    backend
        .set(b"lock", b"t2", SetOptions::new())
        .await
        .unwrap();
    backend.del(&[b"lock".as_slice()]).await.unwrap();

    assert_eq!(delivered(&mut expired).await, ["lock"]);
    assert_eq!(delivered(&mut deleted).await, ["lock"]);
    // No `set` (string class off): the SET NX PX's `expire`, the PEXPIRE's, the
    // expiry, then the DEL.
    assert_eq!(
        delivered(&mut lock_key).await,
        ["expire", "expire", "expired", "del"]
    );
}

#[tokio::test(start_paused = true)]
async fn nothing_is_published_by_default_and_databases_are_named() {
    let first = MemoryBackend::new();
    let third = MemoryBackend::with_shared_pubsub(first.clock(), &first).with_database_index(3);
    let mut events = first.subscribe(b"__keyevent@3__:set").await.unwrap();
    third.set(b"k", b"v", SetOptions::new()).await.unwrap();
    assert!(delivered(&mut events).await.is_empty(), "off by default");

    // The setting is shared, as a server's databases share it.
    first.set_keyspace_events(KeyspaceEvents::parse(b"E$").unwrap());
    assert_eq!(third.keyspace_events(), first.keyspace_events());
    third.set(b"k", b"v", SetOptions::new()).await.unwrap();
    first.set(b"k", b"v", SetOptions::new()).await.unwrap();
    assert_eq!(delivered(&mut events).await, ["k"], "only database 3's SET");
}

#[tokio::test(start_paused = true)]
async fn reaping_raises_expired_for_each_key_it_removes() {
    let backend = MemoryBackend::new();
    backend.index_keys();
    backend.set_keyspace_events(KeyspaceEvents::parse(b"Ex").unwrap());
    let mut expired = backend.subscribe(b"__keyevent@0__:expired").await.unwrap();
    for key in ["a", "b", "c"] {
        backend
            .set(key.as_bytes(), b"v", SetOptions::new().px(10))
            .await
            .unwrap();
    }
    backend.set(b"kept", b"v", SetOptions::new()).await.unwrap();
    backend.advance(Duration::from_millis(20));
    assert_eq!(backend.reap_expired(100), 1);
    let mut reaped = delivered(&mut expired).await;
    reaped.sort();
    assert_eq!(reaped, ["a", "b", "c"]);
}
