//! From a run that broke a property to a [`Counterexample`]: shrunk, replayed, and
//! anchored for saving. In process, the replays must give identical traces; with
//! processes, they say how often the finding reproduces.

use crate::counterexample::Counterexample;
use crate::explorer::Plan;
use crate::runner::{Outcome, Recording, RunnerError};
use crate::schedule::Schedule;
use crate::search::Found;
use crate::shrink::shrink;
use crate::step::{Step, When};
use crate::trace::Trace;
use crate::verdict::{classify, reproduce};
use crate::violation::{Violation, ViolationKind};

/// Shrinks what run `found.index` found (a violation of its kind, inherent or the
/// lock's own), and replays the result.
pub(crate) fn conclude(
    plan: &Plan,
    found: Found,
    inherent: bool,
) -> Result<Counterexample, RunnerError> {
    let Found {
        index,
        schedule,
        outcome,
        confirmed,
    } = found;
    let Some(violation) = outcome.violation.clone() else {
        unreachable!("a finding has a violation");
    };
    let kind = violation.kind;
    let run = (index != u64::MAX).then_some(index);
    if kind == ViolationKind::Nondeterminism {
        let mut found = counterexample(
            plan,
            schedule.clone(),
            schedule,
            0,
            violation,
            outcome.trace,
        );
        found.run = run;
        return Ok(found);
    }
    let original = schedule.clone();
    let (shrunk, shrunk_outcome, shrink_runs) =
        shrink(plan, schedule, outcome.clone(), kind, inherent)?;
    if !plan.deterministic() {
        return concluded_by_replays(
            plan,
            original,
            (shrunk, shrunk_outcome),
            (outcome, confirmed),
            shrink_runs,
            run,
            inherent,
        );
    }
    // The search and the shrinking kept no trace: the first replay is the reference.
    let mut reference = plan.run(&shrunk, Recording::Kept)?;
    classify(plan, &shrunk, &mut reference.violation)?;
    let outcome = Outcome {
        violation: reference.violation.clone().or(shrunk_outcome.violation),
        ..reference
    };
    if let Some(nondeterministic) = diverges(plan, &shrunk, &outcome)? {
        return Ok(nondeterministic);
    }
    let mut identical = 2;
    for _ in 2..crate::explorer::REPLAYS {
        if plan.run(&shrunk, Recording::Kept)?.trace == outcome.trace {
            identical += 1;
        }
    }
    let violation = outcome.violation.clone().unwrap_or_else(|| Violation {
        kind,
        detail: "the violation did not persist".to_owned(),
        at_us: 0,
        clients: Vec::new(),
        dumps: Vec::new(),
        inherent: None,
        margin_us: None,
    });
    let anchored = anchor(&shrunk.steps, &outcome.op_logs);
    let mut found = counterexample(
        plan,
        original,
        shrunk,
        shrink_runs,
        violation,
        outcome.trace,
    );
    found.identical_replays = identical;
    found.reproduced = identical;
    found.replays = crate::explorer::REPLAYS;
    found.anchored = anchored;
    found.run = run;
    Ok(found)
}

/// Where runs are not deterministic: the shrunk schedule is replayed as many times as
/// a confirmation takes, and the first replay that reproduced it is the one shown. A
/// shrunk schedule that reproduces less often than a confirmation needs proves less
/// than the schedule that was confirmed: that one, and its run, are reported instead.
fn concluded_by_replays(
    plan: &Plan,
    original: Schedule,
    (shrunk, shrunk_outcome): (Schedule, Outcome),
    (first, confirmed): (Outcome, Option<(u32, u32)>),
    shrink_runs: u64,
    run: Option<u64>,
    inherent: bool,
) -> Result<Counterexample, RunnerError> {
    let kind = first
        .violation
        .as_ref()
        .map_or(ViolationKind::Liveness, |v| v.kind);
    let c = plan.confirmation;
    let again = reproduce(plan, &shrunk, kind, inherent, c.replays, None)?;
    let (schedule, outcome, reproduced, replays) = match again.first {
        Some(outcome) if again.reproduced >= c.needed || confirmed.is_none() => {
            (shrunk, outcome, again.reproduced, again.made)
        }
        _ if shrunk == original => (
            original.clone(),
            shrunk_outcome,
            again.reproduced,
            again.made,
        ),
        _ => {
            // Replayed as fully as the shrunk one was, so that the count says as much.
            let full = reproduce(plan, &original, kind, inherent, c.replays, None)?;
            let (reproduced, replays) = match confirmed {
                Some(counted) if full.made == 0 => counted,
                _ => (full.reproduced, full.made),
            };
            (
                original.clone(),
                full.first.unwrap_or(first),
                reproduced,
                replays,
            )
        }
    };
    let violation = outcome
        .violation
        .clone()
        .expect("a reproducing run has a violation");
    let mut found = counterexample(
        plan,
        original,
        schedule,
        shrink_runs,
        violation,
        outcome.trace,
    );
    found.anchored = found.schedule.steps.clone();
    found.reproduced = reproduced;
    found.replays = replays;
    found.run = run;
    Ok(found)
}

