//! What happened in a run, in order: every command with its reply, every critical-section
//! marker, every fault. Two runs of one schedule must give equal traces.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::step::Step;

/// One thing that happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Virtual microseconds since the run started.
    pub at_us: i64,
    /// The client it happened to, if any.
    pub client: Option<usize>,
    /// What happened.
    pub what: What,
}

/// The kinds of [`Event`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum What {
    /// A client starts its cycle number `cycle` (the liveness probe's cycles too).
    CycleStart {
        /// Counted from 0.
        cycle: u32,
    },
    /// The cycle returned.
    CycleEnd,
    /// The cycle was cancelled: its future was dropped at an await point.
    Cancelled,
    /// A command and its reply, as the client saw it.
    Command {
        /// The Redlock node it went to, if several.
        node: Option<usize>,
        /// The command, e.g. `SET lock 5f0c… NX PX 1000`.
        command: String,
        /// The reply, or the error.
        reply: String,
    },
    /// The client entered a critical section.
    Enter {
        /// The resource.
        resource: String,
        /// Its fence, for a fenced section.
        fence: Option<i64>,
    },
    /// The client left it.
    Exit {
        /// The resource.
        resource: String,
    },
    /// A write to a fenced resource, accepted or refused as stale.
    Write {
        /// The resource.
        resource: String,
        /// The fence it carried.
        fence: i64,
        /// Whether the resource took it.
        accepted: bool,
    },
    /// The client read a counter.
    CounterRead {
        /// The counter.
        counter: String,
        /// The value read.
        value: i64,
    },
    /// The client wrote a counter.
    CounterWrite {
        /// The counter.
        counter: String,
        /// The value written.
        value: i64,
    },
    /// One increment of a counter ended.
    Counted {
        /// The counter.
        counter: String,
        /// Applied, not applied, or unknown (`None`).
        applied: Option<bool>,
    },
    /// A step of the schedule took effect.
    Fault {
        /// The step.
        step: Step,
    },
    /// A timed node fault ended.
    Recovered {
        /// What ended.
        what: String,
    },
    /// Faults stop: everything heals, and every client must get the lock again.
    Healed,
}

/// Every event of one run.
pub type Trace = Vec<Event>;

impl fmt::Display for What {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            What::CycleStart { cycle } => write!(f, "cycle {cycle} starts"),
            What::CycleEnd => f.write_str("cycle ends"),
            What::Cancelled => f.write_str("cycle cancelled"),
            What::Command {
                node,
                command,
                reply,
            } => match node {
                Some(node) => write!(f, "node {node}: {command} -> {reply}"),
                None => write!(f, "{command} -> {reply}"),
            },
            What::Enter {
                resource,
                fence: Some(fence),
            } => write!(f, "ENTER {resource} with fence {fence}"),
            What::Enter { resource, .. } => write!(f, "ENTER {resource}"),
            What::Exit { resource } => write!(f, "EXIT {resource}"),
            What::Write {
                resource,
                fence,
                accepted,
            } => write!(
                f,
                "write {resource} with fence {fence}: {}",
                if *accepted {
                    "accepted"
                } else {
                    "refused as stale"
                }
            ),
            What::CounterRead { counter, value } => write!(f, "read {counter} = {value}"),
            What::CounterWrite { counter, value } => write!(f, "write {counter} = {value}"),
            What::Counted { counter, applied } => write!(
                f,
                "{counter} +1 {}",
                match applied {
                    Some(true) => "done",
                    Some(false) => "failed",
                    None => "(outcome unknown)",
                }
            ),
            What::Fault { step } => write!(f, "FAULT {}", step.fault),
            What::Recovered { what } => write!(f, "RECOVERED {what}"),
            What::Healed => f.write_str("faults stop; everything heals"),
        }
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.at_us as f64 / 1000.0;
        match self.client {
            Some(client) => write!(f, "{ms:>10.3} ms  client {client}  {}", self.what),
            None => write!(f, "{ms:>10.3} ms  ---       {}", self.what),
        }
    }
}
