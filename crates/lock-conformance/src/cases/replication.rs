//! Failovers (seed 000's warning): a primary acknowledges a lock before its replica has
//! it, dies, the replica is promoted without it, and a second client takes the same lock.
//! Each case runs on a fresh primary with one replica ([`Harness::replicated`](crate::Harness::replicated)).

use std::time::Duration;

use lock_core::{
    AcquirePolicy, Backoff, FencedLock, KvBackend, Lease, LeaseOptions, LockAlgorithm, LockError,
    LockGuard, LockName, LockOptions, LostReason, NamedLock, Replication, Retry, TokenLock,
};

use crate::{CaseResult, Ctx, Failover, Failure, FencedResource, Verdict, check};

/// Retries through a failover's connection errors, for up to 10 s.
fn patient() -> AcquirePolicy {
    AcquirePolicy::retry(Retry::For(Duration::from_secs(10)))
        .with_backoff(Backoff::Fixed(Duration::from_millis(50)))
}

fn options() -> LockOptions {
    LockOptions::new().policy(patient())
}

/// Waits for one replica for at most 2 s: long enough for a loaded machine's replica to
/// acknowledge, so that a refusal always means the write cannot reach it.
fn replicated() -> LockOptions {
    options().replication(Replication::new(1, Duration::from_secs(2)))
}

/// Waits for one replica for at most 300 ms, where the replica is known to be cut off.
fn replicated_briefly() -> LockOptions {
    options().replication(Replication::new(1, Duration::from_millis(300)))
}

async fn fail_over(control: &dyn Failover) -> Result<(), Failure> {
    control.crash_primary().await?;
    control.promote().await?;
    Ok(())
}

