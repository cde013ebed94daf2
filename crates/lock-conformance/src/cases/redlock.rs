//! Redlock over independent nodes ([`Redlock`]): the lock's behaviours on N nodes (odd,
//! five by default), quorum under failures, and the hazards the spec and Kleppmann
//! describe, reproduced step by step. Each case gets fresh nodes from
//! [`Harness::instances`](crate::Harness::instances). With N = 2f + 1, a quorum is q = f + 1 nodes; "a bare
//! majority" is nodes 0 to q - 1, and "the minority" the f others.

use std::time::Duration;

use lock_core::DynBackend;
use lock_core::{
    AcquirePolicy, Attempt, KvBackend, LockAlgorithm, LockError, LockGuard, LockOptions, Redlock,
    RedlockGuard, RedlockOptions, SetOptions,
};
use tokio::sync::Mutex;

use super::algorithm;
use crate::{CaseResult, Ctx, Failure, Instances, Verdict, check, check_eq};

const MS: Duration = Duration::from_millis(1);
/// How long the cases' clients give a node, and so how long a black-holed node costs an
/// acquire: generous, so that a loaded machine's slow answer is not taken for a failure.
const NODE_TIMEOUT: Duration = Duration::from_millis(500);
/// The same for the clients of the cases that black-hole no node.
const BUSY_NODE_TIMEOUT: Duration = Duration::from_secs(1);

/// N fresh nodes, their controls, and the lock name every client of a case uses.
struct Nodes<'c> {
    ctx: &'c Ctx<'c>,
    backends: Vec<DynBackend>,
    control: Box<dyn Instances>,
}

impl<'c> Nodes<'c> {
    async fn new(ctx: &'c Ctx<'c>) -> Result<Self, Failure> {
        let (backends, control) = ctx.instances().await?;
        Ok(Self {
            ctx,
            backends,
            control,
        })
    }

    fn n(&self) -> usize {
        self.backends.len()
    }

    fn quorum(&self) -> usize {
        self.n() / 2 + 1
    }

    /// Nodes 0 to q - 1.
    fn majority(&self) -> Vec<usize> {
        (0..self.quorum()).collect()
    }

    /// Nodes q to N - 1.
    fn minority(&self) -> Vec<usize> {
        (self.quorum()..self.n()).collect()
    }

    fn all(&self) -> Vec<usize> {
        (0..self.n()).collect()
    }

    /// The last node of the bare majority: the one that loses A's key.
    fn victim(&self) -> usize {
        self.quorum() - 1
    }

    fn key(&self) -> Vec<u8> {
        self.ctx.lock_name("redlock").lock_key()
    }

    /// A client: a Redlock on every node, on the nodes' clients' clock unless `options`
    /// has one.
    fn client(&self, options: LockOptions) -> Result<Redlock<DynBackend>, LockError> {
        self.client_with(
            options,
            RedlockOptions::new().node_timeout(BUSY_NODE_TIMEOUT),
        )
    }

    fn client_with(
        &self,
        mut options: LockOptions,
        redlock: RedlockOptions,
    ) -> Result<Redlock<DynBackend>, LockError> {
        if options.clock.is_none() {
            options.clock = Some(self.control.clock());
        }
        let name = self.ctx.lock_name("redlock");
        Redlock::with_redlock_options(self.backends.clone(), &name, options, redlock)
    }

    /// A client that waits for every node (no fail-fast) and tries once.
    fn patient_once(&self, ttl: Duration) -> Result<Redlock<DynBackend>, LockError> {
        let redlock = RedlockOptions::new()
            .node_timeout(NODE_TIMEOUT)
            .fail_fast(false);
        self.client_with(once(ttl), redlock)
    }

    /// The nodes whose key holds `token`.
    async fn holding(&self, token: &str) -> Result<Vec<usize>, Failure> {
        let mut held = Vec::new();
        for (i, node) in self.backends.iter().enumerate() {
            if node.get(&self.key()).await?.as_deref() == Some(token.as_bytes()) {
                held.push(i);
            }
        }
        Ok(held)
    }

    /// A rival's key on `nodes`, written directly.
    async fn rival_holds(&self, nodes: &[usize], ttl: Duration) -> Result<(), Failure> {
        let px = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        for &i in nodes {
            let options = SetOptions::new().px(px);
            self.backends[i].set(&self.key(), b"rival", options).await?;
        }
        Ok(())
    }

    async fn clear_rival(&self, nodes: &[usize]) -> Result<(), Failure> {
        for &i in nodes {
            self.backends[i].del(&[&self.key()]).await?;
        }
        Ok(())
    }

