//! The API as a new user meets it: one constructor style for every lock, settings that
//! can be read back, the replica set's primary, fault rules that do not pile up, and a
//! lease's renewal period.

use std::time::Duration;

use lock_core::{
    CountingBackend, ErrorKind, FairLock, FencedLock, KvBackend, Lease, LeaseOptions, LegacyLock,
    LockAlgorithm, LockError, LockGuard, LockOptions, LockOwner, NamedLock, Redlock,
    RedlockOptions, ReentrantLock, ScriptedLock, TokenLock, Versioned, lock_name,
};
use lock_memory::{MemoryBackend, MemoryInstances, MemoryReplicaSet};

/// Every lock is built the same way: `new` takes a backend (or nodes) and a name and
/// cannot fail; `with_options` checks its options. A literal name needs no `?` either.
#[tokio::test(start_paused = true)]
async fn every_lock_is_built_alike_from_a_literal() {
    let b = MemoryBackend::new();
    let name = lock_name!("jobs");
    let _: TokenLock<_> = TokenLock::new(b.clone(), &name);
    let _: FencedLock<_> = FencedLock::new(b.clone(), &name);
    let _: FairLock<_> = FairLock::new(b.clone(), &name);
    let _: LegacyLock<_> = LegacyLock::new(b.clone(), &name);
    let _: ScriptedLock<_> = ScriptedLock::new(b.clone(), &name);
    let _: ReentrantLock<_> = ReentrantLock::new(b.clone(), &name, LockOwner::new());
    let _: Versioned<_> = Versioned::new(b.clone(), &name);
    let redlock: Redlock<_> = Redlock::new(MemoryInstances::new(3).nodes(), &name);
    let guard = redlock.acquire().await.unwrap();
    assert!(guard.release().await.unwrap());

    let zero = LockOptions::new().ttl(Duration::ZERO);
    assert!(matches!(
        TokenLock::with_options(b.clone(), &name, zero.clone()),
        Err(LockError::InvalidConfig(_))
    ));
    assert!(matches!(
        Redlock::with_options(MemoryInstances::new(3).nodes(), &name, zero),
        Err(LockError::InvalidConfig(_))
    ));
}

