//! Cancellation safety and distinct outcomes.
//!
//! On a network backend, cancelling after 0–5,000 µs drops the future before the command
//! is sent, while it is in flight, or after the reply. An in-process double completes each
//! command in one poll and has no such points; `lock-memory`'s tests cancel it
//! deterministically at every point instead, with injected latency.

use std::time::Duration;

use lock_core::DynBackend;
use lock_core::{
    AcquirePolicy, Attempt, Backoff, FencedLock, KvBackend, LockAlgorithm, LockError, LockGuard,
    LockName, LockOptions, NamedLock, Retry, SetOptions, TokenLock,
};

use crate::{CaseResult, Ctx, Failure, Verdict, check, check_eq};

const CANCEL_AFTER_US: [u64; 10] = [0, 1, 5, 20, 50, 100, 200, 500, 1_000, 5_000];
const TTL: Duration = Duration::from_secs(5);

fn lock(ctx: &Ctx<'_>, name: &LockName, ttl: Duration) -> Result<TokenLock<DynBackend>, LockError> {
    TokenLock::with_options(
        ctx.backend.clone(),
        name,
        LockOptions::new()
            .ttl(ttl)
            .policy(AcquirePolicy::try_once()),
    )
}

/// An acquire dropped at any point leaves no lock, or one that its TTL will free.
pub async fn cancelled_acquires_never_leave_an_unbounded_lock(ctx: &Ctx<'_>) -> CaseResult {
    for (i, us) in CANCEL_AFTER_US.iter().enumerate() {
        let name = ctx.lock_name(&format!("lock{i}"));
        let (key, lock) = (name.lock_key(), lock(ctx, &name, TTL)?);
        match tokio::time::timeout(Duration::from_micros(*us), lock.acquire()).await {
            Ok(acquired) => {
                acquired?.release().await?;
            }
            Err(_cancelled) => {
                let pttl = ctx.backend.pttl(&key).await?;
                check!(
                    pttl == -2 || (0..=5_000).contains(&pttl),
                    "acquire cancelled after {us} µs left PTTL {pttl}"
                );
            }
        }
    }
    Ok(Verdict::Passed)
}

/// A release dropped at any point still frees the lock, well before its TTL: the dropped
/// guard releases in the background with the token it kept.
pub async fn cancelled_releases_still_free_the_lock(ctx: &Ctx<'_>) -> CaseResult {
    for (i, us) in CANCEL_AFTER_US.iter().enumerate() {
        let name = ctx.lock_name(&format!("lock{i}"));
        let key = name.lock_key();
        let guard = lock(ctx, &name, Duration::from_secs(60))?
            .try_acquire()
            .await?
            .acquired()
            .ok_or_else(|| Failure(format!("acquire {i} refused")))?;
        let _ = tokio::time::timeout(Duration::from_micros(*us), guard.release()).await;
        let mut freed = false;
        for _ in 0..200 {
            if ctx.backend.exists(&[&key]).await? == 0 {
                freed = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        check!(
            freed,
            "release cancelled after {us} µs: the lock was still held 2 s later (TTL 60 s)"
        );
    }
    Ok(Verdict::Passed)
}

/// Acquired, held, timed out, not held and backend error are each reported as their own
/// outcome (lost is `lease::lost_resolves_when_the_lock_is_taken`), and the default policy
/// is finite.
pub async fn each_outcome_is_reported_distinctly(ctx: &Ctx<'_>) -> CaseResult {
    let name = ctx.lock_name("lock");
    let holder = lock(ctx, &name, Duration::from_millis(200))?;
    let guard = match holder.try_acquire().await? {
        Attempt::Acquired(guard) => guard,
        _ => return Err(Failure("acquire of a free lock was not `Acquired`".into())),
    };
    let other = lock(ctx, &name, TTL)?;
    check!(
        matches!(
            other.try_acquire().await?,
            Attempt::Held {
                holder_ttl: Some(_)
            }
        ),
        "a held lock was not `Held` with the holder's TTL"
    );
    let patient = TokenLock::with_options(
        ctx.backend.clone(),
        &name,
        LockOptions::new().policy(
            AcquirePolicy::retry(Retry::Attempts(2))
                .with_backoff(Backoff::Fixed(Duration::from_millis(1))),
        ),
    )?;
    check!(
        matches!(
            patient.acquire().await,
            Err(LockError::Timeout { attempts: 2, .. })
        ),
        "giving up was not `Timeout`"
    );
    ctx.advance(Duration::from_millis(300)).await;
    let mut guard = guard;
    check_eq!(
        guard.extend(TTL).await?,
        false,
        "extend after expiry (not held)"
    );
    check_eq!(
        guard.release().await?,
        false,
        "release after expiry (not held)"
    );
    // A failing command inside the acquire (INCR of a fence counter that is not a number)
    // is a backend error of kind Script (raised inside a script, on every backend), not a
    // refusal or a timeout.
    let name = ctx.lock_name("fenced");
    ctx.backend
        .set(&name.key("fence"), b"not a number", SetOptions::new())
        .await?;
    let fenced = FencedLock::with_options(ctx.backend.clone(), &name, LockOptions::new())?;
    match fenced.try_acquire().await {
        Err(LockError::Backend(e)) => check_eq!(
            e.kind(),
            lock_core::ErrorKind::Script,
            "kind of an error raised inside a script ({e})"
        ),
        Err(other) => check!(false, "a failing command was not `Backend`: {other}"),
        Ok(_) => check!(false, "acquire succeeded although its INCR failed"),
    }
    check!(
        AcquirePolicy::default().retry != Retry::Forever,
        "the default policy retries forever"
    );
    Ok(Verdict::Passed)
}
