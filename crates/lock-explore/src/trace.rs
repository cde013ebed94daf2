//! What happened in a run, in order: every command with its reply, every critical-section
//! marker, every fault. Two runs of one schedule must give equal traces.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::step::Fault;

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
    /// A command and its reply, as the client saw it. The event's time is when the
    /// reply arrived (or the client gave up on it).
    Command {
        /// When it left the client, virtual µs since the start.
        sent_us: i64,
        /// The Redlock node it went to, if several.
        node: Option<usize>,
        /// The command, e.g. `SET lock 5f0c… NX PX 1000`.
        command: String,
        /// The reply, the error, or `(cancelled)` when the client's future was dropped
        /// while it waited.
        reply: String,
    },
    /// The client entered a critical section.
    Enter {
        /// The resource.
        resource: String,
        /// Its fence, for a fenced section.
        fence: Option<i64>,
        /// How long its lock promised it is alone, µs (a validity-aware section).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        valid_for_us: Option<i64>,
    },
    /// The client's lock was extended inside its section.
    Extended {
        /// The resource.
        resource: String,
        /// How long it is now alone, µs.
        valid_for_us: i64,
    },
    /// The client declared that it holds a lock key with its token.
    Holds {
        /// The key.
        key: String,
        /// Its token.
        token: String,
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
        /// Its fault.
        fault: Fault,
    },
    /// A timed node fault ended.
    Recovered {
        /// The node it ended on, if one.
        #[serde(default)]
        node: Option<usize>,
        /// What ended.
        what: String,
    },
    /// Faults stop: everything heals, and every client must get the lock again.
    Healed,
    /// What a lock key a client declared (`holds`) holds on one node, now that it
    /// changed: the timeline draws who held it, and until when.
    KeyHeld {
        /// The node, in the order of the violation's dumps.
        node: usize,
        /// The key.
        key: String,
        /// Its value (a holder's token), or `None` once it is gone.
        value: Option<String>,
        /// µs into the run at which its TTL ends it, if it has one.
        expires_us: Option<i64>,
    },
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
                sent_us,
                node,
                command,
                reply,
            } => {
                if let Some(node) = node {
                    write!(f, "node {node}: ")?;
                }
                write!(f, "{command} -> {reply}")?;
                write!(f, "  (sent {:.3} ms)", *sent_us as f64 / 1000.0)
            }
            What::Enter {
                resource,
                fence,
                valid_for_us,
            } => {
                write!(f, "ENTER {resource}")?;
                if let Some(fence) = fence {
                    write!(f, " with fence {fence}")?;
                }
                if let Some(valid) = valid_for_us {
                    write!(f, ", valid for {:.3} ms", *valid as f64 / 1000.0)?;
                }
                Ok(())
            }
            What::Extended {
                resource,
                valid_for_us,
            } => write!(
                f,
                "EXTENDED {resource}, valid for {:.3} ms",
                *valid_for_us as f64 / 1000.0
            ),
            What::Holds { key, token } => write!(f, "HOLDS {key} {token}"),
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
            What::Fault { fault } => write!(f, "FAULT {fault}"),
            What::Recovered { what, .. } => write!(f, "RECOVERED {what}"),
            What::Healed => f.write_str("faults stop; everything heals"),
            What::KeyHeld {
                node,
                key,
                value,
                expires_us,
            } => {
                match value {
                    Some(value) => write!(f, "node {node}: {key} = {value:?}")?,
                    None => write!(f, "node {node}: {key} is gone")?,
                }
                match expires_us {
                    Some(us) => write!(f, " (expires at {:.3} ms)", *us as f64 / 1000.0),
                    None => Ok(()),
                }
            }
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
