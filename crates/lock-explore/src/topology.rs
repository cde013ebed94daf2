//! What the clients talk to: one server, a replicated set, Redlock's independent nodes,
//! or a sharded Redis Cluster; built fresh for every run.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use lock_core::{Clock, DynBackend, TopologyKind, UnknownTopology};
use lock_memory::{
    Dump, MemoryBackend, MemoryCluster, MemoryInstances, MemoryReplicaSet, Persistence,
    ScriptRunner,
};
use serde::{Deserialize, Serialize};

use crate::step::{Fault, FaultKind};

/// The deployment a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "topology")]
pub enum Topology {
    /// One server.
    Single,
    /// A primary and `replicas` replicas, with failover (Sentinel's, on the double). A
    /// failed primary rejoins as a replica of the new one.
    Replicated {
        /// Replicas beside the primary.
        replicas: usize,
    },
    /// `nodes` independent servers, for Redlock.
    Redlock {
        /// How many.
        nodes: usize,
    },
    /// A Redis Cluster of `shards` shards, each a primary with one replica, under the
    /// cluster's key rules (`CROSSSLOT`, scripts reaching into another shard's slots);
    /// each client routes commands by slot. Shards fail over on their own, and slots
    /// migrate between them.
    Cluster {
        /// How many shards.
        shards: usize,
    },
}

impl Topology {
    /// The faults that make sense on this topology: client faults everywhere, node
    /// faults where the nodes exist.
    pub fn supports(&self, kind: FaultKind) -> bool {
        match kind {
            FaultKind::Failover => {
                matches!(self, Topology::Replicated { .. } | Topology::Cluster { .. })
            }
            FaultKind::Restart | FaultKind::RestartEmpty | FaultKind::Blackhole => {
                matches!(self, Topology::Redlock { .. })
            }
            FaultKind::Migrate => matches!(self, Topology::Cluster { .. }),
            // Nodes have clocks of their own on one server and on Redlock's nodes.
            FaultKind::NodeClock | FaultKind::Drift => {
                matches!(self, Topology::Single | Topology::Redlock { .. })
            }
            _ => true,
        }
    }

    /// How many nodes (Redlock) or shards (cluster) a fault may name.
    pub fn nodes(&self) -> usize {
        match *self {
            Topology::Redlock { nodes } => nodes,
            Topology::Cluster { shards } => shards,
            _ => 1,
        }
    }

    /// How many servers the deployment has: one, a replicated set's nodes, Redlock's
    /// nodes, or every cluster shard's primary and replica (the timeline's node lanes,
    /// in the order of the violation's dumps).
    pub fn servers(&self) -> usize {
        match *self {
            Topology::Single => 1,
            Topology::Replicated { replicas } => 1 + replicas,
            Topology::Redlock { nodes } => nodes,
            Topology::Cluster { shards } => shards * (1 + self.replicas()),
        }
    }

    /// How many replicas each primary has: a replicated set's, one on each cluster
    /// shard, none elsewhere.
    pub fn replicas(&self) -> usize {
        match *self {
            Topology::Replicated { replicas } => replicas,
            Topology::Cluster { .. } => 1,
            _ => 0,
        }
    }

    /// Which of the one list of topologies this is.
    pub fn kind(&self) -> TopologyKind {
        match self {
            Topology::Single => TopologyKind::Single,
            Topology::Replicated { .. } => TopologyKind::Replicated,
            Topology::Redlock { .. } => TopologyKind::Redlock,
            Topology::Cluster { .. } => TopologyKind::Cluster,
        }
    }

    /// `kind` at its default size: 1 + 2 replicated, 3 Redlock nodes, 3 cluster shards.
    pub fn of(kind: TopologyKind) -> Self {
        match kind {
            TopologyKind::Single => Topology::Single,
            TopologyKind::Replicated => Topology::Replicated { replicas: 2 },
            TopologyKind::Redlock => Topology::Redlock { nodes: 3 },
            TopologyKind::Cluster => Topology::Cluster { shards: 3 },
        }
    }

