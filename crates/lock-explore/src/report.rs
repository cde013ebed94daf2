//! [`Report`]: what a search found, whichever runner made its runs: as text, as JSON,
//! and as the exit status a command gives.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::counterexample::Counterexample;
use crate::coverage::Coverage;
use crate::explorer::Plan;
use crate::step::Step;
use crate::violation::ViolationKind;

/// The exit status of a search that found a violation of the lock's own.
pub const EXIT_FOUND: u8 = 1;
/// The exit status of a search that checked nothing: a client sent no checking marker
/// in the fault-free run. Never the status of a clean search.
pub const EXIT_NOTHING_CHECKED: u8 = 3;

/// A finding that did not reproduce often enough to count as the lock's own: listed
/// with its count, never the end of a search, never a failure.
#[derive(Clone, Debug, PartialEq)]
pub struct Unconfirmed {
    /// What it broke.
    pub kind: ViolationKind,
    /// In a sentence.
    pub detail: String,
    /// The run that found it (`None`: the fault-free run).
    pub run: Option<u64>,
    /// Replays that showed it again.
    pub reproduced: u32,
    /// Replays made.
    pub replays: u32,
    /// Its schedule's steps.
    pub steps: Vec<Step>,
}

/// What an exploration found.
#[derive(Clone, Debug)]
pub struct Report {
    /// The code under test, as the runner describes it.
    pub subject: String,
    /// Whether its runs were deterministic (in process).
    pub deterministic: bool,
    /// The seed it started from.
    pub seed: u64,
    /// Runs made in the search (the baseline, shrinking and replays not counted).
    pub runs: u64,
    /// How many runs broke each property of the lock's own, confirmed
    /// ([`Explorer::keep_going`](crate::Explorer::keep_going) counts them all; otherwise
    /// the search stops at the first).
    pub violations: BTreeMap<ViolationKind, u64>,
    /// How many runs gave each finding inherent to TTL locks (a holder past its
    /// validity, or a violation that needs an inherent fault). They never stop a search.
    pub inherent: BTreeMap<ViolationKind, u64>,
    /// The shard of the budget this search ran ([`Explorer::shard`](crate::Explorer::shard)): `(k, n)`.
    pub shard: Option<(u64, u64)>,
    /// Wall-clock time the search took (shrinking and replays not counted).
    pub elapsed: Duration,
    /// The first violation of the lock's own, shrunk; `None` when no run had one.
    pub counterexample: Option<Counterexample>,
    /// When no run broke the lock itself: the first finding inherent to TTL locks,
    /// shrunk and labelled with its reason and remedy.
    pub inherent_finding: Option<Counterexample>,
    /// Findings that did not reproduce often enough to count.
    pub unconfirmed: Vec<Unconfirmed>,
    /// Runs that proved nothing either way, by cause (`stall`, `start-up`).
    pub voided: BTreeMap<String, u64>,
    /// Why the first voided run was voided.
    pub first_void: Option<String>,
    /// Runs in which some client sent no checking marker.
    pub unchecked_runs: u64,
    /// The clients that sent no checking marker in the fault-free run: then nothing was
    /// checked, and the search did not go on.
    pub nothing_checked: Option<Vec<usize>>,
    /// What a client wrote to stderr when it failed, first seen.
    pub client_failure: Option<String>,
    /// What the search covered: the guarantee its text states.
    pub coverage: Coverage,
    /// Runs made only to show another shard's pruning what they do (not judged here).
    pub probes: u64,
}

impl Report {
    pub(crate) fn new(plan: &Plan) -> Self {
        Report {
            subject: plan.runner.describe(),
            deterministic: plan.deterministic(),
            seed: plan.seed,
            runs: 0,
            violations: BTreeMap::new(),
            inherent: BTreeMap::new(),
            shard: plan.shard,
            elapsed: Duration::ZERO,
            counterexample: None,
            inherent_finding: None,
            unconfirmed: Vec::new(),
            voided: BTreeMap::new(),
            first_void: None,
            unchecked_runs: 0,
            nothing_checked: None,
            client_failure: None,
            coverage: Coverage::Sampled {
                runs: 0,
                max_steps: plan.options.max_steps,
            },
            probes: 0,
        }
    }

