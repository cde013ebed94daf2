//! Seed 000's token lock ([`TokenLock`]).

use lock_core::{LockError, LockOptions, TokenLock};

use super::algorithm::{self, algorithm_cases, extend_case, key_ttl_skew_case};
use crate::{CaseResult, Ctx, Harness};

fn lock_key<H: Harness>(ctx: &Ctx<'_, H>) -> Vec<u8> {
    ctx.lock_name("token").lock_key()
}

fn client<H: Harness>(
    ctx: &Ctx<'_, H>,
    options: LockOptions,
) -> Result<TokenLock<H::Backend>, LockError> {
    TokenLock::with_options(ctx.backend.clone(), &ctx.lock_name("token"), options)
}

algorithm_cases!();
extend_case!();
key_ttl_skew_case!();
