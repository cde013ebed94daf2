//! The search: a fault-free baseline, then seeded schedules across threads, judged in
//! run order; the first finding of the lock's own (confirmed by replays where runs are
//! not deterministic) is concluded into a counterexample.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::{Mutex, RwLock};

use crate::conclude::{conclude, divergence, diverges};
use crate::explorer::{ExploreError, Plan};
use crate::generate::{Anchoring, Baseline};
use crate::report::{Report, Unconfirmed};
use crate::runner::{Outcome, Recording, RunnerError};
use crate::schedule::Schedule;
use crate::strategy::{ExhaustiveSchedules, GuidedSchedules, RandomSchedules, Strategy, Tally};
use crate::verdict::{classify, reproduce};
use crate::violation::{Violation, ViolationKind};

/// A run that broke a property: its index, schedule and outcome.
pub(crate) struct Found {
    pub(crate) index: u64,
    pub(crate) schedule: Schedule,
    pub(crate) outcome: Outcome,
    /// Replays that reproduced it, of those made, where it had to be confirmed.
    pub(crate) confirmed: Option<(u32, u32)>,
}

/// What the search made.
#[derive(Default)]
struct Searched {
    runs: u64,
    violations: BTreeMap<ViolationKind, u64>,
    inherent: BTreeMap<ViolationKind, u64>,
    /// The first violation of the lock's own in run order.
    found: Option<Found>,
    /// The first inherent finding in run order.
    inherent_found: Option<Found>,
    unconfirmed: Vec<Unconfirmed>,
    voided: BTreeMap<String, u64>,
    first_void: Option<String>,
    unchecked_runs: u64,
    client_failure: Option<String>,
    error: Option<RunnerError>,
    /// Schedules the strategy pruned.
    pruned: u64,
    /// Runs made for another shard's pruning, not judged.
    probes: u64,
}

/// The whole exploration.
pub(crate) fn explore(plan: &Plan) -> Result<Report, ExploreError> {
    let started = Instant::now();
    let options = &plan.options;
    let empty = Schedule {
        clients: options.clients,
        cycles: options.cycles,
        token_seed: fault_free_token_seed(plan.seed),
        steps: Vec::new(),
    };
    // A fault-free run the machine disturbed is made again, a few times.
    let mut first = plan.run(&empty, Recording::Kept)?;
    for _ in 0..3 {
        if first.void.is_none() {
            break;
        }
        first = plan.run(&empty, Recording::Kept)?;
    }
    if let Some(void) = &first.void {
        return Err(ExploreError::Harness(void.to_string()));
    }
    if !first.failures.is_empty() && first.failures.len() >= options.clients {
        return Err(ExploreError::ClientsFailed(first.failures[0].clone()));
    }
    let mut report = Report::new(plan);
    report.client_failure = first.failures.first().cloned();
    if plan.deterministic()
        && let Some(found) = diverges(plan, &empty, &first)?
    {
        report.runs = 1;
        report.counterexample = Some(found);
        report.elapsed = started.elapsed();
        return Ok(report);
    }
    // A fault-free run that breaks the lock is the counterexample (once confirmed); one
    // with only an inherent finding goes on to the search.
    let mut searched = Searched::default();
    let mut verdict = first.violation.clone();
    classify(plan, &empty, &mut verdict)?;
    let unchecked = first.unchecked();
    // A client that sent no checking marker cannot show progress: its liveness is not
    // judged, and nothing of it was checked.
    if !unchecked.is_empty()
        && verdict
            .as_ref()
            .is_some_and(|v| v.kind == ViolationKind::Liveness)
    {
        verdict = None;
    }
    let first_breaks = verdict.as_ref().is_some_and(|v| !v.is_inherent());
    if first_breaks {
        let outcome = Outcome {
            violation: verdict.clone(),
            ..first.clone()
        };
        let elapsed = started.elapsed();
        if let Some(found) = confirmed(plan, u64::MAX, &empty, outcome, &mut searched)? {
            let counterexample = conclude(plan, found, false)?;
            report.runs = 1;
            report.counterexample = Some(counterexample);
            report.unconfirmed = searched.unconfirmed;
            report.elapsed = elapsed;
            return Ok(report);
        }
    }
    if !unchecked.is_empty() {
        report.runs = 1;
        report.nothing_checked = Some(unchecked);
        report.unconfirmed = searched.unconfirmed;
        report.elapsed = started.elapsed();
        return Ok(report);
    }
    let baseline = Baseline::of(&first, options);
    let strategy = strategy(plan, &baseline)?;
    search(plan, strategy.as_ref(), started, &mut searched);
    if let Some(error) = searched.error.take() {
        return Err(error.into());
    }
    // The search's time, without shrinking: what runs per second are measured by.
    let elapsed = started.elapsed();
    let found = match searched.found.take() {
        Some(found) => Some(conclude(plan, found, false)?),
        None => None,
    };
    // Shrunk only when the lock showed no bug of its own: then it is the news.
    let finding = match (&found, searched.inherent_found.take()) {
        (None, Some(inherent)) => Some(conclude(plan, inherent, true)?),
        _ => None,
    };
    report.runs = searched.runs;
    report.violations = searched.violations;
    report.inherent = searched.inherent;
    report.counterexample = found;
    report.inherent_finding = finding;
    report.unconfirmed = searched.unconfirmed;
    report.voided = searched.voided;
    report.first_void = searched.first_void;
    report.unchecked_runs = searched.unchecked_runs;
    report.coverage = strategy.coverage(Tally {
        ran: searched.runs.saturating_sub(report.voided_runs()),
        pruned: searched.pruned,
        voided: report.voided_runs(),
    });
    report.probes = searched.probes;
    if report.client_failure.is_none() {
        report.client_failure = searched.client_failure;
    }
    report.elapsed = elapsed;
    Ok(report)
}

