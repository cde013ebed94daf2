//! [`run`]: a workload on the runner its algorithm needs.

use lock_core::{
    FairLock, KvBackend, LegacyLock, LockName, LockOptions, NamedLock, ScriptedLock, TokenLock,
    Wait,
};

use super::BenchError;
use super::counters::{self, Protection};
use super::locks::{one_per_key, run_workload};
use super::report::BenchReport;
use super::workload::{Algorithm, Waiting, Workload};

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
            run_workload(backend, name, workload, TokenLock::with_options).await
        }
        (Algorithm::Token, Waiting::Notify) => {
            let make = |b, n: &LockName, o: LockOptions| {
                TokenLock::with_options(b, n, o.wait(Wait::Notify))
            };
            run_workload(backend, name, workload, make).await
        }
        (Algorithm::Token, Waiting::Fair) => {
            let make = one_per_key(workload.shared_lock, FairLock::with_options);
            run_workload(backend, name, workload, make).await
        }
        (Algorithm::Legacy, Waiting::Poll) => {
            run_workload(backend, name, workload, LegacyLock::with_options).await
        }
        (Algorithm::Scripted, Waiting::Poll) => {
            run_workload(backend, name, workload, ScriptedLock::with_options).await
        }
        (Algorithm::Optimistic, _) => {
            counters::run(backend, name, workload, Protection::CompareAndSet).await
        }
        (Algorithm::Watch, _) => counters::run(backend, name, workload, Protection::Watch).await,
        (Algorithm::Locked, _) => counters::run(backend, name, workload, Protection::Lock).await,
        (algorithm, _) if !algorithm.benched() => Err(BenchError::InvalidWorkload(format!(
            "the bench runs {}; {algorithm} is not among them",
            benched_names()
        ))),
        (algorithm, wait) => Err(BenchError::InvalidWorkload(
            format!(
                "--wait {wait:?} needs --algorithm token; {} locks can only poll",
                algorithm.name()
            )
            .to_lowercase(),
        )),
    }
}

/// The algorithms the bench runs, as a list for messages.
pub fn benched_names() -> String {
    let names: Vec<&str> = Algorithm::ALL
        .into_iter()
        .filter(|algorithm| algorithm.benched())
        .map(Algorithm::name)
        .collect();
    names.join(", ")
}
