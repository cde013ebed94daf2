//! [`MemoryInstances`]: N independent doubles for Redlock, each with its own clock and
//! faults, that can die, hang, and restart with or without their data.

use std::sync::Arc;
use std::time::Duration;

use lock_core::{Clock, Error, ErrorKind};
use parking_lot::Mutex;

use crate::{Faults, MemoryBackend};

/// How long a black-holed node keeps a command before answering: longer than any test
/// waits, so only the client's timeout ends it.
const BLACK_HOLE: Duration = Duration::from_secs(365 * 24 * 3600);

/// What a restarted node remembers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Persistence {
    /// No persistence: the node comes back empty.
    None,
    /// `appendonly yes` with `appendfsync always`: every acknowledged write survives.
    AppendFsyncAlways,
}

/// A node index that is not one of the set's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no node {index}: the set has {nodes} nodes")]
pub struct NoSuchNode {
    /// The index asked for.
    pub index: usize,
    /// How many nodes the set has.
    pub nodes: usize,
}

#[derive(Debug)]
struct Node {
    backend: MemoryBackend,
    /// The node's own view of the shared time: jumps and drifts alone.
    clock: Clock,
    /// How much faster than the others this node's clock runs (0.01: 1% fast).
    drift: Mutex<f64>,
}

/// N independent Redis doubles, as Redlock runs on: no replication between them, each
/// with its own clock (jumps and drift), its own [`Faults`], and a process that can die
/// ([`kill`](Self::kill)), hang ([`blackhole`](Self::blackhole)) and
/// [`restart`](Self::restart) with or without its data. Clients share
/// [`MemoryInstances::clock`]; time passes for everyone with
/// [`MemoryInstances::advance`] (or paused tokio time). Clones share the nodes.
///
/// ```
/// use lock_memory::{MemoryInstances, Persistence};
/// let nodes = MemoryInstances::new(5);
/// nodes.kill(1)?;
/// nodes.jump_clock(2, 10_000)?; // node 2's clock steps 10 s ahead
/// nodes.restart(1, Persistence::None)?; // back, empty
/// # Ok::<(), lock_memory::NoSuchNode>(())
/// ```
#[derive(Clone, Debug)]
pub struct MemoryInstances {
    clock: Clock,
    nodes: Arc<[Node]>,
}

impl MemoryInstances {
    /// `n` empty nodes on [`Clock::tokio`].
    pub fn new(n: usize) -> Self {
        Self::with_clock(n, Clock::tokio())
    }

    /// `n` empty nodes whose clocks start as `clock` reads.
    pub fn with_clock(n: usize, clock: Clock) -> Self {
        let nodes = (0..n)
            .map(|_| {
                let own = clock.detached();
                Node {
                    backend: MemoryBackend::with_clock(own.clone()),
                    clock: own,
                    drift: Mutex::new(0.0),
                }
            })
            .collect();
        Self { clock, nodes }
    }

    /// How many nodes there are.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    fn at(&self, index: usize) -> Result<&Node, NoSuchNode> {
        self.nodes.get(index).ok_or(NoSuchNode {
            index,
            nodes: self.nodes.len(),
        })
    }

    /// A client of node `index`: a [`MemoryBackend`] whose keys expire on that node's clock.
    pub fn node(&self, index: usize) -> Result<MemoryBackend, NoSuchNode> {
        Ok(self.at(index)?.backend.clone())
    }

    /// A client of every node, in order: what [`Redlock`](lock_core::Redlock) takes.
    pub fn nodes(&self) -> Vec<MemoryBackend> {
        self.nodes.iter().map(|n| n.backend.clone()).collect()
    }

    /// The clock clients use (give it to locks with
    /// [`LockOptions::clock`](lock_core::LockOptions::clock): a node's own clock may jump).
    pub fn clock(&self) -> Clock {
        self.clock.clone()
    }

    /// Node `index`'s own clock.
    pub fn node_clock(&self, index: usize) -> Result<Clock, NoSuchNode> {
        Ok(self.at(index)?.clock.clone())
    }

    /// Lets `by` pass for everyone; a drifting node's clock moves `by * (1 + drift)`.
    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
        for node in self.nodes.iter() {
            let drift = *node.drift.lock();
            if drift != 0.0 {
                node.clock.jump((by.as_secs_f64() * 1000.0 * drift) as i64);
            }
        }
    }

    /// Steps node `index`'s clock by `by_ms` (negative: back), as NTP stepping its
    /// machine's wall clock would: its keys expire that much sooner (or later).
    pub fn jump_clock(&self, index: usize, by_ms: i64) -> Result<(), NoSuchNode> {
        self.at(index)?.clock.jump(by_ms);
        Ok(())
    }

    /// Makes node `index`'s clock run `drift` faster than the others' (0.02: 2% fast,
    /// negative: slow) through every later [`MemoryInstances::advance`].
    pub fn set_drift(&self, index: usize, drift: f64) -> Result<(), NoSuchNode> {
        *self.at(index)?.drift.lock() = drift;
        Ok(())
    }

    /// Node `index`'s fault injector (latency makes it slow).
    pub fn faults(&self, index: usize) -> Result<&Faults, NoSuchNode> {
        Ok(self.at(index)?.backend.faults())
    }

    /// Kills node `index`: every command fails at once with a refused connection, and
    /// nothing changes on it, until [`MemoryInstances::restart`] (a new process, with or
    /// without its data) or [`MemoryInstances::heal`] (the same process reachable again,
    /// its data as it was).
    pub fn kill(&self, index: usize) -> Result<(), NoSuchNode> {
        let faults = self.faults(index)?;
        faults.clear();
        let refused = Error::new(ErrorKind::Connection, "Connection refused (os error 111)");
        faults.fail_with(None, u64::MAX, refused);
        Ok(())
    }

    /// Starts node `index` again (whether it was killed or not), with its data under
    /// [`Persistence::AppendFsyncAlways`] or empty under [`Persistence::None`]. Clears
    /// its faults.
    pub fn restart(&self, index: usize, persistence: Persistence) -> Result<(), NoSuchNode> {
        let node = self.at(index)?;
        if persistence == Persistence::None {
            node.backend.flush();
        }
        node.backend.faults().clear();
        Ok(())
    }

    /// Black-holes node `index`: commands sent to it from now on are never answered (a
    /// partition that drops packets); only the client's own timeout ends them, and those
    /// the client gives up on never run.
    pub fn blackhole(&self, index: usize) -> Result<(), NoSuchNode> {
        self.faults(index)?.set_latency(BLACK_HOLE);
        Ok(())
    }

    /// Ends a [`blackhole`](Self::blackhole) (and any other fault) on node `index`.
    pub fn heal(&self, index: usize) -> Result<(), NoSuchNode> {
        self.faults(index)?.clear();
        Ok(())
    }
}
