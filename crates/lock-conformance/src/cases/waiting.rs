//! Helpers for cases with blocked waiters: spawning them and waiting for their state.

use std::future::Future;
use std::time::Duration;

use lock_core::DynBackend;
use lock_core::{AcquirePolicy, KvBackend, LockAlgorithm, LockError, LockOptions, Retry};
use tokio::task::JoinHandle;

use crate::Failure;

/// Longer than any wait a correct implementation needs here (microseconds to a few
/// hundred milliseconds), shorter than the TTLs a broken one would sit out.
pub(crate) const LIVENESS: Duration = Duration::from_secs(5);

/// Options for a waiter that keeps waiting far longer than any case runs.
pub(crate) fn patient() -> LockOptions {
    LockOptions::new().policy(AcquirePolicy::retry(Retry::For(Duration::from_secs(120))))
}

/// Starts `lock.acquire()` in its own task.
pub(crate) fn spawn_acquire<A>(lock: A) -> JoinHandle<Result<A::Guard, LockError>>
where
    A: LockAlgorithm + 'static,
    A::Guard: 'static,
{
    tokio::spawn(async move { lock.acquire().await })
}

/// The guard a spawned acquire got, failing the case if it did not get one in [`LIVENESS`].
pub(crate) async fn joined<G>(
    task: JoinHandle<Result<G, LockError>>,
    who: &str,
) -> Result<G, Failure> {
    match tokio::time::timeout(LIVENESS, task).await {
        Ok(Ok(Ok(guard))) => Ok(guard),
        Ok(Ok(Err(e))) => Err(Failure(format!("{who} failed to acquire: {e}"))),
        Ok(Err(panic)) => Err(Failure(format!("{who} panicked: {panic}"))),
        Err(_) => Err(Failure(format!(
            "{who} was still waiting {LIVENESS:?} after the lock became free"
        ))),
    }
}

/// Polls `condition` (real time, every millisecond) until it holds, for at most
/// [`LIVENESS`]; `what` names it in the failure.
pub(crate) async fn eventually<F, Fut>(what: &str, mut condition: F) -> Result<(), Failure>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool, Failure>>,
{
    let deadline = tokio::time::Instant::now() + LIVENESS;
    while tokio::time::Instant::now() < deadline {
        if condition().await? {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Err(Failure(format!("{what}: not within {LIVENESS:?}")))
}

/// Waits until someone is subscribed to `channel`, probing with PUBLISH (a probe is a
/// spurious wake-up, which every waiter must tolerate).
pub(crate) async fn subscribed(backend: &DynBackend, channel: &[u8]) -> Result<(), Failure> {
    eventually("a waiter subscribed to the wake-up channel", || async {
        Ok(backend.publish(channel, b"probe").await? > 0)
    })
    .await
}
