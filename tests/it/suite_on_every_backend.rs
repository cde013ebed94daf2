//! The whole suite on each backend through `run_all` (rstest over backends): every case
//! passes, and the expected failures are exactly the seeds' broken algorithms.

use nxlock::conformance::{Outcome, Report, run_all};
use nxlock::harness::{MemoryHarness, RedisHarness};
use rstest::rstest;

#[derive(Debug)]
enum Backend {
    Memory,
    Redis,
}

impl Backend {
    /// The report, or `None` after a loud skip when no Redis server is available.
    async fn report(&self) -> Option<Report> {
        match self {
            Backend::Memory => Some(run_all(&MemoryHarness).await),
            Backend::Redis => {
                let harness = RedisHarness::from_env();
                if let Some(why) = nxlock::conformance::Harness::skip_reason(&harness) {
                    nxlock::testing::announce_skip("suite_on_every_backend::redis", &why);
                    return None;
                }
                Some(run_all(&harness).await)
            }
        }
    }
}

#[rstest]
#[case::memory(Backend::Memory)]
#[case::redis(Backend::Redis)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_case_passes(#[case] backend: Backend) {
    let Some(report) = backend.report().await else {
        return;
    };
    assert_eq!(report.failed(), 0, "{report}");
    assert_eq!(report.cases.len(), nxlock::conformance::case_names().len());
    let expected: Vec<_> = report
        .cases
        .iter()
        .filter(|c| c.outcome == Outcome::ExpectedFailure)
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        expected,
        [
            "legacy::clock_running_ahead_takes_a_live_lock",
            "scripted::clock_running_ahead_takes_a_live_lock",
            "optimistic::a_read_modify_write_without_protection_loses_updates",
            "fenced::unfenced_stale_write_corrupts_the_resource",
            "races::naive_del_then_setnx_recovery_lets_two_clients_hold",
            "races::unchecked_late_del_removes_another_clients_lock"
        ],
        "{backend:?}"
    );
}