    /// Runs per second of the search.
    pub fn runs_per_second(&self) -> f64 {
        self.runs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The guarantee line: what was covered exhaustively, what was sampled.
    pub fn guarantee(&self) -> String {
        if self
            .counterexample
            .as_ref()
            .is_some_and(|c| c.run.is_none())
        {
            return "guarantee: the fault-free run breaks the lock; no schedule was needed"
                .to_owned();
        }
        let mut line = match (&self.coverage, self.shard) {
            (Coverage::Exhaustive(e), Some((k, n))) if n > 1 => {
                let owned = e.schedules.saturating_sub(k).div_ceil(n);
                let done = e.ran + e.pruned;
                format!(
                    "guarantee: shard {k}/{n} of every schedule of at most {} steps over {} steps ({} schedules): {} of its {} run or pruned{}; --merge the shards' --json reports for the whole space's verdict",
                    e.depth,
                    crate::coverage::grouped(e.steps),
                    crate::coverage::grouped(e.schedules),
                    crate::coverage::grouped(done),
                    crate::coverage::grouped(owned),
                    if self.counterexample.is_some() {
                        ", stopped at a violation"
                    } else if done == owned && e.voided == 0 {
                        ", clean"
                    } else {
                        ""
                    }
                )
            }
            (coverage, _) => coverage.guarantee(self.counterexample.is_some()),
        };
        if self.probes > 0 {
            line.push_str(&format!(
                " ({} runs made again for this shard's pruning)",
                crate::coverage::grouped(self.probes)
            ));
        }
        line
    }

    /// Voided runs, of every cause.
    pub fn voided_runs(&self) -> u64 {
        self.voided.values().sum()
    }

    /// The exit status for a command: [`EXIT_FOUND`] for a violation of the lock's own,
    /// [`EXIT_NOTHING_CHECKED`] when nothing was checked, else 0. An unconfirmed or
    /// inherent finding alone is 0.
    pub fn exit_code(&self) -> u8 {
        if self.counterexample.is_some() {
            EXIT_FOUND
        } else if self.nothing_checked.is_some() {
            EXIT_NOTHING_CHECKED
        } else {
            0
        }
    }

    /// The report as JSON: the counterexample's replay file (its fault steps under
    /// `"steps"`) and what the search counted.
    pub fn to_json(&self) -> serde_json::Value {
        let counts = |map: &BTreeMap<ViolationKind, u64>| {
            map.iter()
                .map(|(kind, n)| (kind.name().to_owned(), serde_json::Value::from(*n)))
                .collect::<serde_json::Map<String, serde_json::Value>>()
        };
        let mut json = match &self.counterexample {
            Some(found) => {
                let mut json =
                    serde_json::to_value(found.replay_file()).unwrap_or(serde_json::Value::Null);
                json["found_by_run"] = found.run.into();
                json["shrink_runs"] = found.shrink_runs.into();
                json["identical_replays"] = found.identical_replays.into();
                json["reproduced"] = found.reproduced.into();
                json["replays"] = found.replays.into();
                json["text"] = found.to_string().into();
                json
            }
            None => serde_json::json!({ "violation": null }),
        };
        json["subject"] = self.subject.clone().into();
        json["verdict"] = match self.exit_code() {
            EXIT_FOUND => "found",
            EXIT_NOTHING_CHECKED => "nothing-checked",
            _ => "clean",
        }
        .into();
        json["seed"] = self.seed.into();
        json["runs"] = self.runs.into();
        json["seconds"] = self.elapsed.as_secs_f64().into();
        json["runs_per_second"] = self.runs_per_second().into();
        json["violations"] = counts(&self.violations).into();
        json["inherent"] = counts(&self.inherent).into();
        json["inherent_finding"] = self
            .inherent_finding
            .as_ref()
            .map(|f| {
                serde_json::json!({
                    "violation": f.violation.kind.name(),
                    "detail": f.violation.detail,
                    "reason": f.violation.inherent,
                })
            })
            .into();
        json["unconfirmed"] = self
            .unconfirmed
            .iter()
            .map(|u| {
                serde_json::json!({
                    "violation": u.kind.name(),
                    "detail": u.detail,
                    "found_by_run": u.run,
                    "reproduced": u.reproduced,
                    "replays": u.replays,
                    "steps": u.steps,
                })
            })
            .collect::<Vec<_>>()
            .into();
        json["voided"] = self
            .voided
            .iter()
            .map(|(cause, n)| (cause.clone(), serde_json::Value::from(*n)))
            .collect::<serde_json::Map<String, serde_json::Value>>()
            .into();
        json["first_void"] = self.first_void.clone().into();
        json["unchecked_runs"] = self.unchecked_runs.into();
        json["nothing_checked"] = self.nothing_checked.clone().into();
        json["client_failure"] = self.client_failure.clone().into();
        json["coverage"] = serde_json::to_value(&self.coverage).unwrap_or_default();
        json["guarantee"] = self.guarantee().into();
        json
    }
}

/// `n` as a rate: whole numbers in the thousands, a decimal below a hundred.
fn rate(n: f64) -> String {
    if n >= 100.0 {
        format!("{n:.0}")
    } else {
        format!("{n:.1}")
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = rate(self.runs_per_second());
        let seconds = self.elapsed.as_secs_f64();
        let shard = match self.shard {
            Some((k, n)) => format!(", shard {k}/{n}"),
            None => String::new(),
        };
        let of = if self.deterministic {
            String::new()
        } else {
            format!(" of {:?}", self.subject)
        };
        if let Some(clients) = &self.nothing_checked {
            let who: Vec<String> = clients.iter().map(ToString::to_string).collect();
            write!(
                f,
                "NOTHING WAS CHECKED{of}: client {} sent no checking marker in the fault-free run (a section entered, a fenced write, an increment counted), so no property of the lock was checked. Mark what the lock protects (NXLOCK.ENTER and NXLOCK.EXIT, or the client helpers; in Rust, ctx.enter_until and ctx.exit): see docs/EXPLORE.md",
                who.join(", ")
            )?;
        } else if let Some(found) = &self.counterexample {
            writeln!(f, "{found}")?;
            write!(
                f,
                "{} runs ({seconds:.1} s, {rate} runs/s) before the violation; seed {}{shard}",
                self.runs, self.seed
            )?;
        } else {
            write!(
                f,
                "no violation of the lock's own in {} runs{of} ({seconds:.1} s, {rate} runs/s), seed {}{shard}",
                self.runs, self.seed
            )?;
        }
        if !self.voided.is_empty() {
            let listed: Vec<String> = self
                .voided
                .iter()
                .map(|(cause, n)| format!("{cause} {n}"))
                .collect();
            write!(
                f,
                "\nruns voided, proving nothing either way: {}; the first: {}",
                listed.join(", "),
                self.first_void.as_deref().unwrap_or("")
            )?;
        }
        if self.unchecked_runs > 0 {
            write!(
                f,
                "\nruns in which a client sent no checking marker: {}",
                self.unchecked_runs
            )?;
        }
        for u in &self.unconfirmed {
            let by = match u.run {
                Some(run) => format!("run {run}"),
                None => "the fault-free run".to_owned(),
            };
            write!(
                f,
                "\nunconfirmed (not counted as the lock's own): {} found by {by}, reproduced in {} of {} replays: {}",
                u.kind, u.reproduced, u.replays, u.detail
            )?;
        }
        if !self.inherent.is_empty() {
            let listed: Vec<String> = self
                .inherent
                .iter()
                .map(|(kind, n)| format!("{kind} {n}"))
                .collect();
            write!(
                f,
                "\nfindings inherent to TTL locks (not the lock's bugs): {}",
                listed.join(", ")
            )?;
        }
        if let Some(failure) = &self.client_failure {
            write!(f, "\na client exited with a failure: {failure}")?;
        }
        if self.nothing_checked.is_none() {
            write!(f, "\n{}", self.guarantee())?;
        }
        if let Some(finding) = &self.inherent_finding {
            write!(f, "\n\nThe first inherent finding:\n{finding}")?;
        }
        Ok(())
    }
}
