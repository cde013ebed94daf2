//! Workloads the tests share.

use std::time::Duration;

use lock_core::{
    LockAlgorithm, LockGuard, LockName, LockOptions, NamedLock, Replication, TokenLock,
};
use lock_explore::{Context, Explorer, Report, ViolationKind};

pub const TTL: Duration = Duration::from_millis(1_000);

/// A token lock guarding an unfenced resource.
pub async fn token_cycle(ctx: Context, replication: Option<Replication>) {
    let name = LockName::new("job").unwrap();
    let mut options = LockOptions::new().ttl(TTL);
    if let Some(replication) = replication {
        options = options.replication(replication);
    }
    let Ok(lock) = TokenLock::with_options(ctx.backend(), &name, options) else {
        return;
    };
    if let Ok(guard) = lock.acquire().await {
        ctx.holds(guard.key(), guard.token().as_bytes());
        ctx.enter_until("job", guard.valid_until_ms()).await;
        ctx.work(TTL / 10).await;
        ctx.exit("job").await;
        let _ = guard.release().await;
    }
}

/// The report's counterexample, with its violation kind and step count checked.
#[track_caller]
pub fn found(report: Report, kind: lock_explore::ViolationKind) -> lock_explore::Counterexample {
    let found = report
        .counterexample
        .unwrap_or_else(|| panic!("no violation in {} runs", report.runs));
    assert_eq!(found.violation.kind, kind, "{found}");
    assert!(!found.violation.is_inherent(), "{found}");
    assert!(found.schedule.steps.len() <= 6, "{found}");
    assert_eq!(found.identical_replays, lock_explore::REPLAYS, "{found}");
    found
}

/// The report's inherent finding: no violation of the lock's own, and a finding
/// labelled inherent, shrunk and replayed.
#[track_caller]
pub fn inherent(report: Report) -> lock_explore::Counterexample {
    if let Some(found) = &report.counterexample {
        panic!("a violation of the lock's own: {found}");
    }
    let found = report
        .inherent_finding
        .unwrap_or_else(|| panic!("no inherent finding in {} runs", report.runs));
    assert!(found.violation.is_inherent(), "{found}");
    assert_ne!(
        found.violation.kind,
        ViolationKind::MutualExclusion,
        "{found}"
    );
    assert!(found.schedule.steps.len() <= 6, "{found}");
    assert_eq!(found.identical_replays, lock_explore::REPLAYS, "{found}");
    found
}

/// One thread, so that the verdict does not depend on the machine.
pub fn explorer(explorer: Explorer) -> Explorer {
    explorer.threads(1).seed(1)
}
