//! Shared by the real-Redis tests: both backends side by side, keyed alike.

#![allow(dead_code)]

#[path = "../../../crates/lock-server/tests/it/support/raw.rs"]
pub mod raw;
pub mod served;
pub mod side_by_side;

use nxlock::testing::RedisTarget;
use nxlock::{Clock, KvBackend, MemoryBackend, RedisBackend};

/// A real server (kept alive by `_target`) and a double on the system clock, so that both
/// measure TTLs against the same time.
pub struct Pair {
    pub redis: RedisBackend,
    pub memory: MemoryBackend,
    _target: RedisTarget,
}

impl Pair {
    /// `None` (after a loud SKIPPED line) when no Redis server is available.
    pub async fn new(test: &str) -> Option<Pair> {
        let target = match RedisTarget::from_env() {
            Ok(target) => target,
            Err(why) => {
                nxlock::testing::announce_skip(test, &why);
                return None;
            }
        };
        let redis = RedisBackend::connect(&target.url())
            .await
            .expect("connect to the test server");
        Some(Pair {
            redis,
            memory: MemoryBackend::with_clock(Clock::system()),
            _target: target,
        })
    }
}

/// GET and PTTL of `key`: the observable state the differential tests compare.
pub async fn observe(backend: &impl KvBackend, key: &[u8]) -> (Option<Vec<u8>>, i64) {
    (
        backend.get(key).await.unwrap(),
        backend.pttl(key).await.unwrap(),
    )
}

/// PTTLs agree: -2 and -1 exactly, remaining times within `tolerance_ms`.
pub fn ttl_close(a: i64, b: i64, tolerance_ms: i64) -> bool {
    if a < 0 || b < 0 {
        a == b
    } else {
        (a - b).abs() <= tolerance_ms
    }
}

/// mini-redis (a Redis-protocol server without SET NX, DEL or EVAL) on a free loopback
/// port: the negative control.
pub struct MiniRedis {
    /// `redis://127.0.0.1:<port>`.
    pub url: String,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<mini_redis::Result<()>>,
}

impl MiniRedis {
    pub async fn start() -> MiniRedis {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("redis://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(mini_redis::server::run(listener, async {
            let _ = stopped.await;
        }));
        MiniRedis { url, stop, task }
    }

    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap().unwrap();
    }
}

/// Where a Valkey 8 build is: `NXLOCK_VALKEY_BIN`, the directory that
/// `.ci/valkey/build-valkey.sh` prints (`.ci/run` builds it and sets the variable).
pub fn valkey_server() -> Result<std::path::PathBuf, String> {
    let dir = std::env::var("NXLOCK_VALKEY_BIN").map_err(|_| {
        "NXLOCK_VALKEY_BIN is not set (the bin directory of a Valkey 8 build; \
         .ci/valkey/build-valkey.sh makes one)"
            .to_string()
    })?;
    let binary = std::path::Path::new(&dir).join("valkey-server");
    match binary.is_file() {
        true => Ok(binary),
        false => Err(format!("{} does not exist", binary.display())),
    }
}
