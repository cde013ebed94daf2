//! Shrinking: fewer steps, fewer clients and cycles, earlier anchors, then the smallest
//! length of each fault that still breaks, for as long as the same finding persists.
//!
//! Where runs are deterministic, one run says whether a candidate keeps the finding.
//! Where they are not, a smaller structure (a step fewer, an earlier anchor, fewer
//! clients or cycles) must reproduce it in 2 of 3 tries, and a shorter fault in 3 of 3:
//! a fault cut down to the edge of the window in which it breaks the lock breaks it only
//! half the time, and a counterexample that rarely reproduces proves little. Lengths
//! are bisected only down to the slack a validity allows, below which a real process
//! cannot tell them apart, and then set halfway back to the length the fault was found
//! with, inside the window.

use crate::explorer::Plan;
use crate::runner::{Outcome, Recording, RunnerError};
use crate::schedule::Schedule;
use crate::step::{Fault, Step, When};
use crate::verdict::{reproduce, shows};
use crate::violation::ViolationKind;

/// The smallest schedule found that still shows a finding of `kind` (of the lock's own,
/// or `inherent`), its outcome, and the runs spent.
pub(crate) fn shrink(
    plan: &Plan,
    schedule: Schedule,
    outcome: Outcome,
    kind: ViolationKind,
    inherent: bool,
) -> Result<(Schedule, Outcome, u64), RunnerError> {
    let budget = plan.shrink_budget;
    let mut best = (schedule, outcome);
    let mut runs = 0u64;
    let attempt = |candidate: &Schedule,
                   runs: &mut u64,
                   needed: u32|
     -> Result<Option<Outcome>, RunnerError> {
        if *runs >= budget {
            return Ok(None);
        }
        if plan.deterministic() {
            *runs += 1;
            let outcome = plan.run(candidate, Recording::Dropped)?;
            return Ok(shows(plan, candidate, &outcome, kind, inherent)?.then_some(outcome));
        }
        let again = reproduce(plan, candidate, kind, inherent, 3, Some(needed))?;
        *runs += u64::from(again.made);
        Ok((again.reproduced >= needed)
            .then_some(again.first)
            .flatten())
    };
    // Structure first, most aggressive first: keep any change that still breaks.
    loop {
        let mut improved = false;
        for (candidate, shorter) in candidates(&best.0) {
            if runs >= budget {
                return Ok((best.0, best.1, runs));
            }
            let needed = if shorter { 3 } else { 2 };
            if let Some(outcome) = attempt(&candidate, &mut runs, needed)? {
                best = (candidate, outcome);
                improved = true;
                break;
            }
        }
        if !improved {
            break;
        }
    }
    // Then each length: the smallest that still breaks, by bisection (a 1,469 ms clock
    // jump that breaks as 1,001 ms is shown as 1,001 ms).
    let grain = if plan.deterministic() {
        1
    } else {
        (plan.options.ttl_ms / 20).max(5)
    };
    for i in 0..best.0.steps.len() {
        let Some(length) = best.0.steps[i].fault.length() else {
            continue;
        };
        let (mut lo, mut hi) = (1u64, length);
        while lo + grain <= hi && runs < budget {
            let mid = lo + (hi - lo) / 2;
            let mut candidate = best.0.clone();
            candidate.steps[i].fault = candidate.steps[i].fault.with_length(mid);
            match attempt(&candidate, &mut runs, 3)? {
                Some(outcome) => {
                    hi = mid;
                    best = (candidate, outcome);
                }
                None => lo = mid + 1,
            }
        }
        // Where runs are not deterministic the shortest length found is the edge of the
        // window in which the fault breaks the lock, where it does so only now and then:
        // halfway back to the length it was found with is inside the window.
        if !plan.deterministic() && hi < length {
            let middle = hi + (length - hi) / 2;
            let mut candidate = best.0.clone();
            candidate.steps[i].fault = candidate.steps[i].fault.with_length(middle);
            if let Some(outcome) = attempt(&candidate, &mut runs, 3)? {
                best = (candidate, outcome);
            }
        }
    }
    Ok((best.0, best.1, runs))
}

/// Smaller schedules than `s`, most aggressive first, each with whether it only shortens
/// a fault.
fn candidates(s: &Schedule) -> Vec<(Schedule, bool)> {
    let mut out = Vec::new();
    // Drop a step.
    for i in 0..s.steps.len() {
        let mut c = s.clone();
        c.steps.remove(i);
        out.push((c, false));
    }
    // Fewer clients: the last goes, with the steps aimed at it.
    if s.clients > 1 {
        let mut c = s.clone();
        c.clients -= 1;
        c.steps.retain(|step| refers_below(step, c.clients));
        out.push((c, false));
    }
    // Fewer cycles.
    if s.cycles > 1 {
        for cycles in [1, s.cycles / 2, s.cycles - 1] {
            if cycles >= 1 && cycles < s.cycles {
                let mut c = s.clone();
                c.cycles = cycles;
                out.push((c, false));
            }
        }
    }
    // Halved lengths, earlier times and anchors.
    for i in 0..s.steps.len() {
        for smaller in smaller_steps(&s.steps[i]) {
            let shorter = smaller.when == s.steps[i].when;
            let mut c = s.clone();
            c.steps[i] = smaller;
            out.push((c, shorter));
        }
    }
    out.dedup();
    out
}

fn refers_below(step: &Step, clients: usize) -> bool {
    let anchored = match step.when {
        When::After { client, .. } | When::AfterNext { client, .. } => client < clients,
        When::At { .. } => true,
    };
    anchored && step.fault.client().is_none_or(|c| c < clients)
}

fn smaller_steps(step: &Step) -> Vec<Step> {
    let mut out = Vec::new();
    let with = |fault: Fault| Step {
        when: step.when.clone(),
        fault,
    };
    if let Some(ms) = step.fault.length().filter(|ms| *ms > 1) {
        out.push(with(step.fault.with_length(ms / 2)));
    }
    if let Fault::NodeDrift { node, permille, ms } = step.fault
        && permille.abs() > 1
    {
        out.push(with(Fault::NodeDrift {
            node,
            permille: permille / 2,
            ms,
        }));
    }
    let at = |when: When| Step {
        when,
        fault: step.fault,
    };
    match &step.when {
        When::At { ms } if *ms > 0 => out.push(at(When::At { ms: ms / 2 })),
        When::After { client, op } if *op > 0 => out.push(at(When::After {
            client: *client,
            op: op - 1,
        })),
        // An earlier one of the same name: after a client's 1st GET rather than its 3rd,
        // where the other clients are surely still contending, so the finding
        // reproduces whoever wins the first acquires.
        When::AfterNext {
            client,
            kind,
            from_us,
            nth,
        } if *nth > 0 => {
            for earlier in [nth / 2, nth - 1] {
                out.push(at(When::AfterNext {
                    client: *client,
                    kind: kind.clone(),
                    from_us: *from_us,
                    nth: earlier,
                }));
            }
        }
        _ => {}
    }
    out.dedup();
    out
}
