//! Seeds 002-004's client-side timestamp lock ([`LegacyLock`]).

use std::time::Duration;

use lock_core::DynBackend;
use lock_core::{
    AcquirePolicy, KvBackend, LegacyLock, LockAlgorithm, LockError, LockGuard, LockOptions,
    NamedLock,
};

use super::algorithm::{self, algorithm_cases};
use crate::{CaseResult, Ctx, Failure, Verdict, check, check_eq};

fn lock_key(ctx: &Ctx<'_>) -> Vec<u8> {
    ctx.lock_name("legacy").lock_key()
}

fn client(ctx: &Ctx<'_>, options: LockOptions) -> Result<LegacyLock<DynBackend>, LockError> {
    LegacyLock::with_options(ctx.backend.clone(), &ctx.lock_name("legacy"), options)
}

algorithm_cases!();

/// The client-side timestamp lock cannot extend safely without a script, so `extend` is
/// [`LockError::Unsupported`], and it changes neither the stamp nor the lock's holder.
pub async fn extend_is_unsupported_and_changes_nothing(ctx: &Ctx<'_>) -> CaseResult {
    let options = LockOptions::new()
        .ttl(Duration::from_secs(10))
        .policy(AcquirePolicy::try_once());
    let mut guard = client(ctx, options)?
        .try_acquire()
        .await?
        .acquired()
        .ok_or_else(|| Failure("the first acquire was refused".into()))?;
    let before = ctx.backend.get(&lock_key(ctx)).await?;
    match guard.extend(Duration::from_secs(60)).await {
        Err(LockError::Unsupported { operation, .. }) => {
            check_eq!(operation, "extend", "the unsupported operation")
        }
        other => check!(false, "extend answered {other:?}, not Unsupported"),
    }
    check_eq!(
        ctx.backend.get(&lock_key(ctx)).await?,
        before,
        "the stamp after a refused extend"
    );
    check_eq!(
        guard.release().await?,
        true,
        "release after the refused extend"
    );
    Ok(Verdict::Passed)
}

/// See [`algorithm::clock_running_ahead_takes_a_live_lock`].
pub async fn clock_running_ahead_takes_a_live_lock(ctx: &Ctx<'_>) -> CaseResult {
    algorithm::clock_running_ahead_takes_a_live_lock(ctx, |o| client(ctx, o)).await
}
