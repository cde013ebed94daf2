//! `cargo bench`: lock cycle latency per algorithm and backend (beside the hand-written
//! redis-rs floor and rslock), raw commands, contention.
//! The Redis groups spawn a redis-server (or use NXLOCK_REDIS_URL) and are skipped with a
//! clear line when there is none.

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use nxlock::backend::SetOptions;
use nxlock::bench::RslockLock;
use nxlock::{
    AcquirePolicy, FairLock, KvBackend, LegacyLock, LockAlgorithm, LockGuard, LockName,
    LockOptions, LockOwner, MemoryBackend, NamedLock, RedisBackend, ReentrantLock, ScriptedLock,
    TokenLock, script,
};
use tokio::runtime::Runtime;

fn current_thread() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn multi_thread() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn name(name: &str) -> LockName {
    LockName::new(name).unwrap()
}

fn once() -> LockOptions {
    LockOptions::new()
        .ttl(Duration::from_secs(30))
        .policy(AcquirePolicy::try_once())
}

/// One uncontended acquire + release.
async fn cycle<A: LockAlgorithm>(lock: &A) {
    let guard = lock
        .try_acquire()
        .await
        .unwrap()
        .acquired()
        .expect("uncontended");
    assert!(guard.release().await.unwrap());
}

fn bench_cycles<B: KvBackend + Clone + 'static>(
    c: &mut Criterion,
    group: &str,
    rt: &Runtime,
    backend: &B,
) {
    let mut g = c.benchmark_group(group);
    let token = TokenLock::with_options(backend.clone(), &name("bench:token"), once()).unwrap();
    g.bench_function("token", |b| b.to_async(rt).iter(|| cycle(&token)));
    let legacy = LegacyLock::with_options(backend.clone(), &name("bench:legacy"), once()).unwrap();
    g.bench_function("legacy", |b| b.to_async(rt).iter(|| cycle(&legacy)));
    let scripted =
        ScriptedLock::with_options(backend.clone(), &name("bench:scripted"), once()).unwrap();
    g.bench_function("scripted", |b| b.to_async(rt).iter(|| cycle(&scripted)));
    let reentrant = ReentrantLock::with_options(
        backend.clone(),
        &name("bench:reentrant"),
        LockOwner::new(),
        once(),
    )
    .unwrap();
    g.bench_function("reentrant", |b| b.to_async(rt).iter(|| cycle(&reentrant)));
    let fair = FairLock::with_options(backend.clone(), &name("bench:fair"), once()).unwrap();
    g.bench_function("fair", |b| b.to_async(rt).iter(|| cycle(&fair)));
    g.finish();
}

fn bench_ops<B: KvBackend + Clone + 'static>(
    c: &mut Criterion,
    group: &str,
    rt: &Runtime,
    backend: &B,
) {
    let mut g = c.benchmark_group(group);
    g.bench_function("set_nx_px", |b| {
        b.to_async(rt).iter(|| async {
            backend
                .set(b"bench:op", b"v", SetOptions::new().nx().px(30_000))
                .await
                .unwrap();
        })
    });
    g.bench_function("pttl", |b| {
        b.to_async(rt)
            .iter(|| async { backend.pttl(b"bench:op").await.unwrap() })
    });
    g.bench_function("script_compare_and_delete", |b| {
        b.to_async(rt).iter(|| async {
            backend
                .eval(
                    &script::COMPARE_AND_DELETE,
                    &[b"bench:op"],
                    &[b"not-the-token"],
                )
                .await
                .unwrap()
        })
    });
    g.finish();
}

/// `n` tasks share `iters` cycles, on one key or on `n` keys; reports time per cycle.
fn bench_contended(c: &mut Criterion) {
    let rt = multi_thread();
    for one_key in [true, false] {
        let mut g = c.benchmark_group(if one_key {
            "contended/memory/one_key"
        } else {
            "contended/memory/n_keys"
        });
        for n in [1usize, 4, 16, 64] {
            g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
                b.to_async(&rt).iter_custom(|iters| {
                    let backend = MemoryBackend::new();
                    let make = move |i| {
                        let key = if one_key {
                            name("bench:hot")
                        } else {
                            name(&format!("bench:{i}"))
                        };
                        TokenLock::new(backend.clone(), &key)
                    };
                    contended_cycles(make, n, iters)
                })
            });
        }
        g.finish();
    }
}

