//! Redlock (seed 000's remedy for a single master): the token lock taken on a majority of
//! N independent nodes, valid for its TTL minus the time the acquire took and a drift
//! allowance.

mod fanout;
mod guard;

pub use guard::RedlockGuard;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use fanout::{Fan, Tally};

use super::{int_reply, ms_arg, pair_reply};
use crate::lock::{Before, Budget, Supports, acquire_with_budget, run_in_background};
use crate::scripts::{ACQUIRE_OR_PTTL, COMPARE_AND_DELETE};
use crate::turns::{Turn, Turns};
use crate::{
    Attempt, Clock, KvBackend, LockAlgorithm, LockBinding, LockError, LockName, LockOptions,
    SetOptions, SetReply,
};

/// Redlock's own settings, beside the [`LockOptions`] every lock has.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedlockOptions {
    /// How long one node may take to answer one command before it counts as failed.
    /// `None` (the default): 1% of the TTL, between 5 ms and 50 ms (the spec asks for
    /// 5-50 ms with a 10 s TTL). Small against the TTL, so a dead node costs the acquire
    /// this much and not the TCP timeout.
    pub node_timeout: Option<Duration>,
    /// The clock drift allowed per millisecond of TTL (default 0.01, as node-redlock,
    /// rslock and the spec's reference implementation).
    pub drift_factor: f64,
    /// Drift allowed on top of `drift_factor` (default 2 ms, for the servers' expiry
    /// granularity).
    pub drift_floor: Duration,
    /// Stop waiting for the other nodes once a quorum for or against is certain (the
    /// nodes not waited for are released with the others). Default `true`.
    pub fail_fast: bool,
}

impl Default for RedlockOptions {
    fn default() -> Self {
        Self {
            node_timeout: None,
            drift_factor: 0.01,
            drift_floor: Duration::from_millis(2),
            fail_fast: true,
        }
    }
}

impl RedlockOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the per-node timeout.
    pub fn node_timeout(mut self, timeout: Duration) -> Self {
        self.node_timeout = Some(timeout);
        self
    }
    /// Sets whether to stop waiting once the outcome is certain.
    pub fn fail_fast(mut self, fail_fast: bool) -> Self {
        self.fail_fast = fail_fast;
        self
    }

    /// The drift allowance of a hold of `ttl`: `ttl * drift_factor + drift_floor`, in
    /// whole milliseconds (saturating).
    pub fn drift_ms(&self, ttl: Duration) -> i64 {
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        ((ms(ttl) as f64 * self.drift_factor) as i64).saturating_add(ms(self.drift_floor))
    }

    /// [`RedlockOptions::drift_ms`] of a `ttl_ms` hold, or [`LockError::InvalidConfig`] if
    /// it leaves no validity.
    fn checked_drift_ms(&self, ttl_ms: i64) -> Result<i64, LockError> {
        let ttl = Duration::from_millis(u64::try_from(ttl_ms).unwrap_or(0));
        let drift_ms = self.drift_ms(ttl);
        if drift_ms >= ttl_ms {
            return Err(LockError::InvalidConfig(format!(
                "a {ttl_ms} ms ttl leaves no validity after {drift_ms} ms of drift"
            )));
        }
        Ok(drift_ms)
    }
}

/// The deadline of a hold of `ttl_ms` less `drift_ms` whose acquire (or extend) started
/// at `started_us` on `clock`, if it is still ahead: `None` once the time spent has eaten
/// the validity. Never overstates: the start is rounded down, the time spent up.
fn valid_until_ms(clock: &Clock, started_us: i64, ttl_ms: i64, drift_ms: i64) -> Option<i64> {
    let elapsed_ms = (clock.now_us() - started_us + 999) / 1000;
    (ttl_ms - elapsed_ms - drift_ms > 0).then(|| started_us.div_euclid(1000) + ttl_ms - drift_ms)
}

/// What every Redlock call works with, shared by the lock and its guards.
struct Nodes<B> {
    nodes: Arc<[B]>,
    key: Arc<[u8]>,
    quorum: usize,
    node_timeout: Duration,
    fail_fast: bool,
    clock: Clock,
}

impl<B> Clone for Nodes<B> {
    fn clone(&self) -> Self {
        Self {
            nodes: self.nodes.clone(),
            key: self.key.clone(),
            quorum: self.quorum,
            node_timeout: self.node_timeout,
            fail_fast: self.fail_fast,
            clock: self.clock.clone(),
        }
    }
}

