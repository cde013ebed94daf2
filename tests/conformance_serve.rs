//! The whole conformance suite through redis-rs (`RedisBackend`) against `nxlock serve`:
//! Lua scripts by EVALSHA, pub/sub wake-ups excepted (see below), on a socket.

use std::time::Duration;

use nxlock::RedisBackend;
use nxlock::conformance::{Harness, Outcome, run_all};
use nxlock::server::{Server, ServerOptions};
use tokio::sync::OnceCell;

struct ServeHarness {
    server: OnceCell<Server>,
}

impl Harness for ServeHarness {
    type Backend = RedisBackend;

    fn name(&self) -> String {
        "nxlock serve (through redis-rs)".into()
    }

    async fn backend(&self) -> Result<RedisBackend, String> {
        let server = self
            .server
            .get_or_try_init(|| Server::start(ServerOptions::default()))
            .await
            .map_err(|e| e.to_string())?;
        RedisBackend::connect(&server.url())
            .await
            .map_err(|e| e.to_string())
    }

    async fn advance(&self, _backend: &RedisBackend, by: Duration) {
        // Clients stamp times with their own clock, so time must really pass.
        tokio::time::sleep(by).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_suite_passes_through_redis_rs_against_nxlock_serve() {
    let harness = ServeHarness {
        server: OnceCell::new(),
    };
    let report = run_all(&harness).await;
    println!("{report}");
    let failed: Vec<_> = report
        .cases
        .iter()
        .filter(|c| c.outcome == Outcome::Failed)
        .map(|c| format!("{}: {}", c.name, c.detail))
        .collect();
    assert!(
        failed.is_empty(),
        "failed on nxlock serve:\n{}",
        failed.join("\n")
    );
}
