//! For application developers: search your own lock code for the bugs nobody scripted.
//!
//! `MyLock` below is written the way users write locks: `SET NX PX` with a token, an
//! extend and a release in Lua. Its Lua runs on the double exactly as a server would run
//! it (feature `lua`). Three versions of it carry a planted bug each; the explorer finds
//! every one by search alone, shrinks it to a few fault steps, and saves a replay file
//! that turns into a regression test. The correct version stays clean.
//!
//! `cargo run --release -p nxlock-examples --example explore_my_lock`

use std::time::Duration;

use nxlock::ErrorKind;
use nxlock::backend::SetOptions;
use nxlock::explore::{Context, Explorer, FaultKind, ViolationKind};
use nxlock::memory::LuaScripts;
use nxlock::prelude::*;
use nxlock::script::Script;

const TTL: Duration = Duration::from_millis(1_000);
const TTL_MS: i64 = 1_000;

/// The bug planted in a version of the lock.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Bug {
    None,
    /// Release deletes the key without checking that it still holds our token.
    ReleaseWithoutTokenCheck,
    /// Extend resets the key's TTL whoever holds it.
    ExtendWithoutOwnership,
    /// Acquire writes the key first and sets its TTL in a second command.
    TtlAfterWrite,
}

/// A user's lock: one key, a random token, a validity deadline on the client's clock.
struct MyLock<B> {
    backend: B,
    bug: Bug,
    token: String,
}

const RELEASE: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
const EXTEND: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";

impl<B: KvBackend + Clone + 'static> MyLock<B> {
    fn new(backend: B, bug: Bug, client: usize, cycle: u32) -> Self {
        // Tokens must come from something the explorer controls for runs to replay:
        // here, the client and cycle (a real lock would use nxlock::fresh_token()).
        let token = format!("client-{client}-cycle-{cycle}");
        Self {
            backend,
            bug,
            token,
        }
    }

    /// Tries for a while; the deadline (client clock, ms) until which the lock is ours.
    async fn acquire(&self) -> Option<i64> {
        let clock = self.backend.clock();
        for _ in 0..40 {
            let started = clock.now_ms();
            let taken = match self.bug {
                Bug::TtlAfterWrite => {
                    match self.backend.setnx(b"lock", self.token.as_bytes()).await {
                        Ok(true) => {
                            // If this second step fails, the key stays without a TTL.
                            let expiry = nxlock::backend::ExpireCondition::Always;
                            self.backend.pexpire(b"lock", TTL_MS, expiry).await.ok()?;
                            true
                        }
                        _ => false,
                    }
                }
                _ => {
                    let options = SetOptions::new().nx().px(TTL_MS);
                    match self
                        .backend
                        .set(b"lock", self.token.as_bytes(), options)
                        .await
                    {
                        Ok(nxlock::backend::SetReply::Applied) => true,
                        // A lost reply may hide our own success: look.
                        _ => {
                            self.backend.get(b"lock").await.ok().flatten()
                                == Some(self.token.clone().into_bytes())
                        }
                    }
                }
            };
            if taken {
                return Some(started + TTL_MS);
            }
            clock.sleep(Duration::from_millis(50)).await;
        }
        None
    }

    /// Extends to a full TTL: the new deadline, or `None` if the lock is no longer ours.
    async fn extend(&self) -> Option<i64> {
        let started = self.backend.clock().now_ms();
        let extended = if self.bug == Bug::ExtendWithoutOwnership {
            let expiry = nxlock::backend::ExpireCondition::Always;
            self.backend.pexpire(b"lock", TTL_MS, expiry).await.ok()?
        } else {
            let ttl = TTL_MS.to_string();
            let script = Script::new("my-extend", EXTEND);
            // A future that owns its arguments: stored, then awaited.
            let reply =
                self.backend
                    .eval_owned(&script, ["lock"], [self.token.as_bytes(), ttl.as_bytes()]);
            reply.await.ok()? == nxlock::backend::Value::Int(1)
        };
        extended.then_some(started + TTL_MS)
    }

    /// Releases, retrying an error a few times (what users do).
    async fn release(&self) {
        for _ in 0..3 {
            let released = if self.bug == Bug::ReleaseWithoutTokenCheck {
                self.backend.del(&[b"lock"]).await.map(|_| ())
            } else {
                let script = Script::new("my-release", RELEASE);
                self.backend
                    .eval(&script, &[b"lock"], &[self.token.as_bytes()])
                    .await
                    .map(|_| ())
            };
            match released {
                Err(e) if matches!(e.kind(), ErrorKind::Timeout | ErrorKind::Connection) => {
                    continue;
                }
                _ => return,
            }
        }
    }
}

