//! Seed 000's token lock ([`TokenLock`]).

use lock_core::DynBackend;
use lock_core::{LockError, LockOptions, NamedLock, TokenLock};

use super::algorithm::{self, algorithm_cases, extend_case, key_ttl_skew_case};
use crate::{CaseResult, Ctx};

fn lock_key(ctx: &Ctx<'_>) -> Vec<u8> {
    ctx.lock_name("token").lock_key()
}

fn client(ctx: &Ctx<'_>, options: LockOptions) -> Result<TokenLock<DynBackend>, LockError> {
    TokenLock::with_options(ctx.backend.clone(), &ctx.lock_name("token"), options)
}

algorithm_cases!();
extend_case!();
key_ttl_skew_case!();
