//! The faults a schedule is made of: typed, serializable steps placed at virtual times
//! or next to a client's operations, and the classes of fault: those a correct lock must
//! survive, and the *inherent* ones that break every TTL lease.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// When a step happens.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Right after client `client`'s operation named `kind` (`SET`, `DEL`,
    /// `compare-and-delete`, `ENTER`, ...), the `nth` of that name (from 0) to finish at or
    /// after `from_us` of virtual time. Saved counterexamples anchor their steps this
    /// way, so that a replay on a lock that now sends one command more or fewer still
    /// aims at the same moment.
    AfterNext {
        /// The client.
        client: usize,
        /// The operation's name: a command's first word (a script's name for a
        /// script), or a marker's (`ENTER`, `EXIT`, `WORK`, `WRITE`, ...).
        kind: String,
        /// Virtual microseconds since the start: operations finishing earlier are skipped.
        from_us: i64,
        /// How many operations of that name to let pass first.
        #[serde(default)]
        nth: u32,
    },
}

/// One fault. Client faults hit that client's next operation; node faults hit a node at
/// once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "fault")]
pub enum Fault {
    /// The client stalls for `ms` before its next command (markers pass): a GC pause
    /// between two of its commands, possibly longer than the TTL.
    Pause {
        /// The client.
        client: usize,
        /// How long it stalls.
        ms: u64,
    },
    /// The client stalls for `ms` at its next operation inside a critical section: a
    /// holder paused while it works. Inherent once it outlasts the holder's validity:
    /// nothing protects an unfenced resource from it.
    SectionPause {
        /// The client.
        client: usize,
        /// How long it stalls.
        ms: u64,
    },
    /// The client's clock jumps by `ms` (negative: back), and stays skewed.
    #[serde(alias = "skew")]
    ClientClock {
        /// The client.
        client: usize,
        /// The jump.
        ms: i64,
    },
    /// A node's clock jumps by `ms`: keys on it expire earlier (or later). Inherent: a
    /// forward jump shortens every lease on the node by its size.
    NodeClock {
        /// The node (0 on a single server).
        node: usize,
        /// The jump.
        ms: i64,
    },
    /// A node's clock runs `permille` per thousand fast (negative: slow) for `ms` of
    /// virtual time: its keys expire early (or late) by that share of the time. Inherent:
    /// a fast server clock shortens every lease.
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// When.
    pub when: When,
    /// What.
    #[serde(flatten)]
    pub fault: Fault,
}

impl Step {
    /// How much time this step may add to a run: when it falls, and how long its fault
    /// lasts.
    pub fn span_ms(&self) -> u64 {
        let at = match self.when {
            When::At { ms } => ms,
            When::After { .. } => 0,
            When::AfterNext { from_us, .. } => u64::try_from(from_us / 1000).unwrap_or(0),
        };
        let lasts = match self.fault {
            Fault::ClientClock { .. } | Fault::NodeClock { .. } => 0,
            fault => fault.length().unwrap_or(0),
        };
        at.saturating_add(lasts)
    }

    /// The inherent fault kinds among `steps`, each once, in order: what a violation
    /// needs when the same schedule without them breaks nothing.
    pub fn inherent_kinds(steps: &[Step]) -> Vec<FaultKind> {
        let mut kinds: Vec<FaultKind> = steps
            .iter()
            .map(|s| s.fault.kind())
            .filter(|k| k.is_inherent())
            .collect();
        kinds.sort();
        kinds.dedup();
        kinds
    }
}

impl Fault {
    /// The length a fault has (ms, or the size of a clock jump), if any.
    pub fn length(&self) -> Option<u64> {
        match *self {
            Fault::Pause { ms, .. }
            | Fault::SectionPause { ms, .. }
            | Fault::Latency { ms, .. }
            | Fault::LateReply { ms, .. }
            | Fault::StallReplication { ms }
            | Fault::Restart { ms, .. }
            | Fault::Blackhole { ms, .. }
            | Fault::NodeDrift { ms, .. } => Some(ms),
            Fault::ClientClock { ms, .. } | Fault::NodeClock { ms, .. } => Some(ms.unsigned_abs()),
            _ => None,
        }
    }

