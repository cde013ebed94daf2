//! The fair lock's line on paused time: what a waiter that gives up leaves behind.

use std::time::Duration;

use lock_core::scripts::LINE_MARK;
use lock_core::{
    AcquirePolicy, Backoff, ErrorKind, FairGuard, FairLock, KvBackend, LockAlgorithm, LockError,
    LockGuard, LockName, LockOptions, NamedLock, Retry,
};
use lock_memory::MemoryBackend;

fn name() -> LockName {
    LockName::new("orders").unwrap()
}

/// The lock, taken by a client of its own.
async fn hold(backend: &MemoryBackend) -> FairGuard<MemoryBackend> {
    FairLock::new(backend.clone(), &name())
        .acquire()
        .await
        .unwrap()
}

fn impatient(policy: AcquirePolicy) -> LockOptions {
    LockOptions::new().policy(policy.with_backoff(Backoff::Fixed(Duration::from_millis(1))))
}

/// On a current-thread runtime nothing runs between the waiter's `Timeout` and the
/// holder's release, so a leave left to a background task would come too late: the
/// release would hand the lock to the waiter that had gone.
#[tokio::test(start_paused = true)]
async fn a_waiter_told_timeout_is_out_of_the_line_before_the_next_release() {
    for policy in [
        AcquirePolicy::try_once(),
        AcquirePolicy::retry(Retry::Attempts(2)),
        AcquirePolicy::retry(Retry::For(Duration::from_millis(5))),
    ] {
        let backend = MemoryBackend::new();
        let holder = FairLock::new(backend.clone(), &name())
            .acquire()
            .await
            .unwrap();
        let waiter = FairLock::with_options(backend.clone(), &name(), impatient(policy)).unwrap();
        assert!(
            matches!(waiter.acquire().await, Err(LockError::Timeout { .. })),
            "{policy:?}"
        );
        assert!(holder.release().await.unwrap());
        let third = FairLock::new(backend.clone(), &name()).try_acquire().await;
        assert!(
            third.unwrap().acquired().is_some(),
            "{policy:?}: a third client was refused after the release\n{}",
            backend.dump()
        );
    }
}

