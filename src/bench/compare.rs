//! `nxlock bench --url URL --compare floor|rslock`: nxlock's run beside a reference run on
//! the same server, in the same process, one after the other, and the ratio of their
//! cycles/s.

use std::fmt;

use serde::Serialize;

use super::report::{BenchReport, ratio};

/// The hand-written redis-rs cycle's throughput ([`hand_written_floor`](super::hand_written_floor)).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FloorReport {
    /// Cycles per second, every client on its own key.
    pub cycles_per_sec: f64,
}

/// nxlock's run and one reference run. Serialises to `nxlock`, then `floor` or `rslock`,
/// then `ratio`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ComparedReport {
    /// nxlock's run.
    pub nxlock: BenchReport,
    /// The hand-written redis-rs floor (`--compare floor`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor: Option<FloorReport>,
    /// rslock's `LockManager` through the same client loop (`--compare rslock`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rslock: Option<BenchReport>,
    /// nxlock's cycles/s over the reference's.
    pub ratio: f64,
}

impl ComparedReport {
    /// nxlock beside the floor.
    pub fn with_floor(nxlock: BenchReport, floor: f64) -> Self {
        Self {
            ratio: ratio(nxlock.cycles_per_sec, floor),
            nxlock,
            floor: Some(FloorReport {
                cycles_per_sec: floor.round(),
            }),
            rslock: None,
        }
    }

    /// nxlock beside rslock.
    pub fn with_rslock(nxlock: BenchReport, rslock: BenchReport) -> Self {
        Self {
            ratio: ratio(nxlock.cycles_per_sec, rslock.cycles_per_sec),
            nxlock,
            floor: None,
            rslock: Some(rslock),
        }
    }

    /// The documented JSON object.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Violations on either side.
    pub fn violations(&self) -> usize {
        self.nxlock.violations + self.rslock.as_ref().map_or(0, |r| r.violations)
    }
}

impl fmt::Display for ComparedReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.nxlock)?;
        if let Some(floor) = &self.floor {
            write!(
                f,
                "hand-written redis-rs floor {:.0} cycles/s; nxlock/floor = {:.3}",
                floor.cycles_per_sec, self.ratio
            )?;
        }
        if let Some(rslock) = &self.rslock {
            writeln!(f, "\nrslock, same server, same run:\n{rslock}")?;
            write!(f, "nxlock/rslock cycles/s = {:.3}", self.ratio)?;
        }
        Ok(())
    }
}
