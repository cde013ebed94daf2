//! [`ShardReport`]: what one shard of a budget found ([`Explorer::shard`]), as JSON that
//! travels between machines, and the merge that gives the report a single machine would
//! have made.
//!
//! [`Explorer::shard`]: crate::Explorer::shard

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::counterexample::Counterexample;
use crate::coverage::{Coverage, Exhaustive};
use crate::replay::ReplayFile;
use crate::report::Report;
use crate::violation::ViolationKind;

/// One shard's findings, or several shards' merged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardReport {
    /// The exploration's seed (every shard of one budget shares it).
    pub seed: u64,
    /// How many shards split the budget.
    pub shards: u64,
    /// Which shards this report covers (one, or all of them once merged).
    pub covered: Vec<u64>,
    /// Runs made.
    pub runs: u64,
    /// Seconds of search, added up over the shards.
    pub seconds: f64,
    /// Runs that broke each property of the lock's own.
    pub violations: BTreeMap<ViolationKind, u64>,
    /// Runs with each finding inherent to TTL locks.
    pub inherent: BTreeMap<ViolationKind, u64>,
    /// The first violation's run index (in the whole budget's run order), if any.
    pub found_by_run: Option<u64>,
    /// Its shrunk counterexample as a replay file.
    pub replay: Option<ReplayFile>,
    /// Its counterexample as text.
    pub text: Option<String>,
    /// For an exhaustive search: the space and what this shard ran and pruned of it
    /// (merged: of every shard).
    #[serde(default)]
    pub exhaustive: Option<Exhaustive>,
}

/// Shard reports that cannot be merged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// No report was given.
    #[error("no shard report to merge")]
    Empty,
    /// The reports are of different explorations.
    #[error("the shard reports disagree on the seed or the shard count: {0}")]
    Mismatch(String),
    /// A shard is missing, or given twice.
    #[error("shard coverage is wrong: {0}")]
    Coverage(String),
}

impl ShardReport {
    /// `report`'s shard report (a report of an unsharded search is shard 0 of 1).
    pub fn of(report: &Report) -> Self {
        let (k, n) = report.shard.unwrap_or((0, 1));
        let found: Option<&Counterexample> = report.counterexample.as_ref();
        ShardReport {
            seed: report.seed,
            shards: n,
            covered: vec![k],
            runs: report.runs,
            seconds: report.elapsed.as_secs_f64(),
            violations: report.violations.clone(),
            inherent: report.inherent.clone(),
            found_by_run: found.map(|f| f.run.unwrap_or(0)),
            replay: found.map(Counterexample::replay_file),
            text: found.map(ToString::to_string),
            exhaustive: match &report.coverage {
                Coverage::Exhaustive(e) => Some(e.clone()),
                Coverage::Sampled { .. } | Coverage::Guided(_) => None,
            },
        }
    }

    /// The guarantee line of a merged report: for an exhaustive search, whether the
    /// shards together ran or pruned every schedule of the space.
    pub fn guarantee(&self) -> Option<String> {
        let e = self.exhaustive.as_ref()?;
        Some(Coverage::Exhaustive(e.clone()).guarantee(self.found_by_run.is_some()))
    }

    /// Merges the reports of every shard of one budget: runs and counts add up, and the
    /// counterexample is the one of the lowest run index, which is the one a single
    /// machine searching the whole budget would have reported.
    pub fn merge(reports: &[ShardReport]) -> Result<ShardReport, MergeError> {
        let first = reports.first().ok_or(MergeError::Empty)?;
        let mut merged = ShardReport {
            covered: Vec::new(),
            runs: 0,
            seconds: 0.0,
            violations: BTreeMap::new(),
            inherent: BTreeMap::new(),
            found_by_run: None,
            replay: None,
            text: None,
            exhaustive: first.exhaustive.clone().map(|e| Exhaustive {
                ran: 0,
                pruned: 0,
                voided: 0,
                ..e
            }),
            ..first.clone()
        };
        for report in reports {
            if report.seed != first.seed || report.shards != first.shards {
                return Err(MergeError::Mismatch(format!(
                    "seed {} of {} shards, and seed {} of {} shards",
                    first.seed, first.shards, report.seed, report.shards
                )));
            }
            match (&mut merged.exhaustive, &report.exhaustive) {
                (None, None) => {}
                (Some(into), Some(e))
                    if into.space == e.space
                        && into.depth == e.depth
                        && into.schedules == e.schedules =>
                {
                    into.ran += e.ran;
                    into.pruned += e.pruned;
                    into.voided += e.voided;
                }
                _ => {
                    return Err(MergeError::Mismatch(
                        "the shards searched different spaces (another depth, workload or fault set, or a fault-free run that differed)".to_owned(),
                    ));
                }
            }
            for k in &report.covered {
                if merged.covered.contains(k) || *k >= first.shards {
                    return Err(MergeError::Coverage(format!(
                        "shard {k}/{} appears twice or does not exist",
                        first.shards
                    )));
                }
                merged.covered.push(*k);
            }
            merged.runs += report.runs;
            merged.seconds += report.seconds;
            for (kind, n) in &report.violations {
                *merged.violations.entry(*kind).or_default() += n;
            }
            for (kind, n) in &report.inherent {
                *merged.inherent.entry(*kind).or_default() += n;
            }
            if let Some(run) = report.found_by_run
                && merged.found_by_run.is_none_or(|best| run < best)
            {
                merged.found_by_run = Some(run);
                merged.replay = report.replay.clone();
                merged.text = report.text.clone();
            }
        }
        merged.covered.sort_unstable();
        if merged.covered.len() as u64 != first.shards {
            let missing: Vec<String> = (0..first.shards)
                .filter(|k| !merged.covered.contains(k))
                .map(|k| format!("{k}/{}", first.shards))
                .collect();
            return Err(MergeError::Coverage(format!(
                "missing shards {}",
                missing.join(", ")
            )));
        }
        Ok(merged)
    }
}
