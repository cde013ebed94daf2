//! Tasks sharing one Redlock take turns in process, on paused (virtual) time: arrival
//! order, no commands while waiting, the policy's limits, and the turn passed on by every
//! way a hold ends.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lock_core::{
    AcquirePolicy, Attempt, Backoff, LockAlgorithm, LockError, LockGuard, LockName, LockOptions,
    Redlock, Retry,
};
use lock_memory::{MemoryBackend, MemoryInstances};

const TTL: Duration = Duration::from_secs(10);

fn name() -> LockName {
    LockName::new("orders:8").unwrap()
}

fn redlock(set: &MemoryInstances, policy: AcquirePolicy) -> Redlock<MemoryBackend> {
    let options = LockOptions::new()
        .ttl(TTL)
        .clock(set.clock())
        .policy(policy);
    Redlock::with_options(set.nodes(), &name(), options).unwrap()
}

fn patient() -> AcquirePolicy {
    AcquirePolicy::retry(Retry::Forever).with_backoff(Backoff::Fixed(Duration::from_millis(50)))
}

/// Commands all nodes have received.
fn commands(set: &MemoryInstances) -> u64 {
    set.nodes().iter().map(|node| node.stats().commands).sum()
}

/// The token on the nodes that hold the lock key, if a majority agree.
async fn token_on_the_nodes(set: &MemoryInstances) -> Option<Vec<u8>> {
    let key = name().lock_key();
    let mut values = Vec::new();
    for node in set.nodes() {
        values.push(lock_core::KvBackend::get(&node, &key).await.unwrap());
    }
    let first = values.iter().flatten().next()?.clone();
    (values.iter().flatten().filter(|v| **v == first).count() >= 3).then_some(first)
}

/// Polling with a growing backoff would serve the last arrival first (it probes most
/// often when the lock frees); taking turns serves the first.
#[tokio::test(start_paused = true)]
async fn tasks_sharing_a_redlock_are_served_in_arrival_order() {
    let set = MemoryInstances::new(5);
    let growing = Backoff::Exponential {
        initial: Duration::from_millis(1),
        max: Duration::from_secs(1),
        jitter: false,
    };
    let lock = redlock(
        &set,
        AcquirePolicy::retry(Retry::Forever).with_backoff(growing),
    );
    let holder = lock.acquire().await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for i in 0..4 {
        let (lock, order) = (lock.clone(), order.clone());
        waiters.push(tokio::spawn(async move {
            let guard = lock.acquire().await.unwrap();
            order.lock().unwrap().push(i);
            assert!(guard.release().await.unwrap());
        }));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(holder.release().await.unwrap());
    for waiter in waiters {
        waiter.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3]);
}

#[tokio::test(start_paused = true)]
async fn a_task_waiting_its_turn_sends_no_commands_and_starts_when_the_release_is_done() {
    let set = MemoryInstances::new(5);
    let lock = redlock(&set, patient());
    let holder = lock.acquire().await.unwrap();
    let before = commands(&set);
    let waiting = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire().await }
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        commands(&set),
        before,
        "a task behind its own process's hold polled the nodes"
    );
    let released_at = tokio::time::Instant::now();
    assert!(holder.release().await.unwrap());
    let served = waiting.await.unwrap().unwrap();
    assert_eq!(
        tokio::time::Instant::now(),
        released_at,
        "the next task waited for a backoff delay instead of the release"
    );
    assert_eq!(
        token_on_the_nodes(&set).await.as_deref(),
        Some(served.token().as_bytes())
    );
}

