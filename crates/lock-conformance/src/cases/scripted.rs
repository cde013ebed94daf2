//! Seed 001's scripted timestamp lock ([`ScriptedLock`]).

use lock_core::{LockOptions, ScriptedLock};

use super::algorithm::{self, algorithm_cases};
use crate::{CaseResult, Ctx, Harness};

fn lock_key<H: Harness>(ctx: &Ctx<'_, H>) -> Vec<u8> {
    ctx.key("lock")
}

fn client<H: Harness>(ctx: &Ctx<'_, H>, options: LockOptions) -> ScriptedLock<H::Backend> {
    ScriptedLock::with_options(ctx.backend.clone(), ctx.key("lock"), options)
}

algorithm_cases!();
