//! [`Wait::Notify`]: a token lock whose releases wake waiters.

use std::time::Duration;

use lock_core::{KvBackend, LockAlgorithm, LockError, LockGuard, LockOptions, TokenLock, Wait};

use super::algorithm::{self, algorithm_cases, extend_case, key_ttl_skew_case};
use super::waiting::{LIVENESS, joined, patient, spawn_acquire, subscribed};
use crate::{CaseResult, Ctx, Harness, Verdict, check};

fn lock_key<H: Harness>(ctx: &Ctx<'_, H>) -> Vec<u8> {
    ctx.lock_name("notify").lock_key()
}

fn channel<H: Harness>(ctx: &Ctx<'_, H>) -> Vec<u8> {
    ctx.lock_name("notify").key("wake")
}

fn client<H: Harness>(
    ctx: &Ctx<'_, H>,
    options: LockOptions,
) -> Result<TokenLock<H::Backend>, LockError> {
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
pub async fn release_publishes_a_wake_up<H: Harness>(ctx: &Ctx<'_, H>) -> CaseResult {
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
pub async fn waiter_wakes_on_release_not_at_the_holder_ttl<H: Harness>(
    ctx: &Ctx<'_, H>,
) -> CaseResult {
    let holder = client(ctx, LockOptions::new().ttl(Duration::from_secs(60)))?
        .acquire()
        .await?;
    let waiting = spawn_acquire(client(ctx, patient())?);
    subscribed::<H>(&ctx.backend, &channel(ctx)).await?;
    holder.release().await?;
    joined(waiting, "the waiter").await?.release().await?;
    Ok(Verdict::Passed)
}

/// With no wake-up at all (the holder crashed), a waiter still gets the lock once the
/// holder's TTL runs out: waits are bounded by the holder's PTTL.
pub async fn lost_wake_up_is_bounded_by_the_holder_ttl<H: Harness>(ctx: &Ctx<'_, H>) -> CaseResult {
    client(ctx, LockOptions::new().ttl(Duration::from_millis(300)))?
        .acquire()
        .await?
        .abandon();
    let waiting = spawn_acquire(client(ctx, patient())?);
    subscribed::<H>(&ctx.backend, &channel(ctx)).await?;
    ctx.advance(Duration::from_millis(400)).await;
    joined(waiting, "the waiter").await?.release().await?;
    Ok(Verdict::Passed)
}
