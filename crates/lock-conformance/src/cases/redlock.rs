//! Redlock over independent nodes ([`Redlock`]): the lock's behaviours on five nodes,
//! quorum under failures, and the hazards the spec and Kleppmann describe, reproduced
//! step by step. Each case gets fresh nodes from [`Harness::instances`].

use std::time::Duration;

use lock_core::{
    AcquirePolicy, Attempt, KvBackend, LockAlgorithm, LockError, LockGuard, LockOptions, Redlock,
    RedlockGuard, RedlockOptions, SetOptions,
};
use tokio::sync::Mutex;

use super::algorithm;
use crate::{CaseResult, Ctx, Failure, Harness, Instances, Verdict, check, check_eq};

const MS: Duration = Duration::from_millis(1);
/// How long the cases' clients give a node, and so how long a black-holed node costs an
/// acquire: generous, so that a loaded machine's slow answer is not taken for a failure.
const NODE_TIMEOUT: Duration = Duration::from_millis(500);
/// The same for the clients of the cases that black-hole no node.
const BUSY_NODE_TIMEOUT: Duration = Duration::from_secs(1);

/// N fresh nodes, their controls, and the lock name every client of a case uses.
struct Nodes<'c, H: Harness> {
    ctx: &'c Ctx<'c, H>,
    backends: Vec<H::Backend>,
    control: Box<dyn Instances>,
}

impl<'c, H: Harness> Nodes<'c, H> {
    async fn new(ctx: &'c Ctx<'c, H>, n: usize) -> Result<Self, Failure> {
        let (backends, control) = ctx.instances(n).await?;
        Ok(Self {
            ctx,
            backends,
            control,
        })
    }

    fn key(&self) -> Vec<u8> {
        self.ctx.lock_name("redlock").lock_key()
    }

    /// A client: a Redlock on every node, on the nodes' clients' clock unless `options`
    /// has one.
    fn client(&self, options: LockOptions) -> Result<Redlock<H::Backend>, LockError> {
        self.client_with(
            options,
            RedlockOptions::new().node_timeout(BUSY_NODE_TIMEOUT),
        )
    }

    fn client_with(
        &self,
        mut options: LockOptions,
        redlock: RedlockOptions,
    ) -> Result<Redlock<H::Backend>, LockError> {
        if options.clock.is_none() {
            options.clock = Some(self.control.clock());
        }
        let name = self.ctx.lock_name("redlock");
        Redlock::with_redlock_options(self.backends.clone(), &name, options, redlock)
    }

    /// A client that waits for every node (no fail-fast) and tries once.
    fn patient_once(&self, ttl: Duration) -> Result<Redlock<H::Backend>, LockError> {
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

    /// A holds a bare majority, nodes 0-2 of 5: nodes 3 and 4 are black-holed while it
    /// acquires (Kleppmann's "due to a network issue, D and E cannot be reached").
    async fn bare_majority(&self, ttl: Duration) -> Result<RedlockGuard<H::Backend>, Failure> {
        self.control.blackhole(3).await?;
        self.control.blackhole(4).await?;
        let a = acquired(self.patient_once(ttl)?.try_acquire().await, "A")?;
        self.control.heal(3).await?;
        self.control.heal(4).await?;
        check_eq!(a.held_nodes(), &[0, 1, 2][..], "the nodes A holds");
        Ok(a)
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
                _ => "contended",
            }
        ))),
    }
}

/// Whether B's hold began while A's was still valid: both believe they hold the lock.
fn overlap<G: LockGuard>(a: &G, b_acquired_at_ms: i64) -> bool {
    b_acquired_at_ms < a.valid_until_ms()
}

/// 16 tasks × 8 rounds on one key over five nodes: never two inside at once.
pub async fn mutual_exclusion<H: Harness>(ctx: &Ctx<'_, H>) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
    algorithm::mutual_exclusion(|o| nodes.client(o)).await
}

/// A second client is refused while the first holds a majority, and gets it once the
/// first releases.
pub async fn second_client_is_refused_while_held<H: Harness>(ctx: &Ctx<'_, H>) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
    let ttl = Duration::from_secs(10);
    let (a, b) = (nodes.patient_once(ttl)?, nodes.patient_once(ttl)?);
    let guard = acquired(a.try_acquire().await, "A")?;
    check_eq!(guard.held_nodes(), &[0, 1, 2, 3, 4][..], "A's nodes");
    check!(
        matches!(b.try_acquire().await?, Attempt::Held { .. }),
        "B was not refused while A held every node"
    );
    check!(
        nodes.holding(guard.token()).await?.len() == 5,
        "B's refused attempt removed A's key from a node"
    );
    check_eq!(guard.release().await?, true, "A's release");
    acquired(b.try_acquire().await, "B after A released")?;
    Ok(Verdict::Passed)
}

