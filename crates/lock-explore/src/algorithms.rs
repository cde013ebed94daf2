//! nxlock's own algorithms as workloads, for `nxlock explore --algorithm`: each cycle
//! acquires (patiently), enters the resource, works a tenth of the TTL, leaves and
//! releases.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use lock_core::{
    AcquirePolicy, Backoff, FairLock, FencedLock, KvBackend, LegacyLock, LockAlgorithm, LockError,
    LockGuard, LockName, LockOptions, LockOwner, NamedLock, Redlock, ReentrantLock, Replication,
    Retry, ScriptedLock, SetOptions, TokenLock, TxWrite, UnknownAlgorithm, Versioned,
};

use crate::context::Context;
use crate::counterexample::Counterexample;
use crate::explorer::Explorer;
use crate::step::{Step, When};
use crate::topology::Topology;
use crate::violation::ViolationKind;
use crate::workload::Workload;

/// The lock's name in every built-in workload.
pub const LOCK: &str = "explored";
/// The resource the built-in workloads' critical sections protect.
pub const RESOURCE: &str = "resource";
/// The counter the optimistic workload increments.
pub const COUNTER: &str = "counter";

/// One of nxlock's algorithms: the one list, [`AlgorithmKind`](lock_core::AlgorithmKind), which `nxlock bench`
/// shares. The explorer runs every one.
pub use lock_core::AlgorithmKind as Algorithm;

impl Explorer {
    /// An explorer of nxlock's `algorithm` on `topology`, with what the checkers must
    /// know about it: the keys it keeps without a TTL by design, where its counter lives.
    pub fn builtin(algorithm: Algorithm, topology: Topology, ttl: Duration) -> Explorer {
        Self::builtin_waiting(algorithm, topology, ttl, None)
    }

    /// Like [`Explorer::builtin`], with the lock waiting for `replicas` replicas to
    /// acknowledge every acquire and extend ([`LockOptions::replication`]; the token,
    /// fenced and reentrant locks accept it) within a tenth of the TTL.
    pub fn builtin_waiting(
        algorithm: Algorithm,
        topology: Topology,
        ttl: Duration,
        replicas: Option<u32>,
    ) -> Explorer {
        let replication = replicas.map(|n| Replication::new(n, ttl / 10));
        let workload: Arc<dyn Workload> = Arc::new(Builtin {
            algorithm,
            ttl,
            replication,
        });
        let name = LockName::new(LOCK).expect("a valid name");
        let key = |suffix: &str| String::from_utf8_lossy(&name.key(suffix)).into_owned();
        let label = match replicas {
            Some(n) => format!("{}+wait{n}", algorithm.name()),
            None => algorithm.name().to_owned(),
        };
        let mut explorer = Explorer::from_arc(workload)
            .named(label)
            .topology(topology)
            .ttl(ttl);
        explorer = match algorithm {
            // Fence counters must outlive holds; the stamp locks' key has no TTL by design
            // (a stamp, not a TTL, ends the hold).
            Algorithm::Fenced => explorer.permanent_keys(key("fence")),
            Algorithm::Legacy | Algorithm::Scripted => explorer.permanent_keys(key("lock")),
            Algorithm::Optimistic => explorer
                .counter_in_key(COUNTER, key("versioned"))
                .permanent_keys(key("versioned")),
            Algorithm::Watch | Algorithm::Locked | Algorithm::Unprotected => explorer
                .counter_in_key(COUNTER, key("counter"))
                .permanent_keys(key("counter")),
            _ => explorer,
        };
        explorer
    }
}

/// Whether a correct reference algorithm of the same kind breaks under a
/// counterexample's schedule: if it does, the schedule breaks every lock of the kind on
/// that deployment (inherent); if not, the algorithm has a bug of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blame {
    /// The algorithm blamed.
    pub algorithm: Algorithm,
    /// The reference it was compared with.
    pub reference: Algorithm,
    /// What the reference broke under the same schedule, if anything.
    pub reference_broke: Option<ViolationKind>,
}

impl Blame {
    /// Whether the reference broke too.
    pub fn is_inherent(&self) -> bool {
        self.reference_broke.is_some()
    }
}

impl fmt::Display for Blame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (algorithm, reference) = (self.algorithm, self.reference);
        match self.reference_broke {
            Some(kind) if algorithm == reference => write!(
                f,
                "{algorithm} is the reference lock of its kind, and this schedule breaks it ({kind}): every lock of its kind breaks here; the remedy is in the deployment (WAIT, persistence, fencing)"
            ),
            Some(kind) => write!(
                f,
                "the reference {reference} lock breaks under the same schedule too ({kind}): inherent to the deployment and its faults, not a bug of {algorithm}"
            ),
            None => write!(
                f,
                "the reference {reference} lock survives the same schedule: a bug of {algorithm}"
            ),
        }
    }
}

