//! Fault injection surfaces typed errors through the KvBackend and through the lock API.

use std::time::Duration;

use lock_core::{
    AcquirePolicy, Backoff, ErrorKind, FencedLock, KvBackend, LockAlgorithm, LockError, LockGuard,
    LockName, LockOptions, NamedLock, Retry, SetOptions, TokenLock,
};
use lock_memory::{MemoryBackend, injected_error};

fn try_once() -> LockOptions {
    LockOptions::new().policy(AcquirePolicy::try_once())
}

fn name() -> LockName {
    LockName::new("k").unwrap()
}

/// Key of the lock named [`name`].
const KEY: &[u8] = b"{k}:lock";

/// Retries for a virtual minute, every 10 ms.
fn patient() -> LockOptions {
    LockOptions::new().policy(
        AcquirePolicy::retry(Retry::For(Duration::from_secs(60)))
            .with_backoff(Backoff::Fixed(Duration::from_millis(10))),
    )
}

#[tokio::test]
async fn a_connection_fault_fails_acquire_with_a_backend_error_of_that_kind() {
    let backend = MemoryBackend::new();
    backend.faults().fail_next(1, ErrorKind::Connection);
    let lock = TokenLock::with_options(backend.clone(), &name(), try_once()).unwrap();
    match lock.try_acquire().await {
        Err(LockError::Backend(e)) => {
            assert_eq!(e.kind(), ErrorKind::Connection);
            assert_eq!(
                e.message(),
                "ERR injected fault (Connection): connection reset by peer"
            );
        }
        other => panic!("expected a connection error, got {other:?}"),
    }
    // The failed SET had no effect, and the fault is spent.
    assert_eq!(backend.get(KEY).await.unwrap(), None);
    assert!(lock.try_acquire().await.unwrap().acquired().is_some());
    assert_eq!(backend.faults().injected(), 1);
}

#[tokio::test]
async fn a_release_that_times_out_gives_the_guard_back_and_can_be_retried() {
    let backend = MemoryBackend::new();
    let lock = TokenLock::with_options(
        backend.clone(),
        &name(),
        try_once().ttl(Duration::from_secs(5)),
    )
    .unwrap();
    let guard = lock.try_acquire().await.unwrap().acquired().unwrap();
    backend
        .faults()
        .fail_command("evalsha", 1, ErrorKind::Timeout);
    let failed = match guard.release().await {
        Err(failed) => failed,
        Ok(held) => panic!("release succeeded ({held}) through an injected timeout"),
    };
    assert_eq!(
        failed.error().backend().map(|e| e.kind()),
        Some(ErrorKind::Timeout)
    );
    assert!(failed.to_string().starts_with("release outcome unknown: "));
    assert!(backend.dump().get(KEY).is_some(), "the lock is still there");
    let guard = failed.into_guard();
    assert!(guard.release().await.unwrap(), "the retried release");
    assert!(backend.dump().get(KEY).is_none());
}

