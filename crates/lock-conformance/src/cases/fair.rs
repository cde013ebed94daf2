//! [`FairLock`]: first-come first-served, with direct hand-off and bounded dead waiters.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lock_core::DynBackend;
use lock_core::scripts::LINE_MARK;
use lock_core::{
    AcquirePolicy, Backoff, CountingBackend, FairGuard, FairLock, KvBackend, LockAlgorithm,
    LockError, LockGuard, LockName, LockOptions, NamedLock, Retry,
};
use tokio::task::JoinHandle;

use super::algorithm::{self, algorithm_cases, extend_case, key_ttl_skew_case};
use super::waiting::{LIVENESS, eventually, joined, patient, spawn_acquire};
use crate::{CaseResult, Ctx, Failure, OverlapDetector, Verdict, check, check_eq};

const PATIENCE: Duration = Duration::from_millis(200);

fn name(ctx: &Ctx<'_>) -> LockName {
    ctx.lock_name("fair")
}

fn lock_key(ctx: &Ctx<'_>) -> Vec<u8> {
    name(ctx).lock_key()
}

/// A handed-over lock's value: the new holder's token, marked as held with a line.
fn marked(token: &[u8]) -> Vec<u8> {
    [token, LINE_MARK].concat()
}

fn client(ctx: &Ctx<'_>, options: LockOptions) -> Result<FairLock<DynBackend>, LockError> {
    FairLock::with_options(ctx.backend.clone(), &name(ctx), options)
}

algorithm_cases!();
extend_case!();
key_ttl_skew_case!();

/// Waits until `n` tickets have been issued: the `n`th waiter is in line.
async fn in_line(ctx: &Ctx<'_>, n: i64) -> Result<(), Failure> {
    let issued = name(ctx).key("issued");
    eventually(&format!("waiter {n} took a ticket"), || async {
        let value = ctx.backend.get(&issued).await?;
        Ok(value.as_deref() == Some(n.to_string().as_bytes()))
    })
    .await
}

/// Four waiters that queued one after another get the lock in that order.
pub async fn waiters_are_served_in_arrival_order(ctx: &Ctx<'_>) -> CaseResult {
    let holder = client(ctx, LockOptions::new())?.acquire().await?;
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for i in 0..4 {
        let (lock, order) = (client(ctx, patient())?, order.clone());
        waiters.push(tokio::spawn(async move {
            let guard = lock.acquire().await?;
            order.lock().expect("order list").push(i);
            Ok(guard.release().await?)
        }));
        in_line(ctx, i + 1).await?;
    }
    holder.release().await?;
    for (i, waiter) in waiters.into_iter().enumerate() {
        joined(waiter, &format!("waiter {i}")).await?;
    }
    let order = order.lock().expect("order list").clone();
    check_eq!(
        order,
        vec![0, 1, 2, 3],
        "order in which the waiters got the lock"
    );
    Ok(Verdict::Passed)
}

/// The release itself writes the next waiter's token into the lock: an outsider arriving
/// at that moment cannot barge in, and the waiter holds the lock before it hears of it.
pub async fn release_hands_the_lock_straight_to_the_next_waiter(ctx: &Ctx<'_>) -> CaseResult {
    let holder = client(ctx, LockOptions::new())?.acquire().await?;
    let waiting = spawn_acquire(client(ctx, patient())?);
    in_line(ctx, 1).await?;
    check!(
        holder.release().await?,
        "the holder's release reported not held"
    );
    let owner = ctx.backend.get(&lock_key(ctx)).await?;
    let outsider = client(ctx, LockOptions::new())?.try_acquire().await?;
    check!(
        outsider.acquired().is_none(),
        "an outsider took the lock between the release and the waiter's wake-up"
    );
    let guard = joined(waiting, "the waiter").await?;
    check_eq!(
        owner,
        Some(marked(guard.token().as_bytes())),
        "lock value right after the release"
    );
    guard.release().await?;
    Ok(Verdict::Passed)
}

/// Puts a waiter in line that will never refresh its ticket or answer a wake-up.
async fn dead_waiter(ctx: &Ctx<'_>) -> Result<(), Failure> {
    let name = name(ctx);
    let ticket = ctx.backend.incr(&name.key("issued")).await?;
    let key = name.key(&format!("ticket:{ticket}"));
    let ttl = i64::try_from(PATIENCE.as_millis()).unwrap_or(i64::MAX);
    ctx.backend
        .set(&key, b"dead-waiter", lock_core::SetOptions::new().px(ttl))
        .await?;
    Ok(())
}