    /// The name `--topology` uses.
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Topology::Replicated { replicas } => write!(f, "replicated (1 + {replicas})"),
            Topology::Redlock { nodes } => write!(f, "redlock ({nodes} nodes)"),
            Topology::Cluster { shards } => write!(f, "cluster ({shards} shards of 1 + 1)"),
            other => f.write_str(other.name()),
        }
    }
}

impl FromStr for Topology {
    type Err = UnknownTopology;
    /// `single`, `replicated` (1 + 2), `redlock` (3 nodes) or `cluster` (3 shards).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse().map(Topology::of)
    }
}

/// One run's servers.
#[derive(Debug)]
pub(crate) enum Deployment {
    Single {
        backend: MemoryBackend,
        /// The server's own clock view, which [`Fault::NodeClock`] jumps.
        clock: Clock,
    },
    Replicated(MemoryReplicaSet),
    Redlock(MemoryInstances),
    Cluster(MemoryCluster),
}

impl Deployment {
    /// The one server of a single-server deployment.
    pub(crate) fn single(&self) -> Option<MemoryBackend> {
        match self {
            Deployment::Single { backend, .. } => Some(backend.clone()),
            _ => None,
        }
    }

    pub(crate) fn new(topology: Topology, clock: &Clock) -> Self {
        match topology {
            Topology::Single => {
                let node_clock = clock.detached();
                Deployment::Single {
                    backend: MemoryBackend::with_clock(node_clock.clone()),
                    clock: node_clock,
                }
            }
            Topology::Cluster { shards } => Deployment::Cluster(MemoryCluster::with_clock(
                shards,
                topology.replicas(),
                clock.clone(),
            )),
            Topology::Replicated { replicas } => {
                Deployment::Replicated(MemoryReplicaSet::with_clock(replicas, clock.clone()))
            }
            Topology::Redlock { nodes } => {
                Deployment::Redlock(MemoryInstances::with_clock(nodes, clock.clone()))
            }
        }
    }

