//! Redlock on five independent doubles, on paused (virtual) time: quorum, validity,
//! per-node timeouts, cleanup, extend and cancellation, each step deterministic.

use std::time::Duration;

use lock_core::{
    AcquirePolicy, Attempt, ErrorKind, KvBackend, LockAlgorithm, LockError, LockGuard, LockName,
    LockOptions, Redlock, RedlockOptions, Retry,
};
use lock_memory::{MemoryInstances, Persistence};
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(10);
/// 1% of 10 s, plus 2 ms.
const DRIFT_MS: i64 = 102;

fn name() -> LockName {
    LockName::new("orders:7").unwrap()
}

fn redlock(set: &MemoryInstances, redlock: RedlockOptions) -> Redlock<lock_memory::MemoryBackend> {
    let options = LockOptions::new()
        .ttl(TTL)
        .clock(set.clock())
        .policy(AcquirePolicy::try_once());
    Redlock::with_redlock_options(set.nodes(), &name(), options, redlock).unwrap()
}

/// Which nodes hold the lock key, by index.
async fn holders(set: &MemoryInstances) -> Vec<usize> {
    let mut held = Vec::new();
    for (i, node) in set.nodes().iter().enumerate() {
        if node.exists(&[&name().lock_key()]).await.unwrap() == 1 {
            held.push(i);
        }
    }
    held
}