/// A holder, then a dead waiter (ticket 1), then a live one (ticket 2), all with the
/// short patience: the releaser's patience is the hand-off's TTL, so a lock's clients
/// share it.
async fn holder_then_dead_then_live_waiter(
    ctx: &Ctx<'_>,
) -> Result<
    (
        FairGuard<DynBackend>,
        JoinHandle<Result<FairGuard<DynBackend>, LockError>>,
    ),
    Failure,
> {
    let holder = client(ctx, LockOptions::new())?
        .with_patience(PATIENCE)
        .acquire()
        .await?;
    dead_waiter(ctx).await?;
    let waiting = spawn_acquire(client(ctx, patient())?.with_patience(PATIENCE));
    in_line(ctx, 2).await?;
    Ok((holder, waiting))
}

/// A waiter that died while queued loses its place once its patience runs out; the lock
/// then goes to the live waiter behind it.
pub async fn dead_waiter_is_skipped_within_the_patience(ctx: &Ctx<'_>) -> CaseResult {
    let (holder, waiting) = holder_then_dead_then_live_waiter(ctx).await?;
    ctx.advance(PATIENCE + Duration::from_millis(100)).await;
    holder.release().await?;
    joined(waiting, "the live waiter").await?.release().await?;
    Ok(Verdict::Passed)
}

/// A waiter that died just as the lock was handed to it blocks the line only for the
/// patience: the hand-off's TTL is the patience, not the lock's TTL.
pub async fn lock_handed_to_a_dead_waiter_lapses_within_the_patience(ctx: &Ctx<'_>) -> CaseResult {
    let (holder, waiting) = holder_then_dead_then_live_waiter(ctx).await?;
    holder.release().await?;
    let owner = ctx.backend.get(&lock_key(ctx)).await?;
    check_eq!(
        owner,
        Some(marked(b"dead-waiter")),
        "lock after the release"
    );
    let pttl = ctx.backend.pttl(&lock_key(ctx)).await?;
    check!(
        (0..=200).contains(&pttl),
        "the hand-off's PTTL is {pttl} ms, more than the 200 ms patience"
    );
    ctx.advance(PATIENCE + Duration::from_millis(100)).await;
    joined(waiting, "the live waiter").await?.release().await?;
    Ok(Verdict::Passed)
}

/// Cancelling a waiting acquire takes its ticket out of the line, so the next release
/// goes straight to the waiter behind it.
pub async fn cancelled_waiter_leaves_the_line(ctx: &Ctx<'_>) -> CaseResult {
    let holder = client(ctx, LockOptions::new())?.acquire().await?;
    let cancelled = spawn_acquire(client(ctx, patient())?);
    in_line(ctx, 1).await?;
    cancelled.abort();
    let first_ticket = name(ctx).key("ticket:1");
    eventually("the cancelled waiter's ticket was removed", || async {
        Ok(ctx.backend.exists(&[&first_ticket]).await? == 0)
    })
    .await?;
    let waiting = spawn_acquire(client(ctx, patient())?);
    in_line(ctx, 2).await?;
    holder.release().await?;
    let guard = joined(waiting, "the waiter behind the cancelled one").await?;
    guard.release().await?;
    Ok(Verdict::Passed)
}