#[tokio::test(start_paused = true)]
async fn a_try_behind_a_busy_turn_is_held_without_commands() {
    let set = MemoryInstances::new(5);
    let lock = redlock(&set, AcquirePolicy::try_once());
    let holder = lock.try_acquire().await.unwrap().acquired().unwrap();
    let before = commands(&set);
    assert!(matches!(
        lock.clone().try_acquire().await.unwrap(),
        Attempt::Held { holder_ttl: None }
    ));
    assert_eq!(commands(&set), before);
    // A separate Redlock is another client: it asks the nodes, which refuse.
    let rival = redlock(&set, AcquirePolicy::try_once());
    assert!(rival.try_acquire().await.unwrap().acquired().is_none());
    assert!(commands(&set) > before, "the separate Redlock sent nothing");
    assert!(holder.release().await.unwrap());
    assert!(lock.try_acquire().await.unwrap().acquired().is_some());
}

#[tokio::test(start_paused = true)]
async fn a_wait_for_the_turn_gives_up_by_the_policy_and_leaves_the_line() {
    let set = MemoryInstances::new(5);
    let policy = AcquirePolicy::retry(Retry::Attempts(3))
        .with_backoff(Backoff::Fixed(Duration::from_millis(20)));
    let lock = redlock(&set, policy);
    let holder = lock.acquire().await.unwrap();
    let before = commands(&set);
    match lock.clone().acquire().await {
        Err(LockError::Timeout {
            attempts, waited, ..
        }) => {
            assert_eq!(attempts, 3);
            assert_eq!(waited, Duration::from_millis(40));
        }
        other => panic!("a three-attempt acquire behind a busy turn answered {other:?}"),
    }
    assert_eq!(commands(&set), before);
    // A waiter cancelled in line gives its place up too.
    let cancelled = tokio::time::timeout(Duration::from_millis(5), lock.clone().acquire()).await;
    assert!(cancelled.is_err());
    assert!(holder.release().await.unwrap());
    assert!(lock.try_acquire().await.unwrap().acquired().is_some());
}

#[tokio::test(start_paused = true)]
async fn a_dropped_guard_passes_the_turn_on_once_its_release_is_done() {
    let set = MemoryInstances::new(5);
    let lock = redlock(&set, patient());
    let holder = lock.acquire().await.unwrap();
    let waiting = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire().await }
    });
    tokio::task::yield_now().await;
    drop(holder);
    let served = waiting.await.unwrap().unwrap();
    // Served at once, by the nodes too: the background release came first.
    assert_eq!(
        token_on_the_nodes(&set).await.as_deref(),
        Some(served.token().as_bytes())
    );
    assert!(served.release().await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn an_abandoned_hold_passes_the_turn_and_the_next_task_waits_out_its_ttl() {
    let set = MemoryInstances::new(5);
    let lock = redlock(&set, patient());
    let abandoned_at = tokio::time::Instant::now();
    lock.acquire().await.unwrap().abandon();
    let served = lock.clone().acquire().await.unwrap();
    assert!(
        tokio::time::Instant::now() >= abandoned_at + TTL,
        "the nodes granted the lock before the crashed hold's TTL ran out"
    );
    assert!(served.release().await.unwrap());
}

/// A task whose hold ran past its validity (stuck, or leaked) holds up the tasks behind
/// it only until then: they go to the nodes without a turn, as separate clients would.
#[tokio::test(start_paused = true)]
async fn a_hold_past_its_validity_no_longer_holds_up_the_line() {
    let set = MemoryInstances::new(5);
    let lock = redlock(&set, patient());
    let stuck = lock.acquire().await.unwrap();
    let valid_until = stuck.valid_until_ms();
    let next = tokio::time::timeout(Duration::from_secs(60), lock.clone().acquire())
        .await
        .expect("the task behind the lapsed hold was held up")
        .unwrap();
    let now = set.clock().now_ms();
    // The nodes keep the key for the drift allowance (102 ms) past the validity; then
    // the next try, at most one 50 ms backoff later, succeeds.
    assert!(
        now > valid_until && now <= valid_until + lock.drift_ms() + 50,
        "served at {now}, the stuck hold was valid until {valid_until}"
    );
    assert!(
        !stuck.release().await.unwrap(),
        "the stuck hold was still held"
    );
    assert!(next.release().await.unwrap());
}