/// A violation of the lock's own in `outcome` of run `index`, confirmed: at once where
/// runs are deterministic, by replays where they are not. An unconfirmed one is listed.
fn confirmed(
    plan: &Plan,
    index: u64,
    schedule: &Schedule,
    outcome: Outcome,
    searched: &mut Searched,
) -> Result<Option<Found>, RunnerError> {
    if plan.deterministic() {
        return Ok(Some(Found {
            index,
            schedule: schedule.clone(),
            outcome,
            confirmed: None,
        }));
    }
    let Some(violation) = outcome.violation.clone() else {
        return Ok(None);
    };
    let c = plan.confirmation;
    let again = reproduce(
        plan,
        schedule,
        violation.kind,
        false,
        c.replays,
        Some(c.needed),
    )?;
    if again.reproduced >= c.needed {
        return Ok(Some(Found {
            index,
            schedule: schedule.clone(),
            outcome,
            confirmed: Some((again.reproduced, again.made)),
        }));
    }
    searched.unconfirmed.push(unconfirmed(
        index,
        schedule,
        &violation,
        again.reproduced,
        again.made,
    ));
    Ok(None)
}

fn unconfirmed(
    index: u64,
    schedule: &Schedule,
    violation: &Violation,
    reproduced: u32,
    replays: u32,
) -> Unconfirmed {
    Unconfirmed {
        kind: violation.kind,
        detail: violation.detail.clone(),
        run: (index != u64::MAX).then_some(index),
        reproduced,
        replays,
        steps: schedule.steps.clone(),
    }
}

/// The strategy `plan` asks for, around `baseline`.
fn strategy(plan: &Plan, baseline: &Baseline) -> Result<Box<dyn Strategy>, ExploreError> {
    let anchoring = if plan.deterministic() {
        Anchoring::ByIndex
    } else {
        Anchoring::ByName
    };
    Ok(match plan.exhaustive {
        Some(depth) => Box::new(
            ExhaustiveSchedules::new(
                &plan.options,
                baseline,
                anchoring,
                depth,
                fault_free_token_seed(plan.seed),
                plan.deterministic(),
            )
            .map_err(ExploreError::Invalid)?,
        ),
        None if plan.guided => Box::new(GuidedSchedules::new(
            plan.seed,
            &plan.options,
            baseline,
            anchoring,
            plan.limit,
        )),
        None => Box::new(RandomSchedules {
            seed: plan.seed,
            options: plan.options.clone(),
            baseline: baseline.clone(),
            anchoring,
            limit: plan.limit,
        }),
    })
}

