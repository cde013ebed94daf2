//! The in-memory replica set: replication as links deliver it, `WAIT` on virtual time,
//! failovers that lose what was not replicated, and the locks' replication option.

use std::time::Duration;

use lock_core::{
    FencedLock, KvBackend, LockAlgorithm, LockError, LockGuard, LockName, LockOptions, LockOwner,
    NamedLock, ReentrantLock, Replication, SetOptions, TokenLock, scripts::COMPARE_AND_DELETE,
};
use lock_memory::{Link, MemoryReplicaSet, Role};

fn name() -> LockName {
    LockName::new("orders:42").unwrap()
}

fn wait_for_one(timeout_ms: u64) -> Replication {
    Replication::new(1, Duration::from_millis(timeout_ms))
}

#[tokio::test(start_paused = true)]
async fn writes_reach_replicas_as_their_links_deliver_them() {
    let set = MemoryReplicaSet::new(2);
    let client = set.client();
    set.set_link(
        1,
        Link::Flowing {
            delay: Duration::from_millis(100),
        },
    );
    set.set_link(2, Link::Paused);
    client.set(b"k", b"v", SetOptions::new()).await.unwrap();
    assert_eq!(set.primary_offset(), 1);
    assert_eq!(
        set.node(1).get(b"k").await.unwrap(),
        None,
        "not arrived yet"
    );
    set.advance(Duration::from_millis(100));
    assert_eq!(set.node(1).get(b"k").await.unwrap(), Some(b"v".to_vec()));
    assert_eq!(set.node(2).get(b"k").await.unwrap(), None, "paused");
    set.set_link(
        2,
        Link::Flowing {
            delay: Duration::ZERO,
        },
    );
    assert_eq!(set.node(2).get(b"k").await.unwrap(), Some(b"v".to_vec()));
    assert_eq!(
        set.roles()[1],
        Role::Replica {
            link: Link::Flowing {
                delay: Duration::from_millis(100)
            },
            applied: 1
        }
    );
}

#[tokio::test(start_paused = true)]
async fn expiry_travels_as_an_absolute_time() {
    let set = MemoryReplicaSet::new(1);
    let client = set.client();
    set.set_link(
        1,
        Link::Flowing {
            delay: Duration::from_millis(400),
        },
    );
    client
        .set(b"k", b"v", SetOptions::new().px(1000))
        .await
        .unwrap();
    set.advance(Duration::from_millis(500));
    assert_eq!(
        set.node(1).pttl(b"k").await.unwrap(),
        500,
        "the primary's deadline"
    );
    set.advance(Duration::from_millis(501));
    assert_eq!(set.node(1).get(b"k").await.unwrap(), None);
}

#[tokio::test(start_paused = true)]
async fn wait_counts_the_replicas_that_have_the_write() {
    let set = MemoryReplicaSet::new(2);
    let client = set.client();
    let write = |client: lock_memory::ReplicaSetClient, timeout_ms| async move {
        let start = tokio::time::Instant::now();
        let replicated = client
            .eval_replicated(
                &COMPARE_AND_DELETE,
                &[b"absent"],
                &[b"x"],
                &Replication::new(2, Duration::from_millis(timeout_ms)),
            )
            .await
            .unwrap();
        (replicated.acknowledged, start.elapsed())
    };
    // A connection that wrote nothing: every connected replica has all of it.
    assert_eq!(write(client.clone(), 500).await, (2, Duration::ZERO));
    // A real write: both replicas at once.
    let set_one = |client: lock_memory::ReplicaSetClient| async move {
        client
            .eval_replicated(
                &lock_core::scripts::ACQUIRE_OR_PTTL,
                &[b"lock"],
                &[b"token", b"30000"],
                &Replication::new(2, Duration::from_millis(300)),
            )
            .await
            .unwrap()
    };
    assert_eq!(set_one(client.clone()).await.acknowledged, 2);
    client.del(&[b"lock"]).await.unwrap();
    // One replica 100 ms behind: WAIT returns when it catches up.
    set.set_link(
        2,
        Link::Flowing {
            delay: Duration::from_millis(100),
        },
    );
    let start = tokio::time::Instant::now();
    assert_eq!(set_one(client.clone()).await.acknowledged, 2);
    assert_eq!(start.elapsed(), Duration::from_millis(100));
    client.del(&[b"lock"]).await.unwrap();
    // One paused, one down: the timeout passes and nobody counts.
    set.set_link(1, Link::Paused);
    set.set_link(2, Link::Down);
    let start = tokio::time::Instant::now();
    assert_eq!(set_one(client.clone()).await.acknowledged, 0);
    assert_eq!(start.elapsed(), Duration::from_millis(300));
}

