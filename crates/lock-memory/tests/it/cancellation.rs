//! Cancellation safety, deterministically: with injected latency every command has an
//! await point, and paused time lets each test cancel at every one of them.

use std::time::Duration;

use lock_core::{
    AcquirePolicy, ErrorKind, FairLock, KvBackend, LockAlgorithm, LockGuard, LockName, LockOptions,
    NamedLock, TokenLock, TxWrite,
};
use lock_memory::MemoryBackend;

const LATENCY: Duration = Duration::from_millis(10);
const TTL: Duration = Duration::from_secs(30);

/// The lock's key.
const KEY: &[u8] = b"{k}:lock";

fn name() -> LockName {
    LockName::new("k").unwrap()
}

fn lock(backend: &MemoryBackend) -> TokenLock<MemoryBackend> {
    TokenLock::with_options(
        backend.clone(),
        &name(),
        LockOptions::new()
            .ttl(TTL)
            .policy(AcquirePolicy::try_once()),
    )
    .unwrap()
}

/// An acquire dropped at any point leaves either no lock or one with a TTL (which frees
/// it), never a lock held forever; and a later acquire sees a consistent state.
#[tokio::test(start_paused = true)]
async fn an_acquire_cancelled_at_any_point_never_leaves_an_unbounded_lock() {
    for cancel_after_ms in 0..=25 {
        let backend = MemoryBackend::new();
        backend.faults().set_latency(LATENCY);
        let outcome = tokio::time::timeout(
            Duration::from_millis(cancel_after_ms),
            lock(&backend).acquire(),
        )
        .await;
        backend.faults().clear();
        let pttl = backend.pttl(KEY).await.unwrap();
        match outcome {
            Err(_cancelled) => assert!(
                pttl == -2 || (0..=30_000).contains(&pttl),
                "cancelled at {cancel_after_ms} ms left PTTL {pttl}"
            ),
            Ok(guard) => {
                assert!((0..=30_000).contains(&pttl));
                assert!(guard.unwrap().release().await.unwrap());
            }
        }
        // Whatever happened, the lock is free again within its TTL.
        backend.advance(TTL + Duration::from_millis(1));
        assert!(
            lock(&backend)
                .try_acquire()
                .await
                .unwrap()
                .acquired()
                .is_some(),
            "at {cancel_after_ms} ms"
        );
    }
}

/// A release dropped at any point still releases: the guard goes with the future, and its
/// drop releases in the background with the token it kept. The lock is free long before
/// its TTL.
#[tokio::test(start_paused = true)]
async fn a_release_cancelled_at_any_point_still_frees_the_lock() {
    for cancel_after_ms in 0..=15 {
        let backend = MemoryBackend::new();
        let guard = lock(&backend)
            .try_acquire()
            .await
            .unwrap()
            .acquired()
            .unwrap();
        backend.faults().set_latency(LATENCY);
        let released =
            tokio::time::timeout(Duration::from_millis(cancel_after_ms), guard.release()).await;
        // Let a background release (which also waits out the latency) finish.
        tokio::time::sleep(LATENCY * 3).await;
        backend.faults().clear();
        match released {
            Ok(result) => assert!(result.unwrap()),
            Err(_cancelled) => {}
        }
        assert_eq!(
            backend.pttl(KEY).await.unwrap(),
            -2,
            "cancelled at {cancel_after_ms} ms: the lock is still held"
        );
    }
}

/// An acquire that waits for a held lock can be cancelled while sleeping; nothing is left
/// behind and the holder is untouched.
#[tokio::test(start_paused = true)]
async fn a_waiting_acquire_cancelled_mid_sleep_leaves_the_holder_alone() {
    let backend = MemoryBackend::new();
    let holder = lock(&backend)
        .try_acquire()
        .await
        .unwrap()
        .acquired()
        .unwrap();
    let waiter =
        TokenLock::with_options(backend.clone(), &name(), LockOptions::new().ttl(TTL)).unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(250), waiter.acquire())
            .await
            .is_err()
    );
    let value = backend.get(KEY).await.unwrap();
    assert_eq!(value.as_deref(), Some(holder.token().as_bytes()));
    assert!(holder.release().await.unwrap());
}

fn fair(backend: &MemoryBackend) -> FairLock<MemoryBackend> {
    let name = LockName::new("fair").unwrap();
    FairLock::with_options(backend.clone(), &name, LockOptions::new().ttl(TTL)).unwrap()
}

/// A fair acquire cancelled at any point, while queueing, subscribing, waiting, or just
/// as the lock is handed to it, leaves neither a ticket nor a handed-over lock behind: once
/// the holder has released, the next client gets the lock at once.
#[tokio::test(start_paused = true)]
async fn a_fair_acquire_cancelled_at_any_point_leaves_the_line_clean() {
    for release_at_ms in [5, 25] {
        for cancel_after_ms in 0..=45 {
            let backend = MemoryBackend::new();
            let holder = fair(&backend).acquire().await.unwrap();
            backend.faults().set_latency(LATENCY);
            let release = tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(release_at_ms)).await;
                holder.release().await.unwrap()
            });
            let waiter = fair(&backend);
            let outcome =
                tokio::time::timeout(Duration::from_millis(cancel_after_ms), waiter.acquire())
                    .await;
            assert!(release.await.unwrap(), "the holder's release");
            // Let background clean-ups (which also wait out the latency) finish.
            tokio::time::sleep(LATENCY * 5).await;
            backend.faults().clear();
            if let Ok(guard) = outcome {
                assert!(guard.unwrap().release().await.unwrap());
            }
            let case = format!("release at {release_at_ms} ms, cancel at {cancel_after_ms} ms");
            assert!(
                fair(&backend)
                    .try_acquire()
                    .await
                    .unwrap()
                    .acquired()
                    .is_some(),
                "{case}: the lock was not free\n{}",
                backend.dump()
            );
        }
    }
}

/// An EXEC cancelled while it waits out injected latency writes nothing and ends its
/// watches, as dropping the transaction unexecuted does; so does an EXEC an injected
/// fault stops.
#[tokio::test(start_paused = true)]
async fn a_cancelled_or_failed_exec_ends_its_watches() {
    let backend = MemoryBackend::new();
    let tx = backend.watch(&[b"k"]).await.unwrap();
    assert_eq!(backend.stats().watched_keys, 1);
    backend.faults().set_latency(Duration::from_millis(5));
    let exec = tx.exec(vec![TxWrite::set("k", "v")]);
    assert!(
        tokio::time::timeout(Duration::from_millis(2), exec)
            .await
            .is_err()
    );
    backend.faults().clear();
    assert_eq!(backend.get(b"k").await.unwrap(), None);
    assert_eq!(backend.stats().watched_keys, 0);

    let tx = backend.watch(&[b"k"]).await.unwrap();
    backend.faults().fail_next(1, ErrorKind::Connection);
    assert!(tx.exec(vec![TxWrite::set("k", "v")]).await.is_err());
    assert_eq!(backend.get(b"k").await.unwrap(), None);
    assert_eq!(backend.stats().watched_keys, 0);
}
