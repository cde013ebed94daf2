//! Behaviours every lock algorithm must have, written once and instantiated per algorithm
//! by the `algorithm_cases!` macro. A "client" is a fresh lock object from the algorithm's
//! factory (for reentrant locks, with its own owner); factories answer the algorithm's
//! `with_options`, so options it rejects fail the case with the algorithm's reason.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lock_core::{
    AcquirePolicy, Attempt, Backoff, KvBackend, LockAlgorithm, LockError, LockGuard, LockOptions,
    Retry,
};

use crate::{CaseResult, Ctx, Failure, OverlapDetector, Verdict, check, check_eq};

const MS: Duration = Duration::from_millis(1);

/// Tasks fighting for one key in [`mutual_exclusion`].
pub const CONTENDING_TASKS: usize = 16;
/// Critical sections each of them enters.
pub const ROUNDS_PER_TASK: usize = 8;

/// What a case's lock factory is: options in, a lock (or the algorithm's refusal) out.
pub trait Client<A>: Fn(LockOptions) -> Result<A, LockError> {}
impl<A, F: Fn(LockOptions) -> Result<A, LockError>> Client<A> for F {}

fn short(ttl: Duration) -> LockOptions {
    LockOptions::new()
        .ttl(ttl)
        .policy(AcquirePolicy::try_once())
}

async fn acquired<G>(attempt: Result<Attempt<G>, LockError>, who: &str) -> Result<G, Failure> {
    match attempt? {
        Attempt::Acquired(guard) => Ok(guard),
        other => Err(Failure(format!(
            "{who} did not acquire: {}",
            describe(&other)
        ))),
    }
}

fn describe<G>(attempt: &Attempt<G>) -> String {
    match attempt {
        Attempt::Acquired(_) => "acquired".into(),
        Attempt::Held { holder_ttl } => format!("held (holder ttl {holder_ttl:?})"),
        Attempt::Contended => "contended".into(),
        Attempt::ValidityLost { elapsed } => format!("validity lost after {elapsed:?}"),
        _ => "another outcome".into(),
    }
}

/// 16 tasks × 8 rounds on one key: never two inside at once, and a counter incremented
/// with a yield between read and write ends exact.
pub async fn mutual_exclusion<A>(client: impl Client<A>) -> CaseResult
where
    A: LockAlgorithm + 'static,
    A::Guard: 'static,
{
    let detector = Arc::new(OverlapDetector::new());
    let counter = Arc::new(AtomicU64::new(0));
    let policy = AcquirePolicy::retry(Retry::For(Duration::from_secs(30))).with_backoff(
        Backoff::Exponential {
            initial: Duration::from_micros(100),
            max: 5 * MS,
            jitter: true,
        },
    );
    let mut tasks = Vec::new();
    for _ in 0..CONTENDING_TASKS {
        let lock = client(
            LockOptions::new()
                .ttl(Duration::from_secs(10))
                .policy(policy),
        )?;
        let (detector, counter) = (detector.clone(), counter.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS_PER_TASK {
                let guard = lock.acquire().await?;
                {
                    let _inside = detector.enter();
                    let seen = counter.load(Ordering::Acquire);
                    tokio::task::yield_now().await;
                    counter.store(seen + 1, Ordering::Release);
                }
                if !guard.release().await? {
                    return Err(Failure("release said the lock was no longer held".into()));
                }
            }
            Ok::<(), Failure>(())
        }));
    }
    for task in tasks {
        task.await
            .map_err(|e| Failure(format!("a contending task panicked: {e}")))??;
    }
    check_eq!(detector.violations(), 0, "overlapping critical sections");
    check_eq!(
        counter.load(Ordering::Acquire),
        (CONTENDING_TASKS * ROUNDS_PER_TASK) as u64,
        "counter after {CONTENDING_TASKS}x{ROUNDS_PER_TASK} increments"
    );
    Ok(Verdict::Passed)
}

