//! Ten locks written the way users write them, on the public `KvBackend` API: eight with
//! one classic bug each, two correct. None is one of nxlock's algorithms. Each tells the
//! explorer what its lock promised (`enter_until`, `extended_until`) and which key and
//! token it holds (`holds`), as EXPLORE.md asks of a user's workload.

use std::time::Duration;

use lock_core::scripts::{COMPARE_AND_DELETE, COMPARE_AND_PEXPIRE, FENCED_ACQUIRE};
use lock_core::{KvBackend, SetOptions, SetReply, Value};
use lock_explore::{Context, Explorer, Fencing, Topology, ViolationKind};

/// The TTL every lock here asks for (and the explorer's unit of fault lengths).
pub const TTL_MS: i64 = 1_000;
const KEY: &[u8] = b"{job}:lock";
const FENCE: &[u8] = b"{job}:fence";
const RESOURCE: &str = "job";

/// A user lock under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserLock {
    /// Release: GET, compare, then DEL.
    GetCompareDel,
    /// The fence is an INCR of its own after the SET NX.
    SplitFence,
    /// An error on the SET (a timeout, a refused connection) is taken as acquired.
    ErrorMeansAcquired,
    /// Validity counted from the SET's reply, not from before it was sent.
    ValidityFromReply,
    /// Every client uses the same token (a host name, say) with a correct release.
    SharedToken,
    /// A Redlock over three nodes whose validity ignores the time the acquire took.
    RedlockValidityIgnoresAcquireTime,
    /// A watchdog that extends mid-section and ignores the answer.
    WatchdogIgnoresAnswer,
    /// `EX` in whole seconds, rounded down from a 1,500 ms TTL the validity believes.
    TtlInWholeSeconds,
    /// Correct: compare-and-delete and compare-and-pexpire scripts, validity counted from
    /// before the SET that won.
    CorrectToken,
    /// Correct: SET NX PX and INCR in one script, a strictly fenced resource.
    CorrectFenced,
}

impl UserLock {
    /// Every lock, the buggy ones first.
    pub const ALL: [UserLock; 10] = [
        UserLock::GetCompareDel,
        UserLock::SplitFence,
        UserLock::ErrorMeansAcquired,
        UserLock::ValidityFromReply,
        UserLock::SharedToken,
        UserLock::RedlockValidityIgnoresAcquireTime,
        UserLock::WatchdogIgnoresAnswer,
        UserLock::TtlInWholeSeconds,
        UserLock::CorrectToken,
        UserLock::CorrectFenced,
    ];

    /// Whether the lock is one of the two correct ones.
    pub fn is_correct(self) -> bool {
        matches!(self, UserLock::CorrectToken | UserLock::CorrectFenced)
    }

    /// The violations that are this lock's own bug.
    pub fn own_bug(self) -> &'static [ViolationKind] {
        use ViolationKind::*;
        match self {
            UserLock::GetCompareDel | UserLock::SharedToken => &[LostOwnership],
            UserLock::SplitFence => &[FenceOrder],
            UserLock::ErrorMeansAcquired
            | UserLock::ValidityFromReply
            | UserLock::RedlockValidityIgnoresAcquireTime
            | UserLock::WatchdogIgnoresAnswer
            | UserLock::TtlInWholeSeconds => &[LostOwnership, MutualExclusion],
            UserLock::CorrectToken | UserLock::CorrectFenced => &[],
        }
    }

    /// The explorer of this lock with the default faults of its topology.
    pub fn explorer(self) -> Explorer {
        let explorer = Explorer::new(move |ctx: Context| cycle(self, ctx))
            .ttl(Duration::from_millis(TTL_MS as u64))
            .permanent_keys("{job}:fence");
        match self {
            UserLock::RedlockValidityIgnoresAcquireTime => {
                explorer.topology(Topology::Redlock { nodes: 3 })
            }
            UserLock::SplitFence | UserLock::CorrectFenced => explorer.fencing(Fencing::Strict),
            _ => explorer,
        }
    }
}

/// Retries `SET NX PX` for up to 4 TTLs, 10 ms apart. Returns when the SET that won was
/// sent (client clock, ms), or `None`.
async fn acquire(ctx: &Context, token: &[u8], ttl_ms: i64, lock: UserLock) -> Option<i64> {
    let (backend, clock) = (ctx.backend(), ctx.clock());
    let deadline = clock.now_ms() + 4 * TTL_MS;
    while clock.now_ms() < deadline {
        let sent = clock.now_ms();
        let options = if lock == UserLock::TtlInWholeSeconds {
            SetOptions::new().nx().ex(ttl_ms / 1000)
        } else {
            SetOptions::new().nx().px(ttl_ms)
        };
        match backend.set(KEY, token, options).await {
            Ok(SetReply::Applied) => return Some(sent),
            Err(_) if lock == UserLock::ErrorMeansAcquired => return Some(sent),
            _ => clock.sleep(Duration::from_millis(10)).await,
        }
    }
    None
}

async fn release(ctx: &Context, token: &[u8], lock: UserLock) {
    let backend = ctx.backend();
    if lock == UserLock::GetCompareDel {
        if backend.get(KEY).await.ok().flatten().as_deref() == Some(token) {
            let _ = backend.del(&[KEY]).await;
        }
        return;
    }
    let _ = backend.eval(&COMPARE_AND_DELETE, &[KEY], &[token]).await;
}

async fn cycle(lock: UserLock, ctx: Context) {
    match lock {
        UserLock::SplitFence | UserLock::CorrectFenced => fenced_cycle(lock, ctx).await,
        UserLock::RedlockValidityIgnoresAcquireTime => redlock_cycle(ctx).await,
        _ => token_cycle(lock, ctx).await,
    }
}

