//! [`Counterexample`]: a shrunk schedule that breaks a property, readable, drawn as a
//! timeline, and saved as a replay file.

use std::fmt;
use std::path::Path;

use crate::options::Options;
use crate::replay::{REPLAY_FORMAT, ReplayError, ReplayFile};
use crate::schedule::Schedule;
use crate::step::Step;
use crate::trace::{Trace, What};
use crate::violation::{Violation, ViolationKind};

/// A violation, the smallest schedule found that causes it, and the run that shows it.
#[derive(Clone, Debug)]
pub struct Counterexample {
    /// The built-in workload's name (`nxlock explore --algorithm`), if it is one.
    pub workload: Option<String>,
    /// The command line each client ran, for lock code run as processes.
    pub command: Option<String>,
    /// The options the run used.
    pub options: Options,
    /// The exploration's seed.
    pub seed: u64,
    /// The search run that found it; `None` when the fault-free run already broke.
    pub run: Option<u64>,
    /// The schedule as found.
    pub original: Schedule,
    /// The schedule after shrinking.
    pub schedule: Schedule,
    /// Runs spent shrinking.
    pub shrink_runs: u64,
    /// What broke.
    pub violation: Violation,
    /// The shrunk run's trace, up to the violation.
    pub trace: Trace,
    /// How many replays of the shrunk schedule gave an identical trace (in process).
    pub identical_replays: u32,
    /// How many replays showed the violation again, of [`Counterexample::replays`].
    pub reproduced: u32,
    /// How many replays were made.
    pub replays: u32,
    /// Whether its runs were deterministic (in process): its replays were identical,
    /// rather than counted.
    pub deterministic: bool,
    /// The shrunk steps anchored to an operation's name and time rather than its index
    /// (see [`When::AfterNext`](crate::When::AfterNext)): what the replay file saves.
    pub anchored: Vec<Step>,
    /// The shard of the budget whose search found it, if sharded.
    pub shard: Option<(u64, u64)>,
}

impl Counterexample {
    /// The replay file's contents: the steps anchored to operations by name and time.
    pub fn replay_file(&self) -> ReplayFile {
        let steps = if self.anchored.len() == self.schedule.steps.len() {
            self.anchored.clone()
        } else {
            self.schedule.steps.clone()
        };
        ReplayFile {
            format: REPLAY_FORMAT,
            workload: self.workload.clone(),
            command: self.command.clone(),
            violation: self.violation.kind,
            detail: self.violation.detail.clone(),
            options: self.options.clone(),
            clients: self.schedule.clients,
            cycles: self.schedule.cycles,
            token_seed: self.schedule.token_seed,
            steps,
        }
    }

    /// The replay file as pretty JSON; its fault steps are under `"steps"`.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.replay_file())
            .expect("a replay file is plain data and always serialises")
    }

    /// Writes the replay file to `path`, for [`Explorer::replay`](crate::Explorer::replay).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), ReplayError> {
        let path = path.as_ref();
        std::fs::write(path, self.to_json() + "\n").map_err(|source| ReplayError::Io {
            path: path.display().to_string(),
            source,
        })
    }

    /// A self-contained HTML page with the run's timeline: one lane per client with its
    /// critical sections as bars and its commands as ticks, two clients' overlap in red,
    /// and a lane of faults and node events.
    pub fn timeline_html(&self) -> String {
        crate::timeline::html(self)
    }
}

impl fmt::Display for Counterexample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = &self.violation;
        if v.is_inherent() {
            writeln!(f, "INHERENT FINDING {v}")?;
        } else {
            writeln!(f, "VIOLATION {v}")?;
        }
        let by = match self.run {
            Some(run) => format!("run {run}"),
            None => "the fault-free run".to_owned(),
        };
        writeln!(
            f,
            "found by {by} of seed {}; shrunk in {} runs from {} steps, {} clients x {} cycles to {} steps, {} clients x {} cycles",
            self.seed,
            self.shrink_runs,
            self.original.steps.len(),
            self.original.clients,
            self.original.cycles,
            self.schedule.steps.len(),
            self.schedule.clients,
            self.schedule.cycles,
        )?;
        if let Some(workload) = &self.workload {
            write!(f, "workload {workload}; ")?;
        }
        if let Some(command) = &self.command {
            write!(f, "command {command:?}; ")?;
        }
        if !self.deterministic {
            writeln!(
                f,
                "topology {}; ttl {} ms; reproduced in {} of {} replays",
                self.options.topology, self.options.ttl_ms, self.reproduced, self.replays
            )?;
        } else if v.kind == ViolationKind::Nondeterminism {
            writeln!(
                f,
                "topology {}; ttl {} ms; two runs of the same schedule differ",
                self.options.topology, self.options.ttl_ms
            )?;
        } else {
            writeln!(
                f,
                "topology {}; ttl {} ms; replayed {} times, identical each time",
                self.options.topology, self.options.ttl_ms, self.identical_replays
            )?;
        }
        writeln!(f, "\nSteps:")?;
        if self.schedule.steps.is_empty() {
            writeln!(f, "  (none: the workload breaks without faults)")?;
        }
        for step in &self.schedule.steps {
            writeln!(f, "  {step}")?;
        }
        writeln!(f, "\nTrace:")?;
        for event in &self.trace {
            if matches!(event.what, What::CycleEnd | What::KeyHeld { .. }) {
                continue;
            }
            writeln!(f, "  {event}")?;
        }
        writeln!(f, "\nKeys when it happened:")?;
        f.write_str(&v.keys_text())
    }
}
