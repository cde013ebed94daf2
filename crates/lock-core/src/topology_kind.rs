//! The one list of the deployments nxlock's tools run locks on.

use std::fmt;
use std::str::FromStr;

use crate::algorithm_kind::names;

/// What the clients talk to, by the name `--topology` takes in `nxlock check`, `explore`
/// and `bench` (each says which it runs on, and how large).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TopologyKind {
    /// One server.
    Single,
    /// A primary and its replicas, with failover.
    Replicated,
    /// N independent servers, for Redlock.
    Redlock,
    /// A Redis Cluster of shards.
    Cluster,
}

impl TopologyKind {
    /// Every topology, in the order the tools list them.
    pub const ALL: [TopologyKind; 4] = [
        TopologyKind::Single,
        TopologyKind::Replicated,
        TopologyKind::Redlock,
        TopologyKind::Cluster,
    ];

    /// The name `--topology` takes.
    pub fn name(self) -> &'static str {
        match self {
            TopologyKind::Single => "single",
            TopologyKind::Replicated => "replicated",
            TopologyKind::Redlock => "redlock",
            TopologyKind::Cluster => "cluster",
        }
    }
}

impl fmt::Display for TopologyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a topology's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown topology {0:?}; the topologies are {list}", list = names(&TopologyKind::ALL.map(TopologyKind::name)))]
pub struct UnknownTopology(pub String);

impl FromStr for TopologyKind {
    type Err = UnknownTopology;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TopologyKind::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| UnknownTopology(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_and_an_unknown_one_lists_them_all() {
        for kind in TopologyKind::ALL {
            assert_eq!(kind.name().parse::<TopologyKind>(), Ok(kind));
        }
        let error = "singel".parse::<TopologyKind>().unwrap_err().to_string();
        assert_eq!(
            error,
            "unknown topology \"singel\"; the topologies are single, replicated, redlock and cluster"
        );
    }
}
