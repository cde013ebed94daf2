//! Fault injection surfaces typed errors through the KvBackend and through the lock API.

use std::time::Duration;

use lock_core::{
    AcquirePolicy, ErrorKind, KvBackend, LockAlgorithm, LockError, LockGuard, LockOptions,
    SetOptions, TokenLock,
};
use lock_memory::{MemoryBackend, injected_error};

fn try_once() -> LockOptions {
    LockOptions::new().policy(AcquirePolicy::try_once())
}

#[tokio::test]
async fn a_connection_fault_fails_acquire_with_a_backend_error_of_that_kind() {
    let backend = MemoryBackend::new();
    backend.faults().fail_next(1, ErrorKind::Connection);
    let lock = TokenLock::with_options(backend.clone(), "k", try_once());
    match lock.try_acquire().await {
        Err(LockError::Backend(e)) => {
            assert_eq!(e.kind(), ErrorKind::Connection);
            assert_eq!(e.message(), "injected fault: connection reset by peer");
        }
        other => panic!("expected a connection error, got {other:?}"),
    }
    // The failed SET had no effect, and the fault is spent.
    assert_eq!(backend.get(b"k").await.unwrap(), None);
    assert!(lock.try_acquire().await.unwrap().acquired().is_some());
    assert_eq!(backend.faults().injected(), 1);
}

#[tokio::test]
async fn a_release_that_times_out_is_an_error_and_the_lock_stays_until_its_ttl() {
    let backend = MemoryBackend::new();
    let lock =
        TokenLock::with_options(backend.clone(), "k", try_once().ttl(Duration::from_secs(5)));
    let guard = lock.try_acquire().await.unwrap().acquired().unwrap();
    backend
        .faults()
        .fail_command("evalsha", 1, ErrorKind::Timeout);
    match guard.release().await {
        Err(e) => assert_eq!(e.backend().map(|e| e.kind()), Some(ErrorKind::Timeout)),
        Ok(held) => panic!("release succeeded ({held}) through an injected timeout"),
    }
    let dump = backend.dump();
    let entry = dump.get(b"k").expect("the lock is still there");
    assert!(entry.pttl > 0 && entry.pttl <= 5_000, "{dump}");
    backend.advance(Duration::from_secs(6));
    assert!(lock.try_acquire().await.unwrap().acquired().is_some());
}

#[tokio::test]
async fn faults_match_only_their_command_and_keep_their_count() {
    let backend = MemoryBackend::new();
    backend
        .faults()
        .fail_command("PTTL", 2, ErrorKind::Response);
    backend.set(b"k", b"v", SetOptions::new()).await.unwrap();
    assert_eq!(
        backend.pttl(b"k").await.unwrap_err().kind(),
        ErrorKind::Response
    );
    assert_eq!(backend.get(b"k").await.unwrap(), Some(b"v".to_vec()));
    assert_eq!(
        backend.pttl(b"k").await.unwrap_err(),
        injected_error(ErrorKind::Response)
    );
    assert_eq!(backend.pttl(b"k").await.unwrap(), -1);
}

#[tokio::test]
async fn a_contended_acquire_surfaces_a_fault_in_its_pttl_probe() {
    let backend = MemoryBackend::new();
    let lock = TokenLock::with_options(backend.clone(), "k", try_once());
    let _held = lock.try_acquire().await.unwrap().acquired().unwrap();
    backend
        .faults()
        .fail_command("PTTL", 1, ErrorKind::Connection);
    let err = lock.try_acquire().await.unwrap_err();
    assert_eq!(err.backend().map(|e| e.kind()), Some(ErrorKind::Connection));
}

#[tokio::test(start_paused = true)]
async fn latency_is_added_on_the_virtual_clock() {
    let backend = MemoryBackend::new();
    backend.faults().set_latency(Duration::from_millis(250));
    let start = tokio::time::Instant::now();
    backend.get(b"k").await.unwrap();
    backend.get(b"k").await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(500));
    backend.faults().clear();
    let start = tokio::time::Instant::now();
    backend.get(b"k").await.unwrap();
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test]
async fn scripts_without_a_native_body_are_unsupported_not_a_panic() {
    let backend = MemoryBackend::new();
    let lua_only = lock_core::Script::new("lua-only", "return 1");
    let err = backend.eval(&lua_only, &[], &[]).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    let too_few_keys = backend
        .eval(&lock_core::scripts::COMPARE_AND_DELETE, &[], &[])
        .await
        .unwrap_err();
    assert_eq!(too_few_keys.kind(), ErrorKind::Script);
}

#[tokio::test]
async fn faults_are_idle_only_with_no_rule_and_no_latency() {
    let backend = MemoryBackend::new();
    assert!(backend.faults().idle());
    backend.faults().fail_next(1, ErrorKind::Timeout);
    assert!(!backend.faults().idle());
    assert!(backend.get(b"k").await.is_err());
    assert!(backend.faults().idle(), "the rule disarmed once used");
    backend.faults().set_latency(Duration::from_millis(1));
    assert!(!backend.faults().idle());
    backend.faults().clear();
    assert!(backend.faults().idle());
}

#[tokio::test]
async fn an_atomic_step_is_one_evalsha_to_faults_and_counters() {
    let backend = MemoryBackend::new();
    let before = backend.stats().commands;
    let step = backend
        .atomically(|store| {
            store.set(b"a", b"1", SetOptions::new()).unwrap();
            store.get(b"a").unwrap()
        })
        .await;
    assert_eq!(step.unwrap(), Some(b"1".to_vec()));
    assert_eq!(backend.stats().commands, before + 1);
    backend
        .faults()
        .fail_command("EVALSHA", 1, ErrorKind::Timeout);
    let failed = backend
        .atomically(|store| store.del(&[b"a"]).unwrap())
        .await;
    assert_eq!(failed.unwrap_err(), injected_error(ErrorKind::Timeout));
    assert_eq!(
        backend.get(b"a").await.unwrap(),
        Some(b"1".to_vec()),
        "nothing ran"
    );
}

#[tokio::test(start_paused = true)]
async fn commands_count_on_arrival_whether_faults_are_armed_or_not() {
    let backend = MemoryBackend::new();
    backend.get(b"k").await.unwrap();
    backend.set(b"k", b"v", SetOptions::new()).await.unwrap();
    assert_eq!(backend.stats().commands, 2);

    backend.faults().fail_next(1, ErrorKind::Timeout);
    assert!(backend.get(b"k").await.is_err());
    assert_eq!(backend.stats().commands, 3, "a failed command was received");

    backend.faults().set_latency(Duration::from_secs(1));
    let slow = tokio::spawn({
        let backend = backend.clone();
        async move { backend.get(b"k").await }
    });
    tokio::task::yield_now().await;
    assert!(!slow.is_finished());
    assert_eq!(
        backend.stats().commands,
        4,
        "counted while it waits out its latency"
    );
    assert_eq!(slow.await.unwrap().unwrap(), Some(b"v".to_vec()));
    assert_eq!(backend.stats().commands, 4, "and counted once");
}

#[tokio::test]
async fn unwatch_ends_watches_even_while_faults_are_armed() {
    let backend = MemoryBackend::new();
    backend
        .atomically(|store| {
            store.watch(b"a").unwrap();
            store.watch(b"b").unwrap();
        })
        .await
        .unwrap();
    assert_eq!(backend.stats().watched_keys, 2);
    backend.faults().fail_next(10, ErrorKind::Connection);
    backend.unwatch(&[b"a", b"b"]);
    assert_eq!(backend.stats().watched_keys, 0);
    assert_eq!(backend.faults().injected(), 0, "cleanup is not a command");
}
