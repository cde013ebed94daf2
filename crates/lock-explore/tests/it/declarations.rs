//! What a workload declares means exactly what the docs say: a fresh random stream per
//! `rng()` call, `holds` checked inside a section entered without a validity, an extend
//! that claims a resource someone else is inside, a validity's end that is exclusive, an
//! enter that re-states instead of nesting, a cancellation that only the cycle takes,
//! and a fault-free run with nothing to check.

use std::time::Duration;

use lock_core::{
    KvBackend, Lease, LeaseOptions, LockAlgorithm, LockName, NamedLock, SetOptions, SetReply,
    TokenLock,
};
use lock_explore::{Context, Explorer, Fault, Schedule, Step, ViolationKind, What, When};

fn one_run(
    explorer: &Explorer,
    clients: usize,
    steps: Vec<Step>,
) -> (lock_explore::Trace, Option<lock_explore::Violation>) {
    explorer.run_schedule(&Schedule {
        clients,
        cycles: 1,
        token_seed: 1,
        steps,
    })
}

#[test]
fn each_rng_call_draws_a_stream_of_its_own_and_replays_it() {
    let explorer = Explorer::new(|ctx: Context| async move {
        let (a, b) = (ctx.rng().u64(..), ctx.rng().u64(..));
        // Two tokens from two calls must differ; the same calls in a replay must not.
        let key = format!("tokens:{}", ctx.client());
        let _ = ctx
            .backend()
            .set(
                key.as_bytes(),
                format!("{a}:{b}").as_bytes(),
                SetOptions::new().px(1000),
            )
            .await;
        ctx.enter("r").await;
        ctx.exit("r").await;
    })
    .clients(1)
    .cycles(1)
    .liveness(None);
    let (trace, violation) = one_run(&explorer, 1, Vec::new());
    assert!(violation.is_none(), "{violation:?}");
    let set = trace
        .iter()
        .find_map(|e| match &e.what {
            What::Command { command, .. } if command.starts_with("SET") => Some(command.clone()),
            _ => None,
        })
        .unwrap();
    let value = set.split_whitespace().nth(2).unwrap();
    let (a, b) = value.split_once(':').unwrap();
    assert_ne!(a, b, "two calls gave one stream: {set}");
    assert_eq!(
        one_run(&explorer, 1, Vec::new()).0,
        trace,
        "a replay draws the same"
    );
}

/// A lock key taken with a 500 ms TTL; the holder enters without saying how long it is
/// valid, and works 100 ms inside. Client 1 deletes whatever is there before it enters.
async fn plain_enter(ctx: Context) {
    let backend = ctx.backend();
    if ctx.client() == 1 {
        ctx.work(Duration::from_millis(20)).await;
        let _ = backend.del(&[b"lock"]).await;
        return;
    }
    let token = b"t0";
    let set = backend
        .set(b"lock", token, SetOptions::new().nx().px(500))
        .await;
    if !matches!(set, Ok(SetReply::Applied)) {
        return;
    }
    ctx.holds(b"lock", token);
    ctx.enter("r").await;
    ctx.work(Duration::from_millis(100)).await;
    ctx.exit("r").await;
}

#[test]
fn holds_is_checked_inside_a_section_entered_without_a_validity() {
    let explorer = Explorer::new(plain_enter)
        .clients(2)
        .cycles(1)
        .liveness(None);
    let (_, violation) = one_run(&explorer, 2, Vec::new());
    let violation = violation.expect("the DEL of someone else's key is found");
    assert_eq!(violation.kind, ViolationKind::LostOwnership, "{violation}");
    assert!(
        violation.detail.contains("its key's TTL gives it")
            && violation.detail.contains("after client 1's DEL"),
        "{violation}"
    );
}

#[test]
fn an_extend_claiming_a_resource_another_client_is_inside_is_mutual_exclusion() {
    // Client 0 enters, its validity lapses while it is paused, client 1 enters; then
    // client 0 says its lock was extended, as a blind PEXPIRE would let it believe.
    let explorer = Explorer::new(|ctx: Context| async move {
        let clock = ctx.clock();
        if ctx.client() == 1 {
            ctx.work(Duration::from_millis(150)).await;
            ctx.enter_until("r", clock.now_ms() + 500).await;
            ctx.work(Duration::from_millis(300)).await;
            ctx.exit("r").await;
            return;
        }
        ctx.enter_until("r", clock.now_ms() + 100).await;
        ctx.work(Duration::from_millis(200)).await;
        ctx.extended_until("r", clock.now_ms() + 500);
        ctx.work(Duration::from_millis(10)).await;
        ctx.exit("r").await;
    })
    .clients(2)
    .cycles(1)
    .liveness(None);
    let (_, violation) = one_run(&explorer, 2, Vec::new());
    let violation = violation.expect("found");
    assert_eq!(
        violation.kind,
        ViolationKind::MutualExclusion,
        "{violation}"
    );
    assert!(
        violation
            .detail
            .contains("client 0 extended its lock on \"r\" while client 1 was inside"),
        "{violation}"
    );
}

