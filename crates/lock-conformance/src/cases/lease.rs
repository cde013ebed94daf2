//! [`Lease`]: the watchdog renews, stops when it should, and says when the lock is lost.

use std::time::Duration;

use lock_core::DynBackend;
use lock_core::{
    AcquirePolicy, CountingBackend, KvBackend, Lease, LeaseOptions, LockAlgorithm, LockError,
    LockGuard, LockName, LockOptions, LostReason, NamedLock, TokenLock,
};

use crate::{CaseResult, Ctx, Failure, Verdict, check, check_eq};

const MS: Duration = Duration::from_millis(1);
/// Long enough that a renewal delayed by a busy CI machine (every TTL/3) still lands in time.
const TTL: Duration = Duration::from_millis(450);

fn lock<B: KvBackend + Clone + 'static>(
    backend: B,
    name: &LockName,
    ttl: Duration,
) -> Result<TokenLock<B>, LockError> {
    TokenLock::with_options(
        backend,
        name,
        LockOptions::new()
            .ttl(ttl)
            .policy(AcquirePolicy::try_once()),
    )
}

fn lease_name(ctx: &Ctx<'_>) -> LockName {
    ctx.lock_name("lease")
}

/// Gives a task time to run after time moved: only where the case checks that nothing
/// happens (no watchdog is left to act), so the verdict does not depend on it.
async fn settle() {
    tokio::time::sleep(20 * MS).await;
}

/// Advances in renewal-sized steps and, after each, waits until the lease's watchdog has
/// done what is due ([`Lease::settled`]): renewals land when they are due however late
/// the runtime schedules the watchdog, so the verdict is the same on every run.
async fn pass<G: LockGuard>(ctx: &Ctx<'_>, total: Duration, lease: &Lease<G>) {
    let step = TTL / 3;
    let mut passed = Duration::ZERO;
    while passed < total {
        ctx.advance(step).await;
        lease.settled().await;
        passed += step;
    }
}

/// Advances in renewal-sized steps with no watchdog running, giving any stray task the
/// chance to act after each.
async fn pass_idle(ctx: &Ctx<'_>, total: Duration) {
    let step = TTL / 3;
    let mut passed = Duration::ZERO;
    while passed < total {
        ctx.advance(step).await;
        settle().await;
        passed += step;
    }
}

async fn lease_on<B: KvBackend + Clone + 'static>(
    ctx: &Ctx<'_>,
    backend: B,
    options: LeaseOptions,
) -> Result<Lease<lock_core::TokenGuard<B>>, Failure> {
    let guard = lock(backend, &lease_name(ctx), options.ttl)?
        .try_acquire()
        .await?
        .acquired()
        .ok_or_else(|| Failure("the lease's first acquire was refused".into()))?;
    Ok(Lease::start(guard, options))
}

/// The watchdog keeps the lock held well past its TTL, until release.
pub async fn renews_the_lock_past_its_ttl(ctx: &Ctx<'_>) -> CaseResult {
    let lease = lease_on(ctx, ctx.backend.clone(), LeaseOptions::new(TTL)).await?;
    let other = lock(ctx.backend.clone(), &lease_name(ctx), TTL)?;
    pass(ctx, TTL * 2, &lease).await;
    check!(
        other.try_acquire().await?.acquired().is_none(),
        "another client acquired after 2 TTLs of a renewed lease"
    );
    check!(
        !lease.is_lost(),
        "the lease reports itself lost while renewing"
    );
    check_eq!(lease.release().await?, true, "release of the renewed lease");
    check!(
        other.try_acquire().await?.acquired().is_some(),
        "another client refused after the release"
    );
    Ok(Verdict::Passed)
}

/// Releasing before the first renewal stops the watchdog: no command follows.
pub async fn release_before_the_first_renewal_stops_renewing(ctx: &Ctx<'_>) -> CaseResult {
    let counting = CountingBackend::new(ctx.backend.clone());
    let lease = lease_on(ctx, counting.clone(), LeaseOptions::new(TTL)).await?;
    check_eq!(lease.release().await?, true, "immediate release");
    let after_release = counting.commands();
    pass_idle(ctx, TTL * 2).await;
    check_eq!(
        counting.commands(),
        after_release,
        "commands sent after the release"
    );
    Ok(Verdict::Passed)
}

async fn stops_and_frees(
    ctx: &Ctx<'_>,
    counting: &CountingBackend<DynBackend>,
    what: &str,
) -> CaseResult {
    let other = lock(
        ctx.backend.clone(),
        &lease_name(ctx),
        Duration::from_secs(10),
    )?;
    let mut freed = false;
    for _ in 0..100 {
        if let Some(guard) = other.try_acquire().await?.acquired() {
            guard.abandon();
            freed = true;
            break;
        }
        settle().await;
    }
    check!(
        freed,
        "the lock was still held 2 s after the lease's {what}"
    );
    let after = counting.commands();
    pass_idle(ctx, TTL * 2).await;
    check_eq!(
        counting.commands(),
        after,
        "commands sent by the watchdog after the lease's {what}"
    );
    Ok(Verdict::Passed)
}

