//! Shrinking: fewer steps, fewer clients and cycles, earlier anchors, then the smallest
//! length of each fault that still breaks, for as long as the same finding persists.

use crate::options::Options;
use crate::run::{Outcome, Subject, Trace, run};
use crate::schedule::Schedule;
use crate::step::{Fault, Step, When};

/// Whether a candidate's outcome still shows the finding being shrunk.
pub(crate) type Keeps<'a> = dyn Fn(&Schedule, &Outcome) -> bool + 'a;

/// The smallest schedule found that `keeps` accepts, its outcome, and the runs spent.
pub(crate) fn shrink(
    subject: &Subject,
    options: &Options,
    schedule: Schedule,
    outcome: Outcome,
    keeps: &Keeps<'_>,
    budget: u64,
) -> (Schedule, Outcome, u64) {
    let mut best = (schedule, outcome);
    let mut runs = 0u64;
    let attempt = |candidate: &Schedule, runs: &mut u64| -> Option<Outcome> {
        if *runs >= budget {
            return None;
        }
        *runs += 1;
        let outcome = run(subject, options, candidate, Trace::Dropped);
        keeps(candidate, &outcome).then_some(outcome)
    };
    // Structure first, most aggressive first: keep any change that still breaks.
    loop {
        let mut improved = false;
        for candidate in candidates(&best.0) {
            if runs >= budget {
                return (best.0, best.1, runs);
            }
            if let Some(outcome) = attempt(&candidate, &mut runs) {
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
    for i in 0..best.0.steps.len() {
        let Some(length) = best.0.steps[i].fault.length() else {
            continue;
        };
        let (mut lo, mut hi) = (1u64, length);
        while lo < hi && runs < budget {
            let mid = lo + (hi - lo) / 2;
            let mut candidate = best.0.clone();
            candidate.steps[i].fault = candidate.steps[i].fault.with_length(mid);
            match attempt(&candidate, &mut runs) {
                Some(outcome) => {
                    hi = mid;
                    best = (candidate, outcome);
                }
                None => lo = mid + 1,
            }
        }
    }
    (best.0, best.1, runs)
}

/// Smaller schedules than `s`, most aggressive first.
fn candidates(s: &Schedule) -> Vec<Schedule> {
    let mut out = Vec::new();
    // Drop a step.
    for i in 0..s.steps.len() {
        let mut c = s.clone();
        c.steps.remove(i);
        out.push(c);
    }
    // Fewer clients: the last goes, with the steps aimed at it.
    if s.clients > 1 {
        let mut c = s.clone();
        c.clients -= 1;
        c.steps.retain(|step| refers_below(step, c.clients));
        out.push(c);
    }
    // Fewer cycles.
    if s.cycles > 1 {
        for cycles in [1, s.cycles / 2, s.cycles - 1] {
            if cycles >= 1 && cycles < s.cycles {
                let mut c = s.clone();
                c.cycles = cycles;
                out.push(c);
            }
        }
    }
    // Halved lengths, earlier times and anchors.
    for i in 0..s.steps.len() {
        for smaller in smaller_steps(&s.steps[i]) {
            let mut c = s.clone();
            c.steps[i] = smaller;
            out.push(c);
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
    match step.when {
        When::At { ms } if ms > 0 => out.push(Step {
            when: When::At { ms: ms / 2 },
            fault: step.fault,
        }),
        When::After { client, op } if op > 0 => out.push(Step {
            when: When::After { client, op: op - 1 },
            fault: step.fault,
        }),
        _ => {}
    }
    out
}