async fn acquired(
    lock: &Redlock<lock_memory::MemoryBackend>,
) -> lock_core::RedlockGuard<lock_memory::MemoryBackend> {
    match lock.try_acquire().await {
        Ok(Attempt::Acquired(guard)) => guard,
        other => panic!("expected the lock, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn acquires_on_every_node_with_validity_less_drift() {
    let set = MemoryInstances::new(5);
    let lock = redlock(&set, RedlockOptions::new().fail_fast(false));
    assert_eq!(lock.quorum(), 3);
    assert_eq!(lock.drift_ms(), DRIFT_MS);
    let start = set.clock().now_ms();
    let guard = acquired(&lock).await;
    assert_eq!(guard.held_nodes(), &[0, 1, 2, 3, 4]);
    assert_eq!(
        guard.valid_until_ms(),
        start + TTL.as_millis() as i64 - DRIFT_MS
    );
    assert_eq!(holders(&set).await, vec![0, 1, 2, 3, 4]);
    assert!(guard.release().await.unwrap());
    assert!(holders(&set).await.is_empty());
}

#[tokio::test(start_paused = true)]
async fn one_or_two_of_five_down_still_make_a_quorum() {
    let set = MemoryInstances::new(5);
    let lock = redlock(&set, RedlockOptions::new().fail_fast(false));
    set.kill(1).unwrap();
    let guard = acquired(&lock).await;
    assert_eq!(guard.held_nodes(), &[0, 2, 3, 4]);
    assert!(guard.release().await.unwrap());
    set.kill(3).unwrap();
    let guard = acquired(&lock).await;
    assert_eq!(guard.held_nodes(), &[0, 2, 4]);
    assert!(guard.release().await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn three_of_five_down_is_no_quorum_of_the_configured_five() {
    let set = MemoryInstances::new(5);
    let lock = redlock(&set, RedlockOptions::new());
    for node in [0, 1, 2] {
        set.kill(node).unwrap();
    }
    // The two reachable nodes agree, but two is no majority of the five configured.
    match lock.try_acquire().await {
        Err(LockError::NoQuorum {
            granted,
            required: 3,
            nodes: 5,
            last_error,
            ..
        }) => {
            assert!(granted <= 2);
            assert_eq!(last_error.kind(), ErrorKind::Connection);
        }
        other => panic!("expected NoQuorum, got {other:?}"),
    }
    for node in [0, 1, 2] {
        set.restart(node, Persistence::AppendFsyncAlways).unwrap();
    }
    assert!(holders(&set).await.is_empty(), "partial holds left behind");
    for node in [0, 1, 2] {
        set.kill(node).unwrap();
    }
    // A retrying acquire retries it like a transient error, then times out.
    let patient = Redlock::with_options(
        set.nodes(),
        &name(),
        LockOptions::new()
            .clock(set.clock())
            .policy(AcquirePolicy::retry(Retry::Attempts(3))),
    )
    .unwrap();
    match patient.acquire().await {
        Err(LockError::Timeout {
            attempts: 3,
            errors: 3,
            ..
        }) => {}
        other => panic!("expected a timeout after three failed attempts, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_partial_acquire_is_undone_on_every_node() {
    let set = MemoryInstances::new(5);
    let key = name().lock_key();
    // Someone else holds nodes 0-2.
    for node in 0..3 {
        set.node(node)
            .unwrap()
            .set(&key, b"rival", lock_core::SetOptions::new().px(60_000))
            .await
            .unwrap();
    }
    let lock = redlock(&set, RedlockOptions::new().fail_fast(false));
    let commands = |node| set.node(node).unwrap().stats().commands;
    let before: Vec<u64> = (0..5).map(commands).collect();
    assert!(matches!(lock.try_acquire().await, Ok(Attempt::Held { .. })));
    // SET on every node; the undo only where SET may have written: not on 0-2.
    let sent: Vec<u64> = (0..5).map(|n| commands(n) - before[n]).collect();
    assert_eq!(sent, [1, 1, 1, 2, 2]);
    for node in 3..5 {
        let value = set.node(node).unwrap().get(&key).await.unwrap();
        assert_eq!(value, None, "node {node} kept the failed attempt's key");
    }
    for node in 0..3 {
        let value = set.node(node).unwrap().get(&key).await.unwrap();
        assert_eq!(value.as_deref(), Some(&b"rival"[..]));
    }
}

#[tokio::test(start_paused = true)]
async fn a_black_holed_node_costs_the_node_timeout_not_more() {
    let set = MemoryInstances::new(5);
    set.blackhole(4).unwrap();
    let timeout = Duration::from_millis(30);
    let lock = redlock(
        &set,
        RedlockOptions::new().node_timeout(timeout).fail_fast(false),
    );
    let t0 = Instant::now();
    let guard = acquired(&lock).await;
    assert_eq!(t0.elapsed(), timeout);
    assert_eq!(guard.held_nodes(), &[0, 1, 2, 3]);
    // Fail-fast returns once the quorum is certain, without waiting for node 4.
    drop(guard);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let fast = redlock(&set, RedlockOptions::new().node_timeout(timeout));
    let t0 = Instant::now();
    let guard = acquired(&fast).await;
    assert_eq!(t0.elapsed(), Duration::ZERO);
    assert_eq!(guard.held_nodes().len(), 3);
    // The release returns once a quorum deleted; node 4's goes on in the background.
    assert!(guard.release().await.unwrap());
    assert_eq!(t0.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn validity_shrinks_with_the_time_the_acquire_took() {
    let set = MemoryInstances::new(5);
    for node in 0..5 {
        set.faults(node)
            .unwrap()
            .set_latency(Duration::from_millis(40));
    }
    let lock = redlock(
        &set,
        RedlockOptions::new()
            .node_timeout(Duration::from_secs(1))
            .fail_fast(false),
    );
    let start = set.clock().now_ms();
    let guard = acquired(&lock).await;
    // Counted from the attempt's start: 10 s less the drift, and 40 ms of it are gone.
    assert_eq!(guard.valid_until_ms(), start + 10_000 - DRIFT_MS);
    assert_eq!(
        guard.validity(),
        Duration::from_millis(10_000 - 40 - DRIFT_MS as u64)
    );
}

#[tokio::test(start_paused = true)]
async fn an_acquire_slower_than_the_ttl_is_refused_and_undone() {
    let set = MemoryInstances::new(3);
    let options = LockOptions::new()
        .ttl(Duration::from_millis(200))
        .clock(set.clock())
        .policy(AcquirePolicy::try_once());
    for node in 0..3 {
        let latency = Duration::from_millis(if node == 2 { 250 } else { 1 });
        set.faults(node).unwrap().set_latency(latency);
    }
    let redlock_options = RedlockOptions::new()
        .node_timeout(Duration::from_secs(1))
        .fail_fast(false);
    let lock =
        Redlock::with_redlock_options(set.nodes(), &name(), options, redlock_options).unwrap();
    // Two nodes granted, a quorum, but the third answered after 250 ms: no validity left.
    let attempt = lock.try_acquire().await;
    assert!(
        matches!(attempt, Ok(Attempt::ValidityLost { elapsed }) if elapsed >= Duration::from_millis(250)),
        "{attempt:?}"
    );
    for node in 0..3 {
        set.faults(node).unwrap().clear();
    }
    assert!(holders(&set).await.is_empty());
}

#[tokio::test(start_paused = true)]
async fn release_reaches_a_node_whose_acquire_reply_was_lost() {
    let set = MemoryInstances::new(5);
    set.faults(4).unwrap().lose_replies(None, 1);
    let lock = redlock(&set, RedlockOptions::new().fail_fast(false));
    let guard = acquired(&lock).await;
    assert_eq!(guard.held_nodes(), &[0, 1, 2, 3]);
    assert_eq!(holders(&set).await, vec![0, 1, 2, 3, 4]);
    assert!(guard.release().await.unwrap());
    assert!(holders(&set).await.is_empty());
}

#[tokio::test(start_paused = true)]
async fn extend_needs_a_majority_and_counts_from_its_own_start() {
    let set = MemoryInstances::new(5);
    let lock = redlock(&set, RedlockOptions::new().fail_fast(false));
    let mut guard = acquired(&lock).await;
    set.advance(Duration::from_secs(5));
    set.kill(0).unwrap();
    let start = set.clock().now_ms();
    assert!(guard.extend(Duration::from_secs(20)).await.unwrap());
    assert_eq!(guard.valid_until_ms(), start + 20_000 - 202);
    assert_eq!(guard.held_nodes(), &[1, 2, 3, 4]);
    // Two more nodes lose the key (restarted empty): with node 0 still down, 2 yes, 2 no
    // and one unknown leave the outcome open.
    set.restart(1, Persistence::None).unwrap();
    set.restart(2, Persistence::None).unwrap();
    assert!(matches!(
        guard.extend(Duration::from_secs(20)).await,
        Err(LockError::NoQuorum { granted: 2, .. })
    ));
    // Node 0 back empty: three refusals settle it.
    set.restart(0, Persistence::None).unwrap();
    assert!(!guard.extend(Duration::from_secs(20)).await.unwrap());
    assert!(!guard.release().await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_acquire_releases_its_partial_holds() {
    let set = MemoryInstances::new(3);
    set.faults(2)
        .unwrap()
        .set_latency(Duration::from_millis(500));
    let lock = redlock(
        &set,
        RedlockOptions::new()
            .node_timeout(Duration::from_secs(1))
            .fail_fast(false),
    );
    let cancelled = tokio::time::timeout(Duration::from_millis(10), lock.try_acquire()).await;
    assert!(cancelled.is_err(), "the acquire should still be waiting");
    set.faults(2).unwrap().clear();
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(holders(&set).await.is_empty());
}

#[tokio::test(start_paused = true)]
async fn bad_configurations_are_refused() {
    let set = MemoryInstances::new(3);
    let no_nodes = Redlock::<lock_memory::MemoryBackend>::with_options(
        Vec::new(),
        &name(),
        LockOptions::new(),
    );
    assert!(matches!(no_nodes, Err(LockError::InvalidConfig(_))));
    let short = LockOptions::new().ttl(Duration::from_millis(2));
    let all_drift = Redlock::with_options(set.nodes(), &name(), short);
    assert!(matches!(all_drift, Err(LockError::InvalidConfig(_))));
    let mut huge = RedlockOptions::new();
    huge.drift_floor = Duration::MAX;
    let huge = Redlock::with_redlock_options(set.nodes(), &name(), LockOptions::new(), huge);
    assert!(matches!(huge, Err(LockError::InvalidConfig(_))));
    let zero = RedlockOptions::new().node_timeout(Duration::ZERO);
    let zero = Redlock::with_redlock_options(set.nodes(), &name(), LockOptions::new(), zero);
    assert!(matches!(zero, Err(LockError::InvalidConfig(_))));
    assert_eq!(
        set.kill(3).unwrap_err().to_string(),
        "no node 3: the set has 3 nodes"
    );
}

#[tokio::test(start_paused = true)]
async fn a_drifting_node_expires_the_lock_early_and_alone() {
    let set = MemoryInstances::new(3);
    set.set_drift(2, 0.5).unwrap(); // node 2's clock runs 50% fast
    let lock = redlock(&set, RedlockOptions::new().fail_fast(false));
    let guard = acquired(&lock).await;
    set.advance(Duration::from_secs(8)); // 12 s on node 2: past the 10 s TTL there
    assert_eq!(holders(&set).await, vec![0, 1]);
    let node_clock = set.node_clock(2).unwrap();
    assert_eq!(node_clock.now_ms() - set.clock().now_ms(), 4_000);
    // Still a majority: the hold stands, and its release says so.
    assert!(guard.release().await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn a_lease_keeps_a_redlock_past_its_ttl_and_reports_losing_the_majority() {
    use lock_core::{Lease, LeaseOptions, LostReason};
    let set = MemoryInstances::new(3);
    let lock = redlock(&set, RedlockOptions::new().fail_fast(false));
    let lease = Lease::start(acquired(&lock).await, LeaseOptions::new(TTL));
    tokio::time::sleep(TTL * 3).await;
    let rival = redlock(&set, RedlockOptions::new().fail_fast(false));
    assert!(rival.try_acquire().await.unwrap().acquired().is_none());
    // Two of three nodes forget the lock: the next renewal finds no majority.
    set.restart(0, Persistence::None).unwrap();
    set.restart(1, Persistence::None).unwrap();
    assert_eq!(lease.lost().await, LostReason::NotHeld);
}