/// The first index at or after `from` that shard `(k, n)` owns.
fn first_owned(from: u64, (k, n): (u64, u64)) -> u64 {
    from.saturating_add((k + n - from % n) % n)
}

/// The search proper: the strategy's phases one after the other, each in index order
/// across threads; the lowest index that breaks a property of the lock's own
/// (confirmed) wins.
fn search(plan: &Plan, strategy: &dyn Strategy, started: Instant, searched: &mut Searched) {
    let shared: Mutex<&mut Searched> = Mutex::new(searched);
    let done = AtomicU64::new(0);
    let pruned = AtomicU64::new(0);
    let lowest = AtomicU64::new(u64::MAX);
    let failed = AtomicBool::new(false);
    // Where runs take real time, a finding is confirmed with the machine as quiet as it
    // is when the counterexample is replayed, or a user replays it: other runs wait.
    let quiet = RwLock::new(());
    let shard = plan.shard.unwrap_or((0, 1));
    let stopped = |index: u64| {
        index >= plan.limit
            || failed.load(Ordering::Acquire)
            || (!plan.keep_going && index > lowest.load(Ordering::Acquire))
            || plan.time.is_some_and(|t| started.elapsed() >= t)
    };
    let mut phase = 0;
    while let Some(range) = strategy.phase(phase) {
        if stopped(range.start) {
            break;
        }
        let next = AtomicU64::new(0);
        let start = first_owned(range.start, shard);
        let worker = || {
            loop {
                let taken = next.fetch_add(1, Ordering::Relaxed);
                let index = taken.saturating_mul(shard.1).saturating_add(start);
                if index >= range.end || stopped(index) {
                    return;
                }
                let Some(schedule) = strategy.schedule(index) else {
                    pruned.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                match one_run(plan, index, &schedule, &shared, &lowest, &quiet) {
                    Ok(Some(outcome)) => strategy.observe(index, &outcome),
                    Ok(None) => {}
                    Err(error) => {
                        failed.store(true, Ordering::Release);
                        shared.lock().error.get_or_insert(error);
                        return;
                    }
                }
                let total = done.fetch_add(1, Ordering::Relaxed) + 1;
                if let Some(progress) = &plan.progress
                    && total.is_multiple_of(if plan.deterministic() { 64 } else { 1 })
                {
                    progress(total);
                }
            }
        };
        run_workers(plan.threads, worker);
        if strategy.probes(phase) && shard.1 > 1 {
            probe(plan, strategy, range, shard, &failed, &shared);
        }
        strategy.phase_ended(phase);
        phase += 1;
    }
    let runs = done.load(Ordering::Relaxed);
    if let Some(progress) = &plan.progress {
        progress(runs);
    }
    let searched = shared.into_inner();
    searched.runs = runs;
    searched.pruned = pruned.load(Ordering::Relaxed);
    // An inherent finding after the first violation in run order depends on how far
    // the other threads got: it is dropped, so that the report is the same on any
    // machine.
    let cut = searched.found.as_ref().map(|f| f.index);
    if let (Some(cut), false) = (cut, plan.keep_going)
        && searched
            .inherent_found
            .as_ref()
            .is_some_and(|f| f.index > cut)
    {
        searched.inherent_found = None;
    }
}

/// `worker` on `threads` threads (on this one when that is 1).
fn run_workers(threads: usize, worker: impl Fn() + Sync) {
    if threads <= 1 {
        worker();
    } else {
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(&worker);
            }
        });
    }
}

/// The runs of `range` other shards own, made for what they show the next phase's
/// pruning and neither judged nor counted (their owners judge them).
fn probe(
    plan: &Plan,
    strategy: &dyn Strategy,
    range: std::ops::Range<u64>,
    shard: (u64, u64),
    failed: &AtomicBool,
    shared: &Mutex<&mut Searched>,
) {
    let next = AtomicU64::new(range.start);
    run_workers(plan.threads, || {
        loop {
            let index = next.fetch_add(1, Ordering::Relaxed);
            if index >= range.end || failed.load(Ordering::Acquire) {
                return;
            }
            if index % shard.1 == shard.0 {
                continue;
            }
            let Some(schedule) = strategy.schedule(index) else {
                continue;
            };
            match plan.run(&schedule, Recording::Dropped) {
                Ok(outcome) => {
                    strategy.observe(index, &outcome);
                    shared.lock().probes += 1;
                }
                Err(error) => {
                    failed.store(true, Ordering::Release);
                    shared.lock().error.get_or_insert(error);
                    return;
                }
            }
        }
    });
}