/// Releasing answers true and frees the lock on every node at once.
pub async fn release_frees_the_lock<H: Harness>(ctx: &Ctx<'_, H>) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
    algorithm::release_frees_the_lock(|o| nodes.client(o)).await
}

/// The acquire policy gives up with a timeout.
pub async fn acquire_gives_up_with_a_timeout<H: Harness>(ctx: &Ctx<'_, H>) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
    algorithm::acquire_gives_up_with_a_timeout(|o| nodes.client(o)).await
}

/// A dropped guard is released on every node in the background.
pub async fn dropped_guard_is_released_in_the_background<H: Harness>(
    ctx: &Ctx<'_, H>,
) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
    algorithm::dropped_guard_is_released_in_the_background(|o| nodes.client(o)).await
}

/// A holder that crashes loses the lock on every node when its TTL runs out.
pub async fn expiry_frees_a_crashed_holder<H: Harness>(ctx: &Ctx<'_, H>) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
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

/// With one and then two of five nodes dead, the other three still make the quorum.
pub async fn one_or_two_of_five_down_still_make_a_quorum<H: Harness>(
    ctx: &Ctx<'_, H>,
) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
    let lock = nodes.patient_once(Duration::from_secs(10))?;
    nodes.control.kill(1).await?;
    let guard = acquired(lock.try_acquire().await, "with node 1 down")?;
    check_eq!(guard.held_nodes(), &[0, 2, 3, 4][..], "nodes held");
    check_eq!(guard.release().await?, true, "release with node 1 down");
    nodes.control.kill(3).await?;
    let guard = acquired(lock.try_acquire().await, "with nodes 1 and 3 down")?;
    check_eq!(guard.held_nodes(), &[0, 2, 4][..], "nodes held");
    check_eq!(guard.release().await?, true, "release with two nodes down");
    Ok(Verdict::Passed)
}

/// With three of five dead the two left agree, but two is no majority of the five
/// configured (redlock-py once counted the reachable ones): `NoQuorum`, nothing left.
pub async fn three_of_five_down_is_no_quorum<H: Harness>(ctx: &Ctx<'_, H>) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
    for node in [0, 1, 2] {
        nodes.control.kill(node).await?;
    }
    let lock = nodes.patient_once(Duration::from_secs(10))?;
    match lock.try_acquire().await {
        Err(LockError::NoQuorum {
            granted,
            required: 3,
            nodes: 5,
            ..
        }) => check!(granted <= 2, "{granted} nodes granted"),
        other => return Err(Failure(format!("expected NoQuorum, got {other:?}"))),
    }
    for node in [3, 4] {
        let left = nodes.backends[node].exists(&[&nodes.key()]).await?;
        check_eq!(left, 0, "keys left on a live node after the failed acquire");
    }
    Ok(Verdict::Passed)
}

/// An attempt that got only a minority removes its keys from every node again.
pub async fn a_partial_acquire_is_undone_on_every_node<H: Harness>(ctx: &Ctx<'_, H>) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
    nodes
        .rival_holds(&[0, 1, 2], Duration::from_secs(10))
        .await?;
    let lock = nodes.patient_once(Duration::from_secs(10))?;
    check!(
        matches!(lock.try_acquire().await?, Attempt::Held { .. }),
        "the attempt against a rival's majority was not refused"
    );
    for node in [3, 4] {
        let left = nodes.backends[node].get(&nodes.key()).await?;
        check_eq!(left, None, "the failed attempt's key on node {node}");
    }
    Ok(Verdict::Passed)
}

/// A node that never answers costs the acquire the per-node timeout: the lock is taken on
/// the other four, and released on them.
pub async fn a_black_holed_node_is_bounded_by_the_node_timeout<H: Harness>(
    ctx: &Ctx<'_, H>,
) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
    nodes.control.blackhole(4).await?;
    let guard = acquired(
        nodes
            .patient_once(Duration::from_secs(10))?
            .try_acquire()
            .await,
        "A with node 4 black-holed",
    )?;
    check_eq!(guard.held_nodes(), &[0, 1, 2, 3][..], "nodes held");
    check_eq!(
        guard.release().await?,
        true,
        "release with node 4 black-holed"
    );
    Ok(Verdict::Passed)
}

