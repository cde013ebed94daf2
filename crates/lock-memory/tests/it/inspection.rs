//! Dumps for failing tests, and guards dropped outside a runtime.

use std::time::Duration;

use lock_core::{
    AcquirePolicy, KvBackend, LockAlgorithm, LockName, LockOptions, NamedLock, SetOptions,
    TokenLock,
};
use lock_memory::MemoryBackend;

#[tokio::test(start_paused = true)]
async fn dump_lists_live_keys_with_values_and_ttls() {
    let backend = MemoryBackend::new();
    backend
        .set(b"b", b"2", SetOptions::new().px(1_500))
        .await
        .unwrap();
    backend.set(b"a", b"1", SetOptions::new()).await.unwrap();
    backend
        .set(b"gone", b"x", SetOptions::new().px(1))
        .await
        .unwrap();
    tokio::time::advance(Duration::from_millis(10)).await;
    let dump = backend.dump();
    let keys: Vec<_> = dump
        .keys
        .iter()
        .map(|k| (k.key.as_slice(), k.value.as_slice(), k.pttl))
        .collect();
    assert_eq!(
        keys,
        [(&b"a"[..], &b"1"[..], -1), (&b"b"[..], &b"2"[..], 1_490)]
    );
    let text = dump.to_string();
    assert!(text.contains(r#""a" = "1" (no ttl)"#), "{text}");
    assert!(text.contains(r#""b" = "2" (pttl 1490 ms)"#), "{text}");
}

#[tokio::test(start_paused = true)]
async fn peek_reads_one_key_without_acting_as_a_command() {
    let backend = MemoryBackend::new();
    backend
        .set(b"lock", b"token", SetOptions::new().px(1_500))
        .await
        .unwrap();
    backend
        .set(b"gone", b"x", SetOptions::new().px(1))
        .await
        .unwrap();
    tokio::time::advance(Duration::from_millis(10)).await;
    let commands = backend.stats().commands;
    let stored = backend.stats().stored_keys;
    backend
        .faults()
        .fail_next(1, lock_core::ErrorKind::Connection);

    let lock = backend.peek(b"lock").expect("live");
    assert_eq!((lock.value.as_slice(), lock.pttl), (&b"token"[..], 1_490));
    assert_eq!(Some(&lock), backend.dump().get(b"lock"));
    // Expired and missing keys are absent, and the expired one is not reaped by a look.
    assert!(backend.peek(b"gone").is_none());
    assert!(backend.peek(b"never").is_none());
    assert_eq!(backend.stats().stored_keys, stored);
    assert_eq!(backend.stats().commands, commands);
    // The armed fault is still there for the next command.
    assert!(backend.get(b"lock").await.is_err());
}

#[test]
fn a_guard_dropped_without_a_runtime_leaves_the_lock_to_its_ttl() {
    let backend = MemoryBackend::with_clock(lock_core::Clock::system());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let lock = TokenLock::with_options(
        backend.clone(),
        &LockName::new("k").unwrap(),
        LockOptions::new()
            .ttl(Duration::from_secs(5))
            .policy(AcquirePolicy::try_once()),
    )
    .unwrap();
    let guard = runtime
        .block_on(lock.try_acquire())
        .unwrap()
        .acquired()
        .unwrap();
    drop(runtime);
    // No runtime here: the drop cannot release, and must not panic.
    drop(guard);
    assert!(backend.dump().get(b"{k}:lock").is_some());
    backend.advance(Duration::from_secs(6));
    assert!(backend.dump().get(b"{k}:lock").is_none());
}

/// The write log keeps the order in which the store granted writes to a key, with the
/// value after each, deletions included; it is bounded, and off by default.
#[tokio::test(start_paused = true)]
async fn the_write_log_keeps_the_order_writes_were_granted() {
    let backend = MemoryBackend::new();
    backend
        .set(b"lock", b"before", SetOptions::new())
        .await
        .unwrap();
    assert!(backend.writes_to(b"lock").is_empty(), "off by default");
    backend.log_writes(3);
    backend
        .set(b"lock", b"a", SetOptions::new().px(1_000))
        .await
        .unwrap();
    backend
        .set(b"other", b"x", SetOptions::new())
        .await
        .unwrap();
    assert!(
        backend
            .set(b"lock", b"b", SetOptions::new().nx())
            .await
            .is_ok()
    );
    backend.del(&[b"lock"]).await.unwrap();
    backend.set(b"lock", b"c", SetOptions::new()).await.unwrap();
    let writes = backend.writes_to(b"lock");
    let seen: Vec<_> = writes.iter().map(|w| (w.seq, w.value.clone())).collect();
    // Refused NX writes nothing; the log holds the last 3 writes of all keys.
    assert_eq!(seen, vec![(3, None), (4, Some(b"c".to_vec()))]);
    backend.log_writes(0);
    assert!(backend.writes_to(b"lock").is_empty());
}