/// The correct reference of `algorithm`'s kind: Redlock for Redlock, the fenced lock
/// for fenced, Versioned for the counters, the token lock for every other lock.
pub fn reference(algorithm: Algorithm) -> Algorithm {
    match algorithm {
        Algorithm::Redlock => Algorithm::Redlock,
        Algorithm::Fenced => Algorithm::Fenced,
        Algorithm::Optimistic | Algorithm::Watch | Algorithm::Unprotected => Algorithm::Optimistic,
        _ => Algorithm::Token,
    }
}

impl Blame {
    /// Runs [`reference()`]`(algorithm)` under `found`'s schedule, its steps placed at the
    /// virtual times they took effect (the reference sends other commands, so an
    /// operation's index means nothing to it).
    pub fn of(algorithm: Algorithm, found: &Counterexample) -> Blame {
        let reference = reference(algorithm);
        let mut schedule = found.schedule.clone();
        if found.anchored.len() == schedule.steps.len() {
            schedule.steps = found
                .anchored
                .iter()
                .map(|step| Step {
                    when: match &step.when {
                        When::AfterNext { from_us, .. } => When::At {
                            ms: u64::try_from(*from_us).unwrap_or(0).div_ceil(1000),
                        },
                        other => other.clone(),
                    },
                    fault: step.fault,
                })
                .collect();
        }
        let explorer = Explorer::builtin(reference, found.options.topology, found.options.ttl())
            .fencing(found.options.fencing)
            .clients(found.options.clients)
            .cycles(found.options.cycles);
        let (_, violation) = explorer.run_schedule(&schedule);
        Blame {
            algorithm,
            reference,
            reference_broke: violation.filter(|v| !v.is_inherent()).map(|v| v.kind),
        }
    }
}

/// A built-in workload's name as a replay file records it (`token`, `token+wait2`):
/// the algorithm, and the replicas it waits for.
pub(crate) fn parse_label(label: &str) -> Result<(Algorithm, Option<u32>), UnknownAlgorithm> {
    let unknown = || UnknownAlgorithm(label.to_owned());
    match label.split_once("+wait") {
        Some((name, n)) => Ok((name.parse()?, Some(n.parse().map_err(|_| unknown())?))),
        None => Ok((label.parse()?, None)),
    }
}

struct Builtin {
    algorithm: Algorithm,
    ttl: Duration,
    replication: Option<Replication>,
}

impl Workload for Builtin {
    fn cycle(&self, context: Context) -> crate::workload::Cycle {
        let mut options = options(self.ttl);
        if let Some(replication) = self.replication {
            options = options.replication(replication);
        }
        cycle(self.algorithm, self.ttl, options, context)
    }
}

fn options(ttl: Duration) -> LockOptions {
    LockOptions::new()
        .ttl(ttl)
        .policy(
            AcquirePolicy::retry(Retry::For(ttl * 4)).with_backoff(Backoff::Exponential {
                initial: Duration::from_millis(1),
                max: ttl / 4,
                jitter: true,
            }),
        )
}

/// Holds `guard` through a critical section within the validity it promised (and its
/// key with `token`, where the algorithm's key holds just the token), then releases it.
async fn hold<G: LockGuard + Held>(context: &Context, ttl: Duration, guard: G) {
    if let Some(token) = guard.held() {
        context.holds(guard.key(), token.as_bytes());
    }
    context.enter_until(RESOURCE, guard.valid_until_ms()).await;
    context.work(ttl / 10).await;
    context.exit(RESOURCE).await;
    let _ = guard.release().await;
}

/// What a guard's key holds, where that is its token alone.
trait Held {
    fn held(&self) -> Option<&str> {
        None
    }
}

impl<B: lock_core::KvBackend + Clone + 'static> Held for lock_core::TokenGuard<B> {
    fn held(&self) -> Option<&str> {
        Some(self.token())
    }
}
impl<B: lock_core::KvBackend + Clone + 'static> Held for lock_core::RedlockGuard<B> {
    fn held(&self) -> Option<&str> {
        Some(self.token())
    }
}
impl<B: lock_core::KvBackend + Clone + 'static> Held for lock_core::FairGuard<B> {}
impl<B: lock_core::KvBackend + Clone + 'static> Held for lock_core::ReentrantGuard<B> {}
impl<B: lock_core::KvBackend + Clone + 'static> Held for lock_core::LegacyGuard<B> {}
impl<B: lock_core::KvBackend + Clone + 'static> Held for lock_core::ScriptedGuard<B> {}

async fn acquire_and_hold<L>(context: &Context, ttl: Duration, lock: Result<L, LockError>)
where
    L: LockAlgorithm,
    L::Guard: Held,
{
    let Ok(lock) = lock else { return };
    if let Ok(guard) = lock.acquire().await {
        hold(context, ttl, guard).await;
    }
}

/// How many times a WATCH increment tries before it gives up.
const WATCH_ATTEMPTS: usize = 16;

/// A counter's value as stored (0 when absent or not a number).
fn counted(value: Option<&[u8]>) -> i64 {
    value
        .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
        .unwrap_or(0)
}