/// A second client is refused while the first holds the lock, and learns roughly how long
/// the holder has left.
pub async fn second_client_is_refused_while_held<A: LockAlgorithm>(
    client: impl Client<A>,
) -> CaseResult {
    let ttl = Duration::from_secs(5);
    let (a, b) = (client(short(ttl))?, client(short(ttl))?);
    let guard = acquired(a.try_acquire().await, "A").await?;
    match b.try_acquire().await? {
        Attempt::Held {
            holder_ttl: Some(left),
        } => check!(
            left <= ttl && left > ttl / 2,
            "B was told the holder has {left:?} of {ttl:?} left"
        ),
        other => check!(false, "B while A holds: {}", describe(&other)),
    }
    check_eq!(guard.release().await?, true, "A's release");
    acquired(b.try_acquire().await, "B after A released").await?;
    Ok(Verdict::Passed)
}

/// A holder that crashes (never releases) loses the lock when its TTL runs out.
pub async fn expiry_frees_a_crashed_holder<A: LockAlgorithm>(
    ctx: &Ctx<'_>,
    client: impl Client<A>,
) -> CaseResult {
    let (a, b) = (client(short(200 * MS))?, client(short(200 * MS))?);
    acquired(a.try_acquire().await, "A").await?.abandon();
    check!(
        b.try_acquire().await?.acquired().is_none(),
        "B acquired while the crashed A's TTL was running"
    );
    ctx.advance(300 * MS).await;
    acquired(b.try_acquire().await, "B after A's TTL").await?;
    Ok(Verdict::Passed)
}

/// Releasing answers true and frees the lock at once.
pub async fn release_frees_the_lock<A: LockAlgorithm>(client: impl Client<A>) -> CaseResult {
    let (a, b) = (
        client(short(Duration::from_secs(10)))?,
        client(short(Duration::from_secs(10)))?,
    );
    let guard = acquired(a.try_acquire().await, "A").await?;
    check_eq!(guard.release().await?, true, "release of a held lock");
    let guard = acquired(b.try_acquire().await, "B right after A's release").await?;
    check_eq!(guard.release().await?, true, "B's release");
    Ok(Verdict::Passed)
}

/// A holder whose TTL ran out, and whose lock was taken by another, gets `false` from
/// release and does not touch the new holder's key.
pub async fn stale_release_leaves_the_new_holder<A: LockAlgorithm>(
    ctx: &Ctx<'_>,
    key: &[u8],
    client: impl Client<A>,
) -> CaseResult {
    let (a, b) = (
        client(short(100 * MS))?,
        client(short(Duration::from_secs(10)))?,
    );
    let stale = acquired(a.try_acquire().await, "A").await?;
    ctx.advance(200 * MS).await;
    let holder = acquired(b.try_acquire().await, "B after A expired").await?;
    let before = ctx.backend.get(key).await?;
    check_eq!(stale.release().await?, false, "A's release after expiry");
    check_eq!(
        ctx.backend.get(key).await?,
        before,
        "B's lock value after A's stale release"
    );
    check_eq!(holder.release().await?, true, "B's release");
    Ok(Verdict::Passed)
}

/// Extending keeps the lock past its original TTL; a stale holder's extend answers false
/// and leaves the new holder's TTL alone.
pub async fn extend_keeps_the_lock_and_stale_extend_fails<A: LockAlgorithm>(
    ctx: &Ctx<'_>,
    key: &[u8],
    client: impl Client<A>,
) -> CaseResult {
    let (a, b) = (
        client(short(300 * MS))?,
        client(short(Duration::from_secs(10)))?,
    );
    let mut guard = acquired(a.try_acquire().await, "A").await?;
    ctx.advance(200 * MS).await;
    check_eq!(
        guard.extend(Duration::from_secs(2)).await?,
        true,
        "A's extend while holding"
    );
    ctx.advance(200 * MS).await;
    check!(
        b.try_acquire().await?.acquired().is_none(),
        "B acquired although A extended"
    );
    ctx.advance(Duration::from_secs(2)).await;
    let holder = acquired(b.try_acquire().await, "B after A's extension ran out").await?;
    check_eq!(
        guard.extend(Duration::from_secs(60)).await?,
        false,
        "A's stale extend"
    );
    let pttl = ctx.backend.pttl(key).await?;
    check!(
        pttl <= 11_000,
        "B's lock TTL is {pttl} ms after A's stale extend (A extended it)"
    );
    drop(guard);
    check_eq!(holder.release().await?, true, "B's release");
    Ok(Verdict::Passed)
}

