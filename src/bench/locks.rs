//! The lock workloads' runner: each client loops acquire → hold → release on its key,
//! every hold checked by the key's overlap detector and timed into histograms.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use lock_conformance::OverlapDetector;
use lock_core::{
    CountingBackend, KvBackend, LockAlgorithm, LockError, LockGuard, LockName, LockOptions,
};

use super::BenchError;
use super::report::{BenchReport, ClientResult};
use super::workload::Workload;

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

/// Runs `workload` (its algorithm and wait fields aside) with locks built by `make`, and
/// names the report's algorithm after the lock type `make` returns: one
/// lock object per client, on the lock name of its key (`client % keys`), with the
/// workload's TTL and the algorithm's default acquire policy. Commands are counted
/// through a [`CountingBackend`] wrapped around `backend`.
///
/// ```no_run
/// # async fn demo() -> Result<(), nxlock::bench::BenchError> {
/// use nxlock::bench::{Workload, run_locks};
/// use nxlock::{FencedLock, MemoryBackend, NamedLock};
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
    let mut report = run_workload(backend, backend_name, workload, make).await?;
    // The lock is what `make` built, whatever the workload's algorithm field says.
    report.algorithm = type_label::<A>();
    Ok(report)
}

/// [`run_locks`] for `nxlock bench`'s own algorithms, whose `make` is the workload's
/// algorithm: the report names it as the workload does (`token+pubsub`).
pub(crate) async fn run_workload<B, A, F>(
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

/// A lock type's name without its path or generic arguments: `FencedLock` for
/// `nxlock::FencedLock<CountingBackend<MemoryBackend>>`.
fn type_label<A>() -> String {
    let full = std::any::type_name::<A>();
    let bare = full.split('<').next().unwrap_or(full);
    bare.rsplit("::").next().unwrap_or(bare).to_owned()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_type_is_named_without_its_path_or_generics() {
        assert_eq!(
            type_label::<crate::FencedLock<CountingBackend<crate::MemoryBackend>>>(),
            "FencedLock"
        );
        assert_eq!(type_label::<u8>(), "u8");
    }
}
