//! [`ExhaustiveSchedules`]: every schedule of at most `depth` steps, drawn from a finite
//! set of steps built from the fault-free run.
//!
//! **The steps.** An anchor is a moment: right after one of a client's operations
//! (commands and markers, not connection set-up), or the start of the run. A client
//! fault hits its client's next operation, so it is anchored at that client's own
//! operations; a node fault is anchored at every client's. Each fault kind in play comes
//! in a few length classes: within the slack (a quarter TTL), about one validity (a
//! twentieth under the TTL and a tenth past it) and beyond it (three TTLs), each capped
//! as the options cap them.
//!
//! **The space.** A schedule is a set of distinct steps: steps carry their own times,
//! so their order is no choice (the first reduction, from sequences to sets). Level `d`
//! holds the `C(steps, d)` sets of `d` steps; index `i` of a level is unranked in the
//! combinatorial number system, so any index names one schedule at once and shards can
//! stride over the space exactly.
//!
//! **Deeper levels collapse repeats.** A client that retries makes hundreds of
//! operations in one lock state (a failed `SET NX` every 10 ms while another holds the
//! key), each an anchor. Level 1 takes every step; levels 2 and deeper take the steps
//! whose anchor is not the middle of such a repeat: an operation whose abstract lock
//! state (`monitor::lock_states`: its name, every client's phase, the key's state)
//! recurs both `p` operations before and `p` after it, for a `p` of at most 3 (a retry
//! loop of up to three operations). The first and last passes of every repeat stay.
//! This is a choice of the space, not a reduction of it, and the guarantee line says so.
//!
//! **Pruning** (deterministic runs only). Runs are deterministic, and a step that has
//! not fired has not changed anything. So if the run of `S` less step `s` never reaches
//! `s`'s anchor (the client makes fewer operations than the anchor needs), then the run
//! of `S` is the run of `S - {s}`, step for step, and `S` is pruned. Level 1 is pruned by
//! the fault-free run, level 2 by the runs of level 1; deeper levels are not pruned.
//! Symmetric clients are not merged: the runner breaks ties by client index, so two
//! clients running the same workload are not interchangeable, and merging them would
//! not be sound.

use std::ops::Range;
use std::sync::OnceLock;

use crate::coverage::{Coverage, Exhaustive};
use crate::generate::{Anchoring, Baseline, usable};
use crate::options::Options;
use crate::runner::Outcome;
use crate::schedule::Schedule;
use crate::step::{Fault, FaultKind, Step, When};
use crate::strategy::{Strategy, Tally};

/// The deepest `--exhaustive` level accepted.
pub(crate) const MAX_DEPTH: usize = 4;

/// Every schedule of at most `depth` steps.
pub(crate) struct ExhaustiveSchedules {
    steps: Vec<Step>,
    /// The steps levels 2 and deeper combine, by their place in `steps`, in order.
    deep: Vec<usize>,
    depth: usize,
    /// The first index of each level, and one past the last.
    starts: Vec<u64>,
    clients: usize,
    cycles: u32,
    token_seed: u64,
    /// The fault-free run's operation counts.
    baseline_ops: Vec<u32>,
    /// Whether runs are deterministic, so that pruning is sound.
    prune: bool,
    /// The operation counts of each level-1 run (by step), for pruning level 2.
    singles: Vec<OnceLock<Vec<u32>>>,
    ordered: u64,
    fingerprint: u64,
}