/// Releases `guard`, trying again while the failover's connection errors last (the first
/// command after it may find the old connection gone).
async fn release_through<G: LockGuard>(guard: G) -> Result<bool, Failure> {
    let mut guard = guard;
    for _ in 0..20 {
        match guard.release().await {
            Ok(released) => return Ok(released),
            Err(failed) if failed.error().backend().is_some_and(|e| e.is_transient()) => {
                guard = failed.into_guard();
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(failed) => return Err(failed.into()),
        }
    }
    Err(Failure(
        "the release kept failing after the failover".into(),
    ))
}

fn name(ctx: &Ctx<'_>) -> LockName {
    ctx.lock_name("failover")
}

/// The seed's failure, reproduced: the plain lock is lost in a failover.
pub async fn failover_loses_an_unreplicated_lock(ctx: &Ctx<'_>) -> CaseResult {
    let (backend, control) = ctx.replicated().await?;
    control.pause().await?;
    let first = TokenLock::with_options(backend.clone(), &name(ctx), options())?
        .acquire()
        .await?;
    fail_over(&*control).await?;
    let second = TokenLock::with_options(backend.clone(), &name(ctx), options())?
        .acquire()
        .await;
    match second {
        Ok(second) => {
            let seen = format!(
                "client A held the lock (token {}) when the primary died before its replica had it; \
                 the promoted replica had no lock, and client B took it (token {}): two holders",
                first.token(),
                second.token()
            );
            first.abandon();
            second.abandon();
            Ok(Verdict::ExpectedFailure(seen))
        }
        Err(LockError::Timeout { .. }) => Err(Failure(
            "the lock survived a failover that should have lost it: did replication really stall?"
                .into(),
        )),
        Err(error) => Err(error.into()),
    }
}

/// A lock its replica had before the failover is still held after it.
pub async fn failover_keeps_a_replicated_lock(ctx: &Ctx<'_>) -> CaseResult {
    let (backend, control) = ctx.replicated().await?;
    let first = TokenLock::with_options(backend.clone(), &name(ctx), replicated())?
        .acquire()
        .await?;
    fail_over(&*control).await?;
    let second = TokenLock::with_options(
        backend.clone(),
        &name(ctx),
        // After the failover no replica is left to acknowledge, and every attempt waits
        // out its WAIT: a short one keeps 20 attempts well inside A's TTL.
        replicated_briefly().policy(AcquirePolicy::retry(Retry::Attempts(20))),
    )?;
    // Retried past the failover's connection errors, but refused while A holds.
    let refused = second.acquire().await;
    check!(
        matches!(refused, Err(LockError::Timeout { .. })),
        "a lock its replica had was taken after the failover: {refused:?}"
    );
    check!(
        release_through(first).await?,
        "the holder's release found no lock on the new primary"
    );
    Ok(Verdict::Passed)
}

/// With [`LockOptions::replication`], an acquire the replica did not acknowledge is undone
/// and reported, so the failover cannot make two holders.
pub async fn waiting_for_replicas_refuses_the_lock_a_failover_would_lose(
    ctx: &Ctx<'_>,
) -> CaseResult {
    let (backend, control) = ctx.replicated().await?;
    control.pause().await?;
    let refused = TokenLock::with_options(backend.clone(), &name(ctx), replicated_briefly())?
        .acquire()
        .await;
    match refused {
        Err(LockError::NotReplicated {
            acknowledged: 0,
            required: 1,
            ..
        }) => {}
        other => return Err(Failure(format!("expected NotReplicated, got {other:?}"))),
    }
    check!(
        backend.exists(&[&name(ctx).lock_key()]).await? == 0,
        "the unreplicated acquire was not undone on the primary"
    );
    fail_over(&*control).await?;
    // The promoted replica has no replica of its own left: this acquire trusts it alone.
    let second = TokenLock::with_options(backend.clone(), &name(ctx), options())?
        .acquire()
        .await?;
    check!(
        release_through(second).await?,
        "the new holder's release failed"
    );
    Ok(Verdict::Passed)
}

/// Takes a fence with replication stalled, then fails over: the counter on the promoted
/// replica is behind, and the next acquire gets the same fence again.
async fn repeated_fence(ctx: &Ctx<'_>, resource: &FencedResource) -> Result<(i64, i64), Failure> {
    let (backend, control) = ctx.replicated().await?;
    let lock = FencedLock::with_options(backend.clone(), &name(ctx), options())?;
    let warm = lock.acquire().await?;
    check!(warm.release().await?, "the first release failed");
    control.pause().await?;
    let before = lock.acquire().await?;
    let before_fence = before.fence();
    resource
        .write(before_fence, b"A")
        .map_err(|stale| Failure(format!("A's write was refused: {stale:?}")))?;
    before.abandon();
    fail_over(&*control).await?;
    let after = lock.acquire().await?;
    let after_fence = after.fence();
    after.abandon();
    Ok((before_fence, after_fence))
}

/// The fence counter is lost with the lock: the next holder gets a fence already handed
/// out (a fence from `INCR` is only as durable as the primary's writes).
pub async fn fence_tokens_repeat_after_a_failover(ctx: &Ctx<'_>) -> CaseResult {
    let resource = FencedResource::new();
    let (before, after) = repeated_fence(ctx, &resource).await?;
    check!(
        after <= before,
        "the fence kept increasing across the failover ({before} then {after}): did replication stall?"
    );
    Ok(Verdict::ExpectedFailure(format!(
        "fence {before} was handed out before the failover and {after} after it: the counter went back"
    )))
}

/// A resource that refuses any fence not greater than the highest it has seen
/// ([`FencedResource::strict`]) stays safe across the failover: the repeated fence's
/// write is rejected.
pub async fn a_resource_that_rejects_stale_fences_stays_safe_across_a_failover(
    ctx: &Ctx<'_>,
) -> CaseResult {
    let resource = FencedResource::strict();
    let (_, after) = repeated_fence(ctx, &resource).await?;
    check!(
        resource.write(after, b"B").is_err(),
        "the resource accepted fence {after}, which it had seen already"
    );
    check!(
        resource.value() == b"A",
        "the resource holds {:?} instead of A's write",
        String::from_utf8_lossy(&resource.value())
    );
    Ok(Verdict::Passed)
}

/// An acquire during the failover window (no primary) waits it out through its retry
/// policy, and holds the lock alone once the replica is promoted.
pub async fn a_lock_is_taken_once_the_failover_window_ends(ctx: &Ctx<'_>) -> CaseResult {
    let (backend, control) = ctx.replicated().await?;
    control.crash_primary().await?;
    let lock = TokenLock::with_options(backend.clone(), &name(ctx), options())?;
    let waiting = tokio::spawn(async move { lock.acquire().await });
    ctx.advance(Duration::from_millis(200)).await;
    control.promote().await?;
    let guard = waiting
        .await
        .map_err(|e| Failure(format!("the acquiring task failed: {e}")))??;
    let rival = TokenLock::with_options(
        backend.clone(),
        &name(ctx),
        LockOptions::new().policy(AcquirePolicy::try_once()),
    )?
    .try_acquire()
    .await?;
    check!(
        rival.acquired().is_none(),
        "a second client took the lock acquired after the failover"
    );
    check!(
        guard.release().await?,
        "the release after the failover failed"
    );
    Ok(Verdict::Passed)
}

/// A watchdog whose lock was lost in a failover says so at its next renewal instead of
/// renewing a lock that is no longer there.
pub async fn the_watchdog_reports_a_lock_lost_in_a_failover(ctx: &Ctx<'_>) -> CaseResult {
    let (backend, control) = ctx.replicated().await?;
    // The TTL outlasts a real sentinel's failover (about 1.1 s on loopback), so the
    // renewals that fail while no primary answers are still covered by it, and the first
    // renewal on the new primary finds the lock gone.
    let ttl = Duration::from_secs(5);
    let renew_every = Duration::from_millis(200);
    control.pause().await?;
    let guard = TokenLock::with_options(backend.clone(), &name(ctx), options().ttl(ttl))?
        .acquire()
        .await?;
    let lease = Lease::start(
        guard,
        LeaseOptions {
            renew_every,
            ..LeaseOptions::new(ttl)
        },
    );
    fail_over(&*control).await?;
    for _ in 0..100 {
        if lease.is_lost() {
            break;
        }
        ctx.advance(renew_every / 2).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    check!(
        lease.is_lost(),
        "the watchdog kept renewing a lock the failover had lost"
    );
    let reason = lease.lost().await;
    check!(
        reason == LostReason::NotHeld,
        "the watchdog reported {reason:?}, not that the lock was gone"
    );
    Ok(Verdict::Passed)
}