    /// Whether this is a cluster (whose faults aim at a slot).
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self, Deployment::Cluster(_))
    }

    /// Every node runs scripts without a native body with `runner`.
    pub(crate) fn install(&self, runner: &Arc<dyn ScriptRunner>) {
        match self {
            Deployment::Single { backend, .. } => backend.set_script_runner(runner.clone()),
            Deployment::Replicated(set) => {
                for node in 0..set.len() {
                    set.node(node).set_script_runner(runner.clone());
                }
            }
            Deployment::Redlock(nodes) => {
                for node in nodes.nodes() {
                    node.set_script_runner(runner.clone());
                }
            }
            Deployment::Cluster(cluster) => {
                for set in cluster_sets(cluster) {
                    for node in 0..set.len() {
                        set.node(node).set_script_runner(runner.clone());
                    }
                }
            }
        }
    }

    /// What one client's commands go to: one backend, or one per Redlock node.
    pub(crate) fn client_backends(&self) -> Vec<DynBackend> {
        match self {
            Deployment::Single { backend, .. } => vec![DynBackend::new(backend.clone())],
            Deployment::Replicated(set) => vec![DynBackend::new(set.client())],
            Deployment::Redlock(nodes) => nodes.nodes().into_iter().map(DynBackend::new).collect(),
            Deployment::Cluster(cluster) => vec![DynBackend::new(cluster.client())],
        }
    }

    /// Every node's live keys, for a counterexample.
    pub(crate) fn dumps(&self) -> Vec<Dump> {
        match self {
            Deployment::Single { backend, .. } => vec![backend.dump()],
            Deployment::Replicated(set) => (0..set.len()).map(|i| set.node(i).dump()).collect(),
            Deployment::Redlock(nodes) => nodes.nodes().iter().map(MemoryBackend::dump).collect(),
            Deployment::Cluster(cluster) => cluster_sets(cluster)
                .flat_map(|set| (0..set.len()).map(|i| set.node(i).dump()))
                .collect(),
        }
    }

    /// The keys of the nodes clients use: the primary alone on a replicated set (its
    /// replicas copy it, and a crashed node's leftovers are nobody's), every Redlock node.
    /// A primary's keys do not wait for replication, so none is delivered to look.
    pub(crate) fn serving_dumps(&self) -> Vec<Dump> {
        match self {
            Deployment::Replicated(set) => {
                set.primary_as_is().map(|n| n.dump()).into_iter().collect()
            }
            Deployment::Cluster(cluster) => cluster_sets(cluster)
                .filter_map(|set| set.primary_as_is().map(|n| n.dump()))
                .collect(),
            _ => self.dumps(),
        }
    }

    /// The value of `key` where clients read it (the primary, or node 0), if live.
    pub(crate) fn read(&self, key: &[u8]) -> Option<Vec<u8>> {
        let node = match self {
            Deployment::Single { backend, .. } => backend.clone(),
            Deployment::Replicated(set) => set.primary_as_is()?,
            Deployment::Redlock(nodes) => nodes.node(0).ok()?,
            Deployment::Cluster(cluster) => cluster.primary_for(key)?,
        };
        node.peek(key).map(|k| k.value)
    }

    /// Whether `key` holds `token` where clients read it (on Redlock's nodes: on a
    /// majority of them), with how many µs it stays so on one node (`i64::MAX`: no TTL;
    /// `None` on Redlock's nodes, where no one node tells); if not, what it holds
    /// instead, in words.
    pub(crate) fn ownership(&self, key: &[u8], token: &[u8]) -> Result<Option<i64>, String> {
        if let Deployment::Redlock(nodes) = self {
            let all = nodes.nodes();
            let holding = all
                .iter()
                .filter(|n| n.string_live_us(key, token).is_some())
                .count();
            if holding > all.len() / 2 {
                return Ok(None);
            }
            return Err(format!(
                "holds the token on {holding} of {} nodes",
                all.len()
            ));
        }
        let node = match self {
            Deployment::Single { backend, .. } => Some(backend.clone()),
            Deployment::Replicated(set) => set.primary_as_is(),
            Deployment::Redlock(_) => None,
            Deployment::Cluster(cluster) => cluster.primary_for(key),
        };
        if let Some(live_us) = node.and_then(|n| n.string_live_us(key, token)) {
            return Ok(Some(live_us));
        }
        match self.read(key) {
            Some(value) => Err(format!(
                "holds {:?}",
                String::from_utf8_lossy(&value[..value.len().min(40)])
            )),
            None => Err("is gone".to_owned()),
        }
    }

    /// Every node's database as it is (nothing delivered to look), in the order of
    /// [`Deployment::dumps`].
    pub(crate) fn node_backends(&self) -> Vec<MemoryBackend> {
        match self {
            Deployment::Single { backend, .. } => vec![backend.clone()],
            Deployment::Replicated(set) => (0..set.len()).map(|i| set.node_as_is(i)).collect(),
            Deployment::Redlock(nodes) => nodes.nodes(),
            Deployment::Cluster(cluster) => cluster_sets(cluster)
                .flat_map(|set| (0..set.len()).map(|i| set.node_as_is(i)))
                .collect(),
        }
    }

    /// How many µs `key` keeps holding `token` where clients read it (`i64::MAX`: no
    /// TTL); on Redlock's nodes, until fewer than a majority hold it. `None` when it
    /// does not hold it now.
    pub(crate) fn holding_us(&self, key: &[u8], token: &[u8]) -> Option<i64> {
        let node = match self {
            Deployment::Redlock(nodes) => {
                let all = nodes.nodes();
                let mut live: Vec<i64> = all
                    .iter()
                    .filter_map(|n| n.string_live_us(key, token))
                    .collect();
                let majority = all.len() / 2 + 1;
                if live.len() < majority {
                    return None;
                }
                // The majority lasts as long as its shortest-lived member.
                live.sort_unstable_by(|a, b| b.cmp(a));
                return Some(live[majority - 1]);
            }
            Deployment::Single { backend, .. } => Some(backend.clone()),
            Deployment::Replicated(set) => set.primary_as_is(),
            Deployment::Cluster(cluster) => cluster.primary_for(key),
        };
        node?.string_live_us(key, token)
    }

    /// The node a script fault aims at.
    fn script_node(&self, node: usize) -> Option<MemoryBackend> {
        match self {
            Deployment::Single { backend, .. } => Some(backend.clone()),
            Deployment::Replicated(set) => set.primary_node(),
            Deployment::Redlock(nodes) => nodes.node(node).ok(),
            Deployment::Cluster(cluster) => cluster.shard(node)?.primary_node(),
        }
    }

    /// Applies a node fault now; on a cluster, failovers and migrations hit the shard and
    /// slot of `last_slot`, the last key a client used. What ends a timed fault (a
    /// restart, a heal, replication flowing again) is returned, to be applied `ms` later.
    pub(crate) fn apply(&self, fault: &Fault, last_slot: Option<u16>) -> Option<(u64, Recovery)> {
        if let Deployment::Cluster(cluster) = self {
            let slot = last_slot.unwrap_or(0);
            let shard = cluster.shard(cluster.shard_of(slot))?;
            match *fault {
                Fault::Migrate { to } => {
                    cluster.migrate(slot, to);
                }
                Fault::StallReplication { ms } => {
                    cluster_sets(cluster).for_each(MemoryReplicaSet::pause_all);
                    return Some((ms, Recovery::ResumeReplication));
                }
                Fault::Failover | Fault::SwitchOver => fail_over(shard, *fault),
                _ => return self.apply_common(fault),
            }
            return None;
        }
        self.apply_common(fault)
    }

    fn apply_common(&self, fault: &Fault) -> Option<(u64, Recovery)> {
        match (*fault, self) {
            (Fault::NodeClock { ms, .. }, Deployment::Single { clock, .. }) => clock.jump(ms),
            (Fault::NodeClock { node, ms }, Deployment::Redlock(nodes)) => {
                let _ = nodes.jump_clock(node, ms);
            }
            (Fault::NodeDrift { node, permille, ms }, _) => {
                let drift = Recovery::Drift {
                    node,
                    permille,
                    left_ms: ms,
                };
                return self.node_clock(node).map(|_| (0, drift));
            }
            (Fault::Interrupt { node, after }, _) => {
                if let Some(backend) = self.script_node(node) {
                    backend
                        .faults()
                        .interrupt_next_script(after, lock_core::ErrorKind::Connection);
                }
            }
            (Fault::StallReplication { ms }, Deployment::Replicated(set)) => {
                set.pause_all();
                return Some((ms, Recovery::ResumeReplication));
            }
            (Fault::Failover | Fault::SwitchOver, Deployment::Replicated(set)) => {
                fail_over(set, *fault);
            }
            (
                Fault::Restart {
                    node,
                    ms,
                    persistent,
                },
                Deployment::Redlock(nodes),
            ) => {
                let killed = nodes.kill(node).is_ok();
                return killed.then_some((ms, Recovery::Restart { node, persistent }));
            }
            (Fault::Blackhole { node, ms }, Deployment::Redlock(nodes)) => {
                let black_holed = nodes.blackhole(node).is_ok();
                return black_holed.then_some((ms, Recovery::Heal { node }));
            }
            _ => {}
        }
        None
    }

    /// A node's own clock, where nodes have one: the single server's, a Redlock node's.
    fn node_clock(&self, node: usize) -> Option<Clock> {
        match self {
            Deployment::Single { clock, .. } => Some(clock.clone()),
            Deployment::Redlock(nodes) => nodes.node_clock(node).ok(),
            _ => None,
        }
    }

    /// Ends (or, for a drift, continues) a timed node fault; what must follow, and when.
    pub(crate) fn recover(&self, recovery: Recovery) -> Option<(u64, Recovery)> {
        if let Recovery::Drift {
            node,
            permille,
            left_ms,
        } = recovery
        {
            // A drift is steps of DRIFT_TICK_MS, each moving the node's clock by its share.
            let clock = self.node_clock(node)?;
            let step = left_ms.min(DRIFT_TICK_MS);
            clock.jump_us(i64::from(permille) * i64::try_from(step).unwrap_or(0));
            let left_ms = left_ms - step;
            return (left_ms > 0).then_some((
                step,
                Recovery::Drift {
                    node,
                    permille,
                    left_ms,
                },
            ));
        }
        match (recovery, self) {
            (Recovery::ResumeReplication, Deployment::Replicated(set)) => set.resume_all(),
            (Recovery::ResumeReplication, Deployment::Cluster(cluster)) => {
                cluster_sets(cluster).for_each(MemoryReplicaSet::resume_all);
            }
            (Recovery::Restart { node, persistent }, Deployment::Redlock(nodes)) => {
                let persistence = if persistent {
                    Persistence::AppendFsyncAlways
                } else {
                    Persistence::None
                };
                let _ = nodes.restart(node, persistence);
            }
            (Recovery::Heal { node }, Deployment::Redlock(nodes)) => {
                let _ = nodes.heal(node);
            }
            _ => {}
        }
        None
    }

    /// Ends every fault still in force, for the liveness phase: replication flows,
    /// crashed replicas rejoin, dead nodes restart with their data, black holes heal.
    /// Clock jumps stay: they are not faults that end.
    pub(crate) fn heal_all(&self) {
        match self {
            Deployment::Single { backend, .. } => backend.faults().clear(),
            Deployment::Replicated(set) => heal_set(set),
            Deployment::Cluster(cluster) => cluster_sets(cluster).for_each(heal_set),
            Deployment::Redlock(nodes) => {
                for node in 0..nodes.len() {
                    let _ = nodes.restart(node, Persistence::AppendFsyncAlways);
                    let _ = nodes.heal(node);
                    if let Ok(faults) = nodes.faults(node) {
                        faults.clear();
                    }
                }
            }
        }
    }
}

