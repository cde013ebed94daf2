//! A primary and its replicas in memory, on the test's clock: the failover that loses a
//! lock (seed 000's warning), reproduced deterministically.
//!
//! Every write the primary makes goes on its replication stream, in order; each replica
//! applies it once its link delivers it (at once, after a delay, or not while the link
//! is paused or down). `WAIT` ([`KvBackend::eval_replicated`]) answers as Redis's does:
//! how many replicas have applied the writes of the connection that asks. A crash
//! promotes the replica that has applied the most, as Sentinel does, and whatever it had
//! not received is gone.
//!
//! ```
//! use std::time::Duration;
//! use lock_core::{LockAlgorithm, LockName, NamedLock, TokenLock};
//! use lock_memory::MemoryReplicaSet;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), lock_core::LockError> {
//! let set = MemoryReplicaSet::new(1); // a primary and one replica
//! set.pause_all(); // replication stalls
//! let name = LockName::new("orders:42")?;
//! let first = TokenLock::new(set.client(), &name).acquire().await?;
//! set.fail_over(); // the primary dies before its replica got the lock
//! let second = TokenLock::new(set.client(), &name).try_acquire().await?;
//! assert!(second.acquired().is_some()); // two holders: the lock was lost
//! # drop(first);
//! # Ok(()) }
//! ```
//!
//! [`KvBackend::eval_replicated`]: lock_core::KvBackend::eval_replicated

mod client;
mod stream;

pub use client::ReplicaSetClient;
pub(crate) use client::{lone_wait, no_waitaof};
pub(crate) use stream::{Effect, Stream};

use std::sync::Arc;
use std::time::Duration;

use lock_core::{Clock, Error, ErrorKind};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::MemoryBackend;

/// A replica's link to its primary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// Writes arrive `delay` after the primary made them (zero: at once).
    Flowing {
        /// How long each write takes to arrive.
        delay: Duration,
    },
    /// Connected, but nothing arrives (a stalled link); what was held back arrives once
    /// it flows again.
    Paused,
    /// Not connected: nothing arrives, and `WAIT` does not count the replica.
    Down,
}

impl Link {
    /// Whether this link has delivered, at any moment, every write `other` has.
    fn delivers_all_of(self, other: Link) -> bool {
        match (self, other) {
            (Link::Flowing { delay }, Link::Flowing { delay: before }) => delay <= before,
            (Link::Flowing { .. }, Link::Paused | Link::Down) => true,
            (Link::Paused | Link::Down, Link::Paused | Link::Down) => true,
            (Link::Paused | Link::Down, Link::Flowing { .. }) => false,
        }
    }
}

/// What a node is now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Takes the writes.
    Primary,
    /// Applies the primary's writes as its link delivers them.
    Replica {
        /// The link from the primary.
        link: Link,
        /// The offset of the last write it applied.
        applied: u64,
    },
    /// Crashed: unreachable, its data kept for inspection until [`MemoryReplicaSet::restart`].
    Crashed,
}

/// A point on a primary's replication stream ([`MemoryReplicaSet::write_offset`]): the
/// write a connection's `WAIT` waits for. Two are equal when they name the same write of
/// the same primary.
#[derive(Clone, Debug)]
pub struct WriteOffset {
    stream: Arc<Stream>,
    offset: u64,
}

impl PartialEq for WriteOffset {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.stream, &other.stream) && self.offset == other.offset
    }
}

impl Eq for WriteOffset {}

/// Writes a replica set's stream may hold before a command to the primary delivers
/// them (see `MemoryReplicaSet::primary_for_command`).
const DELIVER_BACKLOG: usize = 256;

/// A primary and its replicas, each a [`MemoryBackend`] (with its own faults), on one
/// clock. Clones share the set. Node 0 starts as the primary; nodes `1..=replicas` are its
/// replicas, their links flowing without delay.
#[derive(Clone, Debug)]
pub struct MemoryReplicaSet {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    clock: Clock,
    nodes: Vec<MemoryBackend>,
    state: Mutex<State>,
    /// Woken when a link or the primary changes, so that a `WAIT` looks again.
    changed: Notify,
}

