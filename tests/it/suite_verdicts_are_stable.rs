//! A case's verdict does not depend on the run: the whole suite, run again and again on
//! the double, with and without pub/sub, on a current-thread and on a two-thread
//! runtime, gives every case the same outcome each time. `NXLOCK_STABILITY_RUNS=300`
//! runs each 300 times (the default, 3, keeps CI short).

use std::time::Duration;

use nxlock::conformance::{Capabilities, Capability, Harness, Outcome, run_all};
use nxlock::harness::MemoryHarness;
use nxlock::{ErrorKind, MemoryBackend};

/// The double with `SUBSCRIBE` refused, as by a server without pub/sub: waiters poll.
struct WithoutPubSub;

impl Harness for WithoutPubSub {
    type Backend = MemoryBackend;

    fn name(&self) -> String {
        "memory without pub/sub".into()
    }

    async fn backend(&self) -> Result<MemoryBackend, String> {
        let backend = MemoryBackend::new();
        backend
            .faults()
            .fail_command("SUBSCRIBE", u64::MAX, ErrorKind::Unsupported);
        Ok(backend)
    }

    async fn advance(&self, backend: &MemoryBackend, by: Duration) {
        backend.advance(by);
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::none()
            .with(Capability::TimeControl)
            .with(Capability::Transactions)
    }
}

/// How many times the suite runs on each harness (`NXLOCK_STABILITY_RUNS` for more).
fn runs() -> usize {
    std::env::var("NXLOCK_STABILITY_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3)
}

async fn same_verdicts_every_run<H: Harness>(harness: &H) {
    let first = run_all(harness).await;
    assert_eq!(first.failed(), 0, "{first}");
    let outcomes = |report: &nxlock::conformance::Report| -> Vec<(String, Outcome)> {
        report
            .cases
            .iter()
            .map(|case| (case.name.clone(), case.outcome.clone()))
            .collect()
    };
    let expected = outcomes(&first);
    for run in 1..runs() {
        let report = run_all(harness).await;
        assert_eq!(outcomes(&report), expected, "run {run}:\n{report}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_verdict_is_the_same_on_every_run_with_pub_sub() {
    same_verdicts_every_run(&MemoryHarness).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_verdict_is_the_same_on_every_run_without_pub_sub() {
    same_verdicts_every_run(&WithoutPubSub).await;
}

#[tokio::test(flavor = "current_thread")]
async fn every_verdict_is_the_same_on_every_run_on_one_thread_with_pub_sub() {
    same_verdicts_every_run(&MemoryHarness).await;
}

#[tokio::test(flavor = "current_thread")]
async fn every_verdict_is_the_same_on_every_run_on_one_thread_without_pub_sub() {
    same_verdicts_every_run(&WithoutPubSub).await;
}