/// Under contention a cycle costs a ticket and a release: no polling. Four clients run
/// ten cycles each; beyond two commands per cycle only each client's one-time SUBSCRIBE
/// and the retry that follows it are allowed, and twice per client the one command a
/// lock object on the fast path pays when it meets the line: its `SET NX` refused, or
/// its short release sent again in full. Every client starts on the fast path, and one
/// that finds the line empty twice in a row (the others between cycles) returns to it.
/// A waiter that polled would pay on every wait, far beyond this. Waiters that cannot
/// subscribe poll, so the case first checks that SUBSCRIBE works and says so if it does
/// not.
pub async fn contended_cycles_cost_two_commands(ctx: &Ctx<'_>) -> CaseResult {
    const CLIENTS: u64 = 4;
    const CYCLES: u64 = 10;
    if let Err(e) = ctx.backend.subscribe(&name(ctx).key("wake")).await {
        return Err(Failure(format!(
            "the harness declares pub/sub, but SUBSCRIBE failed ({:?}: {e}); without \
             wake-ups fair waiters poll and cycles cost more than two commands",
            e.kind()
        )));
    }
    let counting = CountingBackend::new(ctx.backend.clone());
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let lock = FairLock::with_options(counting.clone(), &name(ctx), patient())?;
        tasks.push(tokio::spawn(async move {
            for _ in 0..CYCLES {
                lock.acquire().await?.release().await?;
            }
            Ok::<_, lock_core::LockError>(())
        }));
    }
    for task in tasks {
        match tokio::time::timeout(LIVENESS, task).await {
            Ok(Ok(Ok(()))) => {}
            other => return Err(Failure(format!("a client did not finish: {other:?}"))),
        }
    }
    let commands = counting.commands();
    let allowed = 2 * CLIENTS * CYCLES + 4 * CLIENTS;
    check!(
        commands <= allowed,
        "{commands} commands for {} cycles (at most {allowed} allowed)",
        CLIENTS * CYCLES
    );
    Ok(Verdict::Passed)
}

/// With nobody waiting, a cycle costs two commands, as a token lock's does (`SET NX PX`
/// and the release), also for a lock object that waited in line before: while its
/// releases find nobody waiting it acquires by the line's script for a cycle, then by
/// `SET NX` again, one command either way.
pub async fn uncontended_cycles_cost_two_commands(ctx: &Ctx<'_>) -> CaseResult {
    const CYCLES: u64 = 10;
    let counting = CountingBackend::new(ctx.backend.clone());
    let lock = FairLock::with_options(counting.clone(), &name(ctx), patient())?;
    let holder = client(ctx, LockOptions::new())?.acquire().await?;
    let waiting = {
        let lock = lock.clone();
        tokio::spawn(async move { lock.acquire().await })
    };
    in_line(ctx, 1).await?;
    holder.release().await?;
    let served = joined(waiting, "the waiter").await?;
    check!(served.release().await?, "the served waiter's release");
    let before = counting.commands();
    for _ in 0..CYCLES {
        check!(
            lock.acquire().await?.release().await?,
            "an uncontended release"
        );
    }
    let commands = counting.commands() - before;
    check_eq!(
        commands,
        2 * CYCLES,
        "commands for {CYCLES} uncontended cycles"
    );
    check_eq!(
        ctx.backend.get(&name(ctx).key("issued")).await?,
        None,
        "tickets left after the line emptied"
    );
    Ok(Verdict::Passed)
}

/// Tasks sharing one lock object pass the hold to each other: a hold with a task of the
/// same object waiting behind it ends in one command (a pass naming the next task's
/// token), so a cycle costs one command instead of two. The backend names every holder's
/// own token, and holds never overlap.
///
/// The four tasks are futures joined in this case's own task, so the order in which they
/// line up does not depend on the runtime's scheduling: the first acquire is one
/// `SET NX`, every later hold is passed on by its predecessor's release (one
/// `FAIR_RELEASE` naming the next token), and the last release is one compare-and-delete.
/// Every run costs exactly `2 + (holds - 1)` commands.
pub async fn tasks_sharing_one_lock_pass_the_hold_in_one_command(ctx: &Ctx<'_>) -> CaseResult {
    const CYCLES: u64 = 10;
    const HOLDS: u64 = 4 * CYCLES;
    let counting = CountingBackend::new(ctx.backend.clone());
    let lock = FairLock::with_options(counting.clone(), &name(ctx), patient())?;
    let key = lock_key(ctx);
    let detector = OverlapDetector::new();
    let task = async || -> Result<(), Failure> {
        for _ in 0..CYCLES {
            let guard = lock.acquire().await?;
            let inside = detector.enter();
            let held = ctx.backend.get(&key).await?;
            check_eq!(
                held.as_deref(),
                Some(guard.token().as_bytes()),
                "the lock's value during a task's hold"
            );
            // On a backend that answers without yielding, let the others line up.
            tokio::task::yield_now().await;
            drop(inside);
            check!(guard.release().await?, "a task's release");
        }
        Ok(())
    };
    // The first task to fail ends the case with its reason.
    tokio::time::timeout(LIVENESS, async {
        tokio::try_join!(task(), task(), task(), task())
    })
    .await
    .map_err(|_| Failure(format!("the tasks did not finish within {LIVENESS:?}")))??;
    check_eq!(detector.violations(), 0, "overlapping holds");
    let commands = counting.commands();
    let expected = 2 + (HOLDS - 1);
    check!(
        commands == expected,
        "{commands} commands for {HOLDS} holds by four tasks sharing one lock object; \
         expected {expected}: the first acquire's SET NX, one FAIR_RELEASE passing each \
         later hold to the next task's token (a reply other than 3 there means the \
         backend did not write the successor's token), and the last release's \
         compare-and-delete"
    );
    check_eq!(
        ctx.backend.get(&key).await?,
        None,
        "the lock after the last release"
    );
    Ok(Verdict::Passed)
}