    /// A holds a bare majority: the minority is black-holed while it acquires
    /// (Kleppmann's "due to a network issue, D and E cannot be reached").
    async fn bare_majority(&self, ttl: Duration) -> Result<RedlockGuard<DynBackend>, Failure> {
        for node in self.minority() {
            self.control.blackhole(node).await?;
        }
        let a = acquired(self.patient_once(ttl)?.try_acquire().await, "A")?;
        for node in self.minority() {
            self.control.heal(node).await?;
        }
        check_eq!(a.held_nodes(), &self.majority()[..], "the nodes A holds");
        Ok(a)
    }

    /// Node `victim` loses its keys: killed and restarted without its data.
    async fn forget(&self, victim: usize) -> Result<(), Failure> {
        self.control.kill(victim).await?;
        self.control.restart(victim, false).await?;
        Ok(())
    }

    /// B tries once after A's bare majority lost a node: the expected failure, or why not.
    async fn second_holder(&self, a: RedlockGuard<DynBackend>, how: &str) -> CaseResult {
        let b = self.patient_once(Duration::from_secs(10))?;
        let at = self.control.clock().now_ms();
        match b.try_acquire().await? {
            Attempt::Acquired(b) if overlap(&a, at) => {
                let seen = format!(
                    "A held nodes {:?}; {how}; B took nodes {:?} while A's hold was valid for \
                     {} ms more: two holders",
                    a.held_nodes(),
                    b.held_nodes(),
                    a.valid_until_ms() - at
                );
                a.abandon();
                b.abandon();
                Ok(Verdict::ExpectedFailure(seen))
            }
            _ => Err(Failure(format!("B did not reach a quorum although {how}"))),
        }
    }
}

fn once(ttl: Duration) -> LockOptions {
    LockOptions::new()
        .ttl(ttl)
        .policy(AcquirePolicy::try_once())
}

fn acquired<G>(attempt: Result<Attempt<G>, LockError>, who: &str) -> Result<G, Failure> {
    match attempt? {
        Attempt::Acquired(guard) => Ok(guard),
        other => Err(Failure(format!(
            "{who} did not acquire: {}",
            match other {
                Attempt::Held { .. } => "held",
                Attempt::ValidityLost { .. } => "validity lost to latency",
                _ => "contended",
            }
        ))),
    }
}

/// Whether B's hold began while A's was still valid: both believe they hold the lock.
fn overlap<G: LockGuard>(a: &G, b_acquired_at_ms: i64) -> bool {
    b_acquired_at_ms < a.valid_until_ms()
}

/// 16 tasks × 8 rounds on one key over the nodes: never two inside at once.
pub async fn mutual_exclusion(ctx: &Ctx<'_>) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    algorithm::mutual_exclusion(|o| nodes.client(o)).await
}

/// A second client is refused while the first holds every node, and gets the lock once
/// the first releases.
pub async fn second_client_is_refused_while_held(ctx: &Ctx<'_>) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    let ttl = Duration::from_secs(10);
    let (a, b) = (nodes.patient_once(ttl)?, nodes.patient_once(ttl)?);
    let guard = acquired(a.try_acquire().await, "A")?;
    check_eq!(guard.held_nodes(), &nodes.all()[..], "A's nodes");
    check!(
        matches!(b.try_acquire().await?, Attempt::Held { .. }),
        "B was not refused while A held every node"
    );
    check_eq!(
        nodes.holding(guard.token()).await?,
        nodes.all(),
        "the nodes with A's key after B's refused attempt"
    );
    check_eq!(guard.release().await?, true, "A's release");
    acquired(b.try_acquire().await, "B after A released")?;
    Ok(Verdict::Passed)
}

/// Releasing answers true and frees the lock on every node at once.
pub async fn release_frees_the_lock(ctx: &Ctx<'_>) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    algorithm::release_frees_the_lock(|o| nodes.client(o)).await
}

/// The acquire policy gives up with a timeout.
pub async fn acquire_gives_up_with_a_timeout(ctx: &Ctx<'_>) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    algorithm::acquire_gives_up_with_a_timeout(|o| nodes.client(o)).await
}

/// A dropped guard is released on every node in the background.
pub async fn dropped_guard_is_released_in_the_background(ctx: &Ctx<'_>) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    algorithm::dropped_guard_is_released_in_the_background(|o| nodes.client(o)).await
}