/// The validity is the TTL less the drift, counted from the attempt's start, and an
/// acquire slower than the TTL is refused and undone.
pub async fn validity_shrinks_with_elapsed_time_and_refuses_when_gone<H: Harness>(
    ctx: &Ctx<'_, H>,
) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
    let ttl = Duration::from_secs(10);
    let lock = nodes.patient_once(ttl)?;
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
    // A 50 ms TTL, and node 4 answers only at the 500 ms node timeout: no validity left.
    nodes.control.blackhole(4).await?;
    let slow = nodes.patient_once(50 * MS)?;
    check!(
        matches!(slow.try_acquire().await?, Attempt::Held { .. }),
        "an acquire that took longer than its TTL was granted"
    );
    for node in 0..4 {
        let left = nodes.backends[node].exists(&[&nodes.key()]).await?;
        check_eq!(left, 0, "keys left on node {node} by the refused acquire");
    }
    Ok(Verdict::Passed)
}

/// Extend needs a majority and counts its validity from its own start.
pub async fn extend_by_majority<H: Harness>(ctx: &Ctx<'_, H>) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
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
    check_eq!(guard.held_nodes(), &[1, 2, 3, 4][..], "nodes extended");
    for node in [1, 2] {
        nodes.control.restart(node, false).await?;
    }
    nodes.control.restart(0, false).await?;
    check_eq!(
        guard.extend(Duration::from_secs(20)).await?,
        false,
        "extend with our key left on 2 of 5 nodes"
    );
    Ok(Verdict::Passed)
}

/// The spec's warning: a node that granted a bare majority and restarts without
/// persistence inside the TTL lets a second client take the lock.
pub async fn a_restart_without_persistence_grants_a_second_holder<H: Harness>(
    ctx: &Ctx<'_, H>,
) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
    let a = nodes.bare_majority(Duration::from_secs(10)).await?;
    nodes.control.kill(2).await?;
    nodes.control.restart(2, false).await?;
    let b = nodes.patient_once(Duration::from_secs(10))?;
    let at = nodes.control.clock().now_ms();
    match b.try_acquire().await? {
        Attempt::Acquired(b) if overlap(&a, at) => {
            let seen = format!(
                "A held nodes 0-2 (3 and 4 unreachable); node 2 restarted empty inside A's TTL, \
                 and B took nodes {:?} while A's hold was valid for {} ms more: two holders",
                b.held_nodes(),
                a.valid_until_ms() - at
            );
            a.abandon();
            b.abandon();
            Ok(Verdict::ExpectedFailure(seen))
        }
        _ => Err(Failure(
            "B did not get the lock after node 2 forgot it: did the restart keep its data?".into(),
        )),
    }
}

/// The spec's rule: a crashed node stays down longer than the longest TTL, and then no
/// second client can hold while the first still does.
pub async fn staying_down_longer_than_the_ttl_prevents_a_second_holder<H: Harness>(
    ctx: &Ctx<'_, H>,
) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
    // Longer than the black-holed nodes' timeouts, which A's acquire waits out.
    let ttl = 1500 * MS;
    let a = nodes.bare_majority(ttl).await?;
    nodes.control.kill(2).await?;
    let b = nodes.patient_once(ttl)?;
    check!(
        b.try_acquire()
            .await
            .map_or(true, |r| r.acquired().is_none()),
        "B took the lock while node 2 was down and A held nodes 0 and 1"
    );
    nodes.control.advance(ttl + 100 * MS).await?;
    nodes.control.restart(2, false).await?;
    let at = nodes.control.clock().now_ms();
    acquired(b.try_acquire().await, "B once A's TTL had passed")?;
    check!(
        !overlap(&a, at),
        "B acquired while A's hold was still valid"
    );
    Ok(Verdict::Passed)
}

/// With `appendfsync always`, a restarted node still has the lock it granted.
pub async fn a_restart_with_fsynced_data_keeps_the_lock<H: Harness>(
    ctx: &Ctx<'_, H>,
) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
    let a = nodes.bare_majority(Duration::from_secs(10)).await?;
    nodes.control.kill(2).await?;
    nodes.control.restart(2, true).await?;
    let b = nodes.patient_once(Duration::from_secs(10))?;
    check!(
        b.try_acquire().await?.acquired().is_none(),
        "B took the lock from a node restarted with its data"
    );
    check_eq!(nodes.holding(a.token()).await?, vec![0, 1, 2], "A's nodes");
    Ok(Verdict::Passed)
}

