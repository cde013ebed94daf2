//! Seed 001's scripted timestamp lock ([`ScriptedLock`]).

use lock_core::DynBackend;
use lock_core::{LockError, LockOptions, NamedLock, ScriptedLock};

use super::algorithm::{self, algorithm_cases, extend_case};
use crate::{CaseResult, Ctx};

fn lock_key(ctx: &Ctx<'_>) -> Vec<u8> {
    ctx.lock_name("scripted").lock_key()
}

fn client(ctx: &Ctx<'_>, options: LockOptions) -> Result<ScriptedLock<DynBackend>, LockError> {
    ScriptedLock::with_options(ctx.backend.clone(), &ctx.lock_name("scripted"), options)
}

algorithm_cases!();
extend_case!();

/// See [`algorithm::clock_running_ahead_takes_a_live_lock`]: the script compares stamps
/// with the time its caller passes in.
pub async fn clock_running_ahead_takes_a_live_lock(ctx: &Ctx<'_>) -> CaseResult {
    algorithm::clock_running_ahead_takes_a_live_lock(ctx, |o| client(ctx, o)).await
}
