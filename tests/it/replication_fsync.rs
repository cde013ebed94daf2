//! `Replication::fsync` asks for `WAITAOF`, which Redis 7.0 lacks: every backend answering
//! as 7.0 refuses with the server's own text, and none writes the lock first.

use crate::support;
use std::time::Duration;

use nxlock::backend::{RedisVersion, Replication};
use nxlock::memory::MemoryReplicaSet;
use nxlock::testing::{RedisServer, skip_or_fail};
use nxlock::{ErrorKind, KvBackend, MemoryBackend, NamedLock, RedisBackend, script};

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
            "ERR unknown command 'WAITAOF', with args beginning with: '0' '0' '0' ".into(),
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

/// From 7.2 `WAITAOF` exists: a lock that asks for it acquires once the replica has the
/// lock in its append-only file, on a Valkey 8 primary and replica with `appendonly yes`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waitaof_acquires_on_valkey_with_appendonly() {
    use nxlock::testing::RedisServer;
    use nxlock::{LockAlgorithm, LockGuard, LockName, LockOptions, TokenLock};

    let binary = match support::valkey_server() {
        Ok(binary) => binary,
        Err(why) => return skip_or_fail("WAITAOF on Valkey", &why),
    };
    let aof = |more: &[String]| -> Vec<String> {
        [
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--repl-diskless-sync-delay",
            "0",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain(more.iter().cloned())
        .collect()
    };
    let primary = RedisServer::spawn_from(&binary, &aof(&[])).unwrap();
    let port = primary.port().to_string();
    let replica = RedisServer::spawn_from(
        &binary,
        &aof(&["--replicaof".into(), "127.0.0.1".into(), port]),
    )
    .unwrap();
    let backend = RedisBackend::connect(&primary.url()).await.unwrap();
    // Wait (by asking) until the replica is online.
    let mut online = false;
    for _ in 0..500 {
        let info: String = backend
            .query(nxlock::redis::cmd("INFO").arg("replication"))
            .await
            .unwrap();
        if info.contains("state=online") {
            online = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(online, "the replica never came online");
    let options = LockOptions::new()
        .ttl(Duration::from_secs(30))
        .replication(Replication::new(1, Duration::from_secs(2)).fsync());
    let name = LockName::new("fsync").unwrap();
    let lock = TokenLock::with_options(backend.clone(), &name, options).unwrap();
    let guard = lock
        .acquire()
        .await
        .expect("WAITAOF acknowledged by the replica");
    let on_replica = RedisBackend::connect(&replica.url()).await.unwrap();
    assert_eq!(
        on_replica.get(guard.key()).await.unwrap().as_deref(),
        Some(guard.token().as_bytes())
    );
    assert!(guard.release().await.unwrap());
}