/// A holder that crashes loses the lock on every node when its TTL runs out.
pub async fn expiry_frees_a_crashed_holder(ctx: &Ctx<'_>) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    let ttl = 300 * MS;
    let (a, b) = (nodes.patient_once(ttl)?, nodes.patient_once(ttl)?);
    acquired(a.try_acquire().await, "A")?.abandon();
    check!(
        b.try_acquire().await?.acquired().is_none(),
        "B acquired while the crashed A's TTL was running"
    );
    nodes.control.advance(400 * MS).await?;
    acquired(b.try_acquire().await, "B after A's TTL")?;
    Ok(Verdict::Passed)
}

/// With up to f of the 2f + 1 nodes dead (killed one at a time), the others still make
/// the quorum, and hold and release it.
pub async fn a_dead_minority_leaves_a_quorum(ctx: &Ctx<'_>) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    let lock = nodes.patient_once(Duration::from_secs(10))?;
    let mut alive = nodes.all();
    for dead in nodes.minority() {
        nodes.control.kill(dead).await?;
        alive.retain(|&n| n != dead);
        let guard = acquired(lock.try_acquire().await, &format!("with {dead} down"))?;
        check_eq!(guard.held_nodes(), &alive[..], "nodes held");
        check_eq!(guard.release().await?, true, "release with {dead} down");
    }
    Ok(Verdict::Passed)
}

/// With a majority dead, the nodes left agree but are no majority of the N configured
/// (redlock-py once counted the reachable ones): `NoQuorum`, and nothing left behind.
pub async fn a_dead_majority_is_no_quorum(ctx: &Ctx<'_>) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    for node in nodes.majority() {
        nodes.control.kill(node).await?;
    }
    let lock = nodes.patient_once(Duration::from_secs(10))?;
    let (n, q) = (nodes.n(), nodes.quorum());
    match lock.try_acquire().await {
        Err(LockError::NoQuorum {
            granted,
            required,
            nodes: configured,
            ..
        }) => {
            check_eq!((required, configured), (q, n), "quorum and nodes reported");
            check!(granted < q, "{granted} nodes granted");
        }
        other => return Err(Failure(format!("expected NoQuorum, got {other:?}"))),
    }
    for node in nodes.minority() {
        let left = nodes.backends[node].exists(&[&nodes.key()]).await?;
        check_eq!(
            left,
            0,
            "keys left on live node {node} after the failed acquire"
        );
    }
    Ok(Verdict::Passed)
}

/// An attempt that got only a minority removes its keys from every node again.
pub async fn a_partial_acquire_is_undone_on_every_node(ctx: &Ctx<'_>) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    let ttl = Duration::from_secs(10);
    nodes.rival_holds(&nodes.majority(), ttl).await?;
    let lock = nodes.patient_once(ttl)?;
    check!(
        matches!(lock.try_acquire().await?, Attempt::Held { .. }),
        "the attempt against a rival's majority was not refused"
    );
    for node in nodes.minority() {
        let left = nodes.backends[node].get(&nodes.key()).await?;
        check_eq!(left, None, "the failed attempt's key on node {node}");
    }
    Ok(Verdict::Passed)
}

/// A node that never answers costs the acquire the per-node timeout: the lock is taken on
/// the others, and released on them.
pub async fn a_black_holed_node_is_bounded_by_the_node_timeout(ctx: &Ctx<'_>) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    let last = nodes.n() - 1;
    nodes.control.blackhole(last).await?;
    let lock = nodes.patient_once(Duration::from_secs(10))?;
    let guard = acquired(lock.try_acquire().await, "A with a black-holed node")?;
    check_eq!(guard.held_nodes(), &nodes.all()[..last], "nodes held");
    check_eq!(
        guard.release().await?,
        true,
        "release with a node black-holed"
    );
    Ok(Verdict::Passed)
}

/// The validity is the TTL less the drift, counted from the attempt's start, and an
/// acquire slower than the TTL is refused and undone.
pub async fn validity_shrinks_with_elapsed_time_and_refuses_when_gone(ctx: &Ctx<'_>) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    let lock = nodes.patient_once(Duration::from_secs(10))?;
    let before = nodes.control.clock().now_ms();
    let guard = acquired(lock.try_acquire().await, "A")?;
    let after = nodes.control.clock().now_ms();
    let drift = lock.drift_ms();
    check_eq!(drift, 102, "drift of a 10 s TTL (1% + 2 ms)");
    let valid_until = guard.valid_until_ms();
    check!(
        (before + 10_000 - drift..=after + 10_000 - drift).contains(&valid_until),
        "valid until {valid_until}: not 10 s less the drift from the attempt's start ({before}..{after})"
    );
    check_eq!(guard.release().await?, true, "release");
    // A 50 ms TTL, and the last node answers only at the 500 ms node timeout.
    let last = nodes.n() - 1;
    nodes.control.blackhole(last).await?;
    let slow = nodes.patient_once(50 * MS)?;
    let attempt = slow.try_acquire().await?;
    check!(
        matches!(attempt, Attempt::ValidityLost { elapsed } if elapsed >= 50 * MS),
        "an acquire that took longer than its TTL: expected ValidityLost, got {attempt:?}"
    );
    for node in 0..last {
        let left = nodes.backends[node].exists(&[&nodes.key()]).await?;
        check_eq!(left, 0, "keys left on node {node} by the refused acquire");
    }
    Ok(Verdict::Passed)
}