impl ExhaustiveSchedules {
    /// The space of `options` around `baseline`, or why it cannot be searched.
    pub(crate) fn new(
        options: &Options,
        baseline: &Baseline,
        anchoring: Anchoring,
        depth: usize,
        token_seed: u64,
        deterministic: bool,
    ) -> Result<Self, String> {
        if depth == 0 || depth > MAX_DEPTH {
            return Err(format!(
                "--exhaustive takes a depth from 1 to {MAX_DEPTH} (steps per schedule), not {depth}"
            ));
        }
        let anchored = anchored_steps(options, baseline, anchoring);
        let repeats = if options.every_repeat {
            Vec::new()
        } else {
            repeated_anchors(baseline)
        };
        let middle = |(client, op): (usize, u32)| {
            repeats
                .get(client)
                .and_then(|r| r.get(op as usize))
                .is_some_and(|m| *m)
        };
        let deep: Vec<usize> = (0..anchored.len())
            .filter(|i| !anchored[*i].after.is_some_and(middle))
            .collect();
        let steps: Vec<Step> = anchored.into_iter().map(|a| a.step).collect();
        let mut starts = vec![0u64];
        let mut ordered: u64 = 0;
        for d in 1..=depth {
            // Level 1 takes every step, deeper levels the steps without repeats.
            let n = if d == 1 { steps.len() } else { deep.len() } as u64;
            let level = binomial(n, d as u64).ok_or_else(|| too_many(depth, n))?;
            let next = starts[d - 1]
                .checked_add(level)
                .ok_or_else(|| too_many(depth, n))?;
            starts.push(next);
            let sequences = (0..d as u64).try_fold(1u64, |acc, k| acc.checked_mul(n - k.min(n)));
            ordered = ordered.saturating_add(sequences.unwrap_or(u64::MAX));
        }
        let fingerprint = fnv(&serde_json::to_vec(&(&steps, &deep)).unwrap_or_default());
        Ok(ExhaustiveSchedules {
            singles: (0..steps.len()).map(|_| OnceLock::new()).collect(),
            steps,
            deep,
            depth,
            starts,
            clients: options.clients,
            cycles: options.cycles,
            token_seed,
            baseline_ops: baseline.ops.clone(),
            prune: deterministic,
            ordered,
            fingerprint,
        })
    }

    /// The steps of the schedule at `index`, by their place in the step list.
    fn members(&self, index: u64) -> Option<Vec<usize>> {
        let level = (1..=self.depth).find(|d| index < self.starts[*d])?;
        let rank = index - self.starts[level - 1];
        if level == 1 {
            return Some(unrank(rank, 1, self.steps.len() as u64));
        }
        let places = unrank(rank, level, self.deep.len() as u64);
        Some(places.into_iter().map(|p| self.deep[p]).collect())
    }

    /// Whether the run of `rest` (whose operation counts are `ops`) never reaches the
    /// anchor of `step`, so that `rest` plus `step` runs as `rest` does.
    fn unreached(step: &Step, ops: &[u32]) -> bool {
        match step.when {
            When::After { client, op } => {
                // A client fault hits its client's next operation; a node fault fires
                // when the anchor's operation ends.
                let needed = if step.fault.client().is_some() {
                    u64::from(op) + 2
                } else {
                    u64::from(op) + 1
                };
                u64::from(ops.get(client).copied().unwrap_or(0)) < needed
            }
            _ => false,
        }
    }

    fn pruned(&self, members: &[usize]) -> bool {
        if !self.prune {
            return false;
        }
        match *members {
            [a] => Self::unreached(&self.steps[a], &self.baseline_ops),
            [a, b] => {
                let by = |x: usize, y: usize| {
                    self.singles[x]
                        .get()
                        .is_some_and(|ops| Self::unreached(&self.steps[y], ops))
                };
                by(a, b) || by(b, a)
            }
            _ => false,
        }
    }
}

impl Strategy for ExhaustiveSchedules {
    fn phase(&self, n: usize) -> Option<Range<u64>> {
        Some(*self.starts.get(n)?..*self.starts.get(n + 1)?)
    }

    fn schedule(&self, index: u64) -> Option<Schedule> {
        let members = self.members(index)?;
        if self.pruned(&members) {
            if let [a] = *members {
                // Its run is the fault-free run: level 2 prunes by those counts.
                let _ = self.singles[a].set(self.baseline_ops.clone());
            }
            return None;
        }
        Some(Schedule {
            clients: self.clients,
            cycles: self.cycles,
            token_seed: self.token_seed,
            steps: members.iter().map(|m| self.steps[*m].clone()).collect(),
        })
    }

    fn observe(&self, index: u64, outcome: &Outcome) {
        if self.prune
            && let Some(members) = self.members(index)
            && let [a] = *members
        {
            let _ = self.singles[a].set(outcome.ops.clone());
        }
    }

    fn probes(&self, phase: usize) -> bool {
        self.prune && phase == 0 && self.depth >= 2
    }

    fn coverage(&self, tally: Tally) -> Coverage {
        Coverage::Exhaustive(Exhaustive {
            depth: self.depth,
            steps: self.steps.len() as u64,
            deep_steps: self.deep.len() as u64,
            schedules: *self.starts.last().unwrap_or(&0),
            ordered: self.ordered,
            pruned: tally.pruned,
            ran: tally.ran,
            voided: tally.voided,
            space: self.fingerprint,
        })
    }
}

