//! The seeds' races, replayed step by step. Each step is one command in a fixed order, so
//! the interleaving is deterministic on any backend; time moves only through the harness.

use std::time::Duration;

use lock_core::{
    AcquirePolicy, KvBackend, LegacyLock, LockAlgorithm, LockGuard, LockOptions, NamedLock,
    TokenLock,
};

use super::algorithm;
use crate::{CaseResult, Ctx, Failure, Verdict, check, check_eq};

const MS: Duration = Duration::from_millis(1);

fn stamp(ms: i64) -> Vec<u8> {
    ms.to_string().into_bytes()
}

fn is_expired(value: Option<Vec<u8>>, now: i64) -> bool {
    value
        .and_then(|v| String::from_utf8(v).ok())
        .and_then(|s| s.parse::<i64>().ok())
        .is_some_and(|at| at <= now)
}

/// C0 takes `key` with a 100 ms stamp and crashes; 200 ms pass. Returns the time then.
async fn crashed_holder_expired(ctx: &Ctx<'_>, key: &[u8]) -> Result<i64, Failure> {
    let clock = ctx.clock();
    ctx.backend.setnx(key, &stamp(clock.now_ms() + 100)).await?;
    ctx.advance(200 * MS).await;
    Ok(clock.now_ms())
}

/// C1 and C2 each `GET` the lock and find C0's stamp expired.
async fn both_read_an_expired_stamp(ctx: &Ctx<'_>, key: &[u8], now: i64) -> Result<(), Failure> {
    for client in ["C1", "C2"] {
        check!(
            is_expired(ctx.backend.get(key).await?, now),
            "{client} does not see C0's stamp expired"
        );
    }
    Ok(())
}

/// A crashed holder C0 left `lock.foo` with an expired stamp; C1 and C2 both see it expired
/// and use seed 003/004's naive recovery (DEL, then SETNX). Both succeed: the lock has two
/// holders. This case passes by *demonstrating* that failure.
pub async fn naive_del_then_setnx_recovery_lets_two_clients_hold(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("lock.foo"));
    let now = crashed_holder_expired(ctx, &k).await?;
    let (c1, c2) = (stamp(now + 3_000), stamp(now + 3_001));
    check!(
        !b.setnx(&k, &c1).await?,
        "C1's SETNX succeeded over C0's lock"
    );
    check!(
        !b.setnx(&k, &c2).await?,
        "C2's SETNX succeeded over C0's lock"
    );
    both_read_an_expired_stamp(ctx, &k, now).await?;
    b.del(&[&k]).await?;
    let c1_holds = b.setnx(&k, &c1).await?;
    b.del(&[&k]).await?;
    let c2_holds = b.setnx(&k, &c2).await?;
    if c1_holds && c2_holds {
        return Ok(Verdict::ExpectedFailure(
            "naive DEL+SETNX recovery: C1 and C2 both acquired lock.foo (seeds 003/004)".into(),
        ));
    }
    Err(Failure(format!(
        "the naive recovery's race did not reproduce (C1 {c1_holds}, C2 {c2_holds})"
    )))
}

/// The same situation with GETSET recovery (seeds 002-004): only the client whose GETSET
/// returned the expired stamp owns the lock; the other sees a live stamp and backs off.
pub async fn getset_recovery_keeps_exclusion(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("lock.foo"));
    let now = crashed_holder_expired(ctx, &k).await?;
    let (c1, c2) = (stamp(now + 3_000), stamp(now + 3_001));
    both_read_an_expired_stamp(ctx, &k, now).await?;
    let c1_holds = is_expired(b.getset(&k, &c1).await?, now);
    let c2_holds = is_expired(b.getset(&k, &c2).await?, now);
    check_eq!(
        (c1_holds, c2_holds),
        (true, false),
        "(C1 holds, C2 holds) after both GETSETs"
    );
    // The documented hazard: C2's losing GETSET overwrote C1's stamp with its own.
    check_eq!(b.get(&k).await?, Some(c2), "stamp after C2's losing GETSET");

    // And through LegacyLock itself.
    let bar = ctx.lock_name("lock.bar");
    let options = LockOptions::new()
        .ttl(100 * MS)
        .policy(AcquirePolicy::try_once());
    let client = || LegacyLock::with_options(b.clone(), &bar, options.clone());
    client()?
        .try_acquire()
        .await?
        .acquired()
        .ok_or_else(|| Failure("C0 refused".into()))?
        .abandon();
    ctx.advance(200 * MS).await;
    let first = client()?.try_acquire().await?.acquired();
    check!(
        first.is_some(),
        "LegacyLock C1 did not recover the expired lock"
    );
    check!(
        client()?.try_acquire().await?.acquired().is_none(),
        "LegacyLock C2 acquired while C1 held"
    );
    Ok(Verdict::Passed)
}

/// C1's lock expired while it was paused and C2 took it; C1 then "releases" with a plain
/// DEL (seed 002's release) and deletes C2's lock. Passes by demonstrating that failure.
pub async fn unchecked_late_del_removes_another_clients_lock(ctx: &Ctx<'_>) -> CaseResult {
    let b = &ctx.backend;
    let name = ctx.lock_name("lock.foo");
    let k = name.lock_key();
    let options = LockOptions::new()
        .ttl(100 * MS)
        .policy(AcquirePolicy::try_once());
    let c1 = TokenLock::with_options(b.clone(), &name, options.clone())?;
    let c2 = TokenLock::with_options(b.clone(), &name, options.ttl(Duration::from_secs(10)))?;
    let paused = c1
        .try_acquire()
        .await?
        .acquired()
        .ok_or_else(|| Failure("C1 refused".into()))?;
    ctx.advance(200 * MS).await;
    let holder = c2
        .try_acquire()
        .await?
        .acquired()
        .ok_or_else(|| Failure("C2 refused".into()))?;
    paused.abandon();
    let deleted = b.del(&[&k]).await?;
    if deleted == 1 && b.get(&k).await?.is_none() {
        holder.abandon();
        return Ok(Verdict::ExpectedFailure(
            "C1's unchecked DEL removed C2's live lock".into(),
        ));
    }
    Err(Failure(format!(
        "the unchecked DEL did not remove C2's lock (DEL answered {deleted})"
    )))
}

/// The same pause with checked releases: the token lock's compare-and-delete and the
/// legacy lock's time check both leave C2's lock in place.
pub async fn checked_release_leaves_the_new_holder(ctx: &Ctx<'_>) -> CaseResult {
    let (token, legacy) = (ctx.lock_name("token"), ctx.lock_name("legacy"));
    let b = &ctx.backend;
    algorithm::stale_release_leaves_the_new_holder(ctx, &token.lock_key(), |o| {
        TokenLock::with_options(b.clone(), &token, o)
    })
    .await?;
    algorithm::stale_release_leaves_the_new_holder(ctx, &legacy.lock_key(), |o| {
        LegacyLock::with_options(b.clone(), &legacy, o)
    })
    .await
}
