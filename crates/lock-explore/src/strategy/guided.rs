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
//! Generations keep a seed's search the same on any number of threads: a generation's
//! schedules depend only on the corpus as the generations before it left it, and a
//! generation's outcomes join the corpus in run order once all of its runs ended.

use std::collections::HashMap;
use std::ops::Range;

use fastrand::Rng;
use parking_lot::{Mutex, RwLock};

use crate::coverage::{Coverage, Guided};
use crate::generate::{
    Anchoring, Baseline, random_fault, schedule, step, step_by_name_at_index, usable,
};
use crate::options::Options;
use crate::runner::Outcome;
use crate::schedule::Schedule;
use crate::search::run_seed;
use crate::step::{FaultKind, When};
use crate::strategy::{Strategy, Tally};

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
            corpus: RwLock::new(corpus),
            pending: Mutex::new(Vec::new()),
        }
    }

    /// Run `index`'s schedule under `corpus`, and whether it is a fresh random draw.
    fn make(&self, corpus: &Corpus, index: u64) -> (Schedule, bool) {
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
    fn draw_step(&self, rng: &mut Rng) -> crate::step::Step {
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

impl Strategy for GuidedSchedules {
    fn phase(&self, n: usize) -> Option<Range<u64>> {
        let start = u64::try_from(n).ok()?.checked_mul(GENERATION)?;
        (start < self.limit).then(|| start..start.saturating_add(GENERATION).min(self.limit))
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
            states: u64::try_from(corpus.seen.len()).unwrap_or(u64::MAX),
            corpus: u64::try_from(corpus.entries.len()).unwrap_or(u64::MAX),
            since_new: corpus.observed - corpus.last_new,
            observed: corpus.observed,
        })
    }
}
