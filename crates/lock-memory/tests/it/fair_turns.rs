//! Tasks sharing one FairLock take turns in process, on paused time: arrival order with
//! nobody in the backend's line, the uncontended cycle for each of them, and separate
//! lock objects still served by the backend's line.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lock_core::{
    AcquirePolicy, Attempt, Backoff, FairLock, KvBackend, LockAlgorithm, LockError, LockGuard,
    LockName, LockOptions, NamedLock, Retry,
};
use lock_memory::MemoryBackend;

fn name() -> LockName {
    LockName::new("invoices").unwrap()
}

fn lock(backend: &MemoryBackend, policy: AcquirePolicy) -> FairLock<MemoryBackend> {
    FairLock::with_options(backend.clone(), &name(), LockOptions::new().policy(policy)).unwrap()
}

fn patient() -> AcquirePolicy {
    AcquirePolicy::retry(Retry::Forever).with_backoff(Backoff::Fixed(Duration::from_millis(50)))
}

#[tokio::test(start_paused = true)]
async fn clones_are_served_in_arrival_order_without_queueing_in_the_backend() {
    let backend = MemoryBackend::new();
    let shared = lock(&backend, patient());
    let holder = shared.acquire().await.unwrap();
    let before = backend.stats().commands;
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for i in 0..4 {
        let (lock, order, backend) = (shared.clone(), order.clone(), backend.clone());
        waiters.push(tokio::spawn(async move {
            let guard = lock.acquire().await.unwrap();
            order.lock().unwrap().push(i);
            // The backend names this task's own token as the holder.
            let held = backend.get(&name().lock_key()).await.unwrap();
            assert_eq!(held.as_deref(), Some(guard.token().as_bytes()));
            assert!(guard.release().await.unwrap());
        }));
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        backend.stats().commands,
        before,
        "a task behind its own process's hold talked to the backend"
    );
    assert_eq!(backend.get(&name().key("issued")).await.unwrap(), None);
    assert!(holder.release().await.unwrap());
    for waiter in waiters {
        waiter.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3]);
    // Each hold with a task behind it ended in one pass (FAIR_RELEASE naming the next
    // task's token), and the last in a compare-and-delete; besides, this test's GETs.
    assert_eq!(backend.stats().commands, before + 1 + 4 + 4 + 1);
    assert_eq!(backend.get(&name().lock_key()).await.unwrap(), None);
}

/// A task that gives up while the hold is being passed to it strands nothing: the hold
/// passed in its name is released, and the lock is free at once, not after its TTL.
#[tokio::test(start_paused = true)]
async fn a_successor_that_gave_up_during_the_pass_leaves_the_lock_free() {
    let backend = MemoryBackend::new();
    let shared = lock(&backend, patient());
    let holder = shared.acquire().await.unwrap();
    let waiter = tokio::spawn({
        let lock = shared.clone();
        async move { lock.acquire().await.map(|guard| guard.abandon()) }
    });
    tokio::time::sleep(Duration::from_millis(1)).await;
    backend.faults().set_latency(Duration::from_millis(20));
    let release = tokio::spawn(holder.release());
    tokio::time::sleep(Duration::from_millis(5)).await;
    waiter.abort();
    assert!(release.await.unwrap().unwrap());
    tokio::time::sleep(Duration::from_millis(100)).await;
    backend.faults().clear();
    assert_eq!(
        backend.get(&name().lock_key()).await.unwrap(),
        None,
        "the hold passed to the task that gave up is still held"
    );
    assert!(shared.try_acquire().await.unwrap().acquired().is_some());
}

