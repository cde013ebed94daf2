//! `Replication::fsync` asks for `WAITAOF`, which Redis 7.0 lacks: every backend answering
//! as 7.0 refuses with the server's own text, and none writes the lock first.

use std::time::Duration;

use nxlock::backend::{RedisVersion, Replication};
use nxlock::memory::MemoryReplicaSet;
use nxlock::testing::{RedisServer, skip_or_fail};
use nxlock::{ErrorKind, KvBackend, MemoryBackend, RedisBackend, script};

/// The refusal a backend gives, and whether the lock key was written anyway.
async fn refusal<B: KvBackend>(backend: &B) -> (ErrorKind, String, i64) {
    let replication = Replication::new(1, Duration::from_millis(300)).fsync();
    let error = backend
        .eval_replicated(
            &script::ACQUIRE_OR_PTTL,
            &[b"{fsync}:lock"],
            &[b"token", b"30000"],
            &replication,
        )
        .await
        .expect_err("WAITAOF is refused");
    let written = backend.exists(&[b"{fsync}:lock"]).await.unwrap();
    (error.kind(), error.message().to_string(), written)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_waitaof_every_backend_refuses_alike_and_writes_nothing() {
    let double = refusal(&MemoryBackend::new().with_redis_version(RedisVersion::V7_0)).await;
    assert_eq!(
        double,
        (
            ErrorKind::Unsupported,
            "ERR unknown command 'WAITAOF', with args beginning with: '0' '1' '300' ".into(),
            0
        )
    );
    let set = MemoryReplicaSet::new(1).with_redis_version(RedisVersion::V7_0);
    assert_eq!(refusal(&set.client()).await, double);
    let server = match RedisServer::spawn() {
        Ok(server) => server,
        Err(why) => return skip_or_fail("WAITAOF on redis-server", &why),
    };
    let redis = RedisBackend::connect(&server.url()).await.unwrap();
    let info: String = redis
        .query(nxlock::redis::cmd("INFO").arg("server"))
        .await
        .unwrap();
    if !info.contains("redis_version:7.0") && !info.contains("redis_version:6.") {
        // 7.2 and later have WAITAOF; this test is about the servers that do not.
        return;
    }
    assert_eq!(refusal(&redis).await, double);
}
