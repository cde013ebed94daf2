//! Seeded schedules: which faults, aimed where, and when. Most steps are anchored to a
//! client's operation (right after its acquire, its write, its release), where lock bugs
//! hide; the rest fall at random times of a fault-free run's length.
//!
//! A deterministic runner's steps are anchored by an operation's index, which names
//! one moment exactly. Where runs are not deterministic, a client that retried makes
//! more or fewer operations from run to run, so steps are anchored by name instead (the
//! 3rd `GET`), and a name is drawn before one of its operations: a client that retried
//! SET fifty times is not fifty times likelier to pause there than after its one GET.
//! Connection set-up is no anchor unless the options say so.

use fastrand::Rng;

use crate::options::{Options, is_setup_command};
use crate::runner::Outcome;
use crate::schedule::Schedule;
use crate::step::{Fault, FaultKind, Step, When};

/// What a fault-free run showed: how many operations each client ran, their names,
/// and how long the planned cycles took.
#[derive(Clone, Debug)]
pub(crate) struct Baseline {
    pub(crate) ops: Vec<u32>,
    /// Per client, the names of its operations that may anchor a step, in order.
    pub(crate) names: Vec<Vec<String>>,
    /// Per client, the indices of those same operations among all it made.
    pub(crate) anchors: Vec<Vec<u32>>,
    /// Per client, which operations were commands (empty: not known).
    pub(crate) commands: Vec<Vec<u32>>,
    pub(crate) duration_ms: u64,
    /// The abstract lock states the run reached (when tracked).
    pub(crate) states: Vec<u64>,
    /// Per client, the abstract lock state after each operation (when tracked).
    pub(crate) op_states: Vec<Vec<u64>>,
}

impl Baseline {
    pub(crate) fn of(outcome: &Outcome, options: &Options) -> Self {
        let names = outcome
            .op_logs
            .iter()
            .map(|log| {
                log.iter()
                    .map(|(name, _)| name)
                    .filter(|name| options.anchor_setup || !is_setup_command(name))
                    .cloned()
                    .collect()
            })
            .collect();
        let anchors = outcome
            .op_logs
            .iter()
            .map(|log| {
                log.iter()
                    .enumerate()
                    .filter(|(_, (name, _))| options.anchor_setup || !is_setup_command(name))
                    .filter_map(|(index, _)| u32::try_from(index).ok())
                    .collect()
            })
            .collect();
        Baseline {
            ops: outcome.ops.clone(),
            names,
            anchors,
            commands: outcome.commands.clone(),
            duration_ms: u64::try_from(outcome.main_us / 1000).unwrap_or(0),
            states: outcome.states.clone(),
            op_states: outcome.op_states.clone(),
        }
    }
}

/// How steps are placed next to operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Anchoring {
    /// After an operation's index, or at a time: exact, for deterministic runs.
    ByIndex,
    /// After the `nth` operation of a name: for runs that are not.
    ByName,
}