/// One cycle of `algorithm`, boxed alone: a future of every arm at once would be the size
/// of the largest, moved into its box on every cycle.
fn cycle(
    algorithm: Algorithm,
    ttl: Duration,
    options: LockOptions,
    context: Context,
) -> crate::workload::Cycle {
    let name = LockName::new(LOCK).expect("a valid name");
    let backend = context.backend();
    match algorithm {
        Algorithm::Token => Box::pin(async move {
            acquire_and_hold(
                &context,
                ttl,
                TokenLock::with_options(backend, &name, options),
            )
            .await;
        }),
        Algorithm::Fair => Box::pin(async move {
            acquire_and_hold(
                &context,
                ttl,
                FairLock::with_options(backend, &name, options),
            )
            .await;
        }),
        Algorithm::Reentrant => Box::pin(async move {
            let lock = ReentrantLock::with_options(backend, &name, LockOwner::new(), options);
            acquire_and_hold(&context, ttl, lock).await;
        }),
        Algorithm::Legacy => Box::pin(async move {
            acquire_and_hold(
                &context,
                ttl,
                LegacyLock::with_options(backend, &name, options),
            )
            .await;
        }),
        Algorithm::Scripted => Box::pin(async move {
            acquire_and_hold(
                &context,
                ttl,
                ScriptedLock::with_options(backend, &name, options),
            )
            .await;
        }),
        Algorithm::Redlock => Box::pin(async move {
            let lock = Redlock::with_options(context.nodes(), &name, options);
            acquire_and_hold(&context, ttl, lock).await;
        }),
        Algorithm::Fenced => Box::pin(async move {
            let Ok(lock) = FencedLock::with_options(backend, &name, options) else {
                return;
            };
            let Ok(guard) = lock.acquire().await else {
                return;
            };
            let fence = guard.fence();
            context.holds(guard.key(), guard.token().as_bytes());
            context
                .enter_fenced_until(RESOURCE, fence, guard.valid_until_ms())
                .await;
            let _ = context.write(RESOURCE, fence).await;
            context.work(ttl / 10).await;
            let _ = context.write(RESOURCE, fence).await;
            context.exit(RESOURCE).await;
            let _ = guard.release().await;
        }),
        Algorithm::Optimistic => Box::pin(async move {
            let counter = Versioned::new(backend, &name).with_policy(options.policy);
            let increment = context.increment(COUNTER);
            match counter
                .update(|old| {
                    let old: i64 = old
                        .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
                        .unwrap_or(0);
                    (old + 1).to_string().into_bytes()
                })
                .await
            {
                Ok(_) => increment.done(),
                Err(LockError::OutcomeUnknown { .. }) => increment.unknown(),
                // Versioned's contract: any other error means the write did not run.
                Err(_) => increment.failed(),
            }
        }),
        Algorithm::Watch => Box::pin(async move {
            let key = name.key("counter");
            let increment = context.increment(COUNTER);
            // Again on an abort, within the policy's attempts: WATCH's own retry loop.
            for _ in 0..WATCH_ATTEMPTS {
                let Ok(transaction) = backend.watch(&[&key]).await else {
                    return increment.failed();
                };
                let old = counted(transaction.values()[0].as_deref());
                let write = TxWrite::set(key.clone(), (old + 1).to_string());
                match transaction.exec(vec![write]).await {
                    Ok(true) => return increment.done(),
                    Ok(false) => continue,
                    // EXEC may have run before its reply was lost.
                    Err(_) => return increment.unknown(),
                }
            }
            increment.failed();
        }),
        Algorithm::Locked => Box::pin(async move {
            let Ok(lock) = FairLock::with_options(backend.clone(), &name, options) else {
                return;
            };
            let Ok(guard) = lock.acquire().await else {
                return;
            };
            let key = name.key("counter");
            context.enter_until(RESOURCE, guard.valid_until_ms()).await;
            let increment = context.increment(COUNTER);
            match backend.get(&key).await {
                Ok(old) => {
                    let new = (counted(old.as_deref()) + 1).to_string();
                    match backend.set(&key, new.as_bytes(), SetOptions::new()).await {
                        Ok(_) => increment.done(),
                        Err(_) => increment.unknown(),
                    }
                }
                Err(_) => increment.failed(),
            }
            context.exit(RESOURCE).await;
            let _ = guard.release().await;
        }),
        Algorithm::Unprotected => Box::pin(async move {
            let key = name.key("counter");
            let increment = context.increment(COUNTER);
            let Ok(old) = backend.get(&key).await else {
                return increment.failed();
            };
            let old: i64 = old
                .and_then(|v| std::str::from_utf8(&v).ok()?.parse().ok())
                .unwrap_or(0);
            context.work(ttl / 100).await;
            let new = (old + 1).to_string();
            match backend.set(&key, new.as_bytes(), SetOptions::new()).await {
                Ok(_) => increment.done(),
                // A connection error or a timeout may come after the SET ran.
                Err(_) => increment.unknown(),
            }
        }),
    }
}
