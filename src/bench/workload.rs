//! The workload: clients, keys, hold time, and the loop each client runs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use lock_conformance::OverlapDetector;
use lock_core::{
    CountingBackend, FairLock, KvBackend, LegacyLock, LockAlgorithm, LockError, LockGuard,
    LockName, LockOptions, ScriptedLock, TokenLock, Wait,
};

use super::BenchError;
use super::counters::{self, Protection};
use super::report::{BenchReport, ClientResult};

/// Which lock algorithm a benchmark drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// [`TokenLock`] (seed 000).
    Token,
    /// [`LegacyLock`] (seeds 002-004).
    Legacy,
    /// [`ScriptedLock`] (seed 001).
    Scripted,
    /// No lock: counters incremented by versioned compare-and-set
    /// ([`Versioned`](lock_core::Versioned), seed 002's optimistic lock).
    Optimistic,
    /// No lock: counters incremented in `WATCH` … `EXEC` transactions.
    Watch,
    /// The same counter increments inside the fair lock, for comparison.
    Locked,
}

impl Algorithm {
    /// `token`, `legacy` or `scripted`.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Token => "token",
            Algorithm::Legacy => "legacy",
            Algorithm::Scripted => "scripted",
            Algorithm::Optimistic => "optimistic",
            Algorithm::Watch => "watch",
            Algorithm::Locked => "locked",
        }
    }
}

/// How blocked clients wait (`nxlock bench --wait`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Waiting {
    /// Sleep by the acquire policy's backoff and retry (every algorithm).
    Poll,
    /// [`Wait::Notify`]: releases publish, waiters sleep until one (token only).
    Notify,
    /// [`FairLock`]: a ticket line with direct hand-off (token only).
    #[default]
    Fair,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Workload {
    /// The lock algorithm, with its default acquire policy.
    pub algorithm: Algorithm,
    /// Concurrent clients (tasks), each with its own lock objects.
    pub clients: usize,
    /// Keys; client `i` uses key `i % keys`.
    pub keys: usize,
    /// Time spent holding the lock per cycle (0: release at once); for the counter
    /// algorithms, the time between reading a counter and writing it. Tokio's timer has
    /// millisecond resolution, so holds below 1 ms are rounded up by the sleep.
    pub hold: Duration,
    /// The lock TTL.
    pub ttl: Duration,
    /// How long clients keep cycling.
    pub duration: Duration,
    /// How blocked clients wait; anything but [`Waiting::Poll`] needs [`Algorithm::Token`].
    pub wait: Waiting,
    /// The clients on one key share one lock object (clones of it) instead of building
    /// one each. Clones of a fair lock or a Redlock take turns in process; the other
    /// algorithms ignore this.
    pub shared_lock: bool,
}

impl Workload {
    /// The name reports use: the algorithm, how it waits unless it polls, and whether
    /// its clients share a fair lock.
    pub fn label(&self) -> &'static str {
        match (self.algorithm, self.wait) {
            (algorithm @ (Algorithm::Optimistic | Algorithm::Watch | Algorithm::Locked), _) => {
                algorithm.name()
            }
            (algorithm, Waiting::Poll) => algorithm.name(),
            (_, Waiting::Notify) => "token+notify",
            (_, Waiting::Fair) if self.shared_lock => "fair, shared",
            (_, Waiting::Fair) => "fair",
        }
    }
}

impl Default for Workload {
    fn default() -> Self {
        Self {
            algorithm: Algorithm::Token,
            clients: 1,
            keys: 1,
            hold: Duration::ZERO,
            ttl: Duration::from_secs(10),
            duration: Duration::from_secs(5),
            wait: Waiting::Fair,
            shared_lock: false,
        }
    }
}

/// One key's shared state: its overlap detector, and when its last release started (ns
/// since the run began), for hand-off latency.
struct KeyState {
    detector: OverlapDetector,
    release_started_ns: AtomicU64,
}

