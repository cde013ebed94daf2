//! What a backend can do beyond the commands every [`KvBackend`](lock_core::KvBackend)
//! has, so that a case needing more is reported as skipped instead of failed.

use std::fmt;

/// One thing a backend may or may not be able to do. A [`Harness`](crate::Harness)
/// declares the ones its backend has; a case that needs one it lacks is
/// [`Outcome::Skipped`](crate::Outcome::Skipped), with the reason.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Capability {
    /// `PUBLISH` and `SUBSCRIBE` work ([`KvBackend::publish`](lock_core::KvBackend::publish)
    /// and [`subscribe`](lock_core::KvBackend::subscribe) are implemented): lock
    /// wake-ups. A harness that declares it while its backend answers
    /// [`ErrorKind::Unsupported`](lock_core::ErrorKind::Unsupported) fails those cases.
    PubSub,
    /// [`Harness::advance`](crate::Harness::advance) moves the backend's clock without
    /// waiting (a double's virtual time), so a case may let hours pass.
    TimeControl,
    /// [`Harness::replicated`](crate::Harness::replicated) gives a primary with replicas
    /// that a case can stall and fail over: the failover cases.
    Replication,
    /// [`Harness::instances`](crate::Harness::instances) gives N independent nodes, and
    /// the controls to kill, black-hole and restart them and to step their clocks: the
    /// Redlock cases.
    MultiInstance,
    /// The backend is a Redis Cluster (or a double holding to its rules), and
    /// [`Harness::cluster`](crate::Harness::cluster) says which shard serves which slot:
    /// the cross-slot cases.
    Cluster,
    /// [`Harness::cluster`](crate::Harness::cluster)'s control can also move a slot
    /// between shards and fail a shard over: the migration and failover cases.
    ClusterOperations,
    /// [`KvBackend::watch`](lock_core::KvBackend::watch) works: `WATCH` … `EXEC`
    /// transactions on a connection of their own.
    Transactions,
}

impl Capability {
    /// Every capability, in declaration order.
    pub const ALL: [Capability; 7] = [
        Capability::PubSub,
        Capability::TimeControl,
        Capability::Replication,
        Capability::MultiInstance,
        Capability::Cluster,
        Capability::ClusterOperations,
        Capability::Transactions,
    ];

    /// The name reports use: `pubsub`, `time-control`, `replication`, `multi-instance`,
    /// `cluster`, `cluster-operations`, `transactions`.
    pub fn name(self) -> &'static str {
        match self {
            Capability::PubSub => "pubsub",
            Capability::TimeControl => "time-control",
            Capability::Replication => "replication",
            Capability::MultiInstance => "multi-instance",
            Capability::Cluster => "cluster",
            Capability::ClusterOperations => "cluster-operations",
            Capability::Transactions => "transactions",
        }
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`Capability`]s.
///
/// ```
/// use lock_conformance::{Capabilities, Capability};
/// let caps = Capabilities::none().with(Capability::PubSub);
/// assert!(caps.has(Capability::PubSub));
/// assert!(!caps.has(Capability::TimeControl));
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Capabilities(u32);

impl Capabilities {
    /// No capability: only the commands every backend has.
    pub fn none() -> Self {
        Self(0)
    }

    /// This set and `capability`.
    pub fn with(self, capability: Capability) -> Self {
        Self(self.0 | capability.bit())
    }

    /// Whether `capability` is in the set.
    pub fn has(self, capability: Capability) -> bool {
        self.0 & capability.bit() != 0
    }

    /// The capabilities of `needs` that this set lacks.
    pub fn missing(self, needs: &[Capability]) -> Vec<Capability> {
        needs.iter().copied().filter(|c| !self.has(*c)).collect()
    }

    /// The capabilities in the set, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = Capability> {
        Capability::ALL.into_iter().filter(move |c| self.has(*c))
    }
}

impl FromIterator<Capability> for Capabilities {
    fn from_iter<I: IntoIterator<Item = Capability>>(iter: I) -> Self {
        iter.into_iter().fold(Self::none(), Self::with)
    }
}

impl fmt::Debug for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl fmt::Display for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = self.iter().map(Capability::name).collect();
        if names.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&names.join(", "))
        }
    }
}