async fn token_cycle(lock: UserLock, ctx: Context) {
    let token = match lock {
        UserLock::SharedToken => "worker".to_owned(),
        _ => format!("{:016x}", ctx.rng().u64(..)),
    };
    let token = token.as_bytes();
    let ttl_ms = if lock == UserLock::TtlInWholeSeconds {
        1_500
    } else {
        TTL_MS
    };
    let Some(sent) = acquire(&ctx, token, ttl_ms, lock).await else {
        return;
    };
    let clock = ctx.clock();
    let valid_until = match lock {
        UserLock::ValidityFromReply => clock.now_ms() + ttl_ms,
        _ => sent + ttl_ms,
    };
    ctx.holds(KEY, token);
    ctx.enter_until(RESOURCE, valid_until).await;
    match lock {
        UserLock::WatchdogIgnoresAnswer | UserLock::CorrectToken => {
            ctx.work(Duration::from_millis(250)).await;
            let started = clock.now_ms();
            let ms = ttl_ms.to_string();
            let extended = ctx
                .backend()
                .eval(&COMPARE_AND_PEXPIRE, &[KEY], &[token, ms.as_bytes()])
                .await;
            if lock == UserLock::CorrectToken && !matches!(extended, Ok(Value::Int(1))) {
                // Lost (or unknown): stop working on the resource at once.
                ctx.exit(RESOURCE).await;
                return;
            }
            ctx.extended_until(RESOURCE, started + ttl_ms);
            ctx.work(Duration::from_millis(250)).await;
        }
        UserLock::TtlInWholeSeconds => ctx.work(Duration::from_millis(1_200)).await,
        UserLock::ValidityFromReply => ctx.work(Duration::from_millis(500)).await,
        _ => ctx.work(Duration::from_millis(100)).await,
    }
    ctx.exit(RESOURCE).await;
    release(&ctx, token, lock).await;
}

async fn fenced_cycle(lock: UserLock, ctx: Context) {
    let token = format!("{:016x}", ctx.rng().u64(..));
    let (backend, clock) = (ctx.backend(), ctx.clock());
    let deadline = clock.now_ms() + 4 * TTL_MS;
    let ttl = TTL_MS.to_string();
    let mut won = None;
    while won.is_none() && clock.now_ms() < deadline {
        let sent = clock.now_ms();
        if lock == UserLock::SplitFence {
            let set = backend
                .set(KEY, token.as_bytes(), SetOptions::new().nx().px(TTL_MS))
                .await;
            if matches!(set, Ok(SetReply::Applied)) {
                match backend.incr(FENCE).await {
                    Ok(fence) => won = Some((sent, fence)),
                    Err(_) => return,
                }
                continue;
            }
        } else {
            let reply = backend
                .eval(
                    &FENCED_ACQUIRE,
                    &[KEY, FENCE],
                    &[token.as_bytes(), ttl.as_bytes()],
                )
                .await;
            if let Ok(Value::Array(pair)) = reply
                && let [Value::Int(1), Value::Int(fence)] = pair.as_slice()
            {
                won = Some((sent, *fence));
                continue;
            }
        }
        clock.sleep(Duration::from_millis(10)).await;
    }
    let Some((sent, fence)) = won else { return };
    ctx.holds(KEY, token.as_bytes());
    ctx.enter_fenced_until(RESOURCE, fence, sent + TTL_MS).await;
    let _ = ctx.write(RESOURCE, fence).await;
    ctx.work(Duration::from_millis(200)).await;
    let _ = ctx.write(RESOURCE, fence).await;
    ctx.exit(RESOURCE).await;
    let _ = backend
        .eval(&COMPARE_AND_DELETE, &[KEY], &[token.as_bytes()])
        .await;
}

/// Redlock over the context's nodes, one SET after another; its validity is counted
/// from when the last SET answered, so the time the acquire took is never subtracted.
/// The holder works for as long as it believes it may, less a 20 ms margin.
async fn redlock_cycle(ctx: Context) {
    let token = format!("{:016x}", ctx.rng().u64(..));
    let (nodes, clock) = (ctx.nodes(), ctx.clock());
    let deadline = clock.now_ms() + 4 * TTL_MS;
    while clock.now_ms() < deadline {
        let mut won = 0;
        for node in &nodes {
            // Each node gets 200 ms: a node that stops answering must not stall the rest.
            let set = node.set(KEY, token.as_bytes(), SetOptions::new().nx().px(TTL_MS));
            let set = tokio::time::timeout(Duration::from_millis(200), set).await;
            if matches!(set, Ok(Ok(SetReply::Applied))) {
                won += 1;
            }
        }
        if won > nodes.len() / 2 {
            let valid_until = clock.now_ms() + TTL_MS - 10; // drift allowance, no elapsed
            ctx.holds(KEY, token.as_bytes());
            ctx.enter_until(RESOURCE, valid_until).await;
            let left = (valid_until - clock.now_ms() - 20).max(0) as u64;
            ctx.work(Duration::from_millis(left)).await;
            ctx.exit(RESOURCE).await;
            unlock_all(&nodes, token.as_bytes()).await;
            return;
        }
        unlock_all(&nodes, token.as_bytes()).await;
        clock
            .sleep(Duration::from_millis(10 + ctx.rng().u64(..20)))
            .await;
    }
}

async fn unlock_all(nodes: &[lock_explore::ClientView], token: &[u8]) {
    let args = [token];
    for node in nodes {
        let unlock = node.eval(&COMPARE_AND_DELETE, &[KEY], &args);
        let _ = tokio::time::timeout(Duration::from_millis(200), unlock).await;
    }
}
