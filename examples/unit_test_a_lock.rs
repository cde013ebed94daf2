//! For application developers: test lock code with the in-memory double, on virtual time,
//! with faults, and no Redis server. Each step below is what a `#[tokio::test(start_paused
//! = true)]` would assert.
//!
//! `cargo run --release -p nxlock-examples --example unit_test_a_lock`

use std::time::Duration;

use nxlock::prelude::*;
use nxlock::{
    AcquirePolicy, ErrorKind, FencedLock, LockName, LockOptions, MemoryBackend, Retry, TokenLock,
};

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() -> Result<(), nxlock::LockError> {
    let redis = MemoryBackend::new();
    let name = LockName::new("invoices:2026-11")?;
    let patient = LockOptions::new()
        .ttl(Duration::from_secs(30))
        .policy(AcquirePolicy::retry(Retry::For(Duration::from_secs(60))));

    // A worker crashes while holding the lock: the next one waits out the 30 s TTL, in
    // no wall time at all.
    let worker = TokenLock::with_options(redis.clone(), &name, patient.clone())?;
    worker.acquire().await?.abandon();
    let started = tokio::time::Instant::now();
    let next = worker.acquire().await?;
    println!(
        "a crashed holder's lock came free after {:?} (virtual)",
        started.elapsed()
    );
    assert!(started.elapsed() >= Duration::from_secs(30));

    // A release that fails is retried with the guard the error hands back.
    redis
        .faults()
        .fail_command("EVALSHA", 1, ErrorKind::Timeout);
    let released = match next.release().await {
        Ok(held) => held,
        Err(unknown) => {
            println!("release failed ({}), retrying", unknown.error());
            unknown.into_guard().release().await?
        }
    };
    assert!(released);

    // The SET of an acquire runs but its reply is lost: the retry recognises its own
    // token instead of waiting for its own lock.
    redis.faults().lose_replies(Some("SET"), 1);
    let guard = worker.acquire().await?;
    println!("acquired after a lost reply: {guard:?}");
    guard.release().await?;

    // Fencing: a holder paused past its TTL gets a lower fence than its successor, so a
    // resource that keeps the highest fence it has seen refuses the stale write.
    let fenced = FencedLock::with_options(
        redis.clone(),
        &LockName::new("ledger")?,
        LockOptions::new().ttl(Duration::from_secs(1)),
    )?;
    let paused = fenced.acquire().await?;
    tokio::time::sleep(Duration::from_secs(2)).await; // a GC pause longer than the TTL
    let successor = fenced.acquire().await?;
    assert!(successor.fence() > paused.fence());
    println!(
        "paused holder's fence {} < successor's {}: the stale write is refused",
        paused.fence(),
        successor.fence()
    );
    assert!(
        !paused.release().await?,
        "the paused holder's lock was taken over"
    );
    successor.release().await?;

    println!("{}", redis.dump());
    Ok(())
}