/// The fault kinds the search may draw on this topology.
pub(crate) fn usable(options: &Options) -> Vec<FaultKind> {
    let mut kinds: Vec<_> = options
        .faults
        .iter()
        .copied()
        .filter(|k| options.topology.supports(*k))
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// The schedule of run `seed`.
pub(crate) fn schedule(
    seed: u64,
    options: &Options,
    baseline: &Baseline,
    anchoring: Anchoring,
) -> Schedule {
    let mut rng = Rng::with_seed(seed);
    let kinds = usable(options);
    let count = if kinds.is_empty() {
        0
    } else {
        rng.usize(1..=options.max_steps.max(1))
    };
    let steps = (0..count)
        .map(|_| step(&mut rng, options, baseline, anchoring, &kinds))
        .collect();
    Schedule {
        clients: options.clients,
        cycles: options.cycles,
        token_seed: rng.u64(..),
        steps,
    }
}

/// One step drawn as the search draws them: a kind of `kinds` (not empty), aimed at an
/// operation or a time.
pub(crate) fn step(
    rng: &mut Rng,
    options: &Options,
    baseline: &Baseline,
    anchoring: Anchoring,
    kinds: &[FaultKind],
) -> Step {
    match anchoring {
        Anchoring::ByIndex => {
            let kind = kinds[rng.usize(..kinds.len())];
            Step {
                when: when(rng, options, baseline),
                fault: fault(rng, kind, options),
            }
        }
        Anchoring::ByName => {
            let client = rng.usize(..options.clients.max(1));
            let when = when_by_name(rng, client, baseline);
            let kind = kinds[rng.usize(..kinds.len())];
            Step {
                when,
                fault: random_fault(rng, kind, options, client),
            }
        }
    }
}

/// One step drawn as a name-anchored step is (a client, one of its operation names,
/// one operation of that name; a client fault aimed at that client), placed by the
/// operation's index: for deterministic runs, without the weight of a retry loop's
/// hundred operations of one name.
pub(crate) fn step_by_name_at_index(
    rng: &mut Rng,
    options: &Options,
    baseline: &Baseline,
    kinds: &[FaultKind],
) -> Step {
    let mut step = step(rng, options, baseline, Anchoring::ByName, kinds);
    if let When::AfterNext {
        client, kind, nth, ..
    } = &step.when
    {
        let op = baseline
            .names
            .get(*client)
            .zip(baseline.anchors.get(*client))
            .and_then(|(names, anchors)| {
                names
                    .iter()
                    .zip(anchors)
                    .filter(|(name, _)| *name == kind)
                    .nth(*nth as usize)
                    .map(|(_, op)| *op)
            })
            .unwrap_or(0);
        step.when = When::After {
            client: *client,
            op,
        };
    }
    step
}

/// A moment drawn as the search draws them: after an operation of a client, or a time.
fn when(rng: &mut Rng, options: &Options, baseline: &Baseline) -> When {
    let client = rng.usize(..options.clients.max(1));
    let ops = baseline.ops.get(client).copied().unwrap_or(0);
    if ops > 0 && rng.u8(..10) < 7 {
        When::After {
            client,
            op: rng.u32(..ops),
        }
    } else {
        When::At {
            ms: rng.u64(..=baseline.duration_ms.max(1)),
        }
    }
}

/// After the `nth` operation of a name `client` made in the baseline: a name first,
/// then one of its operations. A client with no such operation is anchored at its first.
fn when_by_name(rng: &mut Rng, client: usize, baseline: &Baseline) -> When {
    let Some(names) = baseline.names.get(client).filter(|n| !n.is_empty()) else {
        return When::After { client, op: 0 };
    };
    let mut kinds: Vec<&String> = names.iter().collect();
    kinds.sort();
    kinds.dedup();
    let kind = kinds[rng.usize(..kinds.len())].clone();
    let count = names.iter().filter(|n| **n == kind).count();
    let nth = rng.usize(..count);
    When::AfterNext {
        client,
        kind,
        from_us: 0,
        nth: u32::try_from(nth).unwrap_or(u32::MAX),
    }
}

/// A length of virtual time around the TTL: a quarter of it up to three times it, with
/// the TTL itself and just past it likelier, since those are where leases break.
fn around_ttl(rng: &mut Rng, ttl_ms: u64) -> u64 {
    let ttl = ttl_ms.max(4);
    match rng.u8(..6) {
        0 => ttl / 4,
        1 => ttl / 2,
        2 => ttl + ttl / 10,
        3 => ttl * 2,
        4 => ttl * 3,
        _ => rng.u64(1..=ttl * 3),
    }
}

fn fault(rng: &mut Rng, kind: FaultKind, options: &Options) -> Fault {
    let client = rng.usize(..options.clients.max(1));
    random_fault(rng, kind, options, client)
}

/// A fault of `kind` for `client` (when it hits a client), drawn as the search draws
/// them: lengths around the TTL, where leases break, and a random node.
pub fn random_fault(rng: &mut Rng, kind: FaultKind, options: &Options, client: usize) -> Fault {
    let node = rng.usize(..options.topology.nodes().max(1));
    let ttl = options.ttl_ms;
    let signed = |rng: &mut Rng, ms: u64| {
        let ms = i64::try_from(ms).unwrap_or(i64::MAX / 2);
        if rng.bool() { ms } else { -ms }
    };
    let pause = |rng: &mut Rng| {
        let ms = around_ttl(rng, ttl);
        options.max_pause_ms.map_or(ms, |cap| ms.min(cap.max(1)))
    };
    match kind {
        FaultKind::Pause => Fault::Pause {
            client,
            ms: pause(rng),
        },
        FaultKind::SectionPause => Fault::SectionPause {
            client,
            ms: pause(rng),
        },
        FaultKind::ClientClock => {
            let ms = around_ttl(rng, ttl);
            Fault::ClientClock {
                client,
                ms: signed(rng, ms),
            }
        }
        // Refused before a search starts where nodes have no clock of their own (see
        // `Topology::supports`).
        FaultKind::NodeClock => {
            let ms = around_ttl(rng, ttl);
            Fault::NodeClock {
                node,
                ms: signed(rng, ms),
            }
        }
        FaultKind::Drift => Fault::NodeDrift {
            node,
            permille: [-500, -100, -20, 20, 100, 500][rng.usize(..6)],
            ms: around_ttl(rng, ttl),
        },
        FaultKind::LostReply => Fault::LostReply { client },
        FaultKind::Refuse => Fault::Refuse { client },
        FaultKind::Latency => {
            let cap = options.max_latency_ms.unwrap_or(ttl).max(1);
            let ms = rng.u64(1..=cap.max(2)).min(cap);
            if rng.bool() {
                Fault::Latency { client, ms }
            } else {
                Fault::LateReply { client, ms }
            }
        }
        FaultKind::Interrupt => Fault::Interrupt {
            node,
            after: rng.u32(..3),
        },
        FaultKind::KillConnection => Fault::KillConnection { client },
        FaultKind::Failover => match rng.u8(..4) {
            0 | 1 => Fault::Failover,
            2 => Fault::SwitchOver,
            _ => Fault::StallReplication {
                ms: around_ttl(rng, ttl),
            },
        },
        FaultKind::Restart | FaultKind::RestartEmpty => Fault::Restart {
            node,
            ms: around_ttl(rng, ttl),
            persistent: kind == FaultKind::Restart,
        },
        FaultKind::Blackhole => Fault::Blackhole {
            node,
            ms: around_ttl(rng, ttl),
        },
        // Refused before a search starts (see `Topology::supports`).
        FaultKind::Migrate => Fault::Migrate { to: node },
        FaultKind::Cancel => Fault::Cancel { client },
    }
}
