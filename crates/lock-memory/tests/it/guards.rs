//! What a guard tells its holder, and how a holder can let it go, on paused time.

use std::time::Duration;

use lock_core::{
    AcquirePolicy, KvBackend, Lease, LeaseOptions, LegacyLock, LockAlgorithm, LockGuard, LockName,
    LockOptions, LostReason, NamedLock, TokenLock,
};
use lock_memory::MemoryBackend;

fn name() -> LockName {
    LockName::new("job").unwrap()
}

fn try_once(ttl: Duration) -> LockOptions {
    LockOptions::new()
        .ttl(ttl)
        .policy(AcquirePolicy::try_once())
}

#[tokio::test(start_paused = true)]
async fn validity_counts_from_the_start_of_the_acquire_and_of_each_extend() {
    let backend = MemoryBackend::new();
    let lock = TokenLock::with_options(backend.clone(), &name(), try_once(Duration::from_secs(10)))
        .unwrap();
    let started = backend.clock().now_ms();
    let mut guard = lock.try_acquire().await.unwrap().acquired().unwrap();
    assert_eq!(guard.valid_until_ms(), started + 10_000);
    tokio::time::advance(Duration::from_secs(4)).await;
    assert!(guard.extend(Duration::from_secs(20)).await.unwrap());
    assert_eq!(guard.valid_until_ms(), started + 4_000 + 20_000);
    assert_eq!(guard.clock().now_ms(), backend.clock().now_ms());
    let text = format!("{guard:?}");
    assert!(
        text.contains("{job}:lock") && text.contains(guard.token()),
        "{text}"
    );
    assert!(guard.release().await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn an_abandoned_guard_keeps_the_lock_until_its_ttl() {
    let backend = MemoryBackend::new();
    let lock = TokenLock::with_options(backend.clone(), &name(), try_once(Duration::from_secs(5)))
        .unwrap();
    lock.try_acquire()
        .await
        .unwrap()
        .acquired()
        .unwrap()
        .abandon();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(lock.try_acquire().await.unwrap().acquired().is_none());
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(lock.try_acquire().await.unwrap().acquired().is_some());
}

#[tokio::test(start_paused = true)]
async fn a_stamp_lock_reports_its_stamp_as_its_validity() {
    let backend = MemoryBackend::new();
    let lock = LegacyLock::with_options(backend.clone(), &name(), try_once(Duration::from_secs(3)))
        .unwrap();
    let guard = lock.try_acquire().await.unwrap().acquired().unwrap();
    assert_eq!(guard.valid_until_ms(), guard.expires_at_ms());
    assert_eq!(guard.expires_at_ms(), backend.clock().now_ms() + 3_000);
    assert!(guard.release().await.unwrap());
}

/// With a 3 s TTL renewed every second and a 10 s cap, the last renewal (at 9 s) holds the
/// key until 12 s, and a key lives through its last millisecond: the lock is free at
/// 12.001 s. `lost()` must not say so a millisecond earlier.
#[tokio::test(start_paused = true)]
async fn the_hold_cap_is_reported_when_the_lock_is_free_not_before() {
    let backend = MemoryBackend::new();
    let ttl = Duration::from_secs(3);
    let lock = TokenLock::with_options(backend.clone(), &name(), try_once(ttl)).unwrap();
    let guard = lock.try_acquire().await.unwrap().acquired().unwrap();
    let start = tokio::time::Instant::now();
    let lease = Lease::start(
        guard,
        LeaseOptions::new(ttl).max_hold(Duration::from_secs(10)),
    );
    assert_eq!(lease.lost().await, LostReason::HoldCapReached);
    let at = start.elapsed();
    let rival = lock.try_acquire().await.unwrap().acquired();
    assert!(
        rival.is_some(),
        "lost() at {at:?}, but the key still had PTTL {}",
        backend.pttl(b"{job}:lock").await.unwrap()
    );
    assert_eq!(at, Duration::from_millis(12_001));
}
