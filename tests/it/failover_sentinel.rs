//! A real primary killed under a Sentinel-aware backend while clients use it: no call hangs
//! beyond the configured timeouts, the backend follows the sentinel to the new primary, and
//! what survives is exactly what the in-memory replica set predicts for the same steps.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use nxlock::backend::Replication;
use nxlock::conformance::Harness;
use nxlock::harness::{MemoryReplicaSetHarness, RedisReplicatedHarness};
use nxlock::{
    KvBackend, LockAlgorithm, LockError, LockGuard, LockName, LockOptions, NamedLock, RedisOptions,
    TokenLock,
};

/// The longest one call may take on the real backend: a command's timeout plus a
/// reconnection attempt, with room to spare. Longer is a hang.
fn hang_bound() -> Duration {
    let options = RedisOptions::default();
    options.command_timeout + options.connect_timeout + Duration::from_secs(2)
}

/// How long the sentinel, then the backend, get to move to the new primary.
const FOLLOW_PATIENCE: Duration = Duration::from_secs(20);

fn name(which: &str) -> LockName {
    LockName::new(format!("failover:{which}")).unwrap()
}

/// Waits for the replica long enough for a loaded machine (2 s).
fn wait_for_the_replica() -> LockOptions {
    LockOptions::new().replication(Replication::new(1, Duration::from_secs(2)))
}

/// Waits for a replica known to be cut off: 300 ms is enough to be refused.
fn wait_for_the_stalled_replica() -> LockOptions {
    LockOptions::new().replication(Replication::new(1, Duration::from_millis(300)))
}

/// What the deployment looks like after the failover, seen through a client.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    /// The lock acquired with `WAIT` for the replica: a rival is refused after the failover.
    replicated_lock_still_held: bool,
    /// Its holder's release finds its own token on the new primary.
    replicated_lock_released_by_its_holder: bool,
    /// The lock acquired while replication was stalled: a rival takes it after the failover.
    stalled_lock_taken_by_a_rival: bool,
    /// The first holder of that lock releases nothing (the rival's token is there).
    stalled_lock_released_by_its_first_holder: bool,
    /// How the `WAIT` acquire that could not be replicated was answered.
    unreplicated_acquire: String,
    /// That refused acquire left no key behind.
    unreplicated_lock_free: bool,
    /// The clients cycling a lock through the failover completed cycles afterwards.
    cycling_resumed: bool,
}

/// The same steps on any replicated harness: locks taken before and during a stalled
/// replication, a client cycling a lock the whole time, then the primary killed.
async fn run<H: Harness>(harness: &H) -> Outcome {
    let (backend, failover) = harness.replicated().await.expect("a replicated deployment");
    let kept = TokenLock::with_options(backend.clone(), &name("kept"), wait_for_the_replica())
        .unwrap()
        .acquire()
        .await
        .expect("replicated before anything stalls");
    failover.pause().await.unwrap();
    let stalled = TokenLock::new(backend.clone(), &name("stalled"))
        .acquire()
        .await
        .expect("the primary takes it");
    let refused = TokenLock::with_options(
        backend.clone(),
        &name("refused"),
        wait_for_the_stalled_replica(),
    )
    .unwrap()
    .acquire()
    .await;
    let unreplicated_acquire = match refused {
        Err(LockError::NotReplicated {
            acknowledged,
            required,
            ..
        }) => format!("not replicated: {acknowledged} of {required}"),
        other => format!("unexpected: {:?}", other.map(|g| g.token().to_string())),
    };

    let cycler = Cycler::start(backend.clone());
    cycler.until_cycles(3).await;
    failover.crash_primary().await.unwrap();
    failover.promote().await.expect("a new primary");
    let after = cycler.cycles();
    let cycling_resumed = cycler.until_cycles(after + 3).await;
    cycler.stop().await;

    let rival_kept = try_once(&backend, "kept").await;
    let rival_stalled = try_once(&backend, "stalled").await;
    let refused_key = name("refused").lock_key();
    let unreplicated_lock_free =
        settled(|| async { Ok::<_, LockError>(backend.exists(&[&refused_key]).await?) })
            .await
            .unwrap()
            == 0;
    Outcome {
        replicated_lock_still_held: rival_kept.is_none(),
        replicated_lock_released_by_its_holder: release(kept).await,
        stalled_lock_taken_by_a_rival: rival_stalled.is_some(),
        stalled_lock_released_by_its_first_holder: release(stalled).await,
        unreplicated_acquire,
        unreplicated_lock_free,
        cycling_resumed,
    }
}