#[tokio::test]
async fn a_failed_release_turned_into_an_error_releases_in_the_background() {
    let backend = MemoryBackend::new();
    let lock = TokenLock::with_options(backend.clone(), &name(), try_once()).unwrap();
    let guard = lock.try_acquire().await.unwrap().acquired().unwrap();
    backend
        .faults()
        .fail_command("EVALSHA", 1, ErrorKind::Connection);
    let error: LockError = guard.release().await.unwrap_err().into();
    assert_eq!(
        error.backend().map(|e| e.kind()),
        Some(ErrorKind::Connection)
    );
    // The guard went with the error; its drop released once more, in the background.
    for _ in 0..100 {
        if backend.dump().get(KEY).is_none() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!(
        "the lock was not released in the background:\n{}",
        backend.dump()
    );
}

#[tokio::test(start_paused = true)]
async fn a_retrying_acquire_retries_transient_errors_and_reports_them() {
    let backend = MemoryBackend::new();
    let lock = TokenLock::with_options(backend.clone(), &name(), patient()).unwrap();
    backend.faults().fail_next(3, ErrorKind::Connection);
    let guard = lock.acquire().await.expect("acquired after three failures");
    assert_eq!(backend.faults().injected(), 3);
    assert!(guard.release().await.unwrap());

    let short = LockOptions::new().policy(
        AcquirePolicy::retry(Retry::Attempts(4))
            .with_backoff(Backoff::Fixed(Duration::from_millis(1))),
    );
    let lock = TokenLock::with_options(backend.clone(), &name(), short).unwrap();
    backend.faults().fail_next(10, ErrorKind::Timeout);
    match lock.acquire().await {
        Err(LockError::Timeout {
            attempts: 4,
            errors: 4,
            last_error: Some(last),
            ..
        }) => assert_eq!(last.kind(), ErrorKind::Timeout),
        other => panic!("expected a timeout after 4 failed attempts, got {other:?}"),
    }
    backend.faults().clear();
}

#[tokio::test]
async fn a_single_attempt_acquire_returns_a_transient_error_as_it_is() {
    let backend = MemoryBackend::new();
    let lock = TokenLock::with_options(backend.clone(), &name(), try_once()).unwrap();
    backend.faults().fail_next(1, ErrorKind::Timeout);
    match lock.acquire().await {
        Err(LockError::Backend(e)) => assert_eq!(e.kind(), ErrorKind::Timeout),
        other => panic!("expected the backend error, got {other:?}"),
    }
}

#[tokio::test]
async fn non_transient_errors_are_not_retried() {
    let backend = MemoryBackend::new();
    let lock = TokenLock::with_options(backend.clone(), &name(), patient()).unwrap();
    backend.faults().fail_next(1, ErrorKind::WrongType);
    match lock.acquire().await {
        Err(LockError::Backend(e)) => assert_eq!(e.kind(), ErrorKind::WrongType),
        other => panic!("expected the backend error, got {other:?}"),
    }
    assert_eq!(backend.faults().injected(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_acquire_whose_reply_was_lost_finds_its_own_lock_on_retry() {
    let backend = MemoryBackend::new();
    let lock = TokenLock::with_options(backend.clone(), &name(), patient()).unwrap();
    // The SET NX runs and takes the lock; its reply is lost.
    backend.faults().lose_replies(Some("SET"), 1);
    let start = tokio::time::Instant::now();
    let guard = lock
        .acquire()
        .await
        .expect("the retry recognises its token");
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "waited {:?}: the retry waited for its own lock's TTL",
        start.elapsed()
    );
    assert_eq!(
        backend.get(KEY).await.unwrap().as_deref(),
        Some(guard.token().as_bytes())
    );
    assert!(guard.release().await.unwrap());
}

/// A retried fenced acquire holds the lock once and takes a fresh fence: the first
/// send's fence was never delivered, so it is spent (fences skip, never repeat).
#[tokio::test(start_paused = true)]
async fn a_fenced_acquire_whose_reply_was_lost_takes_a_fresh_fence() {
    let backend = MemoryBackend::new();
    let lock = FencedLock::with_options(backend.clone(), &name(), patient()).unwrap();
    backend.faults().lose_replies(Some("EVALSHA"), 1);
    let guard = lock.acquire().await.unwrap();
    assert_eq!(guard.fence(), 2);
    assert_eq!(
        backend.get(b"{k}:fence").await.unwrap().as_deref(),
        Some(&b"2"[..])
    );
    assert!(guard.release().await.unwrap());
}

/// An acquire script cut short after its SET (the INCR never ran), whose reply is then
/// lost, leaves the counter at the previous holder's fence and the lock under the
/// retrying client's token; the retry must not hand that fence out again.
#[tokio::test(start_paused = true)]
async fn a_fenced_acquire_cut_short_after_its_set_never_repeats_a_fence() {
    let backend = MemoryBackend::new();
    let lock = FencedLock::with_options(backend.clone(), &name(), patient()).unwrap();
    let first = lock.acquire().await.unwrap();
    let previous = first.fence();
    assert!(first.release().await.unwrap());
    backend
        .faults()
        .interrupt_next_script(1, ErrorKind::Connection);
    backend.faults().lose_replies(Some("EVALSHA"), 1);
    let second = lock.acquire().await.unwrap();
    assert!(
        second.fence() > previous,
        "{} after {previous}",
        second.fence()
    );
    assert!(second.release().await.unwrap());
}

#[tokio::test]
async fn a_lost_reply_leaves_the_command_done() {
    let backend = MemoryBackend::new();
    backend.faults().lose_replies(None, 1);
    let lost = backend
        .set(b"k", b"v", SetOptions::new())
        .await
        .unwrap_err();
    assert_eq!(lost.kind(), ErrorKind::Timeout);
    assert_eq!(backend.get(b"k").await.unwrap(), Some(b"v".to_vec()));
    assert_eq!(backend.faults().injected(), 1);
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
    let lock = TokenLock::with_options(backend.clone(), &name(), try_once()).unwrap();
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
            store.watch(b"a");
            store.watch(b"b");
        })
        .await
        .unwrap();
    assert_eq!(backend.stats().watched_keys, 2);
    backend.faults().fail_next(10, ErrorKind::Connection);
    backend.unwatch(&[b"a", b"b"]);
    assert_eq!(backend.stats().watched_keys, 0);
    assert_eq!(backend.faults().injected(), 0, "cleanup is not a command");
}

#[tokio::test]
async fn an_error_raised_inside_a_script_is_of_kind_script_as_on_redis() {
    let backend = MemoryBackend::new();
    backend
        .set(b"{k}:fence", b"not a number", SetOptions::new())
        .await
        .unwrap();
    let error = backend
        .eval(
            &lock_core::scripts::FENCED_ACQUIRE,
            &[KEY, b"{k}:fence"],
            &[b"token", b"1000"],
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Script);
    assert_eq!(
        error.message(),
        "ERR value is not an integer or out of range"
    );
}

/// Seed 001's two-step acquire (SETNX, then PEXPIRE), as a script.
fn setnx_then_pexpire() -> lock_core::Script {
    lock_core::Script::new(
        "setnx-then-pexpire",
        "if redis.call('SETNX', KEYS[1], ARGV[1]) == 1 then \
         redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end return 0",
    )
    .with_native(|store, keys, args| {
        if store.setnx(keys[0], args[0])? {
            store.pexpire(keys[0], 1_000, Default::default())?;
            return Ok(lock_core::Value::Int(1));
        }
        Ok(lock_core::Value::Int(0))
    })
}

#[tokio::test]
async fn a_script_interrupted_part_way_keeps_what_it_wrote_before() {
    let backend = MemoryBackend::new();
    backend
        .faults()
        .interrupt_next_script(1, ErrorKind::Response);
    let error = backend
        .eval(&setnx_then_pexpire(), &[b"k"], &[b"v", b"1000"])
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Script);
    // As in Redis, the SETNX before the failed PEXPIRE stays: a key without a TTL.
    assert_eq!(backend.get(b"k").await.unwrap(), Some(b"v".to_vec()));
    assert_eq!(backend.pttl(b"k").await.unwrap(), -1);
    assert_eq!(backend.faults().injected(), 1);
    // The next script runs whole.
    backend.del(&[b"k"]).await.unwrap();
    backend
        .eval(&setnx_then_pexpire(), &[b"k"], &[b"v", b"1000"])
        .await
        .unwrap();
    assert!(backend.pttl(b"k").await.unwrap() > 0);
}

