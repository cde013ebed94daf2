//! [`Schedule`]: everything a run depends on besides the workload and the options.

use serde::{Deserialize, Serialize};

use crate::step::Step;

/// One run's plan: how many clients and cycles, the seed of the lock tokens, and the
/// fault steps. The same schedule on the same workload and options gives the same trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// Clients (the options' count, or fewer after shrinking).
    pub clients: usize,
    /// Cycles per client.
    pub cycles: u32,
    /// Seeds the lock tokens ([`lock_core::SeededRandom`]).
    pub token_seed: u64,
    /// The faults, in no particular order: each has its own time.
    pub steps: Vec<Step>,
}