impl<B: KvBackend + Clone + 'static> Nodes<B> {
    fn fan(&self) -> Fan<'_> {
        Fan {
            nodes: self.nodes.len(),
            quorum: self.quorum,
            timeout: self.node_timeout,
            clock: &self.clock,
        }
    }

    /// Runs `command` on every node (see [`Fan::run`]).
    async fn each<'a, F, Fut>(&'a self, fail_fast: bool, command: F) -> Tally
    where
        F: Fn(&'a B) -> Fut,
        Fut: Future<Output = Result<bool, LockError>>,
    {
        let nodes = &self.nodes;
        self.fan().run(fail_fast, |i| command(&nodes[i])).await
    }

    /// Compare-and-delete on every node, the ones that seemed to fail included. Returns
    /// once the outcome is certain; with fail-fast, slower nodes are released in the
    /// background.
    async fn release(&self, token: &str) -> Tally {
        self.delete(token, &[], self.fail_fast).await
    }

    /// Undoes a failed attempt: compare-and-delete on every node but those in `refused`
    /// (their `SET NX` found another client's key, so they never had ours), waiting for
    /// all of them. Never in the background: the next attempt writes the same token, and
    /// an undo arriving after it would delete the new hold.
    async fn undo(&self, token: &str, refused: &[usize]) {
        self.delete(token, refused, false).await;
    }

    /// Compare-and-delete of `token` on every node but those in `skip` (they count as
    /// answering no); with `detach`, returns once the outcome is certain and finishes
    /// the others in the background.
    async fn delete(&self, token: &str, skip: &[usize], detach: bool) -> Tally {
        let token: Arc<str> = Arc::from(token);
        let delete = |i: usize| {
            let (node, key, token) = (self.nodes[i].clone(), self.key.clone(), token.clone());
            let skip = skip.contains(&i);
            async move {
                if skip {
                    return Ok(false);
                }
                let reply = node
                    .eval(&COMPARE_AND_DELETE, &[&key], &[token.as_bytes()])
                    .await?;
                Ok(int_reply(&COMPARE_AND_DELETE, reply)? == 1)
            }
        };
        if detach {
            self.fan().run_detached(delete).await
        } else {
            self.fan().run(false, delete).await
        }
    }

    /// Releases on every node in the background: for an acquire or a guard dropped. The
    /// in-process turn, if any, passes on only once the release is done.
    fn release_in_background(&self, token: String, turn: Option<Turn>) {
        let nodes = self.clone();
        run_in_background(async move {
            nodes.release(&token).await;
            drop(turn);
        });
    }
}

/// The Redlock algorithm over N independent nodes: any [`KvBackend`]s of one type; mix
/// kinds with [`Either`](crate::Either).
///
/// - acquire: every node at once, `SET key token NX PX ttl` (after an attempt whose
///   outcome is unknown, [`ACQUIRE_OR_PTTL`], which recognises our own token), each
///   bounded by [`RedlockOptions::node_timeout`]. Acquired when a quorum of the
///   **configured** N (N/2 + 1) said yes and the validity `ttl - elapsed - drift` is
///   still positive, `elapsed` counted from this attempt's own start. Otherwise the
///   attempt is undone on **every** node that may hold it, those that seemed to fail
///   included (only nodes whose `SET NX` found another client's key are spared), and
///   retried by the lock's [`AcquirePolicy`](crate::AcquirePolicy) (jittered backoff).
/// - release: compare-and-delete on every node; extend: compare-and-PEXPIRE on every
///   node, kept when a quorum extended and the validity counted from the extend's start
///   is positive.
///
/// An attempt the caller cancels releases its partial holds in the background.
///
/// Tasks that share one `Redlock` (through [`Clone`] or an `Arc`) take turns in process,
/// first come first served, and only the task whose turn it is sends commands: tasks of
/// one process never split the nodes' votes between themselves, and a task waiting
/// behind another starts the moment that one's release is done, without polling the
/// nodes. The wait for a turn counts against the acquire's policy like refused attempts
/// (a [`try_acquire`](LockAlgorithm::try_acquire) behind a busy turn is
/// [`Attempt::Held`] at once). A hold past its validity holds nobody up: the tasks
/// behind it then go to the nodes without a turn. Separate `Redlock` objects, like
/// separate processes, compete through the nodes alone.
///
/// # Invariants and hazards
///
/// Two holders need two quorums, which share a node; so exclusion holds while every node
/// keeps its keys for their TTL and clocks advance alike. It breaks when a node that
/// granted the lock restarts without it inside the TTL (restart it only after the longest
/// TTL, or with `appendfsync always`), when one node's clock jumps ahead, and when the
/// holder pauses past [`LockGuard::valid_until_ms`](crate::LockGuard::valid_until_ms)
/// (Kleppmann): the conformance suite's `redlock::` cases reproduce each one. Only a
/// resource that checks the holder's token or fence stays safe against the last.
pub struct Redlock<B> {
    nodes: Nodes<B>,
    /// Shared by clones.
    turns: Turns,
    binding: LockBinding,
    /// The TTL as a command argument, formatted once.
    ttl_arg: Vec<u8>,
    redlock: RedlockOptions,
    drift_ms: i64,
}