fn too_many(depth: usize, steps: u64) -> String {
    format!(
        "every schedule of at most {depth} steps over {steps} steps is more than 2^64 schedules: ask for a smaller depth, fewer clients or cycles, or fewer faults"
    )
}

/// `C(n, k)`, or `None` past `u64`.
pub(crate) fn binomial(n: u64, k: u64) -> Option<u64> {
    if k > n {
        return Some(0);
    }
    let k = k.min(n - k);
    let mut c: u128 = 1;
    for i in 0..k {
        c = c * u128::from(n - i) / u128::from(i + 1);
        if c > u128::from(u64::MAX) {
            return None;
        }
    }
    u64::try_from(c).ok()
}

/// The `rank`th `k`-subset of `0..n` in colexicographic order, in increasing order:
/// the combinatorial number system, `rank = C(c_k, k) + … + C(c_1, 1)`.
pub(crate) fn unrank(mut rank: u64, k: usize, n: u64) -> Vec<usize> {
    let mut out = vec![0usize; k];
    let mut high = n;
    for slot in (0..k).rev() {
        let j = slot as u64 + 1;
        // The largest c below `high` with C(c, j) <= rank.
        let (mut lo, mut hi) = (slot as u64, high - 1);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if binomial(mid, j).is_some_and(|b| b <= rank) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        rank -= binomial(lo, j).unwrap_or(0);
        out[slot] = lo as usize;
        high = lo;
    }
    out
}

/// FNV-1a: a fingerprint that is the same on every machine and Rust version.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Lengths within the slack, about one validity (just short of a TTL, and a tenth past
/// it), and beyond the TTL, capped at `cap`. Just short matters apart from just past: a
/// holder held up that long finds its lease gone when it resumes, but a validity it
/// counts from after the pause (an extend's, a watchdog's) still running.
fn lengths(ttl_ms: u64, cap: Option<u64>) -> Vec<u64> {
    let ttl = ttl_ms.max(4);
    let mut out: Vec<u64> = [ttl / 4, ttl - ttl / 20, ttl + ttl / 10, ttl * 3]
        .into_iter()
        .map(|ms| cap.map_or(ms, |c| ms.min(c.max(1))))
        .collect();
    out.dedup();
    out
}