/// A rival's single attempt at the lock `which`, retried only through transient errors.
async fn try_once<B: KvBackend + Clone + 'static>(backend: &B, which: &str) -> Option<String> {
    let lock = TokenLock::new(backend.clone(), &name(which));
    let attempt = settled(|| lock.try_acquire()).await.unwrap();
    attempt.acquired().map(|guard| guard.token().to_string())
}

/// Runs `call` until it stops failing with a connection-class error (the backend is still
/// moving to the new primary), failing the test if any call hangs or it never settles.
async fn settled<T, F, Fut>(mut call: F) -> Result<T, LockError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, LockError>>,
{
    let deadline = tokio::time::Instant::now() + FOLLOW_PATIENCE;
    loop {
        let result = tokio::time::timeout(hang_bound(), call())
            .await
            .expect("a call hung past the configured timeouts");
        match result {
            Err(e)
                if e.backend().is_some_and(|e| e.is_transient())
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => return other,
        }
    }
}

/// Releases `guard` (retrying through transient errors); whether its token was there.
async fn release<G: LockGuard>(guard: G) -> bool {
    let deadline = tokio::time::Instant::now() + FOLLOW_PATIENCE;
    let mut guard = guard;
    loop {
        let result = tokio::time::timeout(hang_bound(), guard.release())
            .await
            .expect("a release hung past the configured timeouts");
        match result {
            Ok(released) => return released,
            Err(failed)
                if failed.error().backend().is_some_and(|e| e.is_transient())
                    && tokio::time::Instant::now() < deadline =>
            {
                guard = failed.into_guard();
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(failed) => panic!("release failed: {}", failed.error()),
        }
    }
}

/// A client acquiring and releasing a lock in a loop, through the crash and after it.
struct Cycler {
    cycles: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Cycler {
    fn start<B: KvBackend + Clone + 'static>(backend: B) -> Self {
        let cycles = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn({
            let (cycles, stop) = (cycles.clone(), stop.clone());
            async move {
                let lock = TokenLock::new(backend, &name("busy"));
                while !stop.load(Ordering::SeqCst) {
                    let attempt = tokio::time::timeout(hang_bound(), lock.try_acquire())
                        .await
                        .expect("an acquire hung past the configured timeouts");
                    if let Ok(attempt) = attempt
                        && let Some(guard) = attempt.acquired()
                    {
                        let released = tokio::time::timeout(hang_bound(), guard.release())
                            .await
                            .expect("a release hung past the configured timeouts");
                        if released.is_ok() {
                            cycles.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        });
        Self { cycles, stop, task }
    }

    fn cycles(&self) -> usize {
        self.cycles.load(Ordering::SeqCst)
    }

    /// Waits (bounded) until `n` cycles are done; whether they were.
    async fn until_cycles(&self, n: usize) -> bool {
        let deadline = tokio::time::Instant::now() + FOLLOW_PATIENCE;
        while self.cycles() < n {
            if tokio::time::Instant::now() >= deadline || self.task.is_finished() {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        true
    }

    async fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.expect("the cycling client panicked");
    }
}

fn predicted() -> Outcome {
    Outcome {
        replicated_lock_still_held: true,
        replicated_lock_released_by_its_holder: true,
        stalled_lock_taken_by_a_rival: true,
        stalled_lock_released_by_its_first_holder: false,
        unreplicated_acquire: "not replicated: 0 of 1".into(),
        unreplicated_lock_free: true,
        cycling_resumed: true,
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_model_predicts_what_survives_a_failover() {
    assert_eq!(run(&MemoryReplicaSetHarness).await, predicted());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_killed_under_a_sentinel_aware_backend_leaves_what_the_model_predicts() {
    let harness = RedisReplicatedHarness::spawn_with_sentinel().await;
    if let Some(why) = harness.skip_reason() {
        nxlock::testing::announce_skip("a_primary_killed_under_a_sentinel_aware_backend", &why);
        return;
    }
    let model = run(&MemoryReplicaSetHarness).await;
    assert_eq!(run(&harness).await, model);
}
