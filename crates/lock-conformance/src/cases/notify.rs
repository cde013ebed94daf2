//! [`Wait::Notify`]: a token lock whose releases wake waiters.

use std::time::Duration;

use lock_core::DynBackend;
use lock_core::{
    AcquirePolicy, Backoff, KvBackend, LockAlgorithm, LockError, LockGuard, LockOptions, NamedLock,
    Retry, TokenLock, Wait,
};

use super::algorithm::{self, algorithm_cases, extend_case, key_ttl_skew_case};
use super::waiting::{LIVENESS, eventually, joined, patient, spawn_acquire, subscribed};
use crate::{CaseResult, Ctx, Verdict, check, check_eq};

fn lock_key(ctx: &Ctx<'_>) -> Vec<u8> {
    ctx.lock_name("notify").lock_key()
}

fn channel(ctx: &Ctx<'_>) -> Vec<u8> {
    ctx.lock_name("notify").key("wake")
}

fn claim_key(ctx: &Ctx<'_>) -> Vec<u8> {
    ctx.lock_name("notify").key("next")
}

fn client(ctx: &Ctx<'_>, options: LockOptions) -> Result<TokenLock<DynBackend>, LockError> {
    TokenLock::with_options(
        ctx.backend.clone(),
        &ctx.lock_name("notify"),
        options.wait(Wait::Notify),
    )
}

algorithm_cases!();
extend_case!();
key_ttl_skew_case!();

/// A release publishes on `{name}:wake`, in the same atomic step as the delete.
pub async fn release_publishes_a_wake_up(ctx: &Ctx<'_>) -> CaseResult {
    let mut wake = ctx.backend.subscribe(&channel(ctx)).await?;
    let guard = client(ctx, LockOptions::new())?.acquire().await?;
    check!(guard.release().await?, "release reported the lock not held");
    let message = tokio::time::timeout(LIVENESS, wake.recv()).await;
    check!(
        matches!(message, Ok(Ok(_))),
        "no wake-up on the lock's channel after a release: {message:?}"
    );
    Ok(Verdict::Passed)
}

/// A blocked waiter gets the lock when the holder releases, not when the holder's 60 s
/// TTL would have run out.
pub async fn waiter_wakes_on_release_not_at_the_holder_ttl(ctx: &Ctx<'_>) -> CaseResult {
    let holder = client(ctx, LockOptions::new().ttl(Duration::from_secs(60)))?
        .acquire()
        .await?;
    let waiting = spawn_acquire(client(ctx, patient())?);
    subscribed(&ctx.backend, &channel(ctx)).await?;
    holder.release().await?;
    joined(waiting, "the waiter").await?.release().await?;
    Ok(Verdict::Passed)
}

/// With no wake-up at all (the holder crashed), a waiter still gets the lock once the
/// holder's TTL runs out: waits are bounded by the holder's PTTL.
pub async fn lost_wake_up_is_bounded_by_the_holder_ttl(ctx: &Ctx<'_>) -> CaseResult {
    client(ctx, LockOptions::new().ttl(Duration::from_millis(300)))?
        .acquire()
        .await?
        .abandon();
    let waiting = spawn_acquire(client(ctx, patient())?);
    subscribed(&ctx.backend, &channel(ctx)).await?;
    ctx.advance(Duration::from_millis(400)).await;
    joined(waiting, "the waiter").await?.release().await?;
    Ok(Verdict::Passed)
}

/// A waiter refused for longer than its barging window (here zero) claims the next turn:
/// right after the holder's release a newcomer is refused, and the claimant gets the lock.
pub async fn a_waiter_past_the_barging_window_claims_the_next_turn(ctx: &Ctx<'_>) -> CaseResult {
    let claim = claim_key(ctx);
    let holder = client(ctx, LockOptions::new())?.acquire().await?;
    let waiting = spawn_acquire(client(ctx, patient().barging_window(Duration::ZERO))?);
    eventually("the waiter claimed the next turn", || async {
        Ok(ctx.backend.get(&claim).await?.is_some())
    })
    .await?;
    check!(holder.release().await?, "the holder's release");
    let newcomer = client(ctx, LockOptions::new())?.try_acquire().await?;
    check!(
        newcomer.acquired().is_none(),
        "a newcomer took the lock right after the release, ahead of the claimant"
    );
    let guard = joined(waiting, "the claimant").await?;
    check_eq!(
        ctx.backend.get(&claim).await?,
        None,
        "the claim after the claimant took the lock"
    );
    guard.release().await?;
    Ok(Verdict::Passed)
}

/// A claimant whose policy gives up withdraws its claim before it hears
/// [`LockError::Timeout`]: the next release leaves the lock to anyone.
pub async fn a_claimant_that_gives_up_withdraws_its_claim(ctx: &Ctx<'_>) -> CaseResult {
    let holder = client(ctx, LockOptions::new())?.acquire().await?;
    let policy = AcquirePolicy::retry(Retry::Attempts(2))
        .with_backoff(Backoff::Fixed(Duration::from_millis(1)));
    let impatient = client(
        ctx,
        LockOptions::new()
            .barging_window(Duration::ZERO)
            .policy(policy),
    )?;
    match impatient.acquire().await {
        Err(LockError::Timeout { .. }) => {}
        other => check!(false, "a held lock's impatient acquire answered {other:?}"),
    }
    check_eq!(
        ctx.backend.get(&claim_key(ctx)).await?,
        None,
        "the claim of a waiter told Timeout"
    );
    holder.release().await?;
    let newcomer = client(ctx, LockOptions::new())?.try_acquire().await?;
    let Some(guard) = newcomer.acquired() else {
        return Err(crate::Failure(
            "after the release a newcomer was refused: the claim outlived its waiter".into(),
        ));
    };
    guard.release().await?;
    Ok(Verdict::Passed)
}
