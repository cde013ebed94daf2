//! Precision: with the one default fault set, the first report on a buggy lock is its own
//! bug (not inherent, shrunk to at most 4 steps) for seeds 1, 2 and 3 within 20,000 runs,
//! and the correct locks stay clean. Prints the table EXPLORE.md shows.
//!
//! The correct locks run `NXLOCK_PRECISION_CLEAN_RUNS` runs each (default 2,000; the
//! published table uses 100,000 in a release build:
//! `NXLOCK_PRECISION_CLEAN_RUNS=100000 cargo test --release -p lock-explore --test it precision -- --nocapture`).

use lock_explore::Report;

use crate::user_locks::UserLock;

const BUDGET: u64 = 20_000;
const SEEDS: [u64; 3] = [1, 2, 3];

fn clean_runs() -> u64 {
    std::env::var("NXLOCK_PRECISION_CLEAN_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
}

fn row(lock: UserLock, seed: u64, report: &Report) -> String {
    let (kind, run, steps) = match &report.counterexample {
        Some(found) => (
            found.violation.kind.to_string(),
            found.run.map_or("fault-free".to_owned(), |r| r.to_string()),
            found.schedule.steps.len().to_string(),
        ),
        None => (
            "clean".to_owned(),
            format!("{} runs", report.runs),
            "-".to_owned(),
        ),
    };
    let inherent: u64 = report.inherent.values().sum();
    format!(
        "| {lock:?} | {seed} | {kind} | {run} | {steps} | {inherent} | {:.0} |",
        report.runs_per_second()
    )
}

#[test]
fn the_first_report_is_the_locks_own_bug_and_correct_locks_stay_clean() {
    let mut table = vec![
        "| lock | seed | first report | found by run | steps | inherent findings | runs/s |"
            .to_owned(),
        "|---|---|---|---|---|---|---|".to_owned(),
    ];
    let mut failures = Vec::new();
    for lock in UserLock::ALL {
        for seed in SEEDS {
            let runs = if lock.is_correct() {
                clean_runs()
            } else {
                BUDGET
            };
            let report = lock
                .explorer()
                .seed(seed)
                .runs(runs)
                .threads(1)
                .explore()
                .unwrap();
            table.push(row(lock, seed, &report));
            match (&report.counterexample, lock.is_correct()) {
                (None, true) => {}
                (Some(found), true) => failures.push(format!("{lock:?} seed {seed}: {found}")),
                (None, false) => failures.push(format!("{lock:?} seed {seed}: not found")),
                (Some(found), false) => {
                    if !lock.own_bug().contains(&found.violation.kind)
                        || found.violation.is_inherent()
                        || found.schedule.steps.len() > 4
                        || found.identical_replays != lock_explore::REPLAYS
                    {
                        failures.push(format!("{lock:?} seed {seed}: {found}"));
                    }
                }
            }
        }
    }
    println!("{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
