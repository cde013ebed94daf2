//! The one list of nxlock's algorithms, by the names its tools and reports use.

use std::fmt;
use std::str::FromStr;

/// Every algorithm nxlock's tools run, by name: the locks, and the lock-free ways to
/// update a counter they are compared with. `nxlock explore --algorithm` takes each;
/// `nxlock bench --algorithm` takes those [`AlgorithmKind::benched`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AlgorithmKind {
    /// [`TokenLock`](crate::TokenLock): `SET NX PX` and a compare-and-delete script.
    Token,
    /// [`FencedLock`](crate::FencedLock): a token lock that hands out a fence.
    Fenced,
    /// [`FairLock`](crate::FairLock): a FIFO ticket line.
    Fair,
    /// [`ReentrantLock`](crate::ReentrantLock): `<owner>:<count>`.
    Reentrant,
    /// [`LegacyLock`](crate::LegacyLock): SETNX with a timestamp and GETSET recovery
    /// (seeds 002-004).
    Legacy,
    /// [`ScriptedLock`](crate::ScriptedLock): the one-script SETNX/GET/GETSET acquire
    /// (seed 001).
    Scripted,
    /// [`Redlock`](crate::Redlock) over N independent nodes.
    Redlock,
    /// No lock: a counter incremented by versioned compare-and-set
    /// ([`Versioned`](crate::Versioned), seed 002's optimistic lock).
    Optimistic,
    /// No lock: a counter incremented in `WATCH` … `EXEC` transactions.
    Watch,
    /// The same counter incremented inside a [`FairLock`](crate::FairLock), for comparison
    /// with the lock-free ways.
    Locked,
    /// No protection: a counter incremented by `GET`, then `SET` of the value plus one.
    /// The baseline every lock is meant to beat; it loses updates.
    Unprotected,
}

impl AlgorithmKind {
    /// Every algorithm, in the order the tools list them.
    pub const ALL: [AlgorithmKind; 11] = [
        AlgorithmKind::Token,
        AlgorithmKind::Fenced,
        AlgorithmKind::Fair,
        AlgorithmKind::Reentrant,
        AlgorithmKind::Legacy,
        AlgorithmKind::Scripted,
        AlgorithmKind::Redlock,
        AlgorithmKind::Optimistic,
        AlgorithmKind::Watch,
        AlgorithmKind::Locked,
        AlgorithmKind::Unprotected,
    ];

    /// The name the tools use (`token`, `fenced`…), and
    /// [`LockAlgorithm::name`](crate::LockAlgorithm::name) for the locks.
    pub fn name(self) -> &'static str {
        match self {
            AlgorithmKind::Token => "token",
            AlgorithmKind::Fenced => "fenced",
            AlgorithmKind::Fair => "fair",
            AlgorithmKind::Reentrant => "reentrant",
            AlgorithmKind::Legacy => "legacy",
            AlgorithmKind::Scripted => "scripted",
            AlgorithmKind::Redlock => "redlock",
            AlgorithmKind::Optimistic => "optimistic",
            AlgorithmKind::Watch => "watch",
            AlgorithmKind::Locked => "locked",
            AlgorithmKind::Unprotected => "unprotected",
        }
    }

    /// Whether `nxlock bench --algorithm` runs it: the token, legacy and scripted locks
    /// (the fair lock is `--wait fair`, Redlock `--topology redlock`) and the counters.
    pub fn benched(self) -> bool {
        matches!(
            self,
            AlgorithmKind::Token
                | AlgorithmKind::Legacy
                | AlgorithmKind::Scripted
                | AlgorithmKind::Optimistic
                | AlgorithmKind::Watch
                | AlgorithmKind::Locked
        )
    }

    /// Whether it is a lock-free way to update a counter (or the counter inside a lock):
    /// its workloads count increments rather than guard a critical section.
    pub fn counts(self) -> bool {
        matches!(
            self,
            AlgorithmKind::Optimistic
                | AlgorithmKind::Watch
                | AlgorithmKind::Locked
                | AlgorithmKind::Unprotected
        )
    }
}

impl fmt::Display for AlgorithmKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not an algorithm's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown algorithm {0:?}; the algorithms are {list}", list = names(&AlgorithmKind::ALL.map(AlgorithmKind::name)))]
pub struct UnknownAlgorithm(pub String);

impl FromStr for AlgorithmKind {
    type Err = UnknownAlgorithm;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AlgorithmKind::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| UnknownAlgorithm(s.to_owned()))
    }
}

/// `a, b and c`.
pub(crate) fn names(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_and_an_unknown_one_lists_them_all() {
        for kind in AlgorithmKind::ALL {
            assert_eq!(kind.name().parse::<AlgorithmKind>(), Ok(kind));
        }
        let error = "tokn".parse::<AlgorithmKind>().unwrap_err().to_string();
        assert_eq!(
            error,
            "unknown algorithm \"tokn\"; the algorithms are token, fenced, fair, reentrant, legacy, scripted, redlock, optimistic, watch, locked and unprotected"
        );
    }
}