#[derive(Debug)]
struct State {
    roles: Vec<Role>,
    /// The primary's replication stream (kept after a crash, until a promotion).
    stream: Arc<Stream>,
}

impl MemoryReplicaSet {
    /// A primary and `replicas` replicas on [`Clock::tokio`].
    pub fn new(replicas: usize) -> Self {
        Self::with_clock(replicas, Clock::tokio())
    }

    /// A primary and `replicas` replicas on `clock`.
    pub fn with_clock(replicas: usize, clock: Clock) -> Self {
        let nodes: Vec<MemoryBackend> = (0..=replicas)
            .map(|_| MemoryBackend::with_clock(clock.clone()))
            .collect();
        let stream = Arc::new(Stream::default());
        nodes[0].replicate_to(Some(stream.clone()));
        let mut roles = vec![Role::Primary];
        roles.extend((0..replicas).map(|_| Role::Replica {
            link: Link::Flowing {
                delay: Duration::ZERO,
            },
            applied: 0,
        }));
        Self {
            inner: Arc::new(Inner {
                clock,
                nodes,
                state: Mutex::new(State { roles, stream }),
                changed: Notify::new(),
            }),
        }
    }

    /// A client: a [`KvBackend`](lock_core::KvBackend) on the current primary that
    /// follows failovers, as a Sentinel-aware client does. While no node is primary its
    /// commands fail as with a refused connection.
    pub fn client(&self) -> ReplicaSetClient {
        ReplicaSetClient::new(self.clone())
    }

    /// The clock every node runs on.
    pub fn clock(&self) -> Clock {
        self.inner.clock.clone()
    }

    /// Moves the clock forward: keys expire, delayed writes arrive.
    pub fn advance(&self, by: Duration) {
        self.inner.clock.advance(by);
        self.inner.changed.notify_waiters();
    }

    /// Node `index` (0 to the number of replicas), once the writes due to it have
    /// arrived: read it, dump it, or inject faults into it.
    pub fn node(&self, index: usize) -> MemoryBackend {
        self.deliver();
        self.inner.nodes[index].clone()
    }

    /// Node `index` as it stands, without the writes due to it: to inject or clear
    /// faults, which replication does not touch.
    pub fn node_as_is(&self, index: usize) -> MemoryBackend {
        self.inner.nodes[index].clone()
    }

    /// How many nodes the set has.
    pub fn len(&self) -> usize {
        self.inner.nodes.len()
    }

    /// Whether the set has no node (never: it has at least a primary).
    pub fn is_empty(&self) -> bool {
        self.inner.nodes.is_empty()
    }

    /// What each node is now, once the writes due have arrived.
    pub fn roles(&self) -> Vec<Role> {
        self.deliver();
        self.inner.state.lock().roles.clone()
    }

    /// The current primary, if one is up.
    pub fn primary(&self) -> Option<usize> {
        let state = self.inner.state.lock();
        state.roles.iter().position(|role| *role == Role::Primary)
    }

    /// The nodes that are replicas now.
    pub fn replicas(&self) -> Vec<usize> {
        let state = self.inner.state.lock();
        (0..state.roles.len())
            .filter(|i| matches!(state.roles[*i], Role::Replica { .. }))
            .collect()
    }

    /// How many of the primary's writes the set keeps for a replica that has not
    /// applied them yet. Replicas apply what has arrived whenever anything looks at
    /// them, so this may be above zero with every link flowing; it stays bounded.
    pub fn backlog(&self) -> usize {
        self.inner.state.lock().stream.backlog()
    }

    /// The primary's replication offset: how many writes it has made.
    pub fn primary_offset(&self) -> u64 {
        self.inner.state.lock().stream.offset()
    }