/// Dropping the lease stops the watchdog and releases the lock in the background.
pub async fn dropping_the_lease_stops_renewing_and_releases(ctx: &Ctx<'_>) -> CaseResult {
    let counting = CountingBackend::new(ctx.backend.clone());
    drop(lease_on(ctx, counting.clone(), LeaseOptions::new(TTL)).await?);
    stops_and_frees(ctx, &counting, "drop").await
}

/// Cancelling the task that owns a lease stops the watchdog and releases the lock.
pub async fn cancelling_the_owner_task_stops_renewing_and_releases(ctx: &Ctx<'_>) -> CaseResult {
    let counting = CountingBackend::new(ctx.backend.clone());
    let lease = lease_on(ctx, counting.clone(), LeaseOptions::new(TTL)).await?;
    let owner = tokio::spawn(async move {
        let _lease = lease;
        std::future::pending::<()>().await;
    });
    settle().await;
    owner.abort();
    let _ = owner.await;
    stops_and_frees(ctx, &counting, "owner cancellation").await
}

/// When the lock is taken from under the lease, the next renewal notices and `lost()`
/// resolves with [`LostReason::NotHeld`].
pub async fn lost_resolves_when_the_lock_is_taken(ctx: &Ctx<'_>) -> CaseResult {
    let lease = lease_on(ctx, ctx.backend.clone(), LeaseOptions::new(TTL)).await?;
    let key = lease_name(ctx).lock_key();
    ctx.backend.del(&[&key]).await?; // an operator, or a failover that lost the key
    let thief = lock(
        ctx.backend.clone(),
        &lease_name(ctx),
        Duration::from_secs(10),
    )?;
    thief
        .try_acquire()
        .await?
        .acquired()
        .ok_or_else(|| Failure("the new holder was refused".into()))?
        .abandon();
    pass(ctx, TTL, &lease).await;
    match tokio::time::timeout(Duration::from_secs(2), lease.lost()).await {
        Ok(reason) => check_eq!(reason, LostReason::NotHeld, "lost reason"),
        Err(_) => check!(false, "lost() did not resolve after the lock was taken"),
    }
    check!(lease.is_lost(), "is_lost() after lost() resolved");
    Ok(Verdict::Passed)
}

/// With a hold cap the watchdog stops renewing; the lock expires at its TTL and `lost()`
/// says [`LostReason::HoldCapReached`].
pub async fn hold_cap_stops_renewing(ctx: &Ctx<'_>) -> CaseResult {
    let options = LeaseOptions::new(TTL).max_hold(TTL);
    let lease = lease_on(ctx, ctx.backend.clone(), options).await?;
    let other = lock(ctx.backend.clone(), &lease_name(ctx), TTL)?;
    pass(ctx, TTL * 3, &lease).await;
    check!(
        other.try_acquire().await?.acquired().is_some(),
        "the lock was still held long after the hold cap"
    );
    match tokio::time::timeout(Duration::from_secs(2), lease.lost()).await {
        Ok(reason) => check_eq!(reason, LostReason::HoldCapReached, "lost reason"),
        Err(_) => check!(false, "lost() did not resolve after the hold cap"),
    }
    Ok(Verdict::Passed)
}

/// When `lost()` says [`LostReason::HoldCapReached`], the lock is free: a rival's attempt
/// at that very moment succeeds. (A key lives through the millisecond its TTL ends, so a
/// signal sent at the TTL itself would be 1 ms early.)
pub async fn hold_cap_is_reported_once_the_lock_is_free(ctx: &Ctx<'_>) -> CaseResult {
    let options = LeaseOptions::new(TTL).max_hold(TTL);
    let lease = lease_on(ctx, ctx.backend.clone(), options).await?;
    let rival = lock(ctx.backend.clone(), &lease_name(ctx), TTL)?;
    let lost = async {
        loop {
            tokio::select! {
                reason = lease.lost() => return reason,
                () = pass(ctx, TTL / 3, &lease) => {}
            }
        }
    };
    match tokio::time::timeout(Duration::from_secs(10), lost).await {
        Ok(reason) => check_eq!(reason, LostReason::HoldCapReached, "lost reason"),
        Err(_) => check!(false, "lost() did not resolve after the hold cap"),
    }
    match rival.try_acquire().await?.acquired() {
        Some(guard) => check!(guard.release().await?, "the rival's release"),
        None => check!(
            false,
            "lost() reported the hold cap while the lock was still held (PTTL {})",
            ctx.backend.pttl(&lease_name(ctx).lock_key()).await?
        ),
    }
    Ok(Verdict::Passed)
}