/// Extend needs a majority and counts its validity from its own start.
pub async fn extend_by_majority(ctx: &Ctx<'_>) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    let lock = nodes.patient_once(Duration::from_secs(10))?;
    let mut guard = acquired(lock.try_acquire().await, "A")?;
    nodes.control.kill(0).await?;
    let before = nodes.control.clock().now_ms();
    check_eq!(
        guard.extend(Duration::from_secs(20)).await?,
        true,
        "extend with node 0 down"
    );
    check!(
        guard.valid_until_ms() >= before + 20_000 - 202,
        "extended validity not counted from the extend's start"
    );
    check_eq!(guard.held_nodes(), &nodes.all()[1..], "nodes extended");
    // Our key gone from f + 1 nodes: the others are no majority.
    for node in 0..=nodes.n() - nodes.quorum() {
        nodes.control.restart(node, false).await?;
    }
    check_eq!(
        guard.extend(Duration::from_secs(20)).await?,
        false,
        "extend with our key on a minority"
    );
    Ok(Verdict::Passed)
}

/// The spec's warning: a node of a bare majority restarts without persistence inside
/// the TTL, and a second client takes the lock.
pub async fn a_restart_without_persistence_grants_a_second_holder(ctx: &Ctx<'_>) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    let a = nodes.bare_majority(Duration::from_secs(10)).await?;
    let victim = nodes.victim();
    nodes.forget(victim).await?;
    let how = format!("node {victim} restarted empty inside A's TTL");
    nodes.second_holder(a, &how).await
}

/// The spec's rule: a crashed node stays down longer than the longest TTL, and then no
/// second client can hold while the first still does.
pub async fn staying_down_longer_than_the_ttl_prevents_a_second_holder(
    ctx: &Ctx<'_>,
) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    // Longer than the black-holed nodes' timeouts, which A's acquire waits out.
    let ttl = 1500 * MS;
    let a = nodes.bare_majority(ttl).await?;
    let victim = nodes.victim();
    nodes.control.kill(victim).await?;
    let b = nodes.patient_once(ttl)?;
    check!(
        b.try_acquire()
            .await
            .map_or(true, |r| r.acquired().is_none()),
        "B took the lock while node {victim} was down and A held the rest of its majority"
    );
    nodes.control.advance(ttl + 100 * MS).await?;
    nodes.control.restart(victim, false).await?;
    let at = nodes.control.clock().now_ms();
    acquired(b.try_acquire().await, "B once A's TTL had passed")?;
    check!(
        !overlap(&a, at),
        "B acquired while A's hold was still valid"
    );
    Ok(Verdict::Passed)
}

/// With `appendfsync always`, a restarted node still has the lock it granted.
pub async fn a_restart_with_fsynced_data_keeps_the_lock(ctx: &Ctx<'_>) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    let a = nodes.bare_majority(Duration::from_secs(10)).await?;
    let victim = nodes.victim();
    nodes.control.kill(victim).await?;
    nodes.control.restart(victim, true).await?;
    let b = nodes.patient_once(Duration::from_secs(10))?;
    check!(
        b.try_acquire().await?.acquired().is_none(),
        "B took the lock from a node restarted with its data"
    );
    check_eq!(
        nodes.holding(a.token()).await?,
        nodes.majority(),
        "A's nodes"
    );
    Ok(Verdict::Passed)
}

/// Kleppmann's first scenario: A holds a bare majority, one of its nodes' clock jumps
/// past A's TTL, and B takes that node and the minority.
pub async fn a_clock_jump_on_a_bare_majority_node_grants_a_second_holder(
    ctx: &Ctx<'_>,
) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    let a = nodes.bare_majority(Duration::from_secs(10)).await?;
    let victim = nodes.victim();
    nodes
        .control
        .jump_clock(victim, Duration::from_secs(11))
        .await?;
    let how = format!("node {victim}'s clock jumped 11 s and expired A's key there");
    nodes.second_holder(a, &how).await
}

