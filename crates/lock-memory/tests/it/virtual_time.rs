//! Virtual time: expiry and lock-core's retry sleeps move together.

use std::time::{Duration, Instant};

use lock_core::{
    AcquirePolicy, Backoff, KvBackend, LockAlgorithm, LockGuard, LockName, LockOptions, NamedLock,
    Retry, SetOptions, TokenLock,
};
use lock_memory::MemoryBackend;

/// A 30 s lock whose acquire waits up to a minute, sleeping as long as the holder has left.
fn options() -> LockOptions {
    let policy = AcquirePolicy::retry(Retry::For(Duration::from_secs(60))).with_backoff(
        Backoff::HolderTtl {
            max: Duration::from_secs(60),
        },
    );
    LockOptions::new()
        .ttl(Duration::from_secs(30))
        .policy(policy)
}

fn job(backend: &MemoryBackend) -> TokenLock<MemoryBackend> {
    TokenLock::with_options(backend.clone(), &LockName::new("job").unwrap(), options()).unwrap()
}

/// A holder takes "job" and crashes: never releases.
async fn crash_while_holding(backend: &MemoryBackend) {
    job(backend).acquire().await.unwrap().abandon();
}

#[tokio::test(start_paused = true)]
async fn waiting_out_a_30s_ttl_takes_no_wall_time_under_paused_tokio() {
    let backend = MemoryBackend::new();
    crash_while_holding(&backend).await;

    let (wall, virtual_start) = (Instant::now(), tokio::time::Instant::now());
    let waiter = job(&backend);
    let guard = waiter
        .acquire()
        .await
        .expect("the waiter gets the lock once the TTL runs out");

    let waited = virtual_start.elapsed();
    assert!(waited >= Duration::from_secs(30), "virtual wait {waited:?}");
    assert!(
        waited < Duration::from_secs(31),
        "slept past the expiry: {waited:?}"
    );
    // Had time been real, this would take 30 s.
    assert!(
        wall.elapsed() < Duration::from_secs(30),
        "wall {:?}",
        wall.elapsed()
    );
    println!("30 s TTL waited out in {:?} of wall time", wall.elapsed());
    assert!(guard.release().await.unwrap());
}

#[tokio::test]
async fn backend_advance_expires_keys_and_wakes_waiters_without_paused_tokio() {
    let backend = MemoryBackend::new();
    crash_while_holding(&backend).await;

    let waiter = job(&backend);
    let wall = Instant::now();
    let task = tokio::spawn(async move { waiter.acquire().await });
    tokio::task::yield_now().await;
    backend.advance(Duration::from_secs(31));
    let guard = task.await.unwrap().expect("woken by the advance");
    let value = backend.get(b"{job}:lock").await.unwrap();
    assert_eq!(value.as_deref(), Some(guard.token().as_bytes()));
    assert!(
        wall.elapsed() < Duration::from_secs(30),
        "wall {:?}",
        wall.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn pttl_counts_down_with_virtual_time() {
    let backend = MemoryBackend::new();
    backend
        .set(b"k", b"v", SetOptions::new().px(30_000))
        .await
        .unwrap();
    tokio::time::advance(Duration::from_millis(29_999)).await;
    assert_eq!(backend.pttl(b"k").await.unwrap(), 1);
    tokio::time::advance(Duration::from_millis(1)).await;
    // Exactly at the expiry time the key still exists (Redis expires strictly after).
    assert_eq!(backend.pttl(b"k").await.unwrap(), 0);
    tokio::time::advance(Duration::from_millis(1)).await;
    assert_eq!(backend.pttl(b"k").await.unwrap(), -2);
}
