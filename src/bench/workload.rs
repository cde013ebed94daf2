//! The workload: clients, keys, hold time, and the loop each client runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use lock_conformance::OverlapDetector;
use lock_core::{
    CountingBackend, KvBackend, LegacyLock, LockAlgorithm, LockGuard, LockOptions, ScriptedLock,
    TokenLock,
};

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
}

impl Algorithm {
    /// `token`, `legacy` or `scripted`.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Token => "token",
            Algorithm::Legacy => "legacy",
            Algorithm::Scripted => "scripted",
        }
    }
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
    /// Time spent holding the lock per cycle (0: release at once). Tokio's timer has
    /// millisecond resolution, so holds below 1 ms are rounded up by the sleep.
    pub hold: Duration,
    /// The lock TTL.
    pub ttl: Duration,
    /// How long clients keep cycling.
    pub duration: Duration,
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
        }
    }
}

fn histogram() -> Histogram<u64> {
    // Nanoseconds, 3 significant figures, up to an hour.
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

async fn client_loop<A: LockAlgorithm>(
    key_index: usize,
    lock: A,
    hold: Duration,
    stop: Arc<AtomicBool>,
    detectors: Arc<Vec<OverlapDetector>>,
) -> ClientResult {
    let mut result = ClientResult {
        cycles: 0,
        errors: 0,
        acquire_ns: histogram(),
        cycle_ns: histogram(),
    };
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
        {
            let _inside = detectors[key_index].enter();
            if hold.is_zero() {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(hold).await;
            }
        }
        match guard.release().await {
            Ok(true) => {}
            _ => result.errors += 1,
        }
        let done = Instant::now();
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1);
        result.acquire_ns.saturating_record(ns(acquired - start));
        result.cycle_ns.saturating_record(ns(done - start));
        result.cycles += 1;
    }
    result
}

async fn run_clients<B, A, F>(
    backend: CountingBackend<B>,
    workload: &Workload,
    make: F,
    backend_name: String,
) -> BenchReport
where
    B: KvBackend + Clone + 'static,
    A: LockAlgorithm + 'static,
    F: Fn(CountingBackend<B>, Vec<u8>, LockOptions) -> A,
{
    let keys = workload.keys.max(1);
    let detectors = Arc::new(
        (0..keys)
            .map(|_| OverlapDetector::new())
            .collect::<Vec<_>>(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let options = LockOptions::new().ttl(workload.ttl);
    let mut tasks = Vec::new();
    for client in 0..workload.clients.max(1) {
        let key_index = client % keys;
        let key = format!("nxlock-bench:{{{key_index}}}:lock").into_bytes();
        let lock = make(backend.clone(), key, options.clone());
        tasks.push(tokio::spawn(client_loop(
            key_index,
            lock,
            workload.hold,
            stop.clone(),
            detectors.clone(),
        )));
    }
    let started = Instant::now();
    let commands_before = backend.commands();
    tokio::time::sleep(workload.duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut clients = Vec::new();
    for task in tasks {
        if let Ok(result) = task.await {
            clients.push(result);
        }
    }
    let elapsed = started.elapsed();
    let violations = detectors.iter().map(OverlapDetector::violations).sum();
    BenchReport::collect(
        backend_name,
        workload,
        elapsed,
        backend.commands() - commands_before,
        violations,
        clients,
    )
}

/// Runs `workload` against `backend` (named `backend_name` in the report).
pub async fn run<B: KvBackend + Clone + 'static>(
    backend: B,
    backend_name: impl Into<String>,
    workload: &Workload,
) -> BenchReport {
    let backend = CountingBackend::new(backend);
    let name = backend_name.into();
    match workload.algorithm {
        Algorithm::Token => run_clients(backend, workload, TokenLock::with_options, name).await,
        Algorithm::Legacy => run_clients(backend, workload, LegacyLock::with_options, name).await,
        Algorithm::Scripted => {
            run_clients(backend, workload, ScriptedLock::with_options, name).await
        }
    }
}