    /// Sets replica `replica`'s link.
    pub fn set_link(&self, replica: usize, link: Link) {
        let mut state = self.inner.state.lock();
        if let Role::Replica { link: current, .. } = &state.roles[replica]
            && !link.delivers_all_of(*current)
        {
            // What the old link has delivered by now must arrive before the new one
            // holds it back. A link that delivers at least as much needs no delivery
            // now: the writes carry their absolute state, so applying them later, at
            // the next look at the replicas, leaves them the same.
            drop(state);
            self.deliver();
            state = self.inner.state.lock();
        }
        if let Role::Replica { link: current, .. } = &mut state.roles[replica] {
            *current = link;
        }
        drop(state);
        self.inner.changed.notify_waiters();
    }

    /// Stalls every replica's link: writes from now on stay on the primary.
    pub fn pause_all(&self) {
        for replica in self.replicas() {
            self.set_link(replica, Link::Paused);
        }
    }

    /// Lets every replica's link flow again, without delay: what was held back arrives.
    pub fn resume_all(&self) {
        for replica in self.replicas() {
            self.set_link(
                replica,
                Link::Flowing {
                    delay: Duration::ZERO,
                },
            );
        }
    }

    /// Crashes the primary: it is unreachable, and no node is primary until
    /// [`MemoryReplicaSet::promote`] (the window a failover takes).
    pub fn crash_primary(&self) {
        self.deliver();
        let mut state = self.inner.state.lock();
        if let Some(primary) = state.roles.iter().position(|r| *r == Role::Primary) {
            state.roles[primary] = Role::Crashed;
            self.inner.nodes[primary].replicate_to(None);
        }
        drop(state);
        self.inner.changed.notify_waiters();
    }

    /// Promotes the replica that has applied the most writes (the lowest index among
    /// equals), as Sentinel does; the other replicas resynchronise from it. Whatever the
    /// old primary had not shipped to it is lost. The new primary, or `None` if no
    /// replica is left.
    pub fn promote(&self) -> Option<usize> {
        self.deliver();
        let mut state = self.inner.state.lock();
        let chosen = state
            .roles
            .iter()
            .enumerate()
            .filter_map(|(i, role)| match role {
                Role::Replica { applied, .. } => Some((*applied, std::cmp::Reverse(i))),
                _ => None,
            })
            .max()
            .map(|(applied, std::cmp::Reverse(i))| (i, applied))?;
        let (new_primary, applied) = chosen;
        for (i, role) in state.roles.iter_mut().enumerate() {
            if *role == Role::Primary {
                self.inner.nodes[i].replicate_to(None);
                *role = Role::Crashed;
            }
        }
        let stream = Arc::new(Stream::after(applied));
        state.roles[new_primary] = Role::Primary;
        self.inner.nodes[new_primary].replicate_to(Some(stream.clone()));
        state.stream = stream;
        for i in 0..state.roles.len() {
            if let Role::Replica { link, .. } = state.roles[i] {
                self.inner.nodes[i].copy_from(&self.inner.nodes[new_primary]);
                state.roles[i] = Role::Replica { link, applied };
            }
        }
        drop(state);
        self.inner.changed.notify_waiters();
        Some(new_primary)
    }

    /// [`MemoryReplicaSet::crash_primary`] then [`MemoryReplicaSet::promote`]: Sentinel's
    /// failover after the primary died, in one step. The new primary.
    pub fn fail_over(&self) -> Option<usize> {
        self.crash_primary();
        self.promote()
    }

    /// A failover that loses nothing (Redis's `FAILOVER`): every write reaches the
    /// chosen replica before it is promoted; the old primary becomes its replica.
    pub fn switch_over(&self) -> Option<usize> {
        let old = self.primary()?;
        let offset = self.primary_offset();
        {
            let state = self.inner.state.lock();
            for (i, role) in state.roles.iter().enumerate() {
                if let Role::Replica { applied, .. } = role {
                    for entry in state.stream.due_after(*applied, |_| true) {
                        self.inner.nodes[i].apply(&entry.effects);
                    }
                }
            }
        }
        {
            let mut state = self.inner.state.lock();
            for role in state.roles.iter_mut() {
                if let Role::Replica { applied, .. } = role {
                    *applied = offset;
                }
            }
        }
        let new_primary = self.promote()?;
        self.restart(old);
        Some(new_primary)
    }

