//! Shrinking: fewer steps, shorter faults, fewer clients and cycles, for as long as the
//! same kind of violation persists.

use crate::options::Options;
use crate::run::{Outcome, Subject, Trace, run};
use crate::schedule::Schedule;
use crate::step::{Fault, Step, When};
use crate::violation::ViolationKind;

/// The smallest schedule found that still breaks `kind`, its outcome, and the runs spent.
pub(crate) fn shrink(
    subject: &Subject,
    options: &Options,
    schedule: Schedule,
    outcome: Outcome,
    kind: ViolationKind,
    budget: u64,
) -> (Schedule, Outcome, u64) {
    let mut best = (schedule, outcome);
    let mut runs = 0u64;
    loop {
        let mut improved = false;
        for candidate in candidates(&best.0) {
            if runs >= budget {
                return (best.0, best.1, runs);
            }
            runs += 1;
            let outcome = run(subject, options, &candidate, Trace::Dropped);
            if outcome.violation.as_ref().map(|v| v.kind) == Some(kind) {
                best = (candidate, outcome);
                improved = true;
                break;
            }
        }
        if !improved {
            return (best.0, best.1, runs);
        }
    }
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
    // Shorter faults, earlier times, earlier anchors.
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
        When::After { client, .. } => client < clients,
        When::At { .. } => true,
    };
    anchored && step.fault.client().is_none_or(|c| c < clients)
}

fn halve(ms: u64) -> Option<u64> {
    (ms > 1).then_some(ms / 2)
}

fn smaller_steps(step: &Step) -> Vec<Step> {
    let mut out = Vec::new();
    let with = |fault: Fault| Step {
        when: step.when,
        fault,
    };
    match step.fault {
        Fault::Pause { client, ms } => {
            out.extend(halve(ms).map(|ms| with(Fault::Pause { client, ms })));
        }
        Fault::Skew { client, ms } => {
            out.extend(halve(ms.unsigned_abs()).map(|h| {
                with(Fault::Skew {
                    client,
                    ms: ms.signum() * h as i64,
                })
            }));
        }
        Fault::NodeClock { node, ms } => {
            out.extend(halve(ms.unsigned_abs()).map(|h| {
                with(Fault::NodeClock {
                    node,
                    ms: ms.signum() * h as i64,
                })
            }));
        }
        Fault::NodeDrift { node, permille, ms } => {
            out.extend(halve(ms).map(|ms| with(Fault::NodeDrift { node, permille, ms })));
            if permille.abs() > 1 {
                out.push(with(Fault::NodeDrift {
                    node,
                    permille: permille / 2,
                    ms,
                }));
            }
        }
        Fault::Latency { client, ms } => {
            out.extend(halve(ms).map(|ms| with(Fault::Latency { client, ms })));
        }
        Fault::LateReply { client, ms } => {
            out.extend(halve(ms).map(|ms| with(Fault::LateReply { client, ms })));
        }
        Fault::StallReplication { ms } => {
            out.extend(halve(ms).map(|ms| with(Fault::StallReplication { ms })));
        }
        Fault::Restart {
            node,
            ms,
            persistent,
        } => {
            out.extend(halve(ms).map(|ms| {
                with(Fault::Restart {
                    node,
                    ms,
                    persistent,
                })
            }));
        }
        Fault::Blackhole { node, ms } => {
            out.extend(halve(ms).map(|ms| with(Fault::Blackhole { node, ms })));
        }
        Fault::SwitchOver | Fault::Failover => {}
        _ => {}
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
