//! Running cases: one at a time, never letting a panic or a hang escape.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::{Capability, CaseReport, CaseResult, Failure, Outcome, Verdict};

/// The longest a case may run before it counts as hung.
pub const CASE_TIMEOUT: Duration = Duration::from_secs(60);

/// Polls a future, turning a panic into an error carrying the panic message.
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => {
                let text = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "non-string panic".into());
                Poll::Ready(Err(text))
            }
        }
    }
}

/// Runs one case body with a timeout, catching panics.
pub async fn guarded(case: impl Future<Output = CaseResult>) -> CaseResult {
    match tokio::time::timeout(CASE_TIMEOUT, CatchUnwind(Box::pin(case))).await {
        Ok(Ok(result)) => result,
        Ok(Err(panic)) => Err(Failure(format!("panicked: {panic}"))),
        Err(_) => Err(Failure(format!("did not finish within {CASE_TIMEOUT:?}"))),
    }
}

/// Turns a case's result into its report line.
pub fn judge(name: &str, result: CaseResult) -> CaseReport {
    let (outcome, detail) = match result {
        Ok(Verdict::Passed) => (Outcome::Passed, String::new()),
        Ok(Verdict::ExpectedFailure(seen)) => (
            Outcome::ExpectedFailure,
            format!("expected failure: {seen}"),
        ),
        Err(Failure(why)) => (Outcome::Failed, why),
    };
    CaseReport {
        name: name.to_string(),
        outcome,
        detail,
        missing: Vec::new(),
    }
}

/// The report line of a case not run because the harness lacks `missing`.
pub fn skipped(name: &str, missing: &[Capability]) -> CaseReport {
    let names: Vec<_> = missing.iter().map(|c| c.name()).collect();
    CaseReport {
        name: name.to_string(),
        outcome: Outcome::Skipped,
        detail: format!(
            "needs {}, which the harness does not declare",
            names.join(" and ")
        ),
        missing: missing.to_vec(),
    }
}

/// Runs `f` to completion on a fresh multi-threaded runtime (two workers), as the
/// generated `#[test]` functions do.
pub fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime for the conformance test")
        .block_on(f)
}

/// Says loudly, past the test runner's output capture, that a case was skipped.
pub fn announce_skip(group: &str, case: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "*** SKIPPED {group}::{case}: {why} ***");
}

/// Panics with the case's detail if it failed (for generated tests); prints expected
/// failures so they are visible in the test output, and skips loudly.
pub fn assert_case(report: &CaseReport) {
    match report.outcome {
        Outcome::Passed => {}
        Outcome::ExpectedFailure => println!("{}: {}", report.name, report.detail),
        Outcome::Skipped => {
            let _ = std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!("*** SKIPPED {}: {} ***\n", report.name, report.detail),
            );
        }
        Outcome::Failed => panic!("{} failed: {}", report.name, report.detail),
    }
}