#[tokio::test(start_paused = true)]
async fn a_failover_loses_the_lock_the_replica_never_got() {
    let set = MemoryReplicaSet::new(1);
    set.pause_all();
    let first = TokenLock::new(set.client(), &name())
        .acquire()
        .await
        .unwrap();
    assert_eq!(set.fail_over(), Some(1));
    let second = TokenLock::new(set.client(), &name())
        .try_acquire()
        .await
        .unwrap()
        .acquired()
        .expect("the lock was lost with the old primary");
    assert_ne!(first.token(), second.token());
    // The first holder's release finds someone else's token and touches nothing.
    assert!(!first.release().await.unwrap());
    assert_eq!(
        set.client().get(&name().lock_key()).await.unwrap(),
        Some(second.token().as_bytes().to_vec())
    );
}

#[tokio::test(start_paused = true)]
async fn a_replicated_lock_survives_the_failover() {
    let set = MemoryReplicaSet::new(1);
    let first = TokenLock::new(set.client(), &name())
        .acquire()
        .await
        .unwrap();
    set.fail_over();
    let second = TokenLock::new(set.client(), &name())
        .try_acquire()
        .await
        .unwrap();
    assert!(second.acquired().is_none(), "the new primary has the lock");
    assert!(first.release().await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn waiting_for_replicas_refuses_an_acquire_a_failover_would_lose() {
    let set = MemoryReplicaSet::new(1);
    let options = LockOptions::new().replication(wait_for_one(200));
    let lock = TokenLock::with_options(set.client(), &name(), options.clone()).unwrap();
    set.pause_all();
    let refused = lock.acquire().await.unwrap_err();
    assert!(
        matches!(
            refused,
            LockError::NotReplicated {
                acknowledged: 0,
                required: 1,
                ..
            }
        ),
        "{refused:?}"
    );
    assert_eq!(
        set.client().exists(&[&name().lock_key()]).await.unwrap(),
        0,
        "undone"
    );
    set.resume_all();
    let guard = lock.acquire().await.unwrap();
    assert_eq!(set.node(1).exists(&[&name().lock_key()]).await.unwrap(), 1);
    // An extend that does not reach the replica is reported, and stands on the primary.
    let mut guard = guard;
    set.pause_all();
    let extended = guard.extend(Duration::from_secs(60)).await.unwrap_err();
    assert!(
        matches!(extended, LockError::NotReplicated { .. }),
        "{extended:?}"
    );
    assert!(set.client().pttl(&name().lock_key()).await.unwrap() > 50_000);
}

#[tokio::test(start_paused = true)]
async fn fenced_and_reentrant_locks_wait_for_replicas_too() {
    let set = MemoryReplicaSet::new(1);
    let options = LockOptions::new().replication(wait_for_one(100));
    set.pause_all();
    let fenced = FencedLock::with_options(set.client(), &name(), options.clone()).unwrap();
    assert!(matches!(
        fenced.acquire().await.unwrap_err(),
        LockError::NotReplicated { .. }
    ));
    let owner = LockOwner::new();
    let reentrant =
        ReentrantLock::with_options(set.client(), &name(), owner, options.clone()).unwrap();
    assert!(matches!(
        reentrant.acquire().await.unwrap_err(),
        LockError::NotReplicated { .. }
    ));
    assert_eq!(set.client().exists(&[&name().lock_key()]).await.unwrap(), 0);
    set.resume_all();
    let held = reentrant.acquire().await.unwrap();
    assert_eq!(held.depth(), 1);
}

#[tokio::test(start_paused = true)]
async fn algorithms_without_replication_support_refuse_the_option() {
    let set = MemoryReplicaSet::new(1);
    let options = LockOptions::new().replication(wait_for_one(100));
    let refused = lock_core::FairLock::with_options(set.client(), &name(), options).unwrap_err();
    assert!(
        matches!(refused, LockError::InvalidConfig(_)),
        "{refused:?}"
    );
    let zero = LockOptions::new().replication(Replication::new(1, Duration::ZERO));
    assert!(TokenLock::with_options(set.client(), &name(), zero).is_err());
}

#[tokio::test(start_paused = true)]
async fn fence_tokens_go_backwards_after_a_failover() {
    let set = MemoryReplicaSet::new(1);
    let lock = FencedLock::new(set.client(), &name());
    let first = lock.acquire().await.unwrap();
    let first_fence = first.fence();
    assert!(first.release().await.unwrap());
    set.pause_all();
    let second = lock.acquire().await.unwrap();
    assert_eq!(second.fence(), first_fence + 1);
    set.fail_over();
    let third = lock.acquire().await.unwrap();
    assert_eq!(
        third.fence(),
        second.fence(),
        "the counter went back with the failover"
    );
}

#[tokio::test(start_paused = true)]
async fn between_the_crash_and_the_promotion_there_is_no_primary() {
    let set = MemoryReplicaSet::new(2);
    let client = set.client();
    client.set(b"k", b"v", SetOptions::new()).await.unwrap();
    set.set_link(2, Link::Paused);
    client.set(b"k", b"w", SetOptions::new()).await.unwrap();
    set.crash_primary();
    assert_eq!(set.primary(), None);
    let error = client.get(b"k").await.unwrap_err();
    assert_eq!(error.kind(), lock_core::ErrorKind::Connection);
    assert_eq!(set.promote(), Some(1), "the replica that has the most");
    assert_eq!(client.get(b"k").await.unwrap(), Some(b"w".to_vec()));
    assert_eq!(
        set.node(2).get(b"k").await.unwrap(),
        Some(b"w".to_vec()),
        "resynchronised"
    );
    // The old primary comes back as a replica, and follows.
    set.restart(0);
    client.set(b"k", b"x", SetOptions::new()).await.unwrap();
    assert_eq!(set.node(0).get(b"k").await.unwrap(), Some(b"x".to_vec()));
    assert!(matches!(set.roles()[0], Role::Replica { .. }));
}

#[tokio::test(start_paused = true)]
async fn a_switch_over_loses_nothing() {
    let set = MemoryReplicaSet::new(1);
    set.pause_all();
    let guard = TokenLock::new(set.client(), &name())
        .acquire()
        .await
        .unwrap();
    assert_eq!(set.switch_over(), Some(1));
    assert_eq!(set.primary(), Some(1));
    assert!(
        guard.release().await.unwrap(),
        "the lock moved with the switch-over"
    );
}

/// A lease on a lock that waits for one replica, with a 3 s TTL renewed every second.
async fn leased_replicated_lock() -> (
    MemoryReplicaSet,
    lock_core::Lease<lock_core::TokenGuard<lock_memory::ReplicaSetClient>>,
) {
    let set = MemoryReplicaSet::new(1);
    let ttl = Duration::from_secs(3);
    let options = LockOptions::new().ttl(ttl).replication(wait_for_one(100));
    let guard = TokenLock::with_options(set.client(), &name(), options)
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let lease = lock_core::Lease::start(guard, lock_core::LeaseOptions::new(ttl));
    (set, lease)
}

#[tokio::test(start_paused = true)]
async fn a_lease_whose_renewals_stop_reaching_the_replica_reports_it_once_unprotected() {
    use lock_core::LostReason;
    let (set, lease) = leased_replicated_lock().await;
    set.pause_all();
    // Renewals go on failing while the last acknowledged TTL still covers the lock.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert!(!lease.is_lost(), "still within the replicated TTL");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        lease.lost().await,
        LostReason::NotReplicated {
            acknowledged: 0,
            required: 1
        }
    );
}

#[tokio::test(start_paused = true)]
async fn a_lease_rides_out_a_short_replication_stall() {
    let (set, lease) = leased_replicated_lock().await;
    set.pause_all();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    set.resume_all();
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(!lease.is_lost());
    assert!(set.node(1).pttl(&name().lock_key()).await.unwrap() > 0);
    assert!(lease.release().await.unwrap());
}

/// A `WAIT` still blocked when the primary fails over ends with a connection error: the
/// new primary's replication offsets are not this connection's writes, so counting them
/// as acknowledgements (as the double once did) would let a lock the failover lost be
/// held twice.
#[tokio::test(start_paused = true)]
async fn a_wait_blocked_across_a_failover_is_a_connection_error() {
    let set = MemoryReplicaSet::new(2);
    let client = set.client();
    client.set(b"k", b"v", SetOptions::new()).await.unwrap();
    set.pause_all();
    // The delete below is a write the replicas never get.
    let waiting = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .eval_replicated(
                    &COMPARE_AND_DELETE,
                    &[b"k"],
                    &[b"v"],
                    &Replication::new(2, Duration::from_millis(100)),
                )
                .await
        })
    };
    tokio::task::yield_now().await;
    set.fail_over();
    // The new primary's stream moves on and its replicas apply it.
    client.set(b"other", b"x", SetOptions::new()).await.unwrap();
    let ended = waiting.await.unwrap().unwrap_err();
    assert_eq!(ended.kind(), lock_core::ErrorKind::Connection, "{ended}");
}