/// Kleppmann's first scenario: A holds nodes 0-2, node 2's clock jumps past A's TTL, and
/// B takes nodes 2-4.
pub async fn a_clock_jump_on_a_bare_majority_node_grants_a_second_holder<H: Harness>(
    ctx: &Ctx<'_, H>,
) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
    let a = nodes.bare_majority(Duration::from_secs(10)).await?;
    nodes.control.jump_clock(2, Duration::from_secs(11)).await?;
    let b = nodes.patient_once(Duration::from_secs(10))?;
    let at = nodes.control.clock().now_ms();
    match b.try_acquire().await? {
        Attempt::Acquired(b) if overlap(&a, at) => {
            let seen = format!(
                "A held nodes 0-2; node 2's clock jumped 11 s and expired A's key there; \
                 B took nodes {:?} with A's hold valid for {} ms more: two holders",
                b.held_nodes(),
                a.valid_until_ms() - at
            );
            a.abandon();
            b.abandon();
            Ok(Verdict::ExpectedFailure(seen))
        }
        _ => Err(Failure(
            "B did not get the lock after node 2's clock jumped past A's TTL".into(),
        )),
    }
}

/// A lock held on every node survives one node's clock jump.
pub async fn a_clock_jump_on_one_of_five_holding_nodes_is_survived<H: Harness>(
    ctx: &Ctx<'_, H>,
) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
    let a = acquired(
        nodes
            .patient_once(Duration::from_secs(10))?
            .try_acquire()
            .await,
        "A",
    )?;
    nodes.control.jump_clock(2, Duration::from_secs(11)).await?;
    let b = nodes.patient_once(Duration::from_secs(10))?;
    check!(
        b.try_acquire().await?.acquired().is_none(),
        "B took a lock A held on four nodes"
    );
    check_eq!(a.release().await?, true, "A's release");
    Ok(Verdict::Passed)
}

/// redsync #186: A wins a race with a bare majority (a rival had nodes 3 and 4); the
/// rival lets go, node 2 loses A's key, and B reaches a quorum with nodes 2-4.
pub async fn a_node_losing_a_bare_majority_lets_a_second_client_in<H: Harness>(
    ctx: &Ctx<'_, H>,
) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
    nodes.rival_holds(&[3, 4], Duration::from_secs(10)).await?;
    let a = acquired(
        nodes
            .patient_once(Duration::from_secs(10))?
            .try_acquire()
            .await,
        "A",
    )?;
    check_eq!(a.held_nodes(), &[0, 1, 2][..], "A's bare majority");
    nodes.clear_rival(&[3, 4]).await?;
    nodes.control.kill(2).await?;
    nodes.control.restart(2, false).await?;
    let b = nodes.patient_once(Duration::from_secs(10))?;
    let at = nodes.control.clock().now_ms();
    match b.try_acquire().await? {
        Attempt::Acquired(b) if overlap(&a, at) => {
            let seen = format!(
                "A won nodes 0-2 while a rival had 3 and 4; the rival let go, node 2 lost A's key, \
                 and B took nodes {:?}: two holders (A never retried 3 and 4)",
                b.held_nodes()
            );
            a.abandon();
            b.abandon();
            Ok(Verdict::ExpectedFailure(seen))
        }
        _ => Err(Failure(
            "B did not reach a quorum after node 2 lost A's key".into(),
        )),
    }
}

/// A resource that checks, under its own lock, that a majority of the nodes still hold
/// the writer's token before it accepts a write (antirez: the random token can drive a
/// check-and-set).
struct TokenCheckedResource<'n, 'c, H: Harness> {
    nodes: &'n Nodes<'c, H>,
    writes: Mutex<Vec<String>>,
}

impl<H: Harness> TokenCheckedResource<'_, '_, H> {
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
async fn paused_holder<H: Harness>(ctx: &Ctx<'_, H>, checked: bool) -> CaseResult {
    let nodes = Nodes::new(ctx, 5).await?;
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
pub async fn a_paused_holder_overlaps_the_next<H: Harness>(ctx: &Ctx<'_, H>) -> CaseResult {
    paused_holder(ctx, false).await
}

/// The same pause against a resource that checks the token with a majority of the nodes:
/// the paused holder's write is refused.
pub async fn a_token_checking_resource_refuses_the_paused_holder<H: Harness>(
    ctx: &Ctx<'_, H>,
) -> CaseResult {
    paused_holder(ctx, true).await
}