/// A pass whose reply was lost may or may not have run: the hold it may have made is
/// released, the waiting task keeps its place, and it gets the lock once the holder's
/// guard is dropped.
#[tokio::test(start_paused = true)]
async fn a_pass_whose_reply_was_lost_strands_nothing() {
    let backend = MemoryBackend::new();
    let shared = lock(&backend, patient());
    let holder = shared.acquire().await.unwrap();
    let waiter = tokio::spawn({
        let lock = shared.clone();
        async move { lock.acquire().await.unwrap() }
    });
    tokio::time::sleep(Duration::from_millis(1)).await;
    backend.faults().lose_replies(Some("EVALSHA"), 1);
    let unsettled = holder.release().await.unwrap_err();
    drop(unsettled);
    let guard = tokio::time::timeout(Duration::from_secs(1), waiter)
        .await
        .expect("the waiting task was stranded")
        .unwrap();
    let held = backend.get(&name().lock_key()).await.unwrap();
    assert_eq!(held.as_deref(), Some(guard.token().as_bytes()));
    assert!(guard.release().await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn a_try_behind_a_busy_turn_is_held_without_commands_and_a_wait_obeys_the_policy() {
    let backend = MemoryBackend::new();
    let policy = AcquirePolicy::retry(Retry::Attempts(2))
        .with_backoff(Backoff::Fixed(Duration::from_millis(30)));
    let shared = lock(&backend, policy);
    let holder = shared.acquire().await.unwrap();
    let before = backend.stats().commands;
    assert!(matches!(
        shared.clone().try_acquire().await.unwrap(),
        Attempt::Held { holder_ttl: None }
    ));
    match shared.clone().acquire().await {
        Err(LockError::Timeout {
            attempts, waited, ..
        }) => {
            assert_eq!(attempts, 2);
            assert_eq!(waited, Duration::from_millis(30));
        }
        other => panic!("a two-attempt acquire behind a busy turn answered {other:?}"),
    }
    assert_eq!(backend.stats().commands, before);
    assert!(holder.release().await.unwrap());
    assert!(shared.try_acquire().await.unwrap().acquired().is_some());
}

/// A separate FairLock is another process's client: it waits in the backend's line, and
/// the shared lock's next task enters that line only when its turn in process comes.
#[tokio::test(start_paused = true)]
async fn separate_locks_meet_in_the_backends_line() {
    let backend = MemoryBackend::new();
    let shared = lock(&backend, patient());
    let holder = shared.acquire().await.unwrap();
    let other_process = lock(&backend, patient());
    let order = Arc::new(Mutex::new(Vec::new()));
    let spawn = |lock: FairLock<MemoryBackend>, who: &'static str| {
        let order = order.clone();
        tokio::spawn(async move {
            let guard = lock.acquire().await.unwrap();
            order.lock().unwrap().push(who);
            assert!(guard.release().await.unwrap());
        })
    };
    let remote = spawn(other_process, "other process");
    tokio::time::sleep(Duration::from_millis(1)).await;
    let local = spawn(shared.clone(), "clone");
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(
        backend.get(&name().key("issued")).await.unwrap().as_deref(),
        Some(b"1".as_slice()),
        "only the other process's client waits in the backend's line"
    );
    drop(holder);
    remote.await.unwrap();
    local.await.unwrap();
    assert_eq!(*order.lock().unwrap(), vec!["other process", "clone"]);
}

/// A task whose hold ran past its validity holds up the tasks behind it only until then.
#[tokio::test(start_paused = true)]
async fn a_hold_past_its_validity_no_longer_holds_up_the_line() {
    let backend = MemoryBackend::new();
    let shared = lock(&backend, patient());
    let stuck = shared.acquire().await.unwrap();
    let valid_until = stuck.valid_until_ms();
    let next = tokio::time::timeout(Duration::from_secs(60), shared.clone().acquire())
        .await
        .expect("the task behind the lapsed hold was held up")
        .unwrap();
    let now = backend.clock().now_ms();
    assert!(
        now > valid_until && now <= valid_until + 100,
        "served at {now}, the stuck hold was valid until {valid_until}"
    );
    assert!(
        !stuck.release().await.unwrap(),
        "the stuck hold was still held"
    );
    assert!(next.release().await.unwrap());
}