/// `n` tasks, each with its own lock object (`make(task)`), share `iters` acquire +
/// release cycles; the time per cycle.
async fn contended_cycles<A, F>(make: F, n: usize, iters: u64) -> Duration
where
    A: LockAlgorithm + 'static,
    F: Fn(usize) -> A,
{
    let per_task = iters.div_ceil(n as u64);
    let start = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|task| {
            let lock = make(task);
            tokio::spawn(async move {
                for _ in 0..per_task {
                    lock.acquire().await.unwrap().release().await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    start
        .elapsed()
        .mul_f64(iters as f64 / (per_task * n as u64) as f64)
}

/// One and eight clients on one key of a real server: nxlock's default (fair) lock and
/// rslock's `LockManager`, each client with its own lock object; and eight tasks sharing
/// one fair lock object (`fair_shared`), which pass the hold to each other.
fn bench_contended_redis(c: &mut Criterion, rt: &Runtime, backend: &RedisBackend, url: &str) {
    let mut g = c.benchmark_group("contended/redis/one_key");
    for n in [1usize, 8] {
        let fair = |_| FairLock::new(backend.clone(), &name("bench:contended:fair"));
        g.bench_with_input(BenchmarkId::new("fair", n), &n, |b, &n| {
            b.to_async(rt)
                .iter_custom(|iters| contended_cycles(fair, n, iters))
        });
        if n > 1 {
            let shared = FairLock::new(backend.clone(), &name("bench:contended:fair"));
            let fair_shared = |_| shared.clone();
            g.bench_with_input(BenchmarkId::new("fair_shared", n), &n, |b, &n| {
                b.to_async(rt)
                    .iter_custom(|iters| contended_cycles(fair_shared, n, iters))
            });
        }
        let urls = [url.to_owned()];
        let rslock = |_| {
            let options = LockOptions::new().ttl(Duration::from_secs(10));
            RslockLock::new(&urls, &name("bench:contended:rslock"), options).expect("a valid TTL")
        };
        g.bench_with_input(BenchmarkId::new("rslock", n), &n, |b, &n| {
            b.to_async(rt)
                .iter_custom(|iters| contended_cycles(rslock, n, iters))
        });
    }
    g.finish();
}

/// rslock's uncontended cycle: `lock` (one `SET NX PX`) and `unlock` (one script).
fn bench_rslock(c: &mut Criterion, group: &str, rt: &Runtime, url: &str) {
    let manager = rslock::LockManager::new(vec![url.to_owned()]);
    let mut g = c.benchmark_group(group);
    g.bench_function("rslock", |b| {
        b.to_async(rt).iter(|| async {
            let lock = manager
                .lock(b"bench:rslock", Duration::from_secs(30))
                .await
                .expect("uncontended");
            manager.unlock(&lock).await;
        })
    });
    g.finish();
}

/// The token-lock cycle written by hand on redis-rs: the floor nxlock should reach.
fn bench_hand_written(c: &mut Criterion, group: &str, rt: &Runtime, url: &str) {
    let mut conn = rt.block_on(async {
        redis::Client::open(url)
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    });
    let sha = script::COMPARE_AND_DELETE.sha1().to_string();
    let _: String = rt
        .block_on(
            redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(script::COMPARE_AND_DELETE.lua())
                .query_async(&mut conn),
        )
        .unwrap();
    let mut g = c.benchmark_group(group);
    g.bench_function("hand_written_redis_rs", |b| {
        b.to_async(rt).iter(|| {
            let (mut conn, sha) = (conn.clone(), sha.clone());
            async move {
                let token = uuid::Uuid::new_v4().to_string();
                let _: Option<String> = redis::cmd("SET")
                    .arg("bench:floor")
                    .arg(&token)
                    .arg("NX")
                    .arg("PX")
                    .arg(30_000)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                let released: i64 = redis::cmd("EVALSHA")
                    .arg(&sha)
                    .arg(1)
                    .arg("bench:floor")
                    .arg(&token)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                assert_eq!(released, 1);
            }
        })
    });
    g.finish();
}

/// The two fixed costs inside a memory token cycle that no store change can remove: the
/// clock read every command makes (expiry is exact, on tokio's clock), and the token.
fn bench_parts(c: &mut Criterion) {
    let mut g = c.benchmark_group("parts");
    let clock = nxlock::Clock::tokio();
    g.bench_function("clock_now_ms", |b| b.iter(|| clock.now_ms()));
    g.bench_function("uuid_v4_token", |b| {
        b.iter(|| {
            let mut buffer = uuid::Uuid::encode_buffer();
            String::from(uuid::Uuid::new_v4().hyphenated().encode_lower(&mut buffer))
        })
    });
    g.finish();
}

fn memory(c: &mut Criterion) {
    let rt = current_thread();
    let backend = MemoryBackend::new();
    bench_cycles(c, "cycle/memory", &rt, &backend);
    // Benches link tokio's test-util (a dev-dependency), which routes tokio's Instant
    // through its test clock; the system clock shows the cost without it.
    let system_clock = MemoryBackend::with_clock(nxlock::Clock::system());
    bench_cycles(c, "cycle/memory_system_clock", &rt, &system_clock);
    bench_ops(c, "ops/memory", &rt, &backend);
    bench_parts(c);
    bench_contended(c);
}

fn redis_groups(c: &mut Criterion) {
    let target = match nxlock::testing::RedisTarget::from_env() {
        Ok(target) => target,
        Err(why) => {
            eprintln!("*** SKIPPED the Redis benchmark groups: {why} ***");
            return;
        }
    };
    for (name, rt) in [
        ("current_thread", current_thread()),
        ("multi_thread", multi_thread()),
    ] {
        let backend = rt.block_on(RedisBackend::connect(&target.url())).unwrap();
        bench_hand_written(c, &format!("cycle/redis/{name}"), &rt, &target.url());
        bench_rslock(c, &format!("cycle/redis/{name}"), &rt, &target.url());
        bench_cycles(c, &format!("cycle/redis/{name}"), &rt, &backend);
        bench_ops(c, &format!("ops/redis/{name}"), &rt, &backend);
    }
    let rt = current_thread();
    let backend = rt.block_on(RedisBackend::connect(&target.url())).unwrap();
    bench_contended_redis(c, &rt, &backend, &target.url());
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = memory, redis_groups
}
criterion_main!(benches);
