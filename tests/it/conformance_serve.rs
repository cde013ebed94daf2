//! The whole conformance suite through redis-rs (`RedisBackend`) against `nxlock serve`:
//! Lua scripts by EVALSHA and pub/sub wake-ups, on a socket. And faults injected into the
//! server reach the client with the kind they were injected with.

use nxlock::conformance::{Outcome, run_all};
use nxlock::harness::RedisHarness;
use nxlock::server::{Server, ServerOptions};
use nxlock::{ErrorKind, KvBackend, RedisBackend};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_suite_passes_through_redis_rs_against_nxlock_serve() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    // nxlock serve speaks the protocol: the Redis harness checks it through redis-rs.
    let report = run_all(&RedisHarness::at(server.url())).await;
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