#[test]
fn a_holder_with_no_validity_left_is_outside_and_so_named() {
    // Client 1 is handed a lock with 0 ms left while client 0 is inside within its own.
    let explorer = Explorer::new(|ctx: Context| async move {
        let clock = ctx.clock();
        if ctx.client() == 0 {
            ctx.enter_until("r", clock.now_ms() + 500).await;
            ctx.work(Duration::from_millis(100)).await;
            ctx.exit("r").await;
        } else {
            ctx.work(Duration::from_millis(10)).await;
            ctx.enter_until("r", clock.now_ms()).await;
            ctx.exit("r").await;
        }
    })
    .clients(2)
    .cycles(1)
    .liveness(None);
    let (_, violation) = one_run(&explorer, 2, Vec::new());
    let violation = violation.expect("an overlap");
    assert_eq!(violation.kind, ViolationKind::ExpiredHolder, "{violation}");
    assert!(violation.is_inherent());
    assert!(
        violation
            .detail
            .contains("client 1 entered \"r\" with no validity left (its lock had 0 ms left)"),
        "{violation}"
    );
}

#[test]
fn a_repeated_enter_restates_the_section_and_one_exit_leaves_it() {
    // Client 0 enters twice (an extend sent as a second ENTER), exits once; client 1
    // enters after: no overlap.
    let explorer = Explorer::new(|ctx: Context| async move {
        let clock = ctx.clock();
        if ctx.client() == 0 {
            ctx.enter_until("r", clock.now_ms() + 100).await;
            ctx.enter_until("r", clock.now_ms() + 200).await;
            ctx.work(Duration::from_millis(50)).await;
            ctx.exit("r").await;
        } else {
            ctx.work(Duration::from_millis(100)).await;
            ctx.enter_until("r", clock.now_ms() + 500).await;
            ctx.exit("r").await;
        }
    })
    .clients(2)
    .cycles(1)
    .liveness(None);
    let (trace, violation) = one_run(&explorer, 2, Vec::new());
    assert!(violation.is_none(), "{violation:?}\n{trace:#?}");
}

#[test]
fn a_cancellation_is_taken_by_the_cycle_never_by_a_lock_s_background_task() {
    // A lease's watchdog renews every third of a second in the background while the cycle
    // works 2.5 s; a cancellation armed meanwhile must land in the cycle (at its next
    // operation, the ENTER), not in a renewal, which would hang the watchdog.
    let explorer = Explorer::new(|ctx: Context| async move {
        let name = LockName::new("job").unwrap();
        let options = lock_core::LockOptions::new().ttl(Duration::from_secs(1));
        let Ok(lock) = TokenLock::with_options(ctx.backend(), &name, options) else {
            return;
        };
        let Ok(guard) = lock.acquire().await else {
            return;
        };
        let lease = Lease::start(guard, LeaseOptions::new(Duration::from_secs(1)));
        ctx.work(Duration::from_millis(2_500)).await;
        ctx.enter("r").await;
        ctx.exit("r").await;
        let _ = lease.release().await;
    })
    .clients(1)
    .cycles(1)
    .liveness(None);
    let cancel = Step {
        when: When::At { ms: 100 },
        fault: Fault::Cancel { client: 0 },
    };
    let (trace, _) = one_run(&explorer, 1, vec![cancel]);
    let at = |what: fn(&What) -> bool| trace.iter().find(|e| what(&e.what)).map(|e| e.at_us);
    let cancelled = at(|w| matches!(w, What::Cancelled)).expect("the cycle was cancelled");
    assert_eq!(cancelled, 2_500_000, "at its ENTER: {trace:#?}");
    let renewed_after_the_fault = trace
        .iter()
        .filter(|e| e.at_us > 100_000 && e.at_us < cancelled)
        .filter(|e| matches!(&e.what, What::Command { reply, .. } if !reply.contains("cancelled")))
        .count();
    assert!(
        renewed_after_the_fault >= 5,
        "the watchdog kept renewing: {trace:#?}"
    );
    assert!(
        !trace.iter().any(|e| matches!(e.what, What::Enter { .. })),
        "the cycle went on: {trace:#?}"
    );
}

#[test]
fn a_workload_that_checks_nothing_is_never_called_clean() {
    let report = Explorer::new(|ctx: Context| async move {
        let _ = ctx.backend().get(b"k").await;
    })
    .clients(2)
    .runs(100)
    .threads(1)
    .explore()
    .unwrap();
    assert_eq!(report.nothing_checked, Some(vec![0, 1]), "{report}");
    assert_eq!(report.exit_code(), lock_explore::EXIT_NOTHING_CHECKED);
    assert!(
        report.to_string().starts_with("NOTHING WAS CHECKED"),
        "{report}"
    );
    assert_eq!(report.runs, 1, "no search behind it");
}
