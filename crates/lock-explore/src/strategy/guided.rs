//! [`GuidedSchedules`]: coverage feedback. Runs come in generations; a run that reached
//! an abstract lock state no earlier run had (see `monitor::lock_states`) puts its
//! schedule in the corpus, and half the schedules of the next generations are mutations
//! of corpus schedules, as a greybox fuzzer makes them: a step moved to a neighbouring
//! operation, given another length, added, dropped, or taken from another schedule.
//! The other half are fresh random draws, so that the search never only circles what
//! it found. Every new step is aimed by name first (a client, one of its operation
//! names, one operation of that name), so that a retry loop's hundred `SET`s weigh as
//! much as the one `GET` of a release.
//!
//! **The sweep comes first.** Before the generations, one single-step schedule for each
//! fault and the abstract lock state it would strike in the fault-free run (where a
//! client's hundred retries strike one state, one of them stands for all), the faults a
//! TTL lock is built around first (see `sweep`). A fuzzer's deterministic stage: the
//! one-fault bugs, which give feedback nothing to climb, are met in a few dozen runs,
//! and the corpus starts from every state one fault reaches.
//!
//! Generations keep a seed's search the same on any number of threads: a generation's
//! schedules depend only on the corpus as the generations before it left it, and a
//! generation's outcomes join the corpus in run order once all of its runs ended.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use fastrand::Rng;
use parking_lot::{Mutex, RwLock};

use crate::coverage::{Coverage, Guided};
use crate::generate::{
    Anchoring, Baseline, random_fault, schedule, step, step_by_name_at_index, usable,
};
use crate::monitor::without_others;
use crate::options::Options;
use crate::runner::Outcome;
use crate::schedule::Schedule;
use crate::search::{fault_free_token_seed, run_seed};
use crate::step::{Fault, FaultKind, Step, When};
use crate::strategy::{AnchoredStep, Strategy, Tally, anchored_steps};

/// Runs per generation: small enough that feedback starts early, large enough that two
/// threads rarely wait for each other at a generation's end.
pub(crate) const GENERATION: u64 = 32;

/// Of every 8 runs after the first generation, how many are fresh random draws. More
/// mutations found the ten user locks' bugs no sooner (docs/EXPLORE.md, "Coverage
/// feedback").
const FRESH_IN_8: u8 = 4;

/// Mixed into the seed for the guided draws, so that they are unrelated to the fresh
/// schedules drawn from the same run seeds.
const GUIDED_SALT: u64 = 0x6775_6964_6564_0001;

/// Seeded schedules, steered toward new abstract lock states.
pub(crate) struct GuidedSchedules {
    seed: u64,
    options: Options,
    baseline: Baseline,
    anchoring: Anchoring,
    kinds: Vec<FaultKind>,
    /// Runs of the budget (`u64::MAX` with a time alone).
    limit: u64,
    /// The sweep's steps, in the order they run: runs `0..sweep.len()`.
    sweep: Vec<Step>,
    corpus: RwLock<Corpus>,
    /// This generation's outcomes, by run index, until it ends.
    pending: Mutex<Vec<(u64, Vec<u64>)>>,
}

/// What the generations so far found.
#[derive(Default)]
struct Corpus {
    /// Schedules that reached a state no earlier run had, oldest first.
    entries: Vec<Entry>,
    /// Every state reached, with how many runs reached it.
    seen: HashMap<u64, u64>,
    /// Runs observed.
    observed: u64,
    /// `observed` when a run last reached a new state.
    last_new: u64,
    /// Of the observed runs, the fresh random draws.
    fresh: u64,
}

/// A schedule kept for the states it reached first.
struct Entry {
    schedule: Schedule,
    /// The states no run before it reached.
    new: Vec<u64>,
}

impl Corpus {
    /// How rare what `entry` found is: the fewest runs that reached one of its states.
    fn rarity(&self, entry: &Entry) -> u64 {
        entry
            .new
            .iter()
            .map(|s| self.seen.get(s).copied().unwrap_or(0))
            .min()
            .unwrap_or(u64::MAX)
    }

    /// A parent for the next mutation: of a few entries drawn, the one whose states the
    /// fewest runs reached (what is rare is where the search has not been yet).
    fn parent(&self, rng: &mut Rng) -> &Entry {
        let mut best = &self.entries[rng.usize(..self.entries.len())];
        for _ in 1..TOURNAMENT {
            let other = &self.entries[rng.usize(..self.entries.len())];
            if self.rarity(other) < self.rarity(best) {
                best = other;
            }
        }
        best
    }
}