/// A waiting acquire cancelled after 0 to 5,000 µs (queueing, subscribing, waiting)
/// leaves nothing behind: after the holder's release the next client gets the lock
/// without sitting out anyone's patience.
pub async fn acquire_cancelled_at_any_point_leaves_the_line_clean(ctx: &Ctx<'_>) -> CaseResult {
    for us in [0, 1, 5, 20, 50, 100, 200, 500, 1_000, 5_000] {
        let holder = client(ctx, LockOptions::new())?.acquire().await?;
        let waiter = client(ctx, patient())?;
        let _ = tokio::time::timeout(Duration::from_micros(us), waiter.acquire()).await;
        holder.release().await?;
        // A left-behind ticket would be handed the lock for the 5 s patience; background
        // clean-up takes a round trip. Allow a second.
        let next = client(ctx, LockOptions::new())?;
        let mut free = false;
        for _ in 0..200 {
            if let Some(guard) = next.try_acquire().await?.acquired() {
                free = guard.release().await?;
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        check!(free, "the lock was not free 1 s after a cancel at {us} µs");
    }
    Ok(Verdict::Passed)
}

/// A waiter whose policy gives up is out of the line when its acquire returns
/// [`LockError::Timeout`]: the holder's release that follows frees the lock (nobody is
/// waiting) instead of handing it to the caller that was told it timed out.
pub async fn timed_out_waiter_is_never_handed_the_lock(ctx: &Ctx<'_>) -> CaseResult {
    let holder = client(ctx, LockOptions::new())?.acquire().await?;
    let impatient = client(
        ctx,
        LockOptions::new().policy(
            AcquirePolicy::retry(Retry::Attempts(2))
                .with_backoff(Backoff::Fixed(Duration::from_millis(1))),
        ),
    )?;
    match impatient.acquire().await {
        Err(LockError::Timeout { .. }) => {}
        other => check!(false, "a held lock's impatient acquire answered {other:?}"),
    }
    check!(
        holder.release().await?,
        "the holder's release reported not held"
    );
    check_eq!(
        ctx.backend.get(&lock_key(ctx)).await?,
        None,
        "the lock after the release, with nobody waiting"
    );
    let third = client(ctx, LockOptions::new())?.try_acquire().await?;
    let Some(third) = third.acquired() else {
        return Err(Failure(
            "a third client was refused: the release handed the lock to the timed-out waiter"
                .into(),
        ));
    };
    third.release().await?;
    Ok(Verdict::Passed)
}

/// An acquire allowed one attempt only looks: it takes no ticket, so the line holds
/// nobody after it gives up.
pub async fn impatient_acquire_takes_no_ticket(ctx: &Ctx<'_>) -> CaseResult {
    let holder = client(ctx, LockOptions::new())?.acquire().await?;
    let once = client(ctx, LockOptions::new().policy(AcquirePolicy::try_once()))?;
    match once.acquire().await {
        Err(LockError::Timeout { attempts: 1, .. }) => {}
        other => check!(
            false,
            "a held lock's one-attempt acquire answered {other:?}"
        ),
    }
    check_eq!(
        ctx.backend.get(&name(ctx).key("issued")).await?,
        None,
        "tickets issued by a one-attempt acquire"
    );
    holder.release().await?;
    Ok(Verdict::Passed)
}
