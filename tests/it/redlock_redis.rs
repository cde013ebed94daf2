//! Redlock through `RedisBackend` on 3 and 5 independent real `redis-server` processes:
//! the lock's behaviours from the conformance suite, clients contending for one lock while
//! one instance is killed mid-run, and one lock over real and in-memory nodes together.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use nxlock::backend::Either;
use nxlock::conformance::cases::algorithm;
use nxlock::conformance::{OverlapDetector, Verdict};
use nxlock::testing::{Durability, RedisInstances, skip_or_fail};
use nxlock::{
    AcquirePolicy, Backoff, Clock, LockAlgorithm, LockGuard, LockName, LockOptions, RedisBackend,
    RedisOptions, Redlock, RedlockOptions, Retry,
};
use rstest::rstest;

async fn spawn(n: usize, test: &str) -> Option<(RedisInstances, Vec<RedisBackend>)> {
    match RedisInstances::spawn(n, Durability::None).await {
        Ok(instances) => {
            let backends = instances
                .backends(RedisOptions::default())
                .await
                .expect("clients of the spawned instances");
            Some((instances, backends))
        }
        Err(why) => {
            skip_or_fail(test, &why);
            None
        }
    }
}

fn client(
    backends: &[RedisBackend],
    name: &str,
    options: LockOptions,
) -> Result<Redlock<RedisBackend>, nxlock::LockError> {
    let redlock = RedlockOptions::new().node_timeout(Duration::from_secs(1));
    let name = LockName::new(format!("redlock:{name}")).unwrap();
    Redlock::with_redlock_options(backends.to_vec(), &name, options, redlock)
}

fn passed(result: nxlock::conformance::CaseResult, case: &str) {
    match result {
        Ok(Verdict::Passed) => {}
        other => panic!("{case}: {other:?}"),
    }
}

#[rstest]
#[case::three(3)]
#[case::five(5)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_behaves_on_real_instances(#[case] n: usize) {
    let Some((_instances, backends)) = spawn(n, "redlock_redis").await else {
        return;
    };
    // A lock name per behaviour: one case's background release must not meet the next.
    let backends = &backends;
    let make = |name: &'static str| move |o| client(backends, name, o);
    let exclusion = algorithm::mutual_exclusion(make("exclusion")).await;
    passed(exclusion, "mutual exclusion");
    passed(
        algorithm::release_frees_the_lock(make("release")).await,
        "release",
    );
    let timeout = algorithm::acquire_gives_up_with_a_timeout(make("timeout")).await;
    passed(timeout, "acquire timeout");
    let dropped = algorithm::dropped_guard_is_released_in_the_background(make("dropped")).await;
    passed(dropped, "dropped guard");
}

/// Eight clients cycle the lock; halfway through, instance 0 is killed. Nobody is ever
/// inside twice, every client keeps cycling, and holds taken after the kill stand on the
/// other instances.
#[rstest]
#[case::three(3)]
#[case::five(5)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_one_instance_mid_run_keeps_exclusion_and_progress(#[case] n: usize) {
    let Some((instances, backends)) = spawn(n, "redlock_redis").await else {
        return;
    };
    const CLIENTS: usize = 8;
    const ROUNDS: usize = 30;
    let detector = Arc::new(OverlapDetector::new());
    let done = Arc::new(AtomicUsize::new(0));
    let killed = Arc::new(AtomicBool::new(false));
    let policy = AcquirePolicy::retry(Retry::For(Duration::from_secs(30))).with_backoff(
        Backoff::Exponential {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(10),
            jitter: true,
        },
    );
    let options = LockOptions::new()
        .ttl(Duration::from_secs(10))
        .policy(policy)
        .clock(Clock::system());
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let lock = client(&backends, "kill", options.clone()).unwrap();
        let (detector, done, killed) = (detector.clone(), done.clone(), killed.clone());
        tasks.push(tokio::spawn(async move {
            let mut held_after_kill = Vec::new();
            for _ in 0..ROUNDS {
                let after_kill = killed.load(Ordering::Acquire);
                let guard = lock.acquire().await.expect("acquire through the kill");
                {
                    let _inside = detector.enter();
                    tokio::task::yield_now().await;
                }
                if after_kill {
                    held_after_kill.push(guard.held_nodes().to_vec());
                }
                release_through_the_kill(guard).await;
                done.fetch_add(1, Ordering::Relaxed);
            }
            held_after_kill
        }));
    }
    let halfway = CLIENTS * ROUNDS / 2;
    while done.load(Ordering::Relaxed) < halfway {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    instances.kill(0).unwrap();
    killed.store(true, Ordering::Release);
    let mut late_holds = Vec::new();
    for task in tasks {
        late_holds.extend(task.await.expect("a client task"));
    }
    assert_eq!(detector.violations(), 0, "two clients inside at once");
    assert_eq!(done.load(Ordering::Relaxed), CLIENTS * ROUNDS);
    assert!(!late_holds.is_empty(), "no client cycled after the kill");
    for held in &late_holds {
        assert!(
            !held.contains(&0),
            "a hold after the kill on the dead instance 0"
        );
        assert!(
            held.len() > n / 2,
            "a hold on {held:?} is no majority of {n}"
        );
    }
}

/// Releases `guard`, retrying while its outcome is unknown: a hold on the instance that
/// was just killed and one other leaves the first release without a quorum either way;
/// asked again, the nodes that answer settle it.
async fn release_through_the_kill(guard: nxlock::RedlockGuard<RedisBackend>) {
    let mut guard = guard;
    for _ in 0..5 {
        match guard.release().await {
            Ok(_) => return,
            Err(unknown) => guard = unknown.into_guard(),
        }
    }
    panic!("the release stayed unknown after five tries");
}

/// One Redlock over nodes of two kinds: three real instances and two in-memory doubles.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_lock_over_mixed_kinds_of_nodes() {
    let Some((instances, backends)) = spawn(3, "redlock_redis").await else {
        return;
    };
    let doubles = nxlock::memory::MemoryInstances::new(2);
    let mut nodes: Vec<Either<RedisBackend, nxlock::MemoryBackend>> =
        backends.into_iter().map(Either::Left).collect();
    nodes.extend(doubles.nodes().into_iter().map(Either::Right));
    let name = LockName::new("redlock:mixed").unwrap();
    let options = LockOptions::new()
        .clock(Clock::system())
        .policy(AcquirePolicy::try_once());
    let lock = Redlock::with_options(nodes.clone(), &name, options.clone()).unwrap();
    let rival = Redlock::with_options(nodes, &name, options).unwrap();
    instances.kill(0).unwrap();
    doubles.kill(0).unwrap();
    let guard = lock
        .try_acquire()
        .await
        .unwrap()
        .acquired()
        .expect("3 of 5 up");
    assert_eq!(guard.held_nodes(), &[1, 2, 4]);
    assert!(rival.try_acquire().await.unwrap().acquired().is_none());
    assert!(guard.release().await.unwrap());
    assert!(rival.try_acquire().await.unwrap().acquired().is_some());
}
