//! No key a lock writes outlives the lock without a TTL: a holder abandons its lock, a
//! waiter gives up on it, and once the TTL (and a fair lock's patience) has passed the
//! keyspace is empty. The fence counter is the one key kept on purpose: fences must never
//! repeat. The legacy lock is left out: the seeds' algorithm gives its key no TTL at all.

use std::time::Duration;

use lock_core::{
    AcquirePolicy, Backoff, FairLock, FencedLock, LockAlgorithm, LockError, LockGuard, LockName,
    LockOptions, LockOwner, NamedLock, Redlock, ReentrantLock, Retry, ScriptedLock, TokenLock,
    Wait,
};
use lock_memory::{MemoryBackend, MemoryInstances};

const TTL: Duration = Duration::from_secs(10);

fn name() -> LockName {
    LockName::new("jobs").unwrap()
}

fn holder_options() -> LockOptions {
    LockOptions::new().ttl(TTL)
}

/// Gives up after a second of waiting, well before the holder's TTL.
fn waiter_options() -> LockOptions {
    LockOptions::new().ttl(TTL).policy(
        AcquirePolicy::retry(Retry::For(Duration::from_secs(1)))
            .with_backoff(Backoff::Fixed(Duration::from_millis(50))),
    )
}

/// The holder abandons, the waiter times out; then every key but the fence counter must
/// have a TTL, and once the TTL and the patience have passed none may be left.
async fn abandon_and_give_up<L: LockAlgorithm>(
    what: &str,
    backends: &[MemoryBackend],
    holder: L,
    waiter: L,
) {
    holder.acquire().await.unwrap().abandon();
    match waiter.acquire().await {
        Err(LockError::Timeout { .. }) => {}
        other => panic!("{what}: the waiter should time out, got {other:?}"),
    }
    // Background leaves run first.
    tokio::time::sleep(Duration::from_millis(10)).await;
    for backend in backends {
        let dump = backend.dump();
        for key in &dump.keys {
            assert!(
                key.pttl >= 0 || key.key.ends_with(b":fence"),
                "{what}: {} has no TTL after everyone left\n{dump}",
                String::from_utf8_lossy(&key.key)
            );
        }
    }
    tokio::time::sleep(TTL + lock_core::DEFAULT_PATIENCE).await;
    for backend in backends {
        let dump = backend.dump();
        assert!(
            dump.keys.iter().all(|key| key.key.ends_with(b":fence")),
            "{what}: keys outlived the lock\n{dump}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn no_lock_leaves_a_key_without_a_ttl_once_everyone_has_left() {
    let b = MemoryBackend::new();
    let one = std::slice::from_ref(&b);
    let token = |o| TokenLock::with_options(b.clone(), &name(), o).unwrap();
    abandon_and_give_up(
        "token",
        one,
        token(holder_options()),
        token(waiter_options()),
    )
    .await;
    let notify = |o: LockOptions| token(o.wait(Wait::Notify));
    abandon_and_give_up(
        "notify",
        one,
        notify(holder_options()),
        notify(waiter_options()),
    )
    .await;
    let fair = |o| FairLock::with_options(b.clone(), &name(), o).unwrap();
    abandon_and_give_up("fair", one, fair(holder_options()), fair(waiter_options())).await;
    let scripted = |o| ScriptedLock::with_options(b.clone(), &name(), o).unwrap();
    abandon_and_give_up(
        "scripted",
        one,
        scripted(holder_options()),
        scripted(waiter_options()),
    )
    .await;
    let reentrant =
        |o| ReentrantLock::with_options(b.clone(), &name(), LockOwner::new(), o).unwrap();
    abandon_and_give_up(
        "reentrant",
        one,
        reentrant(holder_options()),
        reentrant(waiter_options()),
    )
    .await;
    let fenced = |o| FencedLock::with_options(b.clone(), &name(), o).unwrap();
    abandon_and_give_up(
        "fenced",
        one,
        fenced(holder_options()),
        fenced(waiter_options()),
    )
    .await;

    let instances = MemoryInstances::new(3);
    let redlock = |o| Redlock::with_options(instances.nodes(), &name(), o).unwrap();
    abandon_and_give_up(
        "redlock",
        &instances.nodes(),
        redlock(holder_options()),
        redlock(waiter_options()),
    )
    .await;
}

/// The case that was found: the holder abandons, the only waiter of a fair lock gives up,
/// and the ticket counter it left was kept for ever.
#[tokio::test(start_paused = true)]
async fn a_fair_line_whose_holder_and_waiter_left_expires_within_the_patience() {
    let backend = MemoryBackend::new();
    let fair = |o| FairLock::with_options(backend.clone(), &name(), o).unwrap();
    fair(holder_options()).acquire().await.unwrap().abandon();
    assert!(fair(waiter_options()).acquire().await.is_err());
    tokio::time::sleep(TTL + lock_core::DEFAULT_PATIENCE).await;
    assert!(backend.dump().keys.is_empty(), "{}", backend.dump());
}