#[tokio::test]
async fn the_scripted_acquire_cut_short_at_any_point_leaves_no_lock_without_a_ttl() {
    for after in 0..4 {
        let backend = MemoryBackend::new();
        let now = backend.clock().now_ms();
        // Over a free key and over a passed stamp (the GETSET-recovery path).
        for existing in [None, Some((now - 1).to_string())] {
            if let Some(stamp) = &existing {
                backend
                    .set(KEY, stamp.as_bytes(), SetOptions::new().px(5_000))
                    .await
                    .unwrap();
            }
            backend
                .faults()
                .interrupt_next_script(after, ErrorKind::Response);
            let stamp = (now + 10_000).to_string();
            let _ = backend
                .eval(
                    &lock_core::scripts::LEGACY_ACQUIRE,
                    &[KEY],
                    &[stamp.as_bytes(), b"11000", now.to_string().as_bytes()],
                )
                .await;
            backend.faults().clear();
            let pttl = backend.pttl(KEY).await.unwrap();
            assert_ne!(
                pttl, -1,
                "cut after {after} commands over {existing:?}: no TTL"
            );
            backend.del(&[KEY]).await.unwrap();
        }
    }
}

/// A legacy release whose reply was lost is retried in the background when its error is
/// dropped; by then the same client holds the lock again under a newer stamp, which the
/// retry must leave alone (the explorer found a bare `DEL` deleting it).
#[tokio::test(start_paused = true)]
async fn a_legacy_release_retried_late_leaves_the_next_hold_alone() {
    let backend = MemoryBackend::new();
    let lock = lock_core::LegacyLock::with_options(backend.clone(), &name(), patient()).unwrap();
    let first = lock.acquire().await.unwrap();
    backend.faults().lose_replies(Some("DEL"), 1);
    drop(first.release().await.unwrap_err());
    // No await point until the next hold is taken: the background retry runs after it.
    backend.advance(Duration::from_millis(10));
    let second = lock.acquire().await.unwrap();
    // The background retry runs now.
    tokio::time::sleep(Duration::from_millis(1)).await;
    let stamp = second.expires_at_ms().to_string();
    assert_eq!(
        backend.get(b"{k}:lock").await.unwrap(),
        Some(stamp.into_bytes()),
        "the retried release deleted the next hold"
    );
    assert!(second.release().await.unwrap());
}
