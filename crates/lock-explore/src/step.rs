//! The faults a schedule is made of: typed, serializable steps placed at virtual times.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// When a step happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum When {
    /// At this many milliseconds of virtual time after the run started.
    At {
        /// Milliseconds since the start.
        ms: u64,
    },
    /// Right after client `client` finished its operation number `op` (counting from 0:
    /// commands and critical-section markers alike). Steps next to lock events are where
    /// lock bugs hide: a pause right after an acquire, a failover right after a write.
    After {
        /// The client.
        client: usize,
        /// Its operation, counted from 0.
        op: u32,
    },
}

/// One fault. Client faults hit that client's next operation; node faults hit a node at
/// once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "fault")]
pub enum Fault {
    /// The client stalls for `ms` before its next operation: a GC pause, possibly longer
    /// than the TTL.
    Pause {
        /// The client.
        client: usize,
        /// How long it stalls.
        ms: u64,
    },
    /// The client's clock jumps by `ms` (negative: back), and stays skewed.
    Skew {
        /// The client.
        client: usize,
        /// The jump.
        ms: i64,
    },
    /// A node's clock jumps by `ms`: keys on it expire earlier (or later).
    NodeClock {
        /// The node (0 on a single server).
        node: usize,
        /// The jump.
        ms: i64,
    },
    /// A node's clock runs `permille` per thousand fast (negative: slow) for `ms` of
    /// virtual time: its keys expire early (or late) by that share of the time.
    NodeDrift {
        /// The node (0 on a single server).
        node: usize,
        /// How much faster, per thousand.
        permille: i32,
        /// For how long.
        ms: u64,
    },
    /// The client's next command runs, and its reply is lost (a timeout).
    LostReply {
        /// The client.
        client: usize,
    },
    /// The client's next command is refused before it runs (a connection error).
    Refuse {
        /// The client.
        client: usize,
    },
    /// The client's next command reaches the server `ms` late.
    Latency {
        /// The client.
        client: usize,
        /// The delay.
        ms: u64,
    },
    /// The client's next command runs on time, and its reply arrives `ms` late.
    LateReply {
        /// The client.
        client: usize,
        /// The delay.
        ms: u64,
    },
    /// The client's connection dies with its next command in flight: the command runs,
    /// and the client gets a connection error.
    KillConnection {
        /// The client.
        client: usize,
    },
    /// The next script on `node` stops after `after` of its commands; what it wrote stays.
    Interrupt {
        /// The node (the primary on a replicated set).
        node: usize,
        /// Commands that run before the failing one.
        after: u32,
    },
    /// Replication stops for `ms`: writes stay on the primary.
    StallReplication {
        /// How long.
        ms: u64,
    },
    /// The primary dies and the most up-to-date replica is promoted: what it had not
    /// received is lost. The old primary rejoins as a replica of the new one. On a
    /// cluster, the shard serving the last key a client used.
    Failover,
    /// A failover that loses nothing (`FAILOVER`).
    SwitchOver,
    /// A Redlock node dies, and comes back `ms` later, with its data or without.
    Restart {
        /// The node.
        node: usize,
        /// How long it stays down.
        ms: u64,
        /// Whether it keeps its data (`appendfsync always`).
        persistent: bool,
    },
    /// A Redlock node stops answering for `ms`.
    Blackhole {
        /// The node.
        node: usize,
        /// How long.
        ms: u64,
    },
    /// On a cluster: the slot of the last key a client used moves to shard `to`, its
    /// keys with it (`MIGRATE`, in one step).
    Migrate {
        /// The shard the slot moves to.
        to: usize,
    },
    /// The client's current cycle is cancelled (its future dropped) at its next
    /// operation, which never completes.
    Cancel {
        /// The client.
        client: usize,
    },
}

/// One step of a schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// When.
    pub when: When,
    /// What.
    #[serde(flatten)]
    pub fault: Fault,
}

impl Fault {
    /// The client this fault aims at, if it aims at one.
    pub fn client(&self) -> Option<usize> {
        match *self {
            Fault::Pause { client, .. }
            | Fault::Skew { client, .. }
            | Fault::LostReply { client }
            | Fault::Refuse { client }
            | Fault::Latency { client, .. }
            | Fault::LateReply { client, .. }
            | Fault::KillConnection { client }
            | Fault::Cancel { client } => Some(client),
            _ => None,
        }
    }

    /// The kind of fault, as `--faults` names it.
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::Pause { .. } => FaultKind::Pause,
            Fault::Skew { .. } | Fault::NodeClock { .. } | Fault::NodeDrift { .. } => {
                FaultKind::Skew
            }
            Fault::LostReply { .. } => FaultKind::LostReply,
            Fault::Refuse { .. } => FaultKind::Refuse,
            Fault::Latency { .. } | Fault::LateReply { .. } => FaultKind::Latency,
            Fault::KillConnection { .. } => FaultKind::KillConnection,
            Fault::Interrupt { .. } => FaultKind::Interrupt,
            Fault::StallReplication { .. } | Fault::Failover | Fault::SwitchOver => {
                FaultKind::Failover
            }
            Fault::Restart { .. } => FaultKind::Restart,
            Fault::Blackhole { .. } => FaultKind::Blackhole,
            Fault::Migrate { .. } => FaultKind::Migrate,
            Fault::Cancel { .. } => FaultKind::Cancel,
        }
    }
}