/// How many corpus entries are drawn to pick one parent.
const TOURNAMENT: usize = 4;

impl GuidedSchedules {
    pub(crate) fn new(
        seed: u64,
        options: &Options,
        baseline: &Baseline,
        anchoring: Anchoring,
        limit: u64,
    ) -> Self {
        let mut corpus = Corpus::default();
        // The fault-free run's states are known already: a schedule must do better.
        corpus.seen.extend(baseline.states.iter().map(|s| (*s, 1)));
        GuidedSchedules {
            seed,
            options: options.clone(),
            baseline: baseline.clone(),
            anchoring,
            kinds: usable(options),
            limit,
            sweep: sweep(
                seed,
                anchored_steps(options, baseline, anchoring),
                baseline,
                options.ttl_ms,
            ),
            corpus: RwLock::new(corpus),
            pending: Mutex::new(Vec::new()),
        }
    }

    /// Run `index`'s schedule under `corpus`, and whether it is a fresh random draw.
    fn make(&self, corpus: &Corpus, index: u64) -> (Schedule, bool) {
        if let Some(step) = usize::try_from(index).ok().and_then(|i| self.sweep.get(i)) {
            // The fault-free run's tokens, so that the run is that run up to the step,
            // and the step strikes the state the sweep chose it for.
            let swept = Schedule {
                clients: self.options.clients,
                cycles: self.options.cycles,
                token_seed: fault_free_token_seed(self.seed),
                steps: vec![step.clone()],
            };
            return (swept, false);
        }
        let mut rng = Rng::with_seed(run_seed(self.seed ^ GUIDED_SALT, index));
        let fresh = corpus.entries.is_empty() || self.kinds.is_empty() || rng.u8(..8) < FRESH_IN_8;
        if fresh {
            return (self.fresh(index), true);
        }
        // One mutation: two or three moved the child too far from what its parent
        // reached to find bugs sooner. It never drops a schedule's last step.
        let mut child = corpus.parent(&mut rng).schedule.clone();
        self.mutate(&mut rng, &mut child, &corpus.entries);
        (child, false)
    }

    /// Run `index`'s fresh draw: as the random search draws a schedule, but with every
    /// step aimed by name first (see [`step_by_name_at_index`]).
    fn fresh(&self, index: u64) -> Schedule {
        let mut rng = Rng::with_seed(run_seed(self.seed, index));
        let mut drawn = schedule(rng.u64(..), &self.options, &self.baseline, self.anchoring);
        for step in &mut drawn.steps {
            *step = self.draw_step(&mut rng);
        }
        drawn
    }

    /// A new step: aimed by name first, so that a client's retry loop of a hundred
    /// `SET`s weighs as much as its one `GET`.
    fn draw_step(&self, rng: &mut Rng) -> Step {
        match self.anchoring {
            Anchoring::ByIndex => {
                step_by_name_at_index(rng, &self.options, &self.baseline, &self.kinds)
            }
            Anchoring::ByName => step(
                rng,
                &self.options,
                &self.baseline,
                self.anchoring,
                &self.kinds,
            ),
        }
    }

    /// One mutation of `schedule`.
    fn mutate(&self, rng: &mut Rng, schedule: &mut Schedule, entries: &[Entry]) {
        let max_steps = self.options.max_steps.max(1);
        let len = schedule.steps.len();
        if len == 0 {
            schedule.steps.push(self.draw_step(rng));
            return;
        }
        let at = rng.usize(..len);
        match rng.u8(..6) {
            // A neighbouring moment: the operation just before or after, a little time.
            0 | 1 => nudge(
                rng,
                &mut schedule.steps[at].when,
                &self.baseline,
                &self.options,
            ),
            // Another length, the same kind and target.
            2 => {
                let fault = schedule.steps[at].fault;
                let client = fault.client().unwrap_or(0);
                schedule.steps[at].fault = random_fault(rng, fault.kind(), &self.options, client);
            }
            // One step more, or one fewer.
            3 if len < max_steps => schedule.steps.push(self.draw_step(rng)),
            3 | 4 if len > 1 => {
                schedule.steps.swap_remove(at);
            }
            // A step of another schedule that reached something new.
            _ => {
                let other = &entries[rng.usize(..entries.len())].schedule;
                if let Some(taken) = other.steps.get(rng.usize(..other.steps.len().max(1))) {
                    schedule.steps[at] = taken.clone();
                }
            }
        }
    }
}

