//! `nxlock bench --url URL --compare floor|rslock`: nxlock's run beside a reference run on
//! the same server, in the same process, taking turns, and the ratio of their cycles/s.

use std::fmt;
#[cfg(feature = "redis")]
use std::future::Future;

use serde::Serialize;

#[cfg(feature = "redis")]
use super::BenchError;
use super::report::BenchReport;
#[cfg(feature = "redis")]
use super::report::ratio;
#[cfg(feature = "redis")]
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
            let managers = super::RslockManagers::new(&[url.to_owned()], workload.clients);
            let managers = &managers;
            // Connected before the first measured run, as nxlock's backend is.
            let warm_up = Workload {
                duration: workload.duration.min(std::time::Duration::from_millis(500)),
                ..workload.clone()
            };
            super::run_rslock(url, managers, &warm_up).await?;
            let rslock =
                |slice: Workload| async move { super::run_rslock(url, managers, &slice).await };
            ComparedReport::with_rslock(alternate(workload, rounds, ours, rslock).await?)
        }
    })
}

#[cfg(feature = "redis")]
/// Both sides of a comparison, each merged over its rounds, and each round's ratio.
pub(crate) struct Alternated {
    pub(crate) ours: BenchReport,
    pub(crate) reference: BenchReport,
    pub(crate) round_ratios: Vec<f64>,
}

#[cfg(feature = "redis")]
impl Alternated {
    /// Our cycles/s over the reference's, over all rounds.
    fn ratio(&self) -> f64 {
        ratio(self.ours.cycles_per_sec, self.reference.cycles_per_sec)
    }
}

/// The middle of the rounds' ratios, and their first and third quartiles: on a machine
/// whose speed moves from one second to the next, the median is the comparison's figure,
/// and the quartiles say how far a typical round strays from it (one slow round moves
/// neither, where it moves the ratio of the sums).
pub(crate) fn round_spread(round_ratios: &[f64]) -> (f64, [f64; 2]) {
    let mut sorted = round_ratios.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| -> f64 {
        if sorted.is_empty() {
            return 0.0;
        }
        // Linear interpolation between the nearest ranks.
        let position = q * (sorted.len() - 1) as f64;
        let (low, high) = (position.floor() as usize, position.ceil() as usize);
        let value = sorted[low] + (sorted[high] - sorted[low]) * (position - low as f64);
        (value * 1000.0).round() / 1000.0
    };
    (at(0.5), [at(0.25), at(0.75)])
}

#[cfg(feature = "redis")]
/// Runs `ours` and `reference` on `workload` in turns, `rounds` times each, every run a
/// `rounds`th of the workload's duration. On a machine whose speed drifts by tens of
/// percent within a minute, two runs one after the other measure the drift as much as
/// the difference; taking turns slows both sides alike. Which side goes first alternates
/// from round to round (ours first, then the reference first, …): a side that leaves work
/// behind for the next run (replies still in flight, a server still busy) would otherwise
/// always hand it to the same side.
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
    let mut merged: Option<(BenchReport, BenchReport)> = None;
    let mut round_ratios = Vec::with_capacity(rounds);
    for round in 0..rounds.max(1) {
        let (our_round, reference_round) = if round % 2 == 0 {
            let our_round = ours(slice.clone()).await?;
            (our_round, reference(slice.clone()).await?)
        } else {
            let reference_round = reference(slice.clone()).await?;
            (ours(slice.clone()).await?, reference_round)
        };
        round_ratios.push(ratio(
            our_round.cycles_per_sec,
            reference_round.cycles_per_sec,
        ));
        merged = Some(match merged {
            None => (our_round, reference_round),
            Some((o, r)) => (o.merged(our_round), r.merged(reference_round)),
        });
    }
    let Some((ours, reference)) = merged else {
        return Err(BenchError::InvalidWorkload("no round ran".into()));
    };
    Ok(Alternated {
        ours,
        reference,
        round_ratios,
    })
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
    /// The median of `round_ratios`: the comparison's figure on a noisy machine.
    pub round_median: f64,
    /// The first and third quartiles of `round_ratios`.
    pub round_quartiles: [f64; 2],
}

impl ComparedReport {
    #[cfg(feature = "redis")]
    /// nxlock beside the floor, taking turns.
    pub(crate) fn with_floor(compared: Alternated) -> Self {
        let (round_median, round_quartiles) = round_spread(&compared.round_ratios);
        Self {
            round_median,
            round_quartiles,
            ratio: compared.ratio(),
            floor: Some(FloorReport {
                cycles_per_sec: compared.reference.cycles_per_sec,
            }),
            nxlock: compared.ours,
            rslock: None,
            round_ratios: compared.round_ratios,
        }
    }

    #[cfg(feature = "redis")]
    /// nxlock beside rslock, taking turns.
    pub(crate) fn with_rslock(compared: Alternated) -> Self {
        let (round_median, round_quartiles) = round_spread(&compared.round_ratios);
        Self {
            round_median,
            round_quartiles,
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
        write!(
            f,
            "\nper round (taking turns): {}\nmedian round {:.3}, quartiles {:.3}-{:.3}",
            rounds.join("  "),
            self.round_median,
            self.round_quartiles[0],
            self.round_quartiles[1]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_and_quartiles_ignore_one_stray_round() {
        let (median, [q1, q3]) = round_spread(&[1.2, 1.21, 0.5, 1.19, 1.22]);
        assert_eq!(median, 1.2);
        assert_eq!((q1, q3), (1.19, 1.21));
        assert_eq!(round_spread(&[]), (0.0, [0.0, 0.0]));
    }

    /// Which side goes first alternates, so neither always inherits the other's leftovers.
    #[tokio::test]
    async fn the_side_that_goes_first_alternates() {
        let order = std::sync::Mutex::new(Vec::new());
        let run = |side: &'static str| {
            let order = &order;
            move |_: Workload| async move {
                order.lock().unwrap().push(side);
                let elapsed = std::time::Duration::from_secs(1);
                Ok(BenchReport::collect(
                    side.into(),
                    &Workload::default(),
                    elapsed,
                    0,
                    0,
                    Vec::new(),
                ))
            }
        };
        let workload = Workload::default();
        let compared = alternate(&workload, 4, run("ours"), run("reference"))
            .await
            .unwrap();
        assert_eq!(compared.round_ratios.len(), 4);
        assert_eq!(
            *order.lock().unwrap(),
            [
                "ours",
                "reference",
                "reference",
                "ours",
                "ours",
                "reference",
                "reference",
                "ours"
            ]
        );
    }
}
