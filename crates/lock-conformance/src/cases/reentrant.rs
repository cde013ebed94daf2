//! Seed 000's reentrancy ([`ReentrantLock`]): the common behaviours, each client a new
//! owner, plus hold counting.

use std::time::Duration;

use lock_core::DynBackend;
use lock_core::{
    AcquirePolicy, KvBackend, LockAlgorithm, LockError, LockGuard, LockOptions, LockOwner,
    ReentrantLock, Value, scripts,
};

use super::algorithm::{self, algorithm_cases, extend_case, key_ttl_skew_case};
use crate::{CaseResult, Ctx, Failure, Verdict, check, check_eq};

fn lock_key(ctx: &Ctx<'_>) -> Vec<u8> {
    ctx.lock_name("reentrant").lock_key()
}

fn owned_by(
    ctx: &Ctx<'_>,
    owner: LockOwner,
    options: LockOptions,
) -> Result<ReentrantLock<DynBackend>, LockError> {
    ReentrantLock::with_options(
        ctx.backend.clone(),
        &ctx.lock_name("reentrant"),
        owner,
        options,
    )
}

fn client(ctx: &Ctx<'_>, options: LockOptions) -> Result<ReentrantLock<DynBackend>, LockError> {
    owned_by(ctx, LockOwner::new(), options)
}

algorithm_cases!();
extend_case!();
key_ttl_skew_case!();

/// One owner may hold the lock several times; others wait until every hold is released.
pub async fn holds_are_counted_per_owner(ctx: &Ctx<'_>) -> CaseResult {
    let options = LockOptions::new()
        .ttl(Duration::from_secs(10))
        .policy(AcquirePolicy::try_once());
    let owner = LockOwner::new();
    let mine = owned_by(ctx, owner.clone(), options.clone())?;
    // A second handle of the same owner (another task, say) re-enters too.
    let mine_elsewhere = owned_by(ctx, owner, options.clone())?;
    let other = client(ctx, options)?;
    let first = mine
        .try_acquire()
        .await?
        .acquired()
        .ok_or_else(|| Failure("first hold refused".into()))?;
    let second = mine_elsewhere
        .try_acquire()
        .await?
        .acquired()
        .ok_or_else(|| Failure("re-entry refused".into()))?;
    let third = mine
        .try_acquire()
        .await?
        .acquired()
        .ok_or_else(|| Failure("second re-entry refused".into()))?;
    check_eq!(
        (first.depth(), second.depth(), third.depth()),
        (1, 2, 3),
        "hold depths"
    );
    check!(
        other.try_acquire().await?.acquired().is_none(),
        "another owner acquired a held reentrant lock"
    );
    check_eq!(third.release().await?, true, "release of hold 3");
    check_eq!(first.release().await?, true, "release of hold 1");
    check!(
        other.try_acquire().await?.acquired().is_none(),
        "another owner acquired while one hold remained"
    );
    check_eq!(second.release().await?, true, "release of the last hold");
    check!(
        other.try_acquire().await?.acquired().is_some(),
        "another owner refused after every hold was released"
    );
    Ok(Verdict::Passed)
}

/// Another owner's release is refused (-1) and leaves the count alone.
pub async fn other_owner_cannot_release(ctx: &Ctx<'_>) -> CaseResult {
    let key = lock_key(ctx);
    let mine = client(ctx, LockOptions::new().policy(AcquirePolicy::try_once()))?;
    let guard = mine
        .try_acquire()
        .await?
        .acquired()
        .ok_or_else(|| Failure("hold refused".into()))?;
    let before = ctx.backend.get(&key).await?;
    let reply = ctx
        .backend
        .eval(&scripts::REENTRANT_RELEASE, &[&key], &[b"someone-else"])
        .await?;
    check_eq!(reply, Value::Int(-1), "REENTRANT_RELEASE by another owner");
    check_eq!(
        ctx.backend.get(&key).await?,
        before,
        "lock value after another owner's release"
    );
    check_eq!(guard.release().await?, true, "the owner's release");
    Ok(Verdict::Passed)
}