/// What ends a timed node fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recovery {
    ResumeReplication,
    Restart {
        node: usize,
        persistent: bool,
    },
    Heal {
        node: usize,
    },
    /// A drifting node clock: `left_ms` more of drift to apply.
    Drift {
        node: usize,
        permille: i32,
        left_ms: u64,
    },
}

impl Recovery {
    /// The node it ends a fault on, if one.
    pub(crate) fn node(&self) -> Option<usize> {
        match *self {
            Recovery::Restart { node, .. }
            | Recovery::Heal { node }
            | Recovery::Drift { node, .. } => Some(node),
            Recovery::ResumeReplication => None,
        }
    }
}

/// How often a drifting clock steps: every 10 ms of virtual time.
const DRIFT_TICK_MS: u64 = 10;

/// A cluster's shards.
pub(crate) fn cluster_sets(cluster: &MemoryCluster) -> impl Iterator<Item = &MemoryReplicaSet> {
    (0..cluster.shards()).filter_map(|shard| cluster.shard(shard))
}

/// A failover of `set`: the old primary comes back as a replica of the new one (as
/// Sentinel, or the cluster, reconfigures it), so the set keeps its size for the next.
fn fail_over(set: &MemoryReplicaSet, fault: Fault) {
    if fault == Fault::SwitchOver {
        set.switch_over();
        return;
    }
    let old = set.primary();
    if set.fail_over().is_some()
        && let Some(old) = old
    {
        set.restart(old);
    }
}

/// Replication flows, crashed nodes rejoin, injected faults go.
fn heal_set(set: &MemoryReplicaSet) {
    set.resume_all();
    for node in 0..set.len() {
        set.restart(node);
        set.node_as_is(node).faults().clear();
    }
}
