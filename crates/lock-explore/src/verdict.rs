//! Whose finding it is, and whether it holds: a violation that needs an inherent fault
//! is labelled inherent (the same schedule without that fault breaks nothing), and,
//! where runs are not deterministic, a finding counts only as often as it reproduces.
//! Voided runs (see [`Void`](crate::Void)) count neither way.

use crate::explorer::Plan;
use crate::runner::{Outcome, Recording, RunnerError};
use crate::schedule::Schedule;
use crate::step::Step;
use crate::violation::{Violation, ViolationKind};

/// How many times a schedule without its inherent steps is tried before a violation is
/// said to need them: once where runs are deterministic, 3 times where they are not.
fn classify_tries(plan: &Plan) -> u32 {
    if plan.deterministic() { 1 } else { 3 }
}

/// Labels a violation of the lock's own that needs one of the schedule's inherent
/// faults (a server clock jump, a pause inside a section): without those steps, the
/// same kind of violation no longer happens.
pub(crate) fn classify(
    plan: &Plan,
    schedule: &Schedule,
    verdict: &mut Option<Violation>,
) -> Result<(), RunnerError> {
    let Some(violation) = verdict.as_ref() else {
        return Ok(());
    };
    if violation.is_inherent() || violation.kind == ViolationKind::Nondeterminism {
        return Ok(());
    }
    let kinds = Step::inherent_kinds(&schedule.steps);
    if kinds.is_empty() {
        return Ok(());
    }
    let mut without = schedule.clone();
    without.steps.retain(|s| !s.fault.kind().is_inherent());
    let again = reproduce(
        plan,
        &without,
        violation.kind,
        false,
        classify_tries(plan),
        Some(1),
    )?;
    if again.reproduced == 0
        && let Some(violation) = verdict
    {
        violation.needs_inherent(&kinds);
    }
    Ok(())
}

/// Whether `outcome` shows a finding of `kind` of its class (the lock's own, or
/// inherent), once classified.
pub(crate) fn shows(
    plan: &Plan,
    schedule: &Schedule,
    outcome: &Outcome,
    kind: ViolationKind,
    inherent: bool,
) -> Result<bool, RunnerError> {
    let mut verdict = outcome.violation.clone();
    classify(plan, schedule, &mut verdict)?;
    Ok(verdict.is_some_and(|v| v.kind == kind && v.is_inherent() == inherent))
}

/// What replaying a schedule gave.
pub(crate) struct Reproduction {
    /// Runs that showed the finding.
    pub(crate) reproduced: u32,
    /// Runs judged (voided ones not counted).
    pub(crate) made: u32,
    /// The first run that showed it.
    pub(crate) first: Option<Outcome>,
}

/// Replays `schedule` up to `replays` times, counting the runs that show a violation of
/// `kind` (of the lock's own, or inherent). With `enough`, it stops once that many did,
/// or once that many no longer can; voided runs are made again, up to as many more.
/// A verdict of the lock's own is the raw one (the caller classified the schedule).
pub(crate) fn reproduce(
    plan: &Plan,
    schedule: &Schedule,
    kind: ViolationKind,
    inherent: bool,
    replays: u32,
    enough: Option<u32>,
) -> Result<Reproduction, RunnerError> {
    let mut result = Reproduction {
        reproduced: 0,
        made: 0,
        first: None,
    };
    let mut voided = 0;
    // One replay at a time: replays of one schedule made at once start their clients at
    // the same instants, and on a busy machine crowd each other into timings no single
    // run has (a finding that reproduces 9 times in 10 alone did 2 times in 10 so).
    while result.made < replays && voided <= replays {
        let left = replays - result.made;
        if let Some(enough) = enough
            && (result.reproduced >= enough || result.reproduced + left < enough)
        {
            break;
        }
        // In process a run's trace is costly and nobody here shows it.
        let recording = if result.first.is_none() && !plan.deterministic() {
            Recording::Kept
        } else {
            Recording::Dropped
        };
        let outcome = plan.run(schedule, recording)?;
        if outcome.void.is_some() {
            voided += 1;
            continue;
        }
        result.made += 1;
        // An inherent finding may show raw as the violation it needs its fault for: it
        // is classified again.
        let shown = if inherent {
            shows(plan, schedule, &outcome, kind, true)?
        } else {
            outcome
                .violation
                .as_ref()
                .is_some_and(|v| v.kind == kind && !v.is_inherent())
        };
        if shown {
            result.reproduced += 1;
            if result.first.is_none() {
                result.first = Some(outcome);
            }
        }
    }
    Ok(result)
}