impl fmt::Display for When {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            When::At { ms } => write!(f, "at {ms} ms"),
            When::After { client, op } => write!(f, "after client {client}'s op {op}"),
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Fault::Pause { client, ms } => write!(f, "client {client} pauses {ms} ms"),
            Fault::Skew { client, ms } => write!(f, "client {client}'s clock jumps {ms:+} ms"),
            Fault::NodeClock { node, ms } => write!(f, "node {node}'s clock jumps {ms:+} ms"),
            Fault::NodeDrift { node, permille, ms } => {
                write!(f, "node {node}'s clock drifts {permille:+}‰ for {ms} ms")
            }
            Fault::LostReply { client } => write!(f, "client {client}'s next reply is lost"),
            Fault::Refuse { client } => write!(f, "client {client}'s next command is refused"),
            Fault::Latency { client, ms } => {
                write!(f, "client {client}'s next command arrives {ms} ms late")
            }
            Fault::LateReply { client, ms } => {
                write!(f, "client {client}'s next reply arrives {ms} ms late")
            }
            Fault::KillConnection { client } => {
                write!(f, "client {client}'s connection dies mid-command")
            }
            Fault::Interrupt { node, after } => {
                write!(f, "node {node}'s next script stops after {after} commands")
            }
            Fault::StallReplication { ms } => write!(f, "replication stalls {ms} ms"),
            Fault::Failover => write!(f, "the primary dies; a replica is promoted"),
            Fault::SwitchOver => write!(f, "switch-over to a replica (nothing lost)"),
            Fault::Restart {
                node,
                ms,
                persistent,
            } => write!(
                f,
                "node {node} dies for {ms} ms, restarts {}",
                if persistent { "with its data" } else { "empty" }
            ),
            Fault::Blackhole { node, ms } => write!(f, "node {node} stops answering for {ms} ms"),
            Fault::Migrate { to } => write!(f, "the last key's slot migrates to shard {to}"),
            Fault::Cancel { client } => write!(f, "client {client}'s cycle is cancelled"),
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.when, self.fault)
    }
}

/// The families of faults that `--faults` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// [`Fault::Pause`].
    Pause,
    /// [`Fault::Skew`], [`Fault::NodeClock`] and [`Fault::NodeDrift`].
    Skew,
    /// [`Fault::LostReply`].
    LostReply,
    /// [`Fault::Refuse`].
    Refuse,
    /// [`Fault::Latency`] and [`Fault::LateReply`].
    Latency,
    /// [`Fault::Interrupt`].
    Interrupt,
    /// [`Fault::KillConnection`].
    KillConnection,
    /// [`Fault::Failover`], [`Fault::SwitchOver`] and [`Fault::StallReplication`].
    Failover,
    /// [`Fault::Restart`].
    Restart,
    /// [`Fault::Blackhole`].
    Blackhole,
    /// [`Fault::Migrate`].
    Migrate,
    /// [`Fault::Cancel`].
    Cancel,
}

impl FaultKind {
    /// Every kind, in `--faults` order.
    pub const ALL: [FaultKind; 12] = [
        FaultKind::Pause,
        FaultKind::Skew,
        FaultKind::LostReply,
        FaultKind::Refuse,
        FaultKind::Latency,
        FaultKind::Interrupt,
        FaultKind::KillConnection,
        FaultKind::Failover,
        FaultKind::Restart,
        FaultKind::Blackhole,
        FaultKind::Migrate,
        FaultKind::Cancel,
    ];

    /// The name `--faults` uses.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Pause => "pause",
            FaultKind::Skew => "skew",
            FaultKind::LostReply => "lost-reply",
            FaultKind::Refuse => "refuse",
            FaultKind::Latency => "latency",
            FaultKind::Interrupt => "interrupt",
            FaultKind::KillConnection => "kill-connection",
            FaultKind::Failover => "failover",
            FaultKind::Restart => "restart",
            FaultKind::Blackhole => "blackhole",
            FaultKind::Migrate => "migrate",
            FaultKind::Cancel => "cancel",
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not one of [`FaultKind::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown fault {0:?}; the faults are pause, skew, lost-reply, refuse, latency, interrupt, kill-connection, failover, restart, blackhole, migrate and cancel"
)]
pub struct UnknownFault(pub String);

impl FromStr for FaultKind {
    type Err = UnknownFault;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FaultKind::ALL
            .into_iter()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| UnknownFault(s.to_owned()))
    }
}