/// The acquire policy gives up with [`LockError::Timeout`], after the number of attempts or
/// the time it was given.
pub async fn acquire_gives_up_with_a_timeout<A: LockAlgorithm>(
    client: impl Client<A>,
) -> CaseResult {
    let holder = client(short(Duration::from_secs(10)))?;
    let _held = acquired(holder.try_acquire().await, "holder").await?;
    let three = client(
        LockOptions::new()
            .policy(AcquirePolicy::retry(Retry::Attempts(3)).with_backoff(Backoff::Fixed(MS))),
    )?;
    match three.acquire().await {
        Err(LockError::Timeout { attempts, .. }) => {
            check_eq!(attempts, 3, "attempts before giving up")
        }
        Err(e) => check!(
            false,
            "Retry::Attempts(3) failed with {e} instead of a timeout"
        ),
        Ok(_) => check!(false, "acquired a held lock"),
    }
    // 200 ms, ten backoffs of 10 ms: a second attempt even where a loaded machine makes
    // one round trip of a real server take tens of milliseconds.
    let deadline =
        client(LockOptions::new().policy(
            AcquirePolicy::retry(Retry::For(200 * MS)).with_backoff(Backoff::Fixed(10 * MS)),
        ))?;
    match deadline.acquire().await {
        Err(LockError::Timeout {
            waited, attempts, ..
        }) => {
            check!(
                waited >= 200 * MS,
                "gave up after {waited:?}, before its 200 ms"
            );
            check!(attempts >= 2, "gave up after {attempts} attempt(s)");
        }
        Err(e) => check!(
            false,
            "Retry::For(200ms) failed with {e} instead of a timeout"
        ),
        Ok(_) => check!(false, "acquired a held lock"),
    }
    Ok(Verdict::Passed)
}

/// Dropping a guard without releasing it releases it in the background.
pub async fn dropped_guard_is_released_in_the_background<A: LockAlgorithm>(
    client: impl Client<A>,
) -> CaseResult {
    let (a, b) = (
        client(short(Duration::from_secs(30)))?,
        client(short(Duration::from_secs(30)))?,
    );
    drop(acquired(a.try_acquire().await, "A").await?);
    for _ in 0..400 {
        if let Some(guard) = b.try_acquire().await?.acquired() {
            guard.release().await?;
            return Ok(Verdict::Passed);
        }
        tokio::time::sleep(5 * MS).await;
    }
    Err(Failure(
        "the dropped guard's lock was still held 2 s later".into(),
    ))
}

/// How far ahead the skewed client's clock runs: far past the holder's TTL.
const SKEW: Duration = Duration::from_secs(60);

/// A holds the lock (10 s TTL); B's clock runs [`SKEW`] ahead and B tries to take the lock.
/// Returns A's and B's guards if B got it.
async fn skewed_client_tries<A: LockAlgorithm>(
    clock: lock_core::Clock,
    client: impl Client<A>,
) -> Result<(A::Guard, Option<A::Guard>), Failure> {
    let skew_ms = i64::try_from(SKEW.as_millis()).unwrap_or(i64::MAX);
    let a = client(short(Duration::from_secs(10)))?;
    let b = client(short(Duration::from_secs(10)).clock(clock.skewed(skew_ms)))?;
    let held = acquired(a.try_acquire().await, "A").await?;
    let stolen = b.try_acquire().await?.acquired();
    Ok((held, stolen))
}

/// A client whose clock runs a minute ahead is still refused while A holds the lock: the
/// key's TTL is kept by the server's clock, so a client's clock cannot end it early.
pub async fn clock_running_ahead_cannot_take_a_live_lock<A: LockAlgorithm>(
    ctx: &Ctx<'_>,
    client: impl Client<A>,
) -> CaseResult {
    let (held, stolen) = skewed_client_tries(ctx.clock(), client).await?;
    check!(
        stolen.is_none(),
        "a client whose clock runs {SKEW:?} ahead took A's live lock"
    );
    check_eq!(held.release().await?, true, "A's release");
    Ok(Verdict::Passed)
}

