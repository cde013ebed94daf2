//! [`Strategy`]: the seam between the search and the schedules it runs. The search
//! owns threads, shards, judging, confirming and stopping; a strategy only says which
//! schedule run `index` makes, in which phases the indices come, and what it learns
//! from the runs. Random sampling, coverage-guided sampling and bounded exhaustive
//! enumeration sit behind it, so both runners (in process and over the wire) get all
//! three.

mod exhaustive;
mod guided;
mod random;

use std::ops::Range;

pub(crate) use exhaustive::{AnchoredStep, ExhaustiveSchedules, MAX_DEPTH, anchored_steps};
pub(crate) use guided::GuidedSchedules;
pub(crate) use random::RandomSchedules;

use crate::coverage::Coverage;
use crate::runner::Outcome;
use crate::schedule::Schedule;

/// What a search ran, for the strategy's coverage.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Tally {
    /// Schedules run and judged.
    pub(crate) ran: u64,
    /// Schedules pruned (not run: equal to a schedule that is).
    pub(crate) pruned: u64,
    /// Runs voided by the machine.
    pub(crate) voided: u64,
}

/// Which schedules a search runs.
pub(crate) trait Strategy: Send + Sync {
    /// The index range of phase `n` (`None`: no such phase; the search ends). Phases are
    /// searched one after the other: a phase starts once every run of the one before
    /// has ended, so that it may prune or steer by what they showed.
    fn phase(&self, n: usize) -> Option<Range<u64>>;

    /// Every run of phase `n` that was made has ended (and was observed).
    fn phase_ended(&self, _n: usize) {}

    /// Run `index`'s schedule, or `None` when it is pruned: its run would be, step for
    /// step, the run of a schedule the search makes anyway.
    fn schedule(&self, index: u64) -> Option<Schedule>;

    /// What run `index` did, for the pruning or steering of later phases.
    fn observe(&self, _index: u64, _outcome: &Outcome) {}

    /// Whether the outcomes of `phase` are needed by a later one even where another
    /// shard owns the runs (then a shard makes them too, as probes it does not judge).
    fn probes(&self, _phase: usize) -> bool {
        false
    }

    /// What the runs covered.
    fn coverage(&self, tally: Tally) -> Coverage;
}
