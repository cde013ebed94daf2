//! What the checkers report.

use std::fmt;

use lock_memory::Dump;

use crate::step::FaultKind;
use serde::{Deserialize, Serialize};

/// The property a run broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ViolationKind {
    /// Two clients inside one resource's unfenced critical section at once, both within
    /// the validity their locks promised.
    MutualExclusion,
    /// A holder stayed inside (or entered) past the validity its lock promised while
    /// another client was inside: what every TTL lock does to an unfenced resource.
    /// Inherent: it never stops a search.
    ExpiredHolder,
    /// A lease ended before the validity its lock promised because of an inherent fault
    /// (a server clock that jumped or ran fast, a Redlock node that came back empty), and
    /// the overlap or lost ownership that followed is what every TTL lock shows there.
    /// Inherent: it never stops a search. The detail names what was observed.
    LeaseCutShort,
    /// A holder within its validity whose lock key holds another token, or nothing:
    /// the earliest sign of a release or extend that touched a lock it did not own.
    LostOwnership,
    /// A fenced resource refused the write of the client whose token is in the lock key
    /// now, because a stale client took a higher fence: fence order disagrees with lock
    /// order (a fence taken apart from the lock).
    FenceOrder,
    /// A fenced resource accepted a write whose fence was not newer than one it had
    /// already accepted from another client.
    StaleFence,
    /// Two clients entered with the same fence: the fence counter went back (a failover
    /// lost increments) and handed one fence out twice.
    FenceWentBack,
    /// A counter ends lower than the increments clients were told succeeded.
    LostUpdate,
    /// A counter ends higher than every increment that may have been applied: one was
    /// applied twice.
    AppliedTwice,
    /// A key without a TTL outlived the run.
    KeyWithoutTtl,
    /// Once faults stopped, a client did not get the lock within the bound.
    Liveness,
    /// The workload panicked.
    Panic,
    /// Two runs of one schedule gave different traces: the workload uses something
    /// outside the explorer's control (a real clock, a thread RNG, real I/O).
    Nondeterminism,
}

impl ViolationKind {
    /// The kebab-case name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            ViolationKind::MutualExclusion => "mutual-exclusion",
            ViolationKind::ExpiredHolder => "expired-holder",
            ViolationKind::LeaseCutShort => "lease-cut-short",
            ViolationKind::LostOwnership => "lost-ownership",
            ViolationKind::FenceOrder => "fence-order",
            ViolationKind::StaleFence => "stale-fence",
            ViolationKind::FenceWentBack => "fence-went-back",
            ViolationKind::LostUpdate => "lost-update",
            ViolationKind::AppliedTwice => "applied-twice",
            ViolationKind::KeyWithoutTtl => "key-without-ttl",
            ViolationKind::Liveness => "liveness",
            ViolationKind::Panic => "panic",
            ViolationKind::Nondeterminism => "nondeterminism",
        }
    }
}

impl ViolationKind {
    /// Why this kind is inherent to TTL locks, with the remedy; `None` for a kind that
    /// is the lock's own.
    pub fn inherent_reason(self) -> Option<&'static str> {
        match self {
            ViolationKind::ExpiredHolder => Some(
                "a holder that works past the validity its lock promised shares the resource with the next holder; no TTL lock can prevent it on an unfenced resource. Remedy: check the validity before each step, and fence the resource (FencedLock and a resource that refuses stale fences)",
            ),
            _ => None,
        }
    }
}

impl fmt::Display for ViolationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One broken property, where and when.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// Which property.
    pub kind: ViolationKind,
    /// What exactly, in a sentence.
    pub detail: String,
    /// Virtual microseconds since the start, when it was seen.
    pub at_us: i64,
    /// The clients involved.
    pub clients: Vec<usize>,
    /// Every node's keys at that moment.
    pub dumps: Vec<Dump>,
    /// Why the finding is inherent to TTL locks (and the remedy); `None` when it is the
    /// lock's own violation.
    pub inherent: Option<String>,
    /// For a violation judged against a validity (an overlap, a lost key): how much of
    /// that validity was left when it happened, µs. A verdict with a small margin is one
    /// a late clock reading could have moved.
    pub margin_us: Option<i64>,
}

impl Violation {
    /// Whether this is inherent to every TTL lock rather than the lock's own violation.
    pub fn is_inherent(&self) -> bool {
        self.inherent.is_some()
    }

    /// Labels this violation as one that needs the inherent fault `kinds` (without
    /// them, the same kind of violation no longer happens): a lease cut short, never to
    /// be read as the lock's own mutual-exclusion or lost-ownership. The detail keeps
    /// what was observed.
    pub fn needs_inherent(&mut self, kinds: &[FaultKind]) {
        let Some(first) = kinds.first() else {
            return;
        };
        let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        self.inherent = Some(format!(
            "it needs the inherent fault {}: {}",
            names.join(" and "),
            first.inherent_reason().unwrap_or_default()
        ));
        self.detail = format!("{}: {}", self.kind, self.detail);
        self.kind = ViolationKind::LeaseCutShort;
    }

    /// Every node's keys when it happened, as a report prints them: a line per node,
    /// then a line per key.
    pub fn keys_text(&self) -> String {
        let mut text = String::new();
        for (node, dump) in self.dumps.iter().enumerate() {
            if dump.keys.is_empty() {
                text.push_str(&format!("  node {node}: (empty)\n"));
                continue;
            }
            text.push_str(&format!("  node {node}:\n"));
            for line in dump.to_string().lines().skip(1) {
                text.push_str(&format!("    {}\n", line.trim_start()));
            }
        }
        text
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at {:.3} ms: {}",
            self.kind,
            self.at_us as f64 / 1000.0,
            self.detail
        )?;
        if let Some(reason) = &self.inherent {
            write!(f, "\nINHERENT TO TTL LOCKS: {reason}")?;
        }
        Ok(())
    }
}