#[tokio::test(start_paused = true)]
async fn a_link_change_delivers_what_the_old_link_had_delivered_and_defers_the_rest() {
    let set = MemoryReplicaSet::new(1);
    let client = set.client();

    // A link that will deliver less (a delay where there was none) first delivers what
    // the old one had: the write is on the replica although the new delay has not passed.
    client.set(b"due", b"1", SetOptions::new()).await.unwrap();
    set.set_link(
        1,
        Link::Flowing {
            delay: Duration::from_millis(300),
        },
    );
    assert_eq!(
        set.node_as_is(1).get(b"due").await.unwrap(),
        Some(b"1".to_vec())
    );

    // A link that delivers at least as much (paused, then flowing) delivers nothing
    // now; the write waits in the backlog until something looks at the replica.
    set.pause_all();
    client.set(b"held", b"2", SetOptions::new()).await.unwrap();
    set.resume_all();
    assert_eq!(set.backlog(), 1, "deferred");
    assert_eq!(set.node_as_is(1).get(b"held").await.unwrap(), None);
    assert_eq!(set.node(1).get(b"held").await.unwrap(), Some(b"2".to_vec()));
    assert_eq!(set.backlog(), 0, "delivered on the look, and trimmed");

    // A failover delivers a deferred write before it promotes: the replica keeps it.
    set.pause_all();
    client.set(b"kept", b"3", SetOptions::new()).await.unwrap();
    set.resume_all();
    assert_eq!(set.fail_over(), Some(1));
    assert_eq!(
        set.client().get(b"kept").await.unwrap(),
        Some(b"3".to_vec())
    );
}

