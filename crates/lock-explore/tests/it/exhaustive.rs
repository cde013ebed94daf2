//! Bounded exhaustive search: on the ten user locks, every schedule of one step finds
//! each buggy lock's own bug and leaves the correct ones clean; the space splits exactly
//! across shards; every report states what it covered. Prints the table EXPLORE.md
//! shows, on the 3 × 4 workload, with the random search's first finding beside it:
//! `NXLOCK_EXHAUSTIVE_TABLE=1 cargo test --release -p lock-explore --test it exhaustive -- --nocapture`.

use lock_explore::{Coverage, Exhaustive, Report, ShardReport};

use crate::user_locks::UserLock;

fn table_wanted() -> bool {
    std::env::var_os("NXLOCK_EXHAUSTIVE_TABLE").is_some()
}

/// The report's exhaustive count; `None` for a search the fault-free run ended.
fn counted(report: &Report) -> Option<Exhaustive> {
    match &report.coverage {
        Coverage::Exhaustive(e) => Some(e.clone()),
        Coverage::Sampled { .. } | Coverage::Guided(_) => {
            let found = report.counterexample.as_ref().expect("a sampled report");
            assert_eq!(found.run, None, "{found}");
            None
        }
    }
}

fn first(report: &Report) -> String {
    match &report.counterexample {
        Some(found) => found.run.map_or("fault-free".to_owned(), |r| r.to_string()),
        None => "-".to_owned(),
    }
}