/// Moves `when` to a neighbouring operation of the same client (or a time nearby).
fn nudge(rng: &mut Rng, when: &mut When, baseline: &Baseline, options: &Options) {
    let delta = |rng: &mut Rng| {
        let d = rng.i64(1..=3);
        if rng.bool() { d } else { -d }
    };
    match when {
        When::After { client, op } => {
            let ops = i64::from(baseline.ops.get(*client).copied().unwrap_or(1).max(1));
            let moved = (i64::from(*op) + delta(rng)).clamp(0, ops - 1);
            *op = u32::try_from(moved).unwrap_or(0);
        }
        When::AfterNext { nth, .. } => {
            let moved = (i64::from(*nth) + delta(rng)).max(0);
            *nth = u32::try_from(moved).unwrap_or(0);
        }
        When::At { ms } => {
            let span = (options.ttl_ms / 4).max(1);
            let shift = rng.u64(1..=span);
            *ms = if rng.bool() {
                ms.saturating_add(shift)
            } else {
                ms.saturating_sub(shift)
            };
        }
    }
}

/// The sweep's steps: of the `steps` that would strike the same abstract lock state
/// with the same fault (whichever client: states are relative to the client), one
/// drawn by `seed`, in this order:
/// 1. One state per operation and phase first (the others' phases left out), then the
///    states that differ from one already swept only in the others' phases.
/// 2. Within each, the faults a TTL lock is built around first: a delay of about one
///    validity (a pause, latency, a late reply, a partition: a holder or an acquirer
///    held up until a lease ends), and a client fault with no length (an error, a lost
///    reply, a killed connection: a command whose outcome the client cannot know).
///    Then the other faults of about one validity or with no length (a clock step, a
///    failover), then the longer ones, then those within the slack.
/// 3. Ties in an order drawn by `seed`.
fn sweep(seed: u64, steps: Vec<AnchoredStep>, baseline: &Baseline, ttl_ms: u64) -> Vec<Step> {
    if baseline.op_states.iter().all(Vec::is_empty) {
        return Vec::new();
    }
    // Groups in the order they first appear, so that the sweep does not depend on a
    // hash map's order.
    let mut groups: Vec<(String, Option<u64>, Vec<Step>)> = Vec::new();
    let mut by_key: HashMap<(String, Option<u64>), usize> = HashMap::new();
    for AnchoredStep { step, after } in steps {
        let state = after.and_then(|(client, op)| {
            baseline
                .op_states
                .get(client)?
                .get(usize::try_from(op).ok()?)
                .copied()
        });
        let fault = without_client(&step.fault);
        let group = *by_key.entry((fault.clone(), state)).or_insert_with(|| {
            groups.push((fault, state, Vec::new()));
            groups.len() - 1
        });
        groups[group].2.push(step);
    }
    let mut rng = Rng::with_seed(seed ^ SWEEP_SALT);
    let mut coarse_seen = HashSet::new();
    let mut drawn: Vec<((bool, u8, u64), Step)> = groups
        .into_iter()
        .map(|(fault, state, members)| {
            let pick = members[rng.usize(..members.len())].clone();
            let repeat = !coarse_seen.insert((fault, state.map(without_others)));
            ((repeat, tier(&pick.fault, ttl_ms), rng.u64(..)), pick)
        })
        .collect();
    drawn.sort_by_key(|(order, _)| *order);
    drawn.into_iter().map(|(_, step)| step).collect()
}

/// Where `fault` comes in the sweep (see [`sweep`]): 0 first.
fn tier(fault: &Fault, ttl_ms: u64) -> u8 {
    let ttl = ttl_ms.max(1);
    let delay = matches!(
        fault,
        Fault::Pause { .. }
            | Fault::SectionPause { .. }
            | Fault::Latency { .. }
            | Fault::LateReply { .. }
            | Fault::Blackhole { .. }
    );
    match fault.length() {
        // About one validity: the length classes just short of a TTL and a tenth past it.
        Some(ms) if ms >= ttl * 3 / 4 && ms < ttl * 2 => u8::from(!delay),
        None => u8::from(fault.client().is_none()),
        Some(ms) if ms >= ttl * 2 => 2,
        Some(_) => 3,
    }
}