/// A waiter whose look at the line fails (a transient error) leaves before it queues
/// again, so it never holds two tickets; it still gets the lock in its turn.
#[tokio::test(start_paused = true)]
async fn a_waiter_retrying_a_failed_look_holds_one_ticket() {
    let backend = MemoryBackend::new();
    let holder = hold(&backend).await;
    let waiter = FairLock::new(backend.clone(), &name());
    // The first look queues the waiter, then its reply is lost.
    backend.faults().lose_replies(Some("EVALSHA"), 1);
    let waiting = tokio::spawn(async move { waiter.acquire().await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let tickets: Vec<_> = backend
        .dump()
        .keys
        .into_iter()
        .filter(|k| k.key.starts_with(b"{orders}:ticket:"))
        .collect();
    assert_eq!(tickets.len(), 1, "{}", backend.dump());
    assert!(holder.release().await.unwrap());
    let guard = waiting.await.unwrap().unwrap();
    assert!(guard.release().await.unwrap());
    assert!(backend.dump().keys.is_empty(), "{}", backend.dump());
}

/// Uncontended, the fair lock's acquire is a plain `SET NX PX` (no script): a planted
/// script failure is still pending after the acquire. Once
/// the lock object has waited in line, its acquires go to the line's script at once, and
/// two releases in a row that find nobody waiting bring back the fast path.
#[tokio::test(start_paused = true)]
async fn only_a_lock_that_met_a_line_acquires_by_script() {
    let backend = MemoryBackend::new();
    let faults = backend.faults();
    let lock = FairLock::with_options(
        backend.clone(),
        &name(),
        LockOptions::new().policy(AcquirePolicy::try_once()),
    )
    .unwrap();
    faults.fail_command("EVALSHA", 1, lock_core::ErrorKind::Timeout);
    let guard = lock.acquire().await.unwrap();
    assert_eq!(faults.injected(), 0, "the uncontended acquire ran a script");
    faults.clear();
    assert!(guard.release().await.unwrap());

    let holder = hold(&backend).await;
    let waiting = {
        let lock = FairLock::new(backend.clone(), &name());
        let lock2 = lock.clone();
        (lock2, tokio::spawn(async move { lock.acquire().await }))
    };
    tokio::task::yield_now().await;
    assert!(holder.release().await.unwrap());
    let (lock, waiting) = waiting;
    let served = waiting.await.unwrap().unwrap();
    assert!(served.release().await.unwrap());
    // One release that found nobody waiting is not yet calm: this acquire is a script.
    faults.fail_command("EVALSHA", 1, lock_core::ErrorKind::Timeout);
    let guard = lock.acquire().await.unwrap();
    assert_eq!(
        faults.injected(),
        1,
        "one calm release brought back the fast path"
    );
    // The second one in a row is: this lock object is back on the fast path.
    assert!(guard.release().await.unwrap());
    faults.fail_command("EVALSHA", 1, lock_core::ErrorKind::Timeout);
    let guard = lock.acquire().await.unwrap();
    assert_eq!(
        faults.injected(),
        1,
        "after the line emptied, acquire ran a script"
    );
    faults.clear();
    assert!(guard.release().await.unwrap());
}

/// A refused fast-path `SET NX` does not use up an attempt: with three attempts allowed,
/// a waiter queues, looks again once subscribed (the second), waits by its backoff and
/// looks a third time before it gives up, as it did before the fast path existed.
#[tokio::test(start_paused = true)]
async fn a_refused_fast_path_is_not_an_attempt_of_its_own() {
    let backend = MemoryBackend::new();
    let holder = hold(&backend).await;
    let policy = AcquirePolicy::retry(Retry::Attempts(3));
    let waiter = FairLock::with_options(backend.clone(), &name(), impatient(policy)).unwrap();
    match waiter.acquire().await {
        Err(LockError::Timeout {
            attempts, waited, ..
        }) => {
            assert_eq!(attempts, 3);
            assert!(
                waited >= Duration::from_millis(1),
                "gave up without waiting"
            );
        }
        other => panic!("a held lock's three-attempt acquire answered {other:?}"),
    }
    assert!(holder.release().await.unwrap());
}

/// A holder on the fast path releases with a compare-and-delete; a waiter that queued
/// meanwhile marked the hold, so the release is sent again in full, which hands the lock
/// over at once rather than leaving the waiter to the holder's TTL.
#[tokio::test(start_paused = true)]
async fn a_calm_holder_hands_off_to_a_waiter_that_queued_meanwhile() {
    let backend = MemoryBackend::new();
    let holder = hold(&backend).await;
    let waiter = FairLock::new(backend.clone(), &name());
    let waiting = tokio::spawn(async move { waiter.acquire().await });
    tokio::task::yield_now().await;
    let released_at = tokio::time::Instant::now();
    assert!(holder.release().await.unwrap());
    let rival = FairLock::with_options(
        backend.clone(),
        &name(),
        impatient(AcquirePolicy::try_once()),
    )
    .unwrap();
    assert!(
        rival.try_acquire().await.unwrap().acquired().is_none(),
        "the lock was freed instead of handed over\n{}",
        backend.dump()
    );
    let served = waiting.await.unwrap().unwrap();
    assert_eq!(
        tokio::time::Instant::now(),
        released_at,
        "the waiter was served only when the holder's TTL ran out"
    );
    assert!(served.release().await.unwrap());
}

/// A hold taken by `SET NX` is the bare token until a waiter queues behind it; a hand-off
/// writes the marked token at once.
#[tokio::test(start_paused = true)]
async fn a_waiter_marks_the_hold_it_queues_behind() {
    let backend = MemoryBackend::new();
    let key = name().lock_key();
    let holder = hold(&backend).await;
    let value = || async { backend.get(&key).await.unwrap().unwrap() };
    assert_eq!(value().await, holder.token().as_bytes());
    assert!(holder.is_holder(&value().await));
    let waiter = FairLock::new(backend.clone(), &name());
    let waiting = tokio::spawn(async move { waiter.acquire().await });
    tokio::task::yield_now().await;
    assert_eq!(
        value().await,
        [holder.token().as_bytes(), LINE_MARK].concat()
    );
    // The marked value still names the holder; another token does not.
    assert!(holder.is_holder(&value().await));
    assert!(!holder.is_holder(b"someone-else+line"));
    assert!(!holder.is_holder(&holder.token().as_bytes()[1..]));
    assert!(holder.release().await.unwrap());
    let served = waiting.await.unwrap().unwrap();
    assert_eq!(
        value().await,
        [served.token().as_bytes(), LINE_MARK].concat()
    );
    assert!(served.release().await.unwrap());
    assert_eq!(backend.get(&key).await.unwrap(), None);
}

/// With nobody in line, the release is the token lock's two-command compare-and-delete:
/// a script cut short after its second command still releases.
#[tokio::test(start_paused = true)]
async fn a_calm_release_runs_no_more_than_a_compare_and_delete() {
    let backend = MemoryBackend::new();
    let holder = hold(&backend).await;
    backend
        .faults()
        .interrupt_next_script(2, ErrorKind::Response);
    assert!(holder.release().await.unwrap());
    assert_eq!(backend.get(&name().lock_key()).await.unwrap(), None);
}
