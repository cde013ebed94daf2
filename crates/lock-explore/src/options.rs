//! What an exploration runs: the topology, the clients, the faults in play, the budget,
//! and what the checkers know about the workload.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::step::FaultKind;
use crate::topology::Topology;

/// How the explorer's fenced resources judge a write's fence (see
/// [`Context::write`](crate::Context::write)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fencing {
    /// A fence must be higher than every fence accepted before: one write per fence.
    #[default]
    Strict,
    /// A fence may equal the highest accepted (what many fenced stores do): two holders
    /// handed the same fence both get in, which the stale-fence checker reports.
    Lenient,
    /// Every write is accepted: a resource without fencing.
    None,
}

/// Everything that shapes a run besides its schedule of faults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// What the clients talk to.
    pub topology: Topology,
    /// How many clients run the workload at once.
    pub clients: usize,
    /// How many cycles each client runs.
    pub cycles: u32,
    /// The lock TTL the workload uses: the unit of pause lengths and of the liveness
    /// bound.
    pub ttl_ms: u64,
    /// The fault families the search may use (default: [`FaultKind::defaults`], every
    /// kind the topology supports that is not inherent).
    pub faults: Vec<FaultKind>,
    /// No pause ([`Fault::Pause`](crate::Fault::Pause), [`Fault::SectionPause`](crate::Fault::SectionPause))
    /// is drawn longer than this (`None`: up to three TTLs).
    #[serde(default)]
    pub max_pause_ms: Option<u64>,
    /// No latency or late reply is drawn longer than this (`None`: up to one TTL).
    #[serde(default)]
    pub max_latency_ms: Option<u64>,
    /// At most this many steps per schedule.
    pub max_steps: usize,
    /// Once faults stop, every client must make progress within this many TTLs (`None`:
    /// no liveness check).
    pub liveness_ttls: Option<u64>,
    /// How the fenced resources judge fences.
    pub fencing: Fencing,
    /// Key prefixes that may stay without a TTL (fence counters, data the workload
    /// keeps); every other key left without one is a violation.
    pub permanent_keys: Vec<String>,
    /// Counters kept in a Redis key rather than in the explorer: (counter, key). The
    /// checker reads the key at the end.
    pub counter_keys: Vec<(String, String)>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            topology: Topology::Single,
            clients: 3,
            cycles: 4,
            ttl_ms: 1_000,
            faults: FaultKind::defaults(&Topology::Single),
            max_pause_ms: None,
            max_latency_ms: None,
            max_steps: 4,
            liveness_ttls: Some(8),
            fencing: Fencing::Strict,
            permanent_keys: Vec::new(),
            counter_keys: Vec::new(),
        }
    }
}

impl Options {
    /// The TTL as a duration.
    pub fn ttl(&self) -> Duration {
        Duration::from_millis(self.ttl_ms)
    }
}