/// Mixed into the seed for the sweep's order.
const SWEEP_SALT: u64 = 0x7377_6565_7000_0001;

/// `fault` with its client left out, as a key: a fault of client 0 and the same fault
/// of client 2 striking the same (relative) state are one choice.
fn without_client(fault: &Fault) -> String {
    // Faults are tagged inside (`{"fault":"pause","client":0,"ms":190}`).
    let mut value = serde_json::to_value(fault).unwrap_or_default();
    if let Some(fields) = value.as_object_mut() {
        fields.remove("client");
    }
    value.to_string()
}

impl Strategy for GuidedSchedules {
    fn phase(&self, n: usize) -> Option<Range<u64>> {
        // The sweep, when there is one, is phase 0; generations follow it.
        let swept = self.sweep.len() as u64;
        let range = if n == 0 && swept > 0 {
            0..swept
        } else {
            let generation = u64::try_from(n).ok()? - u64::from(swept > 0);
            let start = swept.checked_add(generation.checked_mul(GENERATION)?)?;
            start..start.saturating_add(GENERATION)
        };
        (range.start < self.limit).then(|| range.start..range.end.min(self.limit))
    }

    fn schedule(&self, index: u64) -> Option<Schedule> {
        Some(self.make(&self.corpus.read(), index).0)
    }

    fn observe(&self, index: u64, outcome: &Outcome) {
        self.pending.lock().push((index, outcome.states.clone()));
    }

    fn phase_ended(&self, _n: usize) {
        let mut pending = std::mem::take(&mut *self.pending.lock());
        pending.sort_unstable_by_key(|(index, _)| *index);
        // The generation's schedules as its runs made them: under the corpus before
        // any of them joins it.
        let made: Vec<(Schedule, bool)> = {
            let corpus = self.corpus.read();
            pending
                .iter()
                .map(|(index, _)| self.make(&corpus, *index))
                .collect()
        };
        let mut corpus = self.corpus.write();
        for ((_, states), (schedule, fresh)) in pending.into_iter().zip(made) {
            corpus.observed += 1;
            corpus.fresh += u64::from(fresh);
            let mut new = Vec::new();
            for state in states {
                let hits = corpus.seen.entry(state).or_insert(0);
                if *hits == 0 {
                    new.push(state);
                }
                *hits += 1;
            }
            if !new.is_empty() {
                corpus.last_new = corpus.observed;
                corpus.entries.push(Entry { schedule, new });
            }
        }
    }

    fn coverage(&self, tally: Tally) -> Coverage {
        let corpus = self.corpus.read();
        Coverage::Guided(Guided {
            runs: tally.ran,
            max_steps: self.options.max_steps,
            fresh: corpus.fresh,
            swept: (self.sweep.len() as u64).min(corpus.observed),
            states: u64::try_from(corpus.seen.len()).unwrap_or(u64::MAX),
            corpus: u64::try_from(corpus.entries.len()).unwrap_or(u64::MAX),
            since_new: corpus.observed - corpus.last_new,
            observed: corpus.observed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{tier, without_client};
    use crate::step::Fault;

    #[test]
    fn the_sweep_puts_delays_of_about_one_validity_and_unknown_outcomes_first() {
        let ttl = 200;
        assert_eq!(tier(&Fault::Pause { client: 0, ms: 190 }, ttl), 0);
        assert_eq!(tier(&Fault::Pause { client: 0, ms: 220 }, ttl), 0);
        assert_eq!(tier(&Fault::LostReply { client: 1 }, ttl), 0);
        assert_eq!(tier(&Fault::ClientClock { client: 0, ms: 220 }, ttl), 1);
        assert_eq!(tier(&Fault::Pause { client: 0, ms: 600 }, ttl), 2);
        assert_eq!(tier(&Fault::Pause { client: 0, ms: 50 }, ttl), 3);
    }

    #[test]
    fn one_fault_of_two_clients_is_one_choice() {
        let (a, b) = (
            Fault::Pause { client: 0, ms: 190 },
            Fault::Pause { client: 2, ms: 190 },
        );
        assert_eq!(without_client(&a), without_client(&b));
        assert_ne!(
            without_client(&a),
            without_client(&Fault::Pause { client: 0, ms: 220 })
        );
    }
}
