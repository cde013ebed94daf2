//! What an exploration runs: the topology, the clients, the faults in play, the budget,
//! and what the checkers know about the workload.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::schedule::Schedule;
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
    /// Whether a client's connection set-up (HELLO, AUTH, SELECT, CLIENT …, READONLY, and
    /// the ready checks and discovery INFO, PING, COMMAND and CLUSTER) may anchor a
    /// fault. Off by default: a step anchored there lands before or after the lock's
    /// first command depending on how the client connects, and replays poorly.
    #[serde(default)]
    pub anchor_setup: bool,
    /// Whether runs collect the abstract lock states they reach
    /// ([`Outcome::states`](crate::Outcome::states)). The guided search turns it on; it
    /// costs about a fifth of an in-process run, so other searches leave it off. It
    /// changes no run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub track_lock_states: bool,
    /// Whether an exhaustive search's levels 2 and deeper combine every step, the
    /// middles of a client's repeated operations too (a retry loop's passes in one lock
    /// state between its first and its last). Off by default: level 1 takes every step
    /// either way, and a retrying client's hundreds of anchors would square the space.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub every_repeat: bool,
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
            anchor_setup: false,
            track_lock_states: false,
            every_repeat: false,
        }
    }
}

impl Options {
    /// The TTL as a duration.
    pub fn ttl(&self) -> Duration {
        Duration::from_millis(self.ttl_ms)
    }

    /// How long a client may go without progress once faults stop: `liveness_ttls`
    /// TTLs (8 when the check is off, as the horizon's unit).
    pub fn liveness_bound(&self) -> Duration {
        let ttls = u32::try_from(self.liveness_ttls.unwrap_or(8)).unwrap_or(u32::MAX);
        self.ttl().saturating_mul(ttls)
    }

    /// How long a client's planned cycles may take, counted from its first command,
    /// before it is a liveness violation: long enough for every fault of `schedule` to
    /// have ended and for every cycle (and one more) to have had the liveness bound.
    pub fn horizon(&self, schedule: &Schedule) -> Duration {
        let faults_ms: u64 = schedule.steps.iter().map(|s| s.span_ms()).sum();
        Duration::from_millis(faults_ms)
            .saturating_add(self.liveness_bound().saturating_mul(schedule.cycles + 1))
    }
}

/// Whether a command named `name` (a first word, in capitals) is part of a client's
/// connection set-up rather than of its lock: the handshake (HELLO, AUTH, SELECT,
/// CLIENT …, READONLY, READWRITE, QUIT, RESET) and the ready checks and discovery that
/// client libraries send by themselves (INFO, PING, COMMAND, CLUSTER). A name with the
/// suffix of a command that took no effect (`CLIENT:error`) is told by its first word.
pub fn is_setup_command(name: &str) -> bool {
    let name = name.split_once(':').map_or(name, |(word, _)| word);
    matches!(
        name,
        "HELLO"
            | "AUTH"
            | "SELECT"
            | "CLIENT"
            | "READONLY"
            | "READWRITE"
            | "QUIT"
            | "RESET"
            | "INFO"
            | "PING"
            | "COMMAND"
            | "CLUSTER"
    )
}

#[cfg(test)]
mod tests {
    use super::is_setup_command;

    #[test]
    fn set_up_is_told_by_its_first_word_with_or_without_a_no_effect_suffix() {
        assert!(is_setup_command("HELLO"));
        // redis-py 8 sends `CLIENT MAINT_NOTIFICATIONS`, which a server may refuse.
        assert!(is_setup_command("CLIENT:error"));
        assert!(!is_setup_command("SET:nil"));
        assert!(!is_setup_command("EVAL"));
    }
}
