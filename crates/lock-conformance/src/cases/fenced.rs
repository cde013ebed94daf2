//! [`FencedLock`]: the common behaviours, fences that only grow, and the pause scenario;
//! and fenced [`ReentrantLock`]s, whose re-entry keeps its fence.

use std::time::Duration;

use lock_core::DynBackend;
use lock_core::{
    AcquirePolicy, FencedGuard, FencedLock, LockAlgorithm, LockError, LockGuard, LockName,
    LockOptions, LockOwner, NamedLock, ReentrantLock,
};

use super::algorithm::{self, algorithm_cases, extend_case, key_ttl_skew_case};
use crate::{CaseResult, Ctx, Failure, FencedResource, Verdict, check, check_eq};

fn name(ctx: &Ctx<'_>) -> LockName {
    ctx.lock_name("fenced")
}

fn lock_key(ctx: &Ctx<'_>) -> Vec<u8> {
    name(ctx).lock_key()
}

fn client(ctx: &Ctx<'_>, options: LockOptions) -> Result<FencedLock<DynBackend>, LockError> {
    FencedLock::with_options(ctx.backend.clone(), &name(ctx), options)
}

algorithm_cases!();
extend_case!();
key_ttl_skew_case!();

fn short(ttl: Duration) -> LockOptions {
    LockOptions::new()
        .ttl(ttl)
        .policy(AcquirePolicy::try_once())
}

/// C1 acquires and pauses past its TTL (a GC pause); C2 takes the lock over.
async fn paused_past_ttl_then_taken_over(
    ctx: &Ctx<'_>,
) -> Result<(FencedGuard<DynBackend>, FencedGuard<DynBackend>), Failure> {
    let c1 = client(ctx, short(Duration::from_millis(100)))?;
    let c2 = client(ctx, short(Duration::from_secs(10)))?;
    let paused = c1
        .try_acquire()
        .await?
        .acquired()
        .ok_or_else(|| Failure("C1 refused".into()))?;
    ctx.advance(Duration::from_millis(200)).await;
    let holder = c2
        .try_acquire()
        .await?
        .acquired()
        .ok_or_else(|| Failure("C2 refused after C1's TTL".into()))?;
    Ok((paused, holder))
}

/// Every acquisition's fence is strictly greater than the one before, including after a
/// holder's TTL ran out and another took over.
pub async fn fence_tokens_strictly_increase(ctx: &Ctx<'_>) -> CaseResult {
    let lock = client(ctx, short(Duration::from_millis(100)))?;
    let mut last = i64::MIN;
    for round in 0..5 {
        let guard = lock
            .try_acquire()
            .await?
            .acquired()
            .ok_or_else(|| Failure(format!("round {round} refused")))?;
        check!(
            guard.fence() > last,
            "round {round}: fence {} after {last}",
            guard.fence()
        );
        last = guard.fence();
        if round == 2 {
            guard.abandon(); // crashes; the next round waits out the TTL
            ctx.advance(Duration::from_millis(200)).await;
        } else {
            check_eq!(guard.release().await?, true, "release in round {round}");
        }
    }
    Ok(Verdict::Passed)
}

/// C1 holds the lock and pauses past its TTL (a GC pause); C2 takes over and writes. When
/// C1 wakes and writes with its old fence, the fenced resource refuses it.
pub async fn stale_holder_after_a_pause_is_rejected_by_fencing(ctx: &Ctx<'_>) -> CaseResult {
    let resource = FencedResource::new();
    let (paused, holder) = paused_past_ttl_then_taken_over(ctx).await?;
    check!(
        resource.write(holder.fence(), b"C2").is_ok(),
        "C2's write refused"
    );
    let stale = resource.write(paused.fence(), b"C1");
    check!(
        stale.is_err(),
        "C1's stale write (fence {}) was accepted after C2's (fence {})",
        paused.fence(),
        holder.fence()
    );
    check_eq!(
        resource.value(),
        b"C2".to_vec(),
        "resource after C1's stale write"
    );
    check_eq!(paused.release().await?, false, "C1's late release");
    check_eq!(holder.release().await?, true, "C2's release");
    Ok(Verdict::Passed)
}

/// The same pause without fencing: C1's stale write lands after C2's and corrupts the
/// resource. Passes by demonstrating that failure.
pub async fn unfenced_stale_write_corrupts_the_resource(ctx: &Ctx<'_>) -> CaseResult {
    let resource = FencedResource::new();
    let (paused, holder) = paused_past_ttl_then_taken_over(ctx).await?;
    resource.write_unfenced(b"C2");
    resource.write_unfenced(b"C1");
    paused.abandon();
    holder.release().await?;
    if resource.value() == b"C1" {
        return Ok(Verdict::ExpectedFailure(
            "without fencing, paused C1 overwrote C2's write after losing the lock".into(),
        ));
    }
    Err(Failure("the unfenced stale write did not land".into()))
}

/// A fenced reentrant lock: the owner's first hold takes a new fence, re-entering reports
/// the same one (no bump), and the next owner's hold gets a larger one.
pub async fn reentry_keeps_the_fence(ctx: &Ctx<'_>) -> CaseResult {
    let reentrant = |owner: &LockOwner| {
        ReentrantLock::with_options(
            ctx.backend.clone(),
            &name(ctx),
            owner.clone(),
            short(Duration::from_secs(10)),
        )
        .map(ReentrantLock::fenced)
    };
    let (alice, bob) = (LockOwner::new(), LockOwner::new());
    let take = |lock: ReentrantLock<DynBackend>, who: &'static str| async move {
        lock.try_acquire()
            .await?
            .acquired()
            .ok_or_else(|| Failure(format!("{who} was refused")))
    };
    let outer = take(reentrant(&alice)?, "alice").await?;
    let inner = take(reentrant(&alice)?, "alice re-entering").await?;
    check_eq!(inner.depth(), 2, "depth of the re-entry");
    check!(outer.fence().is_some(), "a fenced hold has no fence");
    check_eq!(inner.fence(), outer.fence(), "fence of the re-entry");
    let alice_fence = outer.fence();
    inner.release().await?;
    outer.release().await?;
    let next = take(reentrant(&bob)?, "bob").await?;
    check!(
        next.fence() > alice_fence,
        "bob's fence {:?} is not above alice's {alice_fence:?}",
        next.fence()
    );
    next.release().await?;
    Ok(Verdict::Passed)
}
