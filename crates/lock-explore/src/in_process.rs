//! [`InProcess`]: the runner of a Rust [`Workload`] on the double, under virtual time.
//! Its runs are deterministic: the same schedule gives the same trace, so a finding is
//! proved by one run and replays exactly.

use std::sync::Arc;

use lock_memory::ScriptRunner;

use crate::options::Options;
use crate::run::{Subject, run};
use crate::runner::{Outcome, Recording, Runner, RunnerError};
use crate::schedule::Schedule;
use crate::step::FaultKind;
use crate::workload::Workload;

/// Runs a workload's cycles on a fresh deployment of the double per run, on a
/// single-threaded runtime with paused time.
#[derive(Clone)]
pub struct InProcess {
    subject: Subject,
}

impl std::fmt::Debug for InProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcess").finish_non_exhaustive()
    }
}

impl InProcess {
    /// A runner of `workload`.
    pub fn new(workload: Arc<dyn Workload>) -> Self {
        InProcess {
            subject: Subject {
                workload,
                scripts: None,
            },
        }
    }

    /// Every node runs the scripts that have no native body with `runner` (see
    /// [`Explorer::script_runner`](crate::Explorer::script_runner)).
    pub fn script_runner(mut self, runner: Arc<dyn ScriptRunner>) -> Self {
        self.subject.scripts = Some(runner);
        self
    }
}

impl Runner for InProcess {
    fn describe(&self) -> String {
        "in process".to_owned()
    }

    fn deterministic(&self) -> bool {
        true
    }

    fn applies(&self, _kind: FaultKind) -> bool {
        true
    }

    fn place(&self) -> &'static str {
        "on the double"
    }

    fn run(
        &self,
        options: &Options,
        schedule: &Schedule,
        recording: Recording,
    ) -> Result<Outcome, RunnerError> {
        Ok(run(&self.subject, options, schedule, recording))
    }
}