    /// This fault with its length set to `to` (a clock jump keeps its direction; a fault
    /// without a length is unchanged): how shrinking shortens one.
    pub fn with_length(self, to: u64) -> Fault {
        let signed = |ms: i64| ms.signum() * i64::try_from(to).unwrap_or(i64::MAX);
        match self {
            Fault::Pause { client, .. } => Fault::Pause { client, ms: to },
            Fault::SectionPause { client, .. } => Fault::SectionPause { client, ms: to },
            Fault::Latency { client, .. } => Fault::Latency { client, ms: to },
            Fault::LateReply { client, .. } => Fault::LateReply { client, ms: to },
            Fault::StallReplication { .. } => Fault::StallReplication { ms: to },
            Fault::Restart {
                node, persistent, ..
            } => Fault::Restart {
                node,
                ms: to,
                persistent,
            },
            Fault::Blackhole { node, .. } => Fault::Blackhole { node, ms: to },
            Fault::NodeDrift { node, permille, .. } => Fault::NodeDrift {
                node,
                permille,
                ms: to,
            },
            Fault::ClientClock { client, ms } => Fault::ClientClock {
                client,
                ms: signed(ms),
            },
            Fault::NodeClock { node, ms } => Fault::NodeClock {
                node,
                ms: signed(ms),
            },
            other => other,
        }
    }

    /// A few words for a chart: `pause 220 ms`, `lost reply`, `failover`.
    pub fn label(&self) -> String {
        match *self {
            Fault::Pause { ms, .. } => format!("pause {ms} ms"),
            Fault::SectionPause { ms, .. } => format!("section pause {ms} ms"),
            Fault::ClientClock { ms, .. } => format!("clock {ms:+} ms"),
            Fault::NodeClock { node, ms } => format!("node {node} clock {ms:+} ms"),
            Fault::NodeDrift { node, permille, ms } => {
                format!("node {node} drifts {permille:+}‰ {ms} ms")
            }
            Fault::LostReply { .. } => "lost reply".to_owned(),
            Fault::Refuse { .. } => "refused".to_owned(),
            Fault::Latency { ms, .. } => format!("latency {ms} ms"),
            Fault::LateReply { ms, .. } => format!("reply {ms} ms late"),
            Fault::KillConnection { .. } => "connection killed".to_owned(),
            Fault::Interrupt { node, after } => format!("node {node} script cut after {after}"),
            Fault::StallReplication { ms } => format!("replication stalls {ms} ms"),
            Fault::Failover => "failover".to_owned(),
            Fault::SwitchOver => "switch-over".to_owned(),
            Fault::Restart {
                node,
                ms,
                persistent,
            } => format!(
                "node {node} down {ms} ms{}",
                if persistent { "" } else { ", back empty" }
            ),
            Fault::Blackhole { node, ms } => format!("node {node} black hole {ms} ms"),
            Fault::Migrate { to } => format!("slot to shard {to}"),
            Fault::Cancel { .. } => "cycle cancelled".to_owned(),
        }
    }

    /// The client this fault aims at, if it aims at one.
    pub fn client(&self) -> Option<usize> {
        match *self {
            Fault::Pause { client, .. }
            | Fault::SectionPause { client, .. }
            | Fault::ClientClock { client, .. }
            | Fault::LostReply { client }
            | Fault::Refuse { client }
            | Fault::Latency { client, .. }
            | Fault::LateReply { client, .. }
            | Fault::KillConnection { client }
            | Fault::Cancel { client } => Some(client),
            _ => None,
        }
    }

    /// The node (or shard) this fault hits, if it names one.
    pub fn node(&self) -> Option<usize> {
        match *self {
            Fault::NodeClock { node, .. }
            | Fault::NodeDrift { node, .. }
            | Fault::Interrupt { node, .. }
            | Fault::Restart { node, .. }
            | Fault::Blackhole { node, .. } => Some(node),
            Fault::Migrate { to } => Some(to),
            _ => None,
        }
    }

    /// The kind of fault, as `--faults` names it.
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::Pause { .. } => FaultKind::Pause,
            Fault::SectionPause { .. } => FaultKind::SectionPause,
            Fault::ClientClock { .. } => FaultKind::ClientClock,
            Fault::NodeClock { .. } => FaultKind::NodeClock,
            Fault::NodeDrift { .. } => FaultKind::Drift,
            Fault::LostReply { .. } => FaultKind::LostReply,
            Fault::Refuse { .. } => FaultKind::Refuse,
            Fault::Latency { .. } | Fault::LateReply { .. } => FaultKind::Latency,
            Fault::KillConnection { .. } => FaultKind::KillConnection,
            Fault::Interrupt { .. } => FaultKind::Interrupt,
            Fault::StallReplication { .. } | Fault::Failover | Fault::SwitchOver => {
                FaultKind::Failover
            }
            Fault::Restart {
                persistent: true, ..
            } => FaultKind::Restart,
            Fault::Restart { .. } => FaultKind::RestartEmpty,
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
            When::AfterNext {
                client,
                kind,
                from_us,
                nth,
            } => {
                let ms = *from_us as f64 / 1000.0;
                match nth {
                    0 => write!(f, "after client {client}'s next {kind} from {ms:.3} ms"),
                    n => write!(
                        f,
                        "after client {client}'s {} {kind} from {ms:.3} ms",
                        ordinal(n + 1)
                    ),
                }
            }
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Fault::Pause { client, ms } => {
                write!(f, "client {client} pauses {ms} ms before its next command")
            }
            Fault::SectionPause { client, ms } => {
                write!(f, "client {client} pauses {ms} ms inside its section")
            }
            Fault::ClientClock { client, ms } => {
                write!(f, "client {client}'s clock jumps {ms:+} ms")
            }
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
    /// [`Fault::SectionPause`] (inherent).
    SectionPause,
    /// [`Fault::ClientClock`].
    ClientClock,
    /// [`Fault::NodeClock`] (inherent).
    NodeClock,
    /// [`Fault::NodeDrift`] (inherent).
    Drift,
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
    /// [`Fault::Restart`] with its data.
    Restart,
    /// [`Fault::Restart`] without its data (inherent).
    RestartEmpty,
    /// [`Fault::Blackhole`].
    Blackhole,
    /// [`Fault::Migrate`].
    Migrate,
    /// [`Fault::Cancel`].
    Cancel,
}

