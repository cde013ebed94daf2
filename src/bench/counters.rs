//! `nxlock bench --algorithm optimistic|watch|locked`: clients increment counters with a
//! read-compute time between reading and writing (`--hold-us`), protected by a versioned
//! compare-and-set, by `WATCH` … `EXEC`, or by the fair lock around `GET` and `SET`.
//! A cycle is one increment that landed; retries after a conflict are counted, and every
//! increment lost (the counters' sum short of the increments reported) is a violation.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lock_core::{
    CountingBackend, FairLock, KvBackend, LockAlgorithm, LockError, LockGuard, LockName,
    LockOptions, NamedLock, SetOptions, TxWrite, Versioned,
};

use super::BenchError;
use super::report::{BenchReport, ClientResult};
use super::workload::Workload;

/// How a counter's read-compute-write is protected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protection {
    /// [`Versioned`]: read, compute, compare-and-set; again on a conflict.
    CompareAndSet,
    /// [`KvBackend::watch`]: WATCH + GET, compute, MULTI SET EXEC; again on an abort.
    Watch,
    /// [`FairLock`] held around GET, compute, SET.
    Lock,
}

/// One client's handles on its counter, built once.
struct Counter<B: KvBackend + Clone + 'static> {
    backend: B,
    /// `{name}:counter`, for WATCH and the lock.
    key: Vec<u8>,
    /// `{name}:versioned`, for compare-and-set.
    versioned: Versioned<B>,
    lock: FairLock<B>,
}

impl<B: KvBackend + Clone + 'static> Counter<B> {
    fn new(backend: B, name: &LockName, options: LockOptions) -> Result<Self, BenchError> {
        Ok(Self {
            key: name.key("counter"),
            versioned: Versioned::new(backend.clone(), name),
            lock: FairLock::with_options(backend.clone(), name, options)?,
            backend,
        })
    }

    /// One increment: read, compute for `hold`, write; how many conflicts it met.
    async fn increment(&self, protection: Protection, hold: Duration) -> Result<u32, LockError> {
        let mut conflicts = 0;
        loop {
            let landed = match protection {
                Protection::CompareAndSet => {
                    let snapshot = self.versioned.read().await?;
                    compute(hold).await;
                    let next = parse(snapshot.value.as_deref()) + 1;
                    self.versioned
                        .compare_and_set(snapshot.version, next.to_string().as_bytes())
                        .await?
                        .is_some()
                }
                Protection::Watch => {
                    let transaction = self.backend.watch(&[&self.key]).await?;
                    compute(hold).await;
                    let next = parse(transaction.values()[0].as_deref()) + 1;
                    transaction
                        .exec(vec![TxWrite::set(self.key.clone(), next.to_string())])
                        .await?
                }
                Protection::Lock => {
                    let guard = self.lock.acquire().await?;
                    let next = parse(self.backend.get(&self.key).await?.as_deref()) + 1;
                    compute(hold).await;
                    self.backend
                        .set(&self.key, next.to_string().as_bytes(), SetOptions::new())
                        .await?;
                    guard.release().await?;
                    true
                }
            };
            if landed {
                return Ok(conflicts);
            }
            conflicts += 1;
            tokio::task::yield_now().await;
        }
    }

    /// The counter's value as `protection` stores it.
    async fn value(&self, protection: Protection) -> Result<u64, LockError> {
        Ok(match protection {
            Protection::CompareAndSet => parse(self.versioned.read().await?.value.as_deref()),
            Protection::Watch | Protection::Lock => {
                parse(self.backend.get(&self.key).await?.as_deref())
            }
        })
    }
}

async fn compute(hold: Duration) {
    if hold.is_zero() {
        tokio::task::yield_now().await;
    } else {
        tokio::time::sleep(hold).await;
    }
}

fn parse(value: Option<&[u8]>) -> u64 {
    value
        .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
        .unwrap_or(0)
}

/// Runs `workload` on counters protected by `protection`.
pub(crate) async fn run<B: KvBackend + Clone + 'static>(
    backend: B,
    backend_name: String,
    workload: &Workload,
    protection: Protection,
) -> Result<BenchReport, BenchError> {
    let backend = CountingBackend::new(backend);
    let keys = workload.keys.max(1);
    let names: Vec<LockName> = (0..keys)
        .map(|i| LockName::new(format!("nxlock-bench-counter:{i}")).expect("a valid name"))
        .collect();
    for name in &names {
        backend
            .del(&[&name.key("counter"), &name.key("versioned")])
            .await
            .map_err(LockError::from)?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let options = LockOptions::new().ttl(workload.ttl);
    let mut tasks = Vec::new();
    for client in 0..workload.clients.max(1) {
        let counter = Counter::new(backend.clone(), &names[client % keys], options.clone())?;
        let (stop, hold) = (stop.clone(), workload.hold);
        tasks.push(tokio::spawn(async move {
            let mut result = ClientResult::new();
            while !stop.load(Ordering::Relaxed) {
                let start = Instant::now();
                match counter.increment(protection, hold).await {
                    Ok(conflicts) => {
                        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                        result.acquire_ns.saturating_record(ns.max(1));
                        result.cycle_ns.saturating_record(ns.max(1));
                        result.cycles += 1;
                        result.conflicts += u64::from(conflicts);
                    }
                    Err(_) => result.errors += 1,
                }
            }
            (client % keys, result)
        }));
    }
    let started = Instant::now();
    let commands_before = backend.commands();
    tokio::time::sleep(workload.duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut clients = Vec::new();
    let mut landed = vec![0u64; keys];
    for task in tasks {
        if let Ok((key, result)) = task.await {
            landed[key] += result.cycles;
            clients.push(result);
        }
    }
    let elapsed = started.elapsed();
    let commands = backend.commands() - commands_before;
    let mut lost = 0u64;
    for (name, landed) in names.iter().zip(&landed) {
        let counter = Counter::new(backend.clone(), name, options.clone())?;
        lost += landed.saturating_sub(counter.value(protection).await?);
    }
    let report = BenchReport::collect(
        backend_name,
        workload,
        elapsed,
        commands,
        usize::try_from(lost).unwrap_or(usize::MAX),
        clients,
    );
    Ok(report.with_conflicts())
}