async fn client_loop<A: LockAlgorithm>(
    key: Arc<KeyState>,
    lock: A,
    hold: Duration,
    stop: Arc<AtomicBool>,
    epoch: Instant,
) -> ClientResult {
    let ttl_ms = i64::try_from(lock.options().ttl.as_millis()).unwrap_or(i64::MAX);
    let mut result = ClientResult::new();
    let since_epoch = |at: Instant| u64::try_from((at - epoch).as_nanos()).unwrap_or(u64::MAX);
    while !stop.load(Ordering::Relaxed) {
        let start = Instant::now();
        let guard = match lock.acquire().await {
            Ok(guard) => guard,
            Err(_) => {
                result.errors += 1;
                continue;
            }
        };
        let acquired = Instant::now();
        // What the acquire cost the hold: its TTL less the validity it reported.
        let valid_for = guard.valid_until_ms() - guard.clock().now_ms();
        let lost = u64::try_from(ttl_ms - valid_for).unwrap_or(0);
        result.validity_lost_ms.saturating_record(lost);
        let release_started = key.release_started_ns.load(Ordering::Acquire);
        if release_started > since_epoch(start) {
            // We waited through someone's release: that is a hand-off.
            let handoff = since_epoch(acquired).saturating_sub(release_started);
            result.handoff_ns.saturating_record(handoff.max(1));
        }
        {
            let _inside = key.detector.enter();
            if hold.is_zero() {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(hold).await;
            }
        }
        let releasing = Instant::now();
        key.release_started_ns
            .store(since_epoch(releasing), Ordering::Release);
        match guard.release().await {
            Ok(true) => {}
            _ => result.errors += 1,
        }
        let done = Instant::now();
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1);
        result.acquire_ns.saturating_record(ns(acquired - start));
        result.release_ns.saturating_record(ns(done - releasing));
        result.cycle_ns.saturating_record(ns(done - start));
        result.cycles += 1;
    }
    result
}

/// Runs `workload` (its algorithm and wait fields aside) with locks built by `make`: one
/// lock object per client, on the lock name of its key (`client % keys`), with the
/// workload's TTL and the algorithm's default acquire policy. Commands are counted
/// through a [`CountingBackend`] wrapped around `backend`.
///
/// ```no_run
/// # async fn demo() -> Result<(), nxlock::bench::BenchError> {
/// use nxlock::bench::{Workload, run_locks};
/// use nxlock::{FencedLock, MemoryBackend};
///
/// let workload = Workload { clients: 8, ..Workload::default() };
/// let report = run_locks(MemoryBackend::new(), "memory", &workload, |backend, name, options| {
///     FencedLock::with_options(backend, name, options)
/// })
/// .await?;
/// assert_eq!(report.violations, 0);
/// # Ok(()) }
/// ```
pub async fn run_locks<B, A, F>(
    backend: B,
    backend_name: impl Into<String>,
    workload: &Workload,
    make: F,
) -> Result<BenchReport, BenchError>
where
    B: KvBackend + Clone + 'static,
    A: LockAlgorithm + 'static,
    F: Fn(CountingBackend<B>, &LockName, LockOptions) -> Result<A, LockError>,
{
    let backend = CountingBackend::new(backend);
    let counter = backend.clone();
    let make = |name: &LockName, options| make(backend.clone(), name, options);
    run_clients(backend_name, workload, || counter.commands(), make).await
}

/// `make`, or with `shared` a `make` that builds one lock per key and hands each of the
/// key's clients a clone of it.
pub(crate) fn one_per_key<B, A, F>(
    shared: bool,
    make: F,
) -> impl Fn(B, &LockName, LockOptions) -> Result<A, LockError>
where
    A: Clone,
    F: Fn(B, &LockName, LockOptions) -> Result<A, LockError>,
{
    let built = Mutex::new(HashMap::<Vec<u8>, A>::new());
    move |backend, name, options| {
        if !shared {
            return make(backend, name, options);
        }
        let mut built = built.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(lock) = built.get(&name.lock_key()) {
            return Ok(lock.clone());
        }
        let lock = make(backend, name, options)?;
        built.insert(name.lock_key(), lock.clone());
        Ok(lock)
    }
}

