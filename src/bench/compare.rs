//! `nxlock bench --url URL --compare floor|rslock`: nxlock's run beside a reference run on
//! the same server, in the same process, taking turns, and the ratio of their cycles/s.

use std::fmt;
use std::future::Future;

use serde::Serialize;

use super::BenchError;
use super::report::{BenchReport, ratio};
use super::workload::Workload;

/// What `nxlock bench --compare` runs beside nxlock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reference {
    /// The token cycle hand-written on redis-rs ([`hand_written_floor`](super::hand_written_floor)).
    Floor,
    /// rslock's `LockManager` ([`run_rslock`](super::run_rslock)).
    Rslock,
}

/// `workload` through nxlock on `backend` (a connection to the server at `url`) and
/// `reference` on the same server, taking turns for `rounds` rounds (see [`ComparedReport`]).
#[cfg(feature = "compare-rslock")]
pub async fn compare_on_server<B: lock_core::KvBackend + Clone + 'static>(
    backend: B,
    url: &str,
    workload: &Workload,
    reference: Reference,
    rounds: usize,
) -> Result<ComparedReport, BenchError> {
    let ours = |slice: Workload| {
        let backend = backend.clone();
        async move { super::run(backend, url, &slice).await }
    };
    Ok(match reference {
        Reference::Floor => {
            let floor = |slice: Workload| async move { super::floor::run_floor(url, &slice).await };
            ComparedReport::with_floor(alternate(workload, rounds, ours, floor).await?)
        }
        Reference::Rslock => {
            let rslock = |slice: Workload| async move { super::run_rslock(url, &slice).await };
            ComparedReport::with_rslock(alternate(workload, rounds, ours, rslock).await?)
        }
    })
}

/// Both sides of a comparison, each merged over its rounds, and each round's ratio.
pub(crate) struct Alternated {
    pub(crate) ours: BenchReport,
    pub(crate) reference: BenchReport,
    pub(crate) round_ratios: Vec<f64>,
}

impl Alternated {
    /// Our cycles/s over the reference's, over all rounds.
    fn ratio(&self) -> f64 {
        ratio(self.ours.cycles_per_sec, self.reference.cycles_per_sec)
    }
}

/// Runs `ours` and `reference` on `workload` in turns, `rounds` times each, every run a
/// `rounds`th of the workload's duration. On a machine whose speed drifts by tens of
/// percent within a minute, two runs one after the other measure the drift as much as
/// the difference; taking turns slows both sides alike.
pub(crate) async fn alternate<O, R, Fo, Fr>(
    workload: &Workload,
    rounds: usize,
    mut ours: O,
    mut reference: R,
) -> Result<Alternated, BenchError>
where
    O: FnMut(Workload) -> Fo,
    R: FnMut(Workload) -> Fr,
    Fo: Future<Output = Result<BenchReport, BenchError>>,
    Fr: Future<Output = Result<BenchReport, BenchError>>,
{
    let slice = Workload {
        duration: workload.duration / u32::try_from(rounds.max(1)).unwrap_or(u32::MAX),
        ..workload.clone()
    };
    let mut compared = Alternated {
        ours: ours(slice.clone()).await?,
        reference: reference(slice.clone()).await?,
        round_ratios: Vec::with_capacity(rounds),
    };
    let round_ratio = |ours: &BenchReport, reference: &BenchReport| {
        ratio(ours.cycles_per_sec, reference.cycles_per_sec)
    };
    compared
        .round_ratios
        .push(round_ratio(&compared.ours, &compared.reference));
    for _ in 1..rounds {
        let our_round = ours(slice.clone()).await?;
        let reference_round = reference(slice.clone()).await?;
        compared
            .round_ratios
            .push(round_ratio(&our_round, &reference_round));
        compared.ours = compared.ours.merged(our_round);
        compared.reference = compared.reference.merged(reference_round);
    }
    Ok(compared)
}

/// The hand-written redis-rs cycle's throughput ([`hand_written_floor`](super::hand_written_floor)).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FloorReport {
    /// Cycles per second, every client on its own key.
    pub cycles_per_sec: f64,
}

/// nxlock's run and one reference run, taking turns: each side runs a slice of the
/// duration, then the other, for a number of rounds, and each side's slices are merged
/// into one report. Serialises to `nxlock`, then `floor` or `rslock`, then `ratio` and
/// `round_ratios`.
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
    /// nxlock's cycles/s over the reference's, both over all their rounds.
    pub ratio: f64,
    /// The same ratio in each round: how much the machine moved during the comparison.
    pub round_ratios: Vec<f64>,
}

impl ComparedReport {
    /// nxlock beside the floor, taking turns.
    pub(crate) fn with_floor(compared: Alternated) -> Self {
        Self {
            ratio: compared.ratio(),
            floor: Some(FloorReport {
                cycles_per_sec: compared.reference.cycles_per_sec,
            }),
            nxlock: compared.ours,
            rslock: None,
            round_ratios: compared.round_ratios,
        }
    }

    /// nxlock beside rslock, taking turns.
    pub(crate) fn with_rslock(compared: Alternated) -> Self {
        Self {
            ratio: compared.ratio(),
            nxlock: compared.ours,
            floor: None,
            rslock: Some(compared.reference),
            round_ratios: compared.round_ratios,
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
        let rounds: Vec<String> = self
            .round_ratios
            .iter()
            .map(|r| format!("{r:.3}"))
            .collect();
        write!(f, "\nper round (taking turns): {}", rounds.join("  "))
    }
}