fn counterexample(
    plan: &Plan,
    original: Schedule,
    schedule: Schedule,
    shrink_runs: u64,
    violation: Violation,
    trace: Trace,
) -> Counterexample {
    Counterexample {
        workload: plan.name.clone(),
        command: plan.runner.command(),
        options: plan.options.clone(),
        seed: plan.seed,
        run: None,
        original,
        schedule,
        shrink_runs,
        violation,
        trace,
        identical_replays: 0,
        reproduced: 0,
        replays: 0,
        deterministic: plan.deterministic(),
        anchored: Vec::new(),
        shard: plan.shard,
    }
}

/// A second run of `schedule` that differs from `outcome`: the counterexample saying
/// the workload is nondeterministic.
pub(crate) fn diverges(
    plan: &Plan,
    schedule: &Schedule,
    outcome: &Outcome,
) -> Result<Option<Counterexample>, RunnerError> {
    let again = plan.run(schedule, Recording::Kept)?;
    let Some(violation) = divergence(&outcome.trace, &again.trace) else {
        return Ok(None);
    };
    let mut trace = outcome.trace.clone();
    trace.retain(|e| e.at_us <= violation.at_us);
    Ok(Some(counterexample(
        plan,
        schedule.clone(),
        schedule.clone(),
        0,
        violation,
        trace,
    )))
}

/// `steps` with each step placed after an operation anchored to that operation's name
/// and time instead of its index, from the operations of the run that showed them: a
/// replay on a lock that now sends one command more or fewer still aims at the same
/// moment.
fn anchor(steps: &[Step], logs: &[Vec<(String, i64)>]) -> Vec<Step> {
    steps
        .iter()
        .map(|step| {
            let When::After { client, op } = step.when else {
                return step.clone();
            };
            let Some(log) = logs.get(client) else {
                return step.clone();
            };
            let Some((kind, at_us)) = log.get(op as usize) else {
                return step.clone();
            };
            // Operations of the same name finishing at the same instant before it.
            let nth = log[..op as usize]
                .iter()
                .filter(|(k, t)| k == kind && t == at_us)
                .count();
            Step {
                when: When::AfterNext {
                    client,
                    kind: kind.clone(),
                    from_us: *at_us,
                    nth: u32::try_from(nth).unwrap_or(u32::MAX),
                },
                fault: step.fault,
            }
        })
        .collect()
}

/// The nondeterminism violation two traces of one schedule show, if they differ.
pub(crate) fn divergence(first: &Trace, second: &Trace) -> Option<Violation> {
    if first == second {
        return None;
    }
    let at = first
        .iter()
        .zip(second)
        .position(|(x, y)| x != y)
        .unwrap_or(first.len().min(second.len()));
    let show = |trace: &Trace| {
        trace.get(at).map_or_else(
            || "(the run ended)".to_owned(),
            |e| e.to_string().trim().to_owned(),
        )
    };
    Some(Violation {
        kind: ViolationKind::Nondeterminism,
        detail: format!(
            "two runs of one schedule first differ at event {at}: first `{}`, then `{}`; the workload uses time, randomness or I/O that does not come from its context (use ctx.rng() and ctx.clock())",
            show(first),
            show(second)
        ),
        at_us: first.get(at).or(second.get(at)).map_or(0, |e| e.at_us),
        clients: Vec::new(),
        dumps: Vec::new(),
        inherent: None,
        margin_us: None,
    })
}