/// What a server (`nxlock serve` on one node of a set) uses for `WAIT`: the stream's
/// position before and after a connection's command, and a wait for it.
#[tokio::test(start_paused = true)]
async fn a_servers_write_offset_tells_which_write_wait_waits_for() {
    let set = MemoryReplicaSet::new(2);
    let before = set.write_offset();
    set.primary_node()
        .unwrap()
        .set(b"k", b"v", SetOptions::new())
        .await
        .unwrap();
    let after = set.write_offset();
    assert_ne!(before, after, "the write moved the stream");
    assert_eq!(set.write_offset(), after, "nothing else wrote");
    assert_eq!(set.acknowledged_at(&after), 2, "both links flow");

    set.pause_all();
    set.primary_node()
        .unwrap()
        .set(b"k", b"w", SetOptions::new())
        .await
        .unwrap();
    let stalled = set.write_offset();
    assert_eq!(set.acknowledged_at(&stalled), 0);
    assert_eq!(
        set.acknowledged_at(&after),
        2,
        "the earlier write is on both"
    );
    let waited = set.wait_for(&stalled, 1, Duration::from_millis(100)).await;
    assert_eq!(waited.unwrap(), 0, "the timeout ends it");

    let waiting = {
        let set = set.clone();
        let stalled = stalled.clone();
        tokio::spawn(async move { set.wait_for(&stalled, 2, Duration::ZERO).await })
    };
    tokio::task::yield_now().await;
    set.resume_all();
    assert_eq!(waiting.await.unwrap().unwrap(), 2, "resumed links wake it");

    set.fail_over();
    assert_eq!(
        set.acknowledged_at(&stalled),
        0,
        "an offset of the old primary counts nothing on the new one"
    );
    let error = set
        .wait_for(&stalled, 1, Duration::from_millis(10))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), lock_core::ErrorKind::Connection);
}
