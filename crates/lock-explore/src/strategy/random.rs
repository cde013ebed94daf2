//! [`RandomSchedules`]: run `i` draws its schedule from its own seed (see
//! `generate::schedule`): a sample of unbounded length.

use std::ops::Range;

use crate::coverage::Coverage;
use crate::generate::{Anchoring, Baseline, schedule};
use crate::options::Options;
use crate::schedule::Schedule;
use crate::search::run_seed;
use crate::strategy::{Strategy, Tally};

/// Seeded random schedules.
pub(crate) struct RandomSchedules {
    pub(crate) seed: u64,
    pub(crate) options: Options,
    pub(crate) baseline: Baseline,
    pub(crate) anchoring: Anchoring,
    /// Runs of the budget (`u64::MAX` with a time alone).
    pub(crate) limit: u64,
}

impl Strategy for RandomSchedules {
    fn phase(&self, n: usize) -> Option<Range<u64>> {
        // One phase: nothing is pruned, so nothing waits.
        (n == 0).then_some(0..self.limit)
    }

    fn schedule(&self, index: u64) -> Option<Schedule> {
        Some(schedule(
            run_seed(self.seed, index),
            &self.options,
            &self.baseline,
            self.anchoring,
        ))
    }

    fn coverage(&self, tally: Tally) -> Coverage {
        Coverage::Sampled {
            runs: tally.ran,
            max_steps: self.options.max_steps,
        }
    }
}
