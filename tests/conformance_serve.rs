//! The whole conformance suite through redis-rs (`RedisBackend`) against `nxlock serve`:
//! Lua scripts by EVALSHA and pub/sub wake-ups, on a socket. And faults injected into the
//! server reach the client with the kind they were injected with.

use std::time::Duration;

use nxlock::conformance::{Capabilities, Capability, Harness, Outcome, run_all};
use nxlock::server::{Server, ServerOptions};
use nxlock::{ErrorKind, KvBackend, RedisBackend};
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

    fn capabilities(&self) -> Capabilities {
        Capabilities::none().with(Capability::PubSub)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_injected_fault_keeps_its_kind_at_the_client() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let client = RedisBackend::connect(&server.url()).await.unwrap();
    for kind in [ErrorKind::Timeout, ErrorKind::WrongType, ErrorKind::Script] {
        server.db().faults().fail_next(1, kind);
        let error = client.get(b"k").await.unwrap_err();
        assert_eq!(error.kind(), kind, "{error}");
    }
    assert_eq!(client.get(b"k").await.unwrap(), None);
    server.stop().await;
}