/// Why a Redlock without nodes cannot lock.
const NO_NODES: &str = "redlock needs at least one node";

impl<B: KvBackend + Clone + 'static> Redlock<B> {
    /// A Redlock named `name` on `nodes` with default options. Like every lock's `new`,
    /// it cannot fail: without nodes, each acquire answers [`LockError::InvalidConfig`]
    /// ([`Redlock::with_options`] refuses them at once).
    pub fn new(nodes: Vec<B>, name: &LockName) -> Self {
        let binding = Self::bind(&nodes, name, LockOptions::default())
            .expect("the default options are valid");
        Self::build(nodes, binding, RedlockOptions::default())
    }

    /// A Redlock named `name` on `nodes` with `options` and the default
    /// [`RedlockOptions`].
    pub fn with_options(
        nodes: Vec<B>,
        name: &LockName,
        options: LockOptions,
    ) -> Result<Self, LockError> {
        Self::with_redlock_options(nodes, name, options, RedlockOptions::default())
    }

    /// A Redlock with every setting; [`LockError::InvalidConfig`] without nodes, with
    /// options out of range, or with a drift that leaves no validity.
    pub fn with_redlock_options(
        nodes: Vec<B>,
        name: &LockName,
        options: LockOptions,
        redlock: RedlockOptions,
    ) -> Result<Self, LockError> {
        let binding = Self::bind(&nodes, name, options)?;
        let ttl_ms = binding.ttl_ms;
        let invalid = |why: String| Err(LockError::InvalidConfig(why));
        if nodes.is_empty() {
            return invalid(NO_NODES.into());
        }
        if !(0.0..1.0).contains(&redlock.drift_factor) {
            return invalid(format!(
                "drift_factor must be in [0, 1), got {}",
                redlock.drift_factor
            ));
        }
        redlock.checked_drift_ms(ttl_ms)?;
        if redlock
            .node_timeout
            .is_some_and(|timeout| timeout.is_zero())
        {
            return invalid("node_timeout must be positive".into());
        }
        Ok(Self::build(nodes, binding, redlock))
    }

    /// Binds the lock to `name` with `options`, on the clock of the options or else of
    /// the first node.
    fn bind(nodes: &[B], name: &LockName, options: LockOptions) -> Result<LockBinding, LockError> {
        let clock = nodes.first().map_or_else(Clock::system, KvBackend::clock);
        LockBinding::for_algorithm("redlock", Supports::default(), name, options, clock)
    }

    /// The lock, its options already checked (and its nodes, but by [`Redlock::new`]).
    fn build(nodes: Vec<B>, binding: LockBinding, redlock: RedlockOptions) -> Self {
        let ttl = binding.options.ttl;
        let drift_ms = redlock.drift_ms(ttl);
        let node_timeout = redlock.node_timeout.unwrap_or_else(|| {
            (ttl / 100).clamp(Duration::from_millis(5), Duration::from_millis(50))
        });
        let quorum = nodes.len() / 2 + 1;
        Self {
            nodes: Nodes {
                nodes: nodes.into(),
                key: binding.key.clone(),
                quorum,
                node_timeout,
                fail_fast: redlock.fail_fast,
                clock: binding.clock.clone(),
            },
            turns: Turns::default(),
            ttl_arg: ms_arg(binding.ttl_ms),
            binding,
            redlock,
            drift_ms,
        }
    }

    /// How long an attempt waits for one node before counting it as failed: the
    /// [`RedlockOptions::node_timeout`] set, or by default 1% of the TTL within 5–50 ms.
    pub fn node_timeout(&self) -> Duration {
        self.nodes.node_timeout
    }

    /// How many nodes must grant the lock: N/2 + 1 of the configured N.
    pub fn quorum(&self) -> usize {
        self.nodes.quorum
    }

    /// The configured nodes.
    pub fn nodes(&self) -> &[B] {
        &self.nodes.nodes
    }

    /// The lock's name.
    pub fn lock_name(&self) -> &LockName {
        &self.binding.name
    }

    /// The drift allowance subtracted from every validity, in milliseconds.
    pub fn drift_ms(&self) -> i64 {
        self.drift_ms
    }

    /// One attempt with `token` on every node.
    async fn attempt(
        &self,
        token: &str,
        before: Before,
    ) -> Result<Attempt<RedlockGuard<B>>, LockError> {
        let nodes = &self.nodes;
        if nodes.nodes.is_empty() {
            return Err(LockError::InvalidConfig(NO_NODES.into()));
        }
        let ttl = &self.ttl_arg;
        let started_us = nodes.clock.now_us();
        // Dropped mid-attempt (the caller cancelled), the partial holds are undone.
        let mut undo = Undo {
            nodes,
            token,
            armed: true,
        };
        let tally = nodes
            .each(nodes.fail_fast, |node| {
                Self::take(node, &nodes.key, token, (self.binding.ttl_ms, ttl), before)
            })
            .await;
        let valid_until =
            valid_until_ms(&nodes.clock, started_us, self.binding.ttl_ms, self.drift_ms);
        undo.armed = false;
        if let Some(valid_until_ms) = valid_until.filter(|_| tally.yes() >= nodes.quorum) {
            let guard = RedlockGuard::held(
                nodes.clone(),
                token.to_owned(),
                valid_until_ms,
                tally.yes_nodes(),
                self.redlock,
            );
            return Ok(Attempt::Acquired(guard));
        }
        nodes.undo(token, &tally.no_nodes()).await;
        if tally.yes() >= nodes.quorum {
            let elapsed_us = nodes.clock.now_us().saturating_sub(started_us);
            let elapsed = Duration::from_micros(u64::try_from(elapsed_us).unwrap_or(0));
            return Ok(Attempt::ValidityLost { elapsed });
        }
        if tally.mostly_refused() {
            return Ok(Attempt::Held { holder_ttl: None });
        }
        Err(tally.no_quorum(&nodes.key))
    }

    /// Takes the lock on one node: whether it is ours now.
    async fn take(
        node: &B,
        key: &[u8],
        token: &str,
        (ttl_ms, ttl): (i64, &[u8]),
        before: Before,
    ) -> Result<bool, LockError> {
        if before == Before::Unknown {
            let reply = node
                .eval(&ACQUIRE_OR_PTTL, &[key], &[token.as_bytes(), ttl])
                .await?;
            return Ok(pair_reply(&ACQUIRE_OR_PTTL, reply)?.0 == 1);
        }
        let reply = node
            .set(key, token.as_bytes(), SetOptions::new().nx().px(ttl_ms))
            .await?;
        Ok(reply == SetReply::Applied)
    }
}