/// The faults of `kind` a client's anchor takes.
fn client_faults(kind: FaultKind, options: &Options, client: usize) -> Vec<Fault> {
    let pauses = lengths(options.ttl_ms, options.max_pause_ms);
    let latencies = lengths(
        options.ttl_ms,
        Some(options.max_latency_ms.unwrap_or(options.ttl_ms)),
    );
    match kind {
        FaultKind::Pause => pauses
            .iter()
            .map(|&ms| Fault::Pause { client, ms })
            .collect(),
        FaultKind::SectionPause => pauses
            .iter()
            .map(|&ms| Fault::SectionPause { client, ms })
            .collect(),
        FaultKind::ClientClock => lengths(options.ttl_ms, None)
            .iter()
            .flat_map(|&ms| {
                let ms = i64::try_from(ms).unwrap_or(i64::MAX / 2);
                [
                    Fault::ClientClock { client, ms },
                    Fault::ClientClock { client, ms: -ms },
                ]
            })
            .collect(),
        FaultKind::LostReply => vec![Fault::LostReply { client }],
        FaultKind::Refuse => vec![Fault::Refuse { client }],
        FaultKind::KillConnection => vec![Fault::KillConnection { client }],
        FaultKind::Cancel => vec![Fault::Cancel { client }],
        FaultKind::Latency => latencies
            .iter()
            .flat_map(|&ms| {
                [
                    Fault::Latency { client, ms },
                    Fault::LateReply { client, ms },
                ]
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The faults of `kind` that hit a node (or the deployment).
fn node_faults(kind: FaultKind, options: &Options) -> Vec<Fault> {
    let nodes = options.topology.nodes().max(1);
    let spans = lengths(options.ttl_ms, None);
    let per_node = |make: &dyn Fn(usize) -> Vec<Fault>| (0..nodes).flat_map(make).collect();
    match kind {
        FaultKind::NodeClock => per_node(&|node| {
            spans
                .iter()
                .flat_map(|&ms| {
                    let ms = i64::try_from(ms).unwrap_or(i64::MAX / 2);
                    [
                        Fault::NodeClock { node, ms },
                        Fault::NodeClock { node, ms: -ms },
                    ]
                })
                .collect()
        }),
        FaultKind::Drift => per_node(&|node| {
            spans
                .iter()
                .flat_map(|&ms| [500, -500].map(|permille| Fault::NodeDrift { node, permille, ms }))
                .collect()
        }),
        FaultKind::Interrupt => per_node(&|node| {
            (0..3)
                .map(|after| Fault::Interrupt { node, after })
                .collect()
        }),
        FaultKind::Failover => {
            let mut faults = vec![Fault::Failover, Fault::SwitchOver];
            faults.extend(spans.iter().map(|&ms| Fault::StallReplication { ms }));
            faults
        }
        FaultKind::Restart | FaultKind::RestartEmpty => per_node(&|node| {
            spans
                .iter()
                .map(|&ms| Fault::Restart {
                    node,
                    ms,
                    persistent: kind == FaultKind::Restart,
                })
                .collect()
        }),
        FaultKind::Blackhole => per_node(&|node| {
            spans
                .iter()
                .map(|&ms| Fault::Blackhole { node, ms })
                .collect()
        }),
        FaultKind::Migrate => (0..nodes).map(|to| Fault::Migrate { to }).collect(),
        _ => Vec::new(),
    }
}

/// One anchor, and whether a command follows it: the last moment before that command.
struct Anchor {
    when: When,
    before_command: bool,
    /// The fault-free run's operation it follows (`None`: the start of the run).
    op: Option<u32>,
}

/// Client `client`'s anchors: the start of the run, then after each of its operations
/// that is not connection set-up.
fn anchors(client: usize, baseline: &Baseline, anchoring: Anchoring) -> Vec<Anchor> {
    let commands = baseline.commands.get(client).filter(|c| !c.is_empty());
    let before_command = |op: u32| commands.is_none_or(|c| c.binary_search(&(op + 1)).is_ok());
    let mut out = vec![Anchor {
        when: When::At { ms: 0 },
        before_command: true,
        op: None,
    }];
    let ops = baseline.anchors.get(client).map_or(&[][..], Vec::as_slice);
    let names = baseline.names.get(client).map_or(&[][..], Vec::as_slice);
    let mut seen: Vec<&String> = Vec::new();
    for (i, &op) in ops.iter().enumerate() {
        let when = match (anchoring, names.get(i)) {
            (Anchoring::ByName, Some(name)) => {
                let nth = seen.iter().filter(|n| **n == name).count() as u32;
                seen.push(name);
                When::AfterNext {
                    client,
                    kind: name.clone(),
                    from_us: 0,
                    nth,
                }
            }
            _ => When::After { client, op },
        };
        out.push(Anchor {
            when,
            before_command: before_command(op),
            op: Some(op),
        });
    }
    out
}

/// Whether `fault` waits for its client's next command (markers pass it by): then every
/// anchor between two commands arms it for the same command, and one of them stands for
/// all (the last one, right before the command).
fn waits_for_a_command(fault: &Fault) -> bool {
    matches!(
        fault,
        Fault::Pause { .. }
            | Fault::Latency { .. }
            | Fault::LateReply { .. }
            | Fault::LostReply { .. }
            | Fault::Refuse { .. }
            | Fault::KillConnection { .. }
    )
}

/// Per client and operation of the fault-free run, whether the operation is the middle
/// of a repeat: its abstract lock state recurs `p` anchors before and `p` after it
/// (`p` ≤ 3). Empty when the run tracked no states.
fn repeated_anchors(baseline: &Baseline) -> Vec<Vec<bool>> {
    baseline
        .anchors
        .iter()
        .enumerate()
        .map(|(client, ops)| {
            let states = baseline
                .op_states
                .get(client)
                .map_or(&[][..], Vec::as_slice);
            let mut repeated = vec![false; baseline.ops.get(client).copied().unwrap_or(0) as usize];
            let state = |i: usize| ops.get(i).and_then(|op| states.get(*op as usize));
            for (i, op) in ops.iter().enumerate() {
                let Some(here) = state(i) else { continue };
                let middle = (1..=3)
                    .any(|p| i >= p && state(i - p) == Some(here) && state(i + p) == Some(here));
                if let Some(slot) = repeated.get_mut(*op as usize) {
                    *slot = middle;
                }
            }
            repeated
        })
        .collect()
}

/// A step of the space, with the fault-free run's operation it is anchored after.
pub(crate) struct AnchoredStep {
    pub(crate) step: Step,
    /// The client and the index of its operation in the fault-free run (`None`: the
    /// start of the run).
    pub(crate) after: Option<(usize, u32)>,
}

/// Every step of the space, in the order of [`ExhaustiveSchedules`], with its anchor.
pub(crate) fn anchored_steps(
    options: &Options,
    baseline: &Baseline,
    anchoring: Anchoring,
) -> Vec<AnchoredStep> {
    let kinds = usable(options);
    let mut out = Vec::new();
    for client in 0..options.clients {
        let whens = anchors(client, baseline, anchoring);
        for kind in &kinds {
            for fault in client_faults(*kind, options, client) {
                let collapse = waits_for_a_command(&fault);
                for anchor in whens.iter().filter(|a| !collapse || a.before_command) {
                    out.push(AnchoredStep {
                        step: Step {
                            when: anchor.when.clone(),
                            fault,
                        },
                        after: anchor.op.map(|op| (client, op)),
                    });
                }
            }
        }
    }
    let node: Vec<Fault> = kinds
        .iter()
        .flat_map(|k| node_faults(*k, options))
        .collect();
    if !node.is_empty() {
        // The start once, then after each client's operations.
        let mut whens = vec![(When::At { ms: 0 }, None)];
        for client in 0..options.clients {
            whens.extend(
                anchors(client, baseline, anchoring)
                    .into_iter()
                    .skip(1)
                    .map(|a| (a.when, a.op.map(|op| (client, op)))),
            );
        }
        for fault in node {
            for (when, after) in &whens {
                out.push(AnchoredStep {
                    step: Step {
                        when: when.clone(),
                        fault,
                    },
                    after: *after,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unranking_lists_every_subset_once_in_order() {
        for n in 0..9u64 {
            for k in 1..=3usize {
                let total = binomial(n, k as u64).unwrap();
                let mut seen = std::collections::BTreeSet::new();
                for rank in 0..total {
                    let set = unrank(rank, k, n);
                    assert!(set.windows(2).all(|w| w[0] < w[1]), "{set:?}");
                    assert!(set.iter().all(|&x| (x as u64) < n), "{set:?}");
                    assert!(seen.insert(set));
                }
                assert_eq!(seen.len() as u64, total);
            }
        }
    }

    #[test]
    fn binomials_are_exact_and_say_when_they_overflow() {
        assert_eq!(binomial(5, 2), Some(10));
        assert_eq!(binomial(3, 5), Some(0));
        assert_eq!(binomial(3_000, 4), Some(3_368_254_124_250));
        assert_eq!(binomial(1 << 40, 4), None);
    }

    #[test]
    fn a_repeat_keeps_its_first_and_last_pass_and_loops_of_two_collapse_too() {
        // Anchors after operations 1..=11 (operation 0 is set-up); states by letter.
        let states: Vec<u64> = "xAAAABCBCBCD".bytes().map(u64::from).collect();
        let baseline = Baseline {
            ops: vec![12],
            names: vec![Vec::new()],
            anchors: vec![(1..12).collect()],
            commands: vec![Vec::new()],
            duration_ms: 0,
            states: Vec::new(),
            op_states: vec![states],
        };
        let repeated = repeated_anchors(&baseline);
        let middles: Vec<usize> = (0..12).filter(|op| repeated[0][*op]).collect();
        // AAAA keeps its first and last; BCBCBC keeps its first and last pass.
        assert_eq!(middles, vec![2, 3, 7, 8]);
        // A run that tracked no states collapses nothing.
        let untracked = Baseline {
            op_states: vec![Vec::new()],
            ..baseline
        };
        assert!(repeated_anchors(&untracked)[0].iter().all(|r| !r));
    }

    #[test]
    fn lengths_fall_within_the_slack_about_a_validity_and_beyond() {
        assert_eq!(lengths(1_000, None), vec![250, 950, 1_100, 3_000]);
        assert_eq!(lengths(1_000, Some(1_000)), vec![250, 950, 1_000]);
    }
}
