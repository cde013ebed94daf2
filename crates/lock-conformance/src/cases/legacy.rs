//! Seeds 002-004's client-side timestamp lock ([`LegacyLock`]).

use lock_core::{LegacyLock, LockOptions};

use super::algorithm::{self, algorithm_cases};
use crate::{CaseResult, Ctx, Harness};

fn lock_key<H: Harness>(ctx: &Ctx<'_, H>) -> Vec<u8> {
    ctx.key("lock")
}

fn client<H: Harness>(ctx: &Ctx<'_, H>, options: LockOptions) -> LegacyLock<H::Backend> {
    LegacyLock::with_options(ctx.backend.clone(), ctx.key("lock"), options)
}

algorithm_cases!();