    /// Brings a crashed node back as a replica of the current primary: it resynchronises,
    /// and the writes only it had are gone.
    pub fn restart(&self, node: usize) {
        if self.inner.state.lock().roles[node] != Role::Crashed {
            return;
        }
        self.deliver();
        let mut state = self.inner.state.lock();
        if state.roles[node] != Role::Crashed {
            return;
        }
        let Some(primary) = state.roles.iter().position(|r| *r == Role::Primary) else {
            return;
        };
        self.inner.nodes[node].copy_from(&self.inner.nodes[primary]);
        state.roles[node] = Role::Replica {
            link: Link::Flowing {
                delay: Duration::ZERO,
            },
            applied: state.stream.offset(),
        };
        drop(state);
        self.inner.changed.notify_waiters();
    }

    /// Applies, on every replica whose link flows, the writes that have arrived by now.
    fn deliver(&self) {
        let now = self.inner.clock.now_ms();
        let mut state = self.inner.state.lock();
        let stream = state.stream.clone();
        let mut lowest = u64::MAX;
        for (i, role) in state.roles.iter_mut().enumerate() {
            let Role::Replica { link, applied } = role else {
                continue;
            };
            if let Link::Flowing { delay } = *link {
                let delay = i64::try_from(delay.as_millis()).unwrap_or(i64::MAX);
                for entry in stream.due_after(*applied, |at| at.saturating_add(delay) <= now) {
                    self.inner.nodes[i].apply(&entry.effects);
                    *applied = entry.offset;
                }
            }
            lowest = lowest.min(*applied);
        }
        if lowest != u64::MAX {
            stream.trim(lowest);
        }
    }