/// Runs `workload` with one lock per client built by `make` (on the lock name of its
/// key, with the workload's TTL); `commands` reads how many backend commands were sent
/// so far.
pub(crate) async fn run_clients<A, F>(
    backend_name: impl Into<String>,
    workload: &Workload,
    commands: impl Fn() -> u64,
    make: F,
) -> Result<BenchReport, BenchError>
where
    A: LockAlgorithm + 'static,
    F: Fn(&LockName, LockOptions) -> Result<A, LockError>,
{
    let backend_name = backend_name.into();
    let keys = workload.keys.max(1);
    let key_states: Vec<Arc<KeyState>> = (0..keys)
        .map(|_| {
            Arc::new(KeyState {
                detector: OverlapDetector::new(),
                release_started_ns: AtomicU64::new(0),
            })
        })
        .collect();
    let epoch = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let options = LockOptions::new().ttl(workload.ttl);
    let mut tasks = Vec::new();
    for client in 0..workload.clients.max(1) {
        let key_index = client % keys;
        let lock = make(&lock_name(key_index), options.clone())?;
        tasks.push(tokio::spawn(client_loop(
            key_states[key_index].clone(),
            lock,
            workload.hold,
            stop.clone(),
            epoch,
        )));
    }
    let started = Instant::now();
    let commands_before = commands();
    tokio::time::sleep(workload.duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut clients = Vec::new();
    for task in tasks {
        if let Ok(result) = task.await {
            clients.push(result);
        }
    }
    let elapsed = started.elapsed();
    let violations = key_states.iter().map(|k| k.detector.violations()).sum();
    Ok(BenchReport::collect(
        backend_name,
        workload,
        elapsed,
        commands() - commands_before,
        violations,
        clients,
    ))
}

/// The lock name of key `index`: keys `{nxlock-bench:<index>}:…`.
fn lock_name(index: usize) -> LockName {
    LockName::new(format!("nxlock-bench:{index}")).expect("a valid lock name")
}

/// Runs `workload`'s algorithm, waiting as it says, against `backend` (named
/// `backend_name` in the report). [`BenchError::InvalidWorkload`] when the workload asks
/// for a wait the algorithm does not have.
pub async fn run<B: KvBackend + Clone + 'static>(
    backend: B,
    backend_name: impl Into<String>,
    workload: &Workload,
) -> Result<BenchReport, BenchError> {
    let name = backend_name.into();
    match (workload.algorithm, workload.wait) {
        (Algorithm::Token, Waiting::Poll) => {
            run_locks(backend, name, workload, TokenLock::with_options).await
        }
        (Algorithm::Token, Waiting::Notify) => {
            let make = |b, n: &LockName, o: LockOptions| {
                TokenLock::with_options(b, n, o.wait(Wait::Notify))
            };
            run_locks(backend, name, workload, make).await
        }
        (Algorithm::Token, Waiting::Fair) => {
            let make = one_per_key(workload.shared_lock, FairLock::with_options);
            run_locks(backend, name, workload, make).await
        }
        (Algorithm::Legacy, Waiting::Poll) => {
            run_locks(backend, name, workload, LegacyLock::with_options).await
        }
        (Algorithm::Scripted, Waiting::Poll) => {
            run_locks(backend, name, workload, ScriptedLock::with_options).await
        }
        (Algorithm::Optimistic, _) => {
            counters::run(backend, name, workload, Protection::CompareAndSet).await
        }
        (Algorithm::Watch, _) => counters::run(backend, name, workload, Protection::Watch).await,
        (Algorithm::Locked, _) => counters::run(backend, name, workload, Protection::Lock).await,
        (algorithm, wait) => Err(BenchError::InvalidWorkload(
            format!(
                "--wait {wait:?} needs --algorithm token; {} locks can only poll",
                algorithm.name()
            )
            .to_lowercase(),
        )),
    }
}
