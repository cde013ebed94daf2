//! Seed 000's token lock ([`TokenLock`]).

use lock_core::{LockOptions, TokenLock};

use super::algorithm::{self, algorithm_cases};
use crate::{CaseResult, Ctx, Harness};

fn lock_key<H: Harness>(ctx: &Ctx<'_, H>) -> Vec<u8> {
    ctx.key("lock")
}

fn client<H: Harness>(ctx: &Ctx<'_, H>, options: LockOptions) -> TokenLock<H::Backend> {
    TokenLock::with_options(ctx.backend.clone(), ctx.key("lock"), options)
}

algorithm_cases!();