#[test]
fn one_step_finds_every_buggy_lock_and_clears_the_correct_ones() {
    let mut table = vec![
        "| lock | first report | exhaustive: found by schedule | random (seed 1): found by run | space | pruned | ran | seconds |".to_owned(),
        "|---|---|---|---|---|---|---|---|".to_owned(),
    ];
    let mut failures = Vec::new();
    for lock in UserLock::ALL {
        // The correct locks' whole space on the 3 × 4 workload is 16,544 runs for the
        // token lock: the table's; the suite runs them on 2 clients × 1 cycle.
        let (clients, cycles) = if lock.is_correct() && !table_wanted() {
            (2, 1)
        } else {
            (3, 4)
        };
        let report = lock
            .explorer()
            .clients(clients)
            .cycles(cycles)
            .exhaustive(1)
            .threads(if table_wanted() { 2 } else { 1 })
            .explore()
            .unwrap();
        let line = report.guarantee();
        assert!(line.starts_with("guarantee:"), "{line}");
        let random = if table_wanted() && !lock.is_correct() {
            let random = lock
                .explorer()
                .seed(1)
                .runs(20_000)
                .threads(1)
                .explore()
                .unwrap();
            first(&random)
        } else {
            "-".to_owned()
        };
        let e = counted(&report);
        let (space, pruned, ran) = e
            .as_ref()
            .map_or((0, 0, 0), |e| (e.schedules, e.pruned, e.ran));
        let kind = report
            .counterexample
            .as_ref()
            .map_or("clean".to_owned(), |f| f.violation.kind.to_string());
        let row = format!(
            "| {lock:?} ({clients} × {cycles}) | {kind} | {} | {random} | {space} | {pruned} | {ran} | {:.1} |",
            first(&report),
            report.elapsed.as_secs_f64()
        );
        eprintln!("{row}");
        table.push(row);
        match (&report.counterexample, lock.is_correct()) {
            (None, true) if e.as_ref().is_some_and(Exhaustive::complete) => {
                assert!(line.ends_with(": clean"), "{line}");
            }
            (None, true) => failures.push(format!("{lock:?}: incomplete {e:?}")),
            (Some(found), true) => failures.push(format!("{lock:?}: {found}")),
            (None, false) => failures.push(format!("{lock:?}: not found with one step")),
            (Some(found), false) => {
                if !lock.own_bug().contains(&found.violation.kind)
                    || found.violation.is_inherent()
                    || found.identical_replays != lock_explore::REPLAYS
                {
                    failures.push(format!("{lock:?}: {found}"));
                }
            }
        }
    }
    println!("{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `lock`'s exhaustive search of depth `depth` on 2 clients × 1 cycle, in shard `shard`.
fn search(lock: UserLock, depth: usize, shard: Option<(u64, u64)>) -> Report {
    let mut explorer = lock
        .explorer()
        .clients(2)
        .cycles(1)
        .exhaustive(depth)
        .keep_going(true)
        .threads(2);
    if let Some((k, n)) = shard {
        explorer = explorer.shard(k, n);
    }
    explorer.explore().unwrap()
}

#[test]
fn four_shards_merged_cover_exactly_the_space_of_one_machine() {
    for lock in [UserLock::GetCompareDel, UserLock::CorrectFenced] {
        let whole = search(lock, 1, None);
        let one = ShardReport::of(&whole);
        let shards: Vec<ShardReport> = (0..4)
            .map(|k| ShardReport::of(&search(lock, 1, Some((k, 4)))))
            .collect();
        // No schedule twice, none missed: the shards' runs add up to the space.
        let merged = ShardReport::merge(&shards).unwrap();
        let (e, single) = (merged.exhaustive.clone().unwrap(), one.exhaustive.unwrap());
        assert_eq!(e, single, "{lock:?}");
        assert!(e.complete(), "{e:?}");
        assert_eq!(merged.runs, one.runs, "{lock:?}");
        assert_eq!(merged.violations, one.violations, "{lock:?}");
        assert_eq!(merged.found_by_run, one.found_by_run, "{lock:?}");
        assert_eq!(
            merged.guarantee(),
            Coverage::Exhaustive(single)
                .guarantee(one.found_by_run.is_some())
                .into()
        );
        // A shard missing is no proof.
        assert!(ShardReport::merge(&shards[..3]).is_err());
    }
}

#[test]
fn a_depth_two_space_prunes_by_the_single_step_runs_in_every_shard() {
    // Depth 2 prunes a pair whose step the other step's run never reaches; a shard
    // makes the single-step runs others own to know that, and judges only its own.
    let lock = UserLock::CorrectFenced;
    let limited = |shard: Option<(u64, u64)>| {
        let mut explorer = lock
            .explorer()
            .clients(2)
            .cycles(1)
            .exhaustive(2)
            .runs(3_000)
            .threads(2);
        if let Some((k, n)) = shard {
            explorer = explorer.shard(k, n);
        }
        explorer.explore().unwrap()
    };
    let whole = limited(None);
    let e = counted(&whole).unwrap();
    assert!(e.steps < 3_000 && e.schedules > 3_000, "{e:?}");
    assert!(!e.complete());
    assert!(
        whole.guarantee().contains("NOT exhaustive"),
        "{}",
        whole.guarantee()
    );
    let shards: Vec<Report> = (0..2).map(|k| limited(Some((k, 2)))).collect();
    for shard in &shards {
        assert!(
            shard.probes > 0 && shard.probes < e.steps,
            "{}",
            shard.probes
        );
    }
    let merged = ShardReport::merge(&shards.iter().map(ShardReport::of).collect::<Vec<_>>())
        .unwrap()
        .exhaustive
        .unwrap();
    assert_eq!((merged.ran, merged.pruned), (e.ran, e.pruned));
}

#[test]
fn depths_outside_one_to_four_are_refused() {
    for depth in [0, 5] {
        let error = UserLock::CorrectToken
            .explorer()
            .exhaustive(depth)
            .explore()
            .unwrap_err();
        assert!(error.to_string().contains("from 1 to 4"), "{error}");
    }
}

#[test]
fn the_correct_locks_are_clean_at_depth_two() {
    // The table's 3 × 4 workload takes minutes a lock; the suite runs 2 clients × 1
    // cycle. Either way every schedule of at most two steps is run or pruned.
    let (clients, cycles) = if table_wanted() { (3, 4) } else { (2, 1) };
    for lock in [UserLock::CorrectFenced, UserLock::CorrectToken] {
        let report = lock
            .explorer()
            .clients(clients)
            .cycles(cycles)
            .exhaustive(2)
            .threads(2)
            .explore()
            .unwrap();
        let line = report.guarantee();
        eprintln!(
            "{lock:?} ({clients} × {cycles}), depth 2: {:.1} s; {line}",
            report.elapsed.as_secs_f64()
        );
        assert!(report.counterexample.is_none(), "{lock:?}: {line}");
        let e = counted(&report).unwrap();
        assert!(e.complete(), "{lock:?}: {e:?}");
        assert!(
            e.deep_steps < e.steps,
            "{lock:?}: no retry collapsed: {e:?}"
        );
        assert!(
            line.ends_with(": clean") && line.contains("left out"),
            "{line}"
        );
    }
}