/// Run `index` of the search: made, judged and counted.
fn one_run(
    plan: &Plan,
    index: u64,
    schedule: &Schedule,
    shared: &Mutex<&mut Searched>,
    lowest: &AtomicU64,
    quiet: &RwLock<()>,
) -> Result<Option<Outcome>, RunnerError> {
    let running = (!plan.deterministic()).then(|| quiet.read());
    let checked = index < plan.determinism_runs;
    let record = if checked {
        Recording::Kept
    } else {
        Recording::Dropped
    };
    let mut outcome = plan.run(schedule, record)?;
    if let Some(void) = &outcome.void {
        let mut s = shared.lock();
        *s.voided.entry(void.cause().to_owned()).or_default() += 1;
        s.first_void.get_or_insert_with(|| void.to_string());
        return Ok(None);
    }
    if outcome.violation.is_none() && checked {
        let again = plan.run(schedule, Recording::Kept)?;
        outcome.violation = divergence(&outcome.trace, &again.trace);
    }
    {
        let mut s = shared.lock();
        if !outcome.unchecked().is_empty() {
            s.unchecked_runs += 1;
        }
        if s.client_failure.is_none() {
            s.client_failure = outcome.failures.first().cloned();
        }
    }
    classify(plan, schedule, &mut outcome.violation)?;
    let Some(violation) = outcome.violation.clone() else {
        return Ok(Some(outcome));
    };
    // The outcome itself goes to the finding; the strategy sees its counts and states.
    let ops = Outcome {
        ops: outcome.ops.clone(),
        states: outcome.states.clone(),
        ..Outcome::default()
    };
    let inherent = violation.is_inherent();
    if !inherent && violation.kind != ViolationKind::Nondeterminism && !plan.deterministic() {
        // Only a run before the lowest confirmed one can change the verdict.
        if !plan.keep_going && index > lowest.load(Ordering::Acquire) {
            return Ok(Some(ops));
        }
        drop(running);
        let _alone = quiet.write();
        let mut unconfirmed_list = Searched::default();
        let found = confirmed(plan, index, schedule, outcome, &mut unconfirmed_list)?;
        let mut s = shared.lock();
        s.unconfirmed.append(&mut unconfirmed_list.unconfirmed);
        if let Some(found) = found {
            *s.violations.entry(violation.kind).or_default() += 1;
            if s.found.as_ref().is_none_or(|f| index < f.index) {
                s.found = Some(found);
                lowest.fetch_min(index, Ordering::AcqRel);
            }
        }
        return Ok(Some(ops));
    }
    let mut guard = shared.lock();
    let s = &mut **guard;
    let (map, slot) = if inherent {
        (&mut s.inherent, &mut s.inherent_found)
    } else {
        (&mut s.violations, &mut s.found)
    };
    *map.entry(violation.kind).or_default() += 1;
    if slot.as_ref().is_none_or(|f| index < f.index) {
        *slot = Some(Found {
            index,
            schedule: schedule.clone(),
            outcome,
            confirmed: None,
        });
        if !inherent {
            lowest.fetch_min(index, Ordering::AcqRel);
        }
    }
    Ok(Some(ops))
}

/// The fault-free run's token seed under search seed `seed`. A schedule that must run
/// as the fault-free run did up to its steps (an exhaustive one, a guided sweep's)
/// takes the same tokens, so that its anchors and lock states are that run's.
pub(crate) fn fault_free_token_seed(seed: u64) -> u64 {
    run_seed(seed, u64::MAX)
}

/// Run `index`'s seed: SplitMix64 of the exploration's seed and the index, so that
/// neighbouring runs are unrelated.
pub(crate) fn run_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
