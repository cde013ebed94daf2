//! Replay files: one format for every runner. A file holds the options, the schedule,
//! and what it broke, and names the code under test where that is not the caller's (a
//! built-in algorithm, or the command each client ran), so that
//! `nxlock explore --replay FILE` runs it again with nothing else said.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::options::Options;
use crate::runner::{Recording, Runner};
use crate::schedule::Schedule;
use crate::step::Step;
use crate::topology::Topology;
use crate::trace::Trace;
use crate::violation::{Violation, ViolationKind};

/// The replay file's format version. Files of formats 1 and 2 (before commands were
/// saved) are still read, as are `nxlock-wire-replay/1` files of `--exec` searches.
pub const REPLAY_FORMAT: u32 = 3;

/// What a replay file holds: enough to run the schedule again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayFile {
    /// [`REPLAY_FORMAT`].
    pub format: u32,
    /// The built-in workload's name, if it is one.
    pub workload: Option<String>,
    /// The command line each client ran, for lock code run as processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The violation it showed.
    pub violation: ViolationKind,
    /// The violation in a sentence.
    pub detail: String,
    /// The options the run used.
    pub options: Options,
    /// Clients.
    pub clients: usize,
    /// Cycles per client.
    pub cycles: u32,
    /// The lock tokens' seed.
    pub token_seed: u64,
    /// The fault steps.
    pub steps: Vec<Step>,
}

/// A replay file that could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        source: std::io::Error,
    },
    /// The file is not a replay file of this format.
    #[error("{path}: not an nxlock explore replay file: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// The file `nxlock explore --exec --save` wrote before there was one format.
#[derive(Deserialize)]
struct LegacyExecFile {
    format: String,
    command: String,
    #[serde(default = "single")]
    topology: Topology,
    clients: usize,
    cycles: u32,
    ttl_ms: u64,
    steps: Vec<Step>,
    violation: String,
}

fn single() -> Topology {
    Topology::Single
}

impl ReplayFile {
    /// The schedule it holds.
    pub fn schedule(&self) -> Schedule {
        Schedule {
            clients: self.clients,
            cycles: self.cycles,
            token_seed: self.token_seed,
            steps: self.steps.clone(),
        }
    }

    /// Reads `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ReplayError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ReplayError::Io {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&text).map_err(|reason| ReplayError::Invalid {
            path: shown,
            reason,
        })
    }

    /// Reads a replay file's text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if value["format"] == "nxlock-wire-replay/1" {
            let old: LegacyExecFile = serde_json::from_value(value).map_err(|e| e.to_string())?;
            return Ok(old.into());
        }
        let file: ReplayFile = serde_json::from_value(value).map_err(|e| e.to_string())?;
        if !(1..=REPLAY_FORMAT).contains(&file.format) {
            return Err(format!(
                "format {} (this nxlock reads format {REPLAY_FORMAT})",
                file.format
            ));
        }
        Ok(file)
    }
}

impl From<LegacyExecFile> for ReplayFile {
    fn from(old: LegacyExecFile) -> Self {
        let _ = old.format;
        let kind = old
            .violation
            .split_whitespace()
            .next()
            .and_then(|name| serde_json::from_value(serde_json::Value::from(name)).ok())
            .unwrap_or(ViolationKind::LostOwnership);
        ReplayFile {
            format: REPLAY_FORMAT,
            workload: None,
            command: Some(old.command),
            violation: kind,
            detail: old.violation,
            options: Options {
                topology: old.topology,
                clients: old.clients,
                cycles: old.cycles,
                ttl_ms: old.ttl_ms,
                faults: Vec::new(),
                ..Options::default()
            },
            clients: old.clients,
            cycles: old.cycles,
            token_seed: 0,
            steps: old.steps,
        }
    }
}

/// What replaying a schedule gave.
#[derive(Clone, Debug)]
pub struct Replayed {
    /// The violation the file recorded.
    pub expected: ViolationKind,
    /// The violation the (first reproducing, else first) run found, if any.
    pub violation: Option<Violation>,
    /// That run's trace.
    pub trace: Trace,
    /// Steps that could not be placed: the operation they are anchored to never came
    /// (the lock changed). A replay with unplaced steps proves little about a fix.
    pub unplaced: Vec<Step>,
    /// How many runs showed the recorded violation again.
    pub reproduced: u32,
    /// How many runs were made (once in process; voided runs not counted).
    pub replays: u32,
    /// The clients that sent no checking marker in the run shown: where there are any,
    /// a replay that shows nothing proves nothing of them.
    pub unchecked: Vec<usize>,
}

impl Replayed {
    /// Whether the recorded violation happened again.
    pub fn reproduced(&self) -> bool {
        self.reproduced > 0
    }
}

/// Runs `file`'s schedule `times` times on `runner`.
pub(crate) fn replay(
    runner: &dyn Runner,
    file: &ReplayFile,
    times: u32,
) -> Result<Replayed, crate::explorer::ExploreError> {
    let schedule = file.schedule();
    let mut replayed = Replayed {
        expected: file.violation,
        violation: None,
        trace: Vec::new(),
        unplaced: Vec::new(),
        reproduced: 0,
        replays: 0,
        unchecked: Vec::new(),
    };
    let mut voided = 0;
    let mut shown = false;
    while replayed.replays < times {
        let outcome = runner.run(&file.options, &schedule, Recording::Kept)?;
        if outcome.void.is_some() {
            voided += 1;
            if voided > times {
                break;
            }
            continue;
        }
        replayed.replays += 1;
        let again = outcome
            .violation
            .as_ref()
            .is_some_and(|v| v.kind == file.violation);
        if again {
            replayed.reproduced += 1;
        }
        if !shown && (again || replayed.replays == 1) {
            shown = again;
            replayed.unchecked = outcome.unchecked();
            replayed.violation = outcome.violation;
            replayed.trace = outcome.trace;
            replayed.unplaced = outcome.unplaced;
        }
    }
    Ok(replayed)
}