/// A lock held on every node survives one node's clock jump.
pub async fn a_clock_jump_on_one_of_all_holding_nodes_is_survived(ctx: &Ctx<'_>) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    let lock = nodes.patient_once(Duration::from_secs(10))?;
    let a = acquired(lock.try_acquire().await, "A")?;
    nodes.control.jump_clock(0, Duration::from_secs(11)).await?;
    let b = nodes.patient_once(Duration::from_secs(10))?;
    check!(
        b.try_acquire().await?.acquired().is_none(),
        "B took a lock A held on every other node"
    );
    check_eq!(a.release().await?, true, "A's release");
    Ok(Verdict::Passed)
}

/// redsync #186: A wins a race with a bare majority (a rival had the minority); the rival
/// lets go, one of A's nodes loses its key, and B reaches a quorum.
pub async fn a_node_losing_a_bare_majority_lets_a_second_client_in(ctx: &Ctx<'_>) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    let ttl = Duration::from_secs(10);
    nodes.rival_holds(&nodes.minority(), ttl).await?;
    let a = acquired(nodes.patient_once(ttl)?.try_acquire().await, "A")?;
    check_eq!(a.held_nodes(), &nodes.majority()[..], "A's bare majority");
    nodes.clear_rival(&nodes.minority()).await?;
    let victim = nodes.victim();
    nodes.forget(victim).await?;
    let how = format!(
        "a rival held nodes {:?} when A acquired, then let go, and node {victim} lost A's key \
         (A never retried the rival's nodes)",
        nodes.minority()
    );
    nodes.second_holder(a, &how).await
}

/// A resource that checks, under its own lock, that a majority of the nodes still hold
/// the writer's token before it accepts a write (antirez: the random token can drive a
/// check-and-set).
struct TokenCheckedResource<'n, 'c> {
    nodes: &'n Nodes<'c>,
    writes: Mutex<Vec<String>>,
}

impl TokenCheckedResource<'_, '_> {
    async fn write(&self, token: &str) -> Result<bool, Failure> {
        let mut writes = self.writes.lock().await;
        let holding = self.nodes.holding(token).await?.len();
        if holding < self.nodes.backends.len() / 2 + 1 {
            return Ok(false);
        }
        writes.push(token.to_owned());
        Ok(true)
    }
}

/// Kleppmann's pause: A stops past its validity, B takes the lock, A wakes and writes.
/// Without a check both writes land; `checked` decides whether the resource checks.
async fn paused_holder(ctx: &Ctx<'_>, checked: bool) -> CaseResult {
    let nodes = Nodes::new(ctx).await?;
    let ttl = 300 * MS;
    let a = acquired(nodes.patient_once(ttl)?.try_acquire().await, "A")?;
    nodes.control.advance(ttl + 100 * MS).await?; // A's stop-the-world pause
    let b = acquired(
        nodes
            .patient_once(Duration::from_secs(10))?
            .try_acquire()
            .await,
        "B after A's TTL",
    )?;
    let resource = TokenCheckedResource {
        nodes: &nodes,
        writes: Mutex::new(Vec::new()),
    };
    let b_wrote = if checked {
        resource.write(b.token()).await?
    } else {
        true
    };
    // A wakes, unaware that its validity ended, and writes.
    let a_wrote = if checked {
        resource.write(a.token()).await?
    } else {
        true
    };
    check!(b_wrote, "the resource refused the current holder");
    if a_wrote {
        check!(
            !checked,
            "the checked resource accepted the paused holder's write"
        );
        return Ok(Verdict::ExpectedFailure(format!(
            "A paused for {} ms, past its {} ms TTL; B took the lock, and both wrote to a \
             resource that does not check: only a fenced or token-checking resource is safe",
            ttl.as_millis() + 100,
            ttl.as_millis()
        )));
    }
    check_eq!(b.release().await?, true, "B's release");
    Ok(Verdict::Passed)
}

/// Kleppmann's pause against a resource that takes any write: both holders write.
pub async fn a_paused_holder_overlaps_the_next(ctx: &Ctx<'_>) -> CaseResult {
    paused_holder(ctx, false).await
}

/// The same pause against a resource that checks the token with a majority of the nodes:
/// the paused holder's write is refused.
pub async fn a_token_checking_resource_refuses_the_paused_holder(ctx: &Ctx<'_>) -> CaseResult {
    paused_holder(ctx, true).await
}