impl FaultKind {
    /// Every kind, in `--faults` order.
    pub const ALL: [FaultKind; 16] = [
        FaultKind::Pause,
        FaultKind::SectionPause,
        FaultKind::ClientClock,
        FaultKind::NodeClock,
        FaultKind::Drift,
        FaultKind::LostReply,
        FaultKind::Refuse,
        FaultKind::Latency,
        FaultKind::Interrupt,
        FaultKind::KillConnection,
        FaultKind::Failover,
        FaultKind::Restart,
        FaultKind::RestartEmpty,
        FaultKind::Blackhole,
        FaultKind::Migrate,
        FaultKind::Cancel,
    ];

    /// The name `--faults` uses.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Pause => "pause",
            FaultKind::SectionPause => "section-pause",
            FaultKind::ClientClock => "client-clock",
            FaultKind::NodeClock => "node-clock",
            FaultKind::Drift => "drift",
            FaultKind::LostReply => "lost-reply",
            FaultKind::Refuse => "refuse",
            FaultKind::Latency => "latency",
            FaultKind::Interrupt => "interrupt",
            FaultKind::KillConnection => "kill-connection",
            FaultKind::Failover => "failover",
            FaultKind::Restart => "restart",
            FaultKind::RestartEmpty => "restart-empty",
            FaultKind::Blackhole => "blackhole",
            FaultKind::Migrate => "migrate",
            FaultKind::Cancel => "cancel",
        }
    }

    /// Whether this kind breaks every TTL lease, correct or not: a holder paused inside
    /// its section (past its validity, nothing protects an unfenced resource), and a
    /// server clock that jumps or runs fast (the key dies before the validity its lock
    /// promised). Inherent kinds are opt-in, and a finding that needs one is labelled
    /// inherent rather than blamed on the lock.
    pub fn is_inherent(self) -> bool {
        matches!(
            self,
            FaultKind::SectionPause
                | FaultKind::NodeClock
                | FaultKind::Drift
                | FaultKind::RestartEmpty
        )
    }

    /// Why an inherent kind breaks every TTL lease, and what protects against it.
    pub fn inherent_reason(self) -> Option<&'static str> {
        Some(match self {
            FaultKind::SectionPause => {
                "a holder paused past its validity keeps working while another client holds the lock; every TTL lock does this. Remedy: fence the resource (FencedLock and a resource that refuses stale fences)"
            }
            FaultKind::NodeClock => {
                "a server clock that jumps forward expires every key early, so every TTL lease ends before the validity its lock promised. Remedy: keep server clocks monotonic (no step adjustments) and fence the resource"
            }
            FaultKind::Drift => {
                "a server clock that runs fast expires every key early, so every TTL lease ends before the validity its lock promised. Remedy: allow for drift in the validity (Redlock's drift factor) and fence the resource"
            }
            FaultKind::RestartEmpty => {
                "a Redlock node that comes back empty before the TTL has passed lets a second client win a majority while the first still holds its lease; no Redlock client can prevent it. Remedy: persist every write (appendfsync always) or keep a crashed node down for a TTL before it rejoins"
            }
            _ => return None,
        })
    }

    /// The default fault set on `topology`: every kind it supports that is not
    /// inherent. [`Explorer::new`](crate::Explorer::new) and `nxlock explore` share it.
    pub fn defaults(topology: &crate::Topology) -> Vec<FaultKind> {
        FaultKind::ALL
            .into_iter()
            .filter(|k| !k.is_inherent() && topology.supports(*k))
            .collect()
    }
}

fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not one of [`FaultKind::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown fault {0:?}; the faults are pause, client-clock, lost-reply, refuse, latency, interrupt, kill-connection, failover, restart, blackhole, migrate and cancel, and the inherent section-pause, node-clock, drift and restart-empty"
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