    /// When the next write after `offset` reaches a replica whose link flows, if any
    /// will without a change of links.
    fn next_arrival(&self, offset: u64) -> Option<i64> {
        let state = self.inner.state.lock();
        state
            .roles
            .iter()
            .filter_map(|role| match role {
                Role::Replica {
                    link: Link::Flowing { delay },
                    applied,
                } if *applied < offset => {
                    let at = state.stream.next_after(*applied)?;
                    Some(at.saturating_add(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX)))
                }
                _ => None,
            })
            .min()
    }

    /// How many connected replicas have applied the write at `offset`.
    fn acknowledged(&self, offset: u64) -> i64 {
        let state = self.inner.state.lock();
        state
            .roles
            .iter()
            .filter(|role| {
                matches!(role, Role::Replica { link, applied }
                    if *link != Link::Down && *applied >= offset)
            })
            .count() as i64
    }

    /// The primary's replication stream now: a promotion replaces it, which is how a
    /// connection opened before a failover knows it no longer reaches the primary.
    pub(crate) fn stream(&self) -> Arc<Stream> {
        self.inner.state.lock().stream.clone()
    }

    /// Where the primary's replication stream stands now: taken before and after a
    /// server runs a connection's command, it tells whether the command wrote, and so
    /// which write a later `WAIT` of that connection waits for (Redis's `woff`). Like a
    /// client's command, it delivers what has arrived once the backlog is long, so that a
    /// server's writes keep the stream bounded.
    pub fn write_offset(&self) -> WriteOffset {
        if self.backlog() > DELIVER_BACKLOG {
            self.deliver();
        }
        let stream = self.stream();
        let offset = stream.offset();
        WriteOffset { stream, offset }
    }

    /// The position before any write of the current primary: what a connection that
    /// has not written waits for, which every connected replica has.
    pub fn start_offset(&self) -> WriteOffset {
        WriteOffset {
            stream: self.stream(),
            offset: 0,
        }
    }

    /// How many connected replicas have applied the writes up to `offset` (none when the
    /// primary it was taken on has failed over since): what `WAIT 0 0` answers.
    pub fn acknowledged_at(&self, offset: &WriteOffset) -> i64 {
        self.deliver();
        if !Arc::ptr_eq(&offset.stream, &self.inner.state.lock().stream) {
            return 0;
        }
        self.acknowledged(offset.offset)
    }

    /// `WAIT replicas timeout` for a server's connection whose last write is at
    /// `offset`: returns once `replicas` replicas have applied it, or when `timeout` has
    /// passed (0: never), with how many had. A failover meanwhile ends it with a
    /// connection error, as the old primary's death does.
    pub async fn wait_for(
        &self,
        offset: &WriteOffset,
        replicas: i64,
        timeout: Duration,
    ) -> Result<i64, Error> {
        self.wait(&offset.stream, offset.offset, replicas, timeout)
            .await
    }

    /// `WAIT replicas timeout` for a connection whose last write is at `offset` on
    /// `stream`: returns once `replicas` replicas have applied it, or when `timeout` has
    /// passed on the clock (0: never), with how many had. A failover while it blocks
    /// ends it with a connection error, as the old primary's death (or Redis's
    /// `FAILOVER`, which disconnects its clients) ends a real `WAIT`: offsets on the new
    /// primary's stream are not this connection's writes.
    pub(crate) async fn wait(
        &self,
        stream: &Arc<Stream>,
        offset: u64,
        replicas: i64,
        timeout: Duration,
    ) -> Result<i64, Error> {
        let clock = &self.inner.clock;
        let deadline =
            (!timeout.is_zero()).then(|| clock.now_ms().saturating_add(timeout.as_millis() as i64));
        loop {
            let changed = self.inner.changed.notified();
            self.deliver();
            if !Arc::ptr_eq(stream, &self.inner.state.lock().stream) {
                return Err(Error::new(
                    ErrorKind::Connection,
                    "Connection reset by peer: the primary failed over while WAIT blocked",
                ));
            }
            let acknowledged = self.acknowledged(offset);
            let now = clock.now_ms();
            if acknowledged >= replicas || deadline.is_some_and(|d| now >= d) {
                return Ok(acknowledged);
            }
            let wake = match (self.next_arrival(offset), deadline) {
                (Some(a), Some(d)) => Some(a.min(d)),
                (a, d) => a.or(d),
            };
            match wake {
                Some(at) => {
                    let nap = Duration::from_millis(u64::try_from(at - now).unwrap_or(0).max(1));
                    tokio::select! {
                        biased;
                        () = clock.sleep(nap) => {}
                        () = changed => {}
                    }
                }
                None => changed.await,
            }
        }
    }

    /// Every node answers as Redis `version` does where versions differ (see
    /// [`MemoryBackend::with_redis_version`]). From 7.2, `WAITAOF 0 replicas` counts the
    /// replicas that applied a write, as if each ran with `appendfsync always`.
    pub fn with_redis_version(self, version: lock_core::RedisVersion) -> Self {
        for node in &self.inner.nodes {
            node.set_redis_version(version);
        }
        self
    }

    /// The current primary's backend, if one is up: to inspect or fault the node that
    /// serves writes now (its index is [`MemoryReplicaSet::primary`]).
    pub fn primary_node(&self) -> Option<MemoryBackend> {
        self.deliver();
        self.primary().map(|i| self.inner.nodes[i].clone())
    }

    /// The primary a client's command goes to. Replicas receive the writes due by now
    /// whenever anything looks at them (every accessor, `WAIT`, a failover delivers
    /// first), so a command to the primary need not deliver them; it does once the
    /// backlog passes [`DELIVER_BACKLOG`] writes, so that a set nobody looks at keeps its
    /// stream bounded.
    pub(crate) fn primary_for_command(&self) -> Option<MemoryBackend> {
        let state = self.inner.state.lock();
        let backlog = state.stream.backlog();
        drop(state);
        if backlog > DELIVER_BACKLOG {
            self.deliver();
        }
        self.primary_as_is()
    }

    /// The current primary's backend as it stands, for a look that changes nothing:
    /// unlike [`primary_node`](Self::primary_node), replication due by now is not applied
    /// first (the primary's own data does not depend on it).
    pub fn primary_as_is(&self) -> Option<MemoryBackend> {
        self.primary().map(|i| self.inner.nodes[i].clone())
    }
}