/// A Redlock without nodes is refused with a typed error: at once by `with_options`, at
/// the first acquire when built by `new`.
#[tokio::test(start_paused = true)]
async fn a_redlock_without_nodes_is_an_invalid_config() {
    let none: Vec<MemoryBackend> = Vec::new();
    assert!(matches!(
        Redlock::with_options(none.clone(), &lock_name!("x"), LockOptions::new()),
        Err(LockError::InvalidConfig(_))
    ));
    let lock = Redlock::new(none, &lock_name!("x"));
    assert!(matches!(
        lock.acquire().await,
        Err(LockError::InvalidConfig(why)) if why.contains("at least one node")
    ));
    assert!(matches!(
        lock.try_acquire().await,
        Err(LockError::InvalidConfig(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_redlocks_node_timeout_can_be_read_back() {
    let nodes = MemoryInstances::new(3).nodes();
    let name = lock_name!("x");
    let by_default = Redlock::with_options(
        nodes.clone(),
        &name,
        LockOptions::new().ttl(Duration::from_secs(2)),
    )
    .unwrap();
    assert_eq!(
        by_default.node_timeout(),
        Duration::from_millis(20),
        "1% of 2 s"
    );
    let short = Redlock::with_options(
        nodes.clone(),
        &name,
        LockOptions::new().ttl(Duration::from_millis(100)),
    )
    .unwrap();
    assert_eq!(
        short.node_timeout(),
        Duration::from_millis(5),
        "at least 5 ms"
    );
    let set = Redlock::with_redlock_options(
        nodes,
        &name,
        LockOptions::new(),
        RedlockOptions::new().node_timeout(Duration::from_millis(300)),
    )
    .unwrap();
    assert_eq!(set.node_timeout(), Duration::from_millis(300));
}

#[tokio::test(start_paused = true)]
async fn the_replica_sets_primary_backend_follows_failovers() {
    let set = MemoryReplicaSet::new(2);
    let first = set.primary().unwrap();
    set.client()
        .set(b"k", b"v", Default::default())
        .await
        .unwrap();
    let primary = set.primary_node().unwrap();
    assert_eq!(primary.get(b"k").await.unwrap(), Some(b"v".to_vec()));
    set.crash_primary();
    let promoted = set.promote().unwrap();
    assert_ne!(promoted, first);
    assert_eq!(set.primary(), Some(promoted));
    primary.flush();
    let now = set.primary_node().unwrap();
    now.set(b"other", b"1", Default::default()).await.unwrap();
    assert_eq!(
        set.node(promoted).get(b"other").await.unwrap(),
        Some(b"1".to_vec())
    );
}

/// Arming the same fault again right after itself adds to its count: a loop that arms
/// faster than commands consume them holds one rule, and every armed fault still fires.
#[tokio::test(start_paused = true)]
async fn fault_rules_armed_in_a_loop_do_not_pile_up() {
    let backend = MemoryBackend::new();
    for _ in 0..10_000 {
        backend.faults().lose_replies(Some("EVALSHA"), 1);
    }
    assert_eq!(backend.faults().pending(), 1);
    backend.faults().fail_next(1, ErrorKind::Connection);
    assert_eq!(backend.faults().pending(), 2, "a different rule queues");
    assert!(backend.get(b"k").await.is_err(), "the fail_next rule");
    backend.faults().clear();
    assert_eq!(backend.faults().pending(), 0);
}

/// A lease renews at the period asked for.
#[tokio::test(start_paused = true)]
async fn a_lease_renews_every_period_asked_for() {
    let backend = CountingBackend::new(MemoryBackend::new());
    let lock = TokenLock::new(backend.clone(), &lock_name!("lease"));
    let guard = lock.acquire().await.unwrap();
    let before = backend.commands();
    let lease = Lease::start(
        guard,
        LeaseOptions::new(Duration::from_secs(30)).renew_every(Duration::from_secs(1)),
    );
    tokio::time::sleep(Duration::from_millis(5_500)).await;
    assert_eq!(backend.commands() - before, 5, "one renewal a second");
    assert!(lease.release().await.unwrap());
}

/// Owned-argument commands give `'static` futures: stored, sent to another task, and cut
/// short by a timeout, with their arguments written inline.
#[tokio::test(start_paused = true)]
async fn owned_command_futures_can_be_stored_and_timed_out() {
    use lock_core::{OwnedCommands, Script, SetOptions, SetReply, Value};
    let backend = MemoryBackend::new();
    let token = String::from("tok");
    let stored = backend.set_owned("lock", token.as_bytes(), SetOptions::new().nx().px(1_000));
    let spawned = tokio::spawn(stored);
    assert_eq!(spawned.await.unwrap().unwrap(), SetReply::Applied);
    assert_eq!(
        backend.get_owned("lock").await.unwrap(),
        Some(b"tok".to_vec())
    );
    let holds = Script::new("holds", "…").with_native(|store, keys, args| {
        Ok(Value::Int(i64::from(store.value_is(keys[0], args[0])?)))
    });
    let pending = backend.eval_owned(&holds, ["lock"], [token.as_bytes()]);
    assert_eq!(pending.await.unwrap(), Value::Int(1));
    backend
        .faults()
        .set_latency(std::time::Duration::from_secs(5));
    let slow = backend.del_owned(["lock"]);
    let cut = tokio::time::timeout(std::time::Duration::from_secs(1), slow).await;
    assert!(cut.is_err(), "the timeout dropped the stored future");
    backend.faults().clear();
    assert_eq!(backend.del_owned(vec![b"lock".to_vec()]).await.unwrap(), 1);
}
