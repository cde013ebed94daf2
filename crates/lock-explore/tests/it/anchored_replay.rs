//! Saved steps are anchored to an operation's name and time, so that a replay on a lock
//! that now sends one command more still aims at the same moment; a step whose
//! operation never comes is reported as unplaced.

use std::time::Duration;

use lock_core::{KvBackend, SetOptions, SetReply};
use lock_explore::{Context, Explorer, ReplayFile, Step, ViolationKind, When};

/// A GET-compare-DEL release; `extra` sends one EXISTS more before the acquire, as a
/// changed version of the lock might.
fn explorer(extra: bool) -> Explorer {
    Explorer::new(move |ctx: Context| async move {
        let (backend, clock) = (ctx.backend(), ctx.clock());
        let token = ctx.rng().u64(..).to_string();
        if extra {
            let _ = backend.exists(&[b"lock"]).await;
        }
        let mut started = clock.now_ms();
        loop {
            let set = backend.set(b"lock", token.as_bytes(), SetOptions::new().nx().px(500));
            if matches!(set.await, Ok(SetReply::Applied)) {
                break;
            }
            clock.sleep(Duration::from_millis(10)).await;
            started = clock.now_ms();
        }
        ctx.holds(b"lock", token.as_bytes());
        ctx.enter_until("jobs", started + 500).await;
        ctx.work(Duration::from_millis(50)).await;
        ctx.exit("jobs").await;
        if backend.get(b"lock").await.ok().flatten().as_deref() == Some(token.as_bytes()) {
            let _ = backend.del(&[b"lock"]).await;
        }
    })
    .ttl(Duration::from_millis(500))
    .clients(2)
    .seed(7)
    .runs(2_000)
    .threads(1)
}

#[test]
fn a_saved_step_still_lands_on_a_lock_that_sends_one_command_more() {
    let found = explorer(false)
        .explore()
        .unwrap()
        .counterexample
        .expect("found");
    assert_eq!(
        found.violation.kind,
        ViolationKind::LostOwnership,
        "{found}"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("release.json");
    found.save(&path).unwrap();
    let file = ReplayFile::load(&path).unwrap();
    assert!(
        file.steps
            .iter()
            .all(|s| matches!(s.when, When::AfterNext { .. } | When::At { .. })),
        "{:?}",
        file.steps
    );
    let changed = explorer(true).replay(&path).unwrap();
    assert!(changed.unplaced.is_empty(), "{:?}", changed.unplaced);
    assert!(changed.reproduced(), "{:?}", changed.violation);
}

#[test]
fn a_step_whose_operation_never_comes_is_unplaced() {
    let found = explorer(false)
        .explore()
        .unwrap()
        .counterexample
        .expect("found");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("release.json");
    let mut file = found.replay_file();
    file.steps = vec![Step {
        when: When::AfterNext {
            client: 0,
            kind: "GETDEL".to_owned(),
            from_us: 0,
            nth: 0,
        },
        fault: file.steps[0].fault,
    }];
    std::fs::write(&path, serde_json::to_string(&file).unwrap()).unwrap();
    let replayed = explorer(false).replay(&path).unwrap();
    assert_eq!(replayed.unplaced, file.steps);
}