/// The timestamp locks' clock-skew hazard (seeds 002-004 store wall-clock stamps): a
/// client whose clock runs a minute ahead reads A's live stamp as passed and takes the
/// lock over. Passes by demonstrating the two holders.
pub async fn clock_running_ahead_takes_a_live_lock<A: LockAlgorithm>(
    ctx: &Ctx<'_>,
    client: impl Client<A>,
) -> CaseResult {
    let (held, stolen) = skewed_client_tries(ctx.clock(), client).await?;
    let Some(stolen) = stolen else {
        return Err(Failure(format!(
            "a client whose clock runs {SKEW:?} ahead was refused; the stamp lock's skew \
             hazard did not show"
        )));
    };
    held.abandon();
    stolen.abandon();
    Ok(Verdict::ExpectedFailure(format!(
        "two holders: B's clock runs {SKEW:?} ahead, so B read A's live stamp as passed \
         and took the lock over"
    )))
}

/// Expands to one `pub async fn` per behaviour above for the algorithm built by
/// `client(ctx, options)`, whose key is `lock_key(ctx)`, in the invoking module.
macro_rules! algorithm_cases {
    () => {
        /// Mutual exclusion under contention (see [`algorithm::mutual_exclusion`]).
        pub async fn mutual_exclusion(ctx: &Ctx<'_>) -> CaseResult {
            algorithm::mutual_exclusion(|o| client(ctx, o)).await
        }
        /// See [`algorithm::second_client_is_refused_while_held`].
        pub async fn second_client_is_refused_while_held(ctx: &Ctx<'_>) -> CaseResult {
            algorithm::second_client_is_refused_while_held(|o| client(ctx, o)).await
        }
        /// See [`algorithm::expiry_frees_a_crashed_holder`].
        pub async fn expiry_frees_a_crashed_holder(ctx: &Ctx<'_>) -> CaseResult {
            algorithm::expiry_frees_a_crashed_holder(ctx, |o| client(ctx, o)).await
        }
        /// See [`algorithm::release_frees_the_lock`].
        pub async fn release_frees_the_lock(ctx: &Ctx<'_>) -> CaseResult {
            algorithm::release_frees_the_lock(|o| client(ctx, o)).await
        }
        /// See [`algorithm::stale_release_leaves_the_new_holder`].
        pub async fn stale_release_leaves_the_new_holder(ctx: &Ctx<'_>) -> CaseResult {
            algorithm::stale_release_leaves_the_new_holder(ctx, &lock_key(ctx), |o| client(ctx, o))
                .await
        }
        /// See [`algorithm::acquire_gives_up_with_a_timeout`].
        pub async fn acquire_gives_up_with_a_timeout(ctx: &Ctx<'_>) -> CaseResult {
            algorithm::acquire_gives_up_with_a_timeout(|o| client(ctx, o)).await
        }
        /// See [`algorithm::dropped_guard_is_released_in_the_background`].
        pub async fn dropped_guard_is_released_in_the_background(ctx: &Ctx<'_>) -> CaseResult {
            algorithm::dropped_guard_is_released_in_the_background(|o| client(ctx, o)).await
        }
    };
}
pub(crate) use algorithm_cases;

/// The extend case, for algorithms that can extend (see [`algorithm_cases!`]).
macro_rules! extend_case {
    () => {
        /// See [`algorithm::extend_keeps_the_lock_and_stale_extend_fails`].
        pub async fn extend_keeps_the_lock_and_stale_extend_fails(ctx: &Ctx<'_>) -> CaseResult {
            algorithm::extend_keeps_the_lock_and_stale_extend_fails(ctx, &lock_key(ctx), |o| {
                client(ctx, o)
            })
            .await
        }
    };
}
pub(crate) use extend_case;

/// The clock-skew case for algorithms whose holds are key TTLs, kept by the server.
macro_rules! key_ttl_skew_case {
    () => {
        /// See [`algorithm::clock_running_ahead_cannot_take_a_live_lock`].
        pub async fn clock_running_ahead_cannot_take_a_live_lock(ctx: &Ctx<'_>) -> CaseResult {
            algorithm::clock_running_ahead_cannot_take_a_live_lock(ctx, |o| client(ctx, o)).await
        }
    };
}
pub(crate) use key_ttl_skew_case;