/// Releases an attempt's partial holds in the background if the attempt is dropped.
struct Undo<'a, B: KvBackend + Clone + 'static> {
    nodes: &'a Nodes<B>,
    token: &'a str,
    armed: bool,
}

impl<B: KvBackend + Clone + 'static> Drop for Undo<'_, B> {
    fn drop(&mut self) {
        if self.armed {
            self.nodes
                .release_in_background(self.token.to_owned(), None);
        }
    }
}

impl<B: KvBackend + Clone + 'static> LockAlgorithm for Redlock<B> {
    type Guard = RedlockGuard<B>;

    fn binding(&self) -> &LockBinding {
        &self.binding
    }

    async fn acquire(&self) -> Result<RedlockGuard<B>, LockError> {
        let token = crate::fresh_token();
        let (policy, clock, key) = (
            &self.binding.options.policy,
            &self.nodes.clock,
            &self.nodes.key,
        );
        let mut budget = Budget::new(policy, clock);
        let granted = self.turns.take(&mut budget, policy, clock, key).await?;
        let turn = granted.map(|granted| granted.turn);
        let guard = acquire_with_budget(self, budget, |before| self.attempt(&token, before));
        Ok(guard.await?.with_turn(turn))
    }

    async fn try_acquire(&self) -> Result<Attempt<RedlockGuard<B>>, LockError> {
        let turn = match self.turns.try_take() {
            Some(turn) => Some(turn),
            None if self.turns.holder_lapsed(&self.nodes.clock) => None,
            None => return Ok(Attempt::Held { holder_ttl: None }),
        };
        let attempt = self.attempt(&crate::fresh_token(), Before::Nothing).await?;
        Ok(match attempt {
            Attempt::Acquired(guard) => Attempt::Acquired(guard.with_turn(turn)),
            other => other,
        })
    }
}

impl<B> Clone for Redlock<B> {
    /// Another handle on the same lock, sharing its in-process turns.
    fn clone(&self) -> Self {
        Self {
            nodes: self.nodes.clone(),
            turns: self.turns.clone(),
            binding: self.binding.clone(),
            ttl_arg: self.ttl_arg.clone(),
            redlock: self.redlock,
            drift_ms: self.drift_ms,
        }
    }
}

impl<B> fmt::Debug for Redlock<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redlock")
            .field("key", &String::from_utf8_lossy(&self.nodes.key))
            .field("nodes", &self.nodes.nodes.len())
            .field("quorum", &self.nodes.quorum)
            .field("ttl_ms", &self.binding.ttl_ms)
            .field("drift_ms", &self.drift_ms)
            .field("node_timeout", &self.nodes.node_timeout)
            .finish()
    }
}