/// How long one critical section works.
const SECTION: Duration = Duration::from_millis(50);

/// One cycle: acquire, then two short critical sections, extending between them. A
/// section starts only if the lock stays ours until it ends: checking merely that the
/// deadline has not passed yet is a bug the explorer finds at once (a late reply to an
/// extend leaves a few milliseconds of validity, and the section outlives them).
async fn cycle(ctx: Context, bug: Bug) {
    let lock = MyLock::new(ctx.backend(), bug, ctx.client(), ctx.cycle());
    let clock = ctx.clock();
    let Some(mut deadline) = lock.acquire().await else {
        return;
    };
    // What the lock holds, so that a release or extend that touches someone else's
    // lock is caught at that command (lost ownership).
    ctx.holds(b"lock", lock.token.as_bytes());
    for _ in 0..2 {
        if clock.now_ms() + SECTION.as_millis() as i64 >= deadline {
            break;
        }
        // Inside until the deadline the lock promised; past it would be the inherent
        // expired-holder finding, not a bug.
        ctx.enter_until("orders", deadline).await;
        ctx.work(SECTION).await;
        ctx.exit("orders").await;
        ctx.work(TTL / 10).await;
        match lock.extend().await {
            Some(next) => deadline = next,
            None => break,
        }
    }
    lock.release().await;
}

fn explorer(bug: Bug) -> Explorer {
    Explorer::new(move |ctx: Context| cycle(ctx, bug))
        .script_runner(LuaScripts::shared())
        .ttl(TTL)
        .clients(3)
        .cycles(3)
        // Faults a correct lease lock survives: none stalls a holder between its
        // deadline check and its critical section.
        .faults(&[
            FaultKind::LostReply,
            FaultKind::Refuse,
            FaultKind::Latency,
            FaultKind::KillConnection,
            FaultKind::Cancel,
        ])
        .seed(7)
        .runs(5_000)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let replays = std::env::temp_dir().join("nxlock-explore-my-lock");
    std::fs::create_dir_all(&replays)?;

    let correct = explorer(Bug::None).explore()?;
    assert!(
        correct.counterexample.is_none(),
        "{:?}",
        correct.counterexample.map(|c| c.to_string())
    );
    println!("the correct lock: no violation in {} runs\n", correct.runs);

    for (bug, expected) in [
        (
            Bug::ReleaseWithoutTokenCheck,
            ViolationKind::MutualExclusion,
        ),
        (Bug::ExtendWithoutOwnership, ViolationKind::MutualExclusion),
        (Bug::TtlAfterWrite, ViolationKind::KeyWithoutTtl),
    ] {
        let report = explorer(bug).explore()?;
        let found = report.counterexample.expect("the planted bug is found");
        assert!(
            found.violation.kind == expected
                || found.violation.kind == ViolationKind::LostOwnership
                || found.violation.kind == ViolationKind::Liveness,
            "{found}"
        );
        assert!(!found.violation.is_inherent(), "{found}");
        assert!(found.schedule.steps.len() <= 6);
        println!(
            "{bug:?}: found after {} runs, shrunk to {} steps:",
            report.runs,
            found.schedule.steps.len()
        );
        for step in &found.schedule.steps {
            println!("    {step}");
        }
        println!("    {}\n", found.violation);

        // The regression test: save the replay once, then replay it in a #[test]. It
        // reproduces on the buggy lock, and passes once the bug is fixed.
        let path = replays.join(format!("{bug:?}.json"));
        found.save(&path)?;
        assert!(explorer(bug).replay(&path)?.reproduced());
        assert!(!explorer(Bug::None).replay(&path)?.reproduced());
    }
    println!("replay files in {}", replays.display());
    Ok(())
}
