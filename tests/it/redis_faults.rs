//! Faults on the real backend: the server killed mid-run, restarted, its scripts flushed.

use std::time::Duration;

use nxlock::testing::{RedisServer, skip_or_fail};
use nxlock::{
    AcquirePolicy, ErrorKind, KvBackend, LockAlgorithm, LockGuard, LockName, LockOptions,
    NamedLock, RedisBackend, RedisOptions, TokenLock, script,
};

const TIMEOUT: Duration = Duration::from_millis(500);

fn spawn(test: &str) -> Option<RedisServer> {
    RedisServer::spawn()
        .map_err(|why| skip_or_fail(test, &why))
        .ok()
}

async fn script_cached(backend: &RedisBackend, sha: &str) -> bool {
    let reply: Vec<bool> = backend
        .query(nxlock::redis::cmd("SCRIPT").arg("EXISTS").arg(sha))
        .await
        .unwrap();
    reply == [true]
}

/// Retries `get` until the backend has reconnected (bounded: the test fails, never hangs).
async fn wait_until_reconnected(backend: &RedisBackend) {
    for _ in 0..100 {
        if backend.get(b"probe").await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the backend did not reconnect within 5 s of the server coming back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_gives_connection_errors_and_locks_work_again_after_restart() {
    let Some(mut server) =
        spawn("a_killed_server_gives_connection_errors_and_locks_work_again_after_restart")
    else {
        return;
    };
    let options = RedisOptions {
        command_timeout: TIMEOUT,
        connect_timeout: TIMEOUT,
    };
    let backend = RedisBackend::connect_with(&server.url(), options)
        .await
        .unwrap();
    let lock_options = LockOptions::new()
        .ttl(Duration::from_secs(30))
        .policy(AcquirePolicy::try_once());
    let job = LockName::new("job").unwrap();
    let lock = TokenLock::with_options(backend.clone(), &job, lock_options.clone()).unwrap();

    // Cache the release script, then take the lock and lose the server while holding it.
    let warm = lock.acquire().await.unwrap();
    assert!(warm.release().await.unwrap());
    assert!(script_cached(&backend, script::COMPARE_AND_DELETE.sha1()).await);
    let held = lock.acquire().await.unwrap();
    server.kill();

    // Every operation fails with a connection error (or times out), and none hangs.
    let outcomes = tokio::time::timeout(TIMEOUT * 20, async {
        let get = backend.get(&job.lock_key()).await.map(|_| ()).unwrap_err();
        let acquire = lock.try_acquire().await.map(|_| ()).unwrap_err();
        (get, acquire)
    })
    .await
    .expect("operations on a dead server must return, not hang");
    assert!(
        matches!(
            outcomes.0.kind(),
            ErrorKind::Connection | ErrorKind::Timeout
        ),
        "{:?}",
        outcomes.0
    );
    assert!(
        matches!(
            outcomes.1.backend().map(|e| e.kind()),
            Some(ErrorKind::Connection | ErrorKind::Timeout)
        ),
        "{:?}",
        outcomes.1
    );

    // A fresh, empty server on the same port: the same client reconnects by itself.
    server.restart().unwrap();
    wait_until_reconnected(&backend).await;
    assert!(!script_cached(&backend, script::COMPARE_AND_DELETE.sha1()).await);

    // The lock held when the server died is reported lost, not released.
    assert!(
        !held.release().await.unwrap(),
        "a lock lost with the server must not release as held"
    );
    // The NOSCRIPT path: EVALSHA fails on the new server, EVAL runs and re-caches it.
    assert!(script_cached(&backend, script::COMPARE_AND_DELETE.sha1()).await);
    let again = lock.acquire().await.unwrap();
    assert!(again.release().await.unwrap());
}

#[tokio::test]
async fn locks_keep_working_after_script_flush() {
    let Some(server) = spawn("locks_keep_working_after_script_flush") else {
        return;
    };
    let backend = RedisBackend::connect(&server.url()).await.unwrap();
    let lock = TokenLock::with_options(
        backend.clone(),
        &LockName::new("job").unwrap(),
        LockOptions::new().policy(AcquirePolicy::try_once()),
    )
    .unwrap();
    let guard = lock.acquire().await.unwrap();
    assert!(guard.release().await.unwrap());
    let flushed: String = backend
        .query(nxlock::redis::cmd("SCRIPT").arg("FLUSH"))
        .await
        .unwrap();
    assert_eq!(flushed, "OK");
    let mut guard = lock.acquire().await.unwrap();
    assert!(guard.extend(Duration::from_secs(60)).await.unwrap());
    assert!(guard.release().await.unwrap());
}

#[tokio::test]
async fn a_bad_url_or_unreachable_server_is_a_typed_error() {
    let bad = RedisBackend::connect("not a url").await.unwrap_err();
    assert_eq!(bad.kind(), ErrorKind::InvalidConfig);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let options = RedisOptions {
        command_timeout: TIMEOUT,
        connect_timeout: TIMEOUT,
    };
    let refused = RedisBackend::connect_with(&format!("redis://127.0.0.1:{port}"), options)
        .await
        .unwrap_err();
    assert!(
        matches!(refused.kind(), ErrorKind::Connection | ErrorKind::Timeout),
        "{refused:?}"
    );
}

#[tokio::test]
async fn the_url_selects_the_database() {
    let Some(server) = spawn("the_url_selects_the_database") else {
        return;
    };
    let db5 = RedisBackend::connect(&format!("{}/5", server.url()))
        .await
        .unwrap();
    let db0 = RedisBackend::connect(&format!("{}/0", server.url()))
        .await
        .unwrap();
    db5.set(b"k", b"in five", nxlock::backend::SetOptions::new())
        .await
        .unwrap();
    assert_eq!(db0.get(b"k").await.unwrap(), None);
    assert_eq!(db5.get(b"k").await.unwrap(), Some(b"in five".to_vec()));
}

#[tokio::test]
async fn the_url_carries_the_password() {
    let Some(server) = spawn("the_url_carries_the_password") else {
        return;
    };
    let admin = RedisBackend::connect(&server.url()).await.unwrap();
    let set: String = admin
        .query(
            nxlock::redis::cmd("CONFIG")
                .arg("SET")
                .arg("requirepass")
                .arg("s3cret"),
        )
        .await
        .unwrap();
    assert_eq!(set, "OK");
    let url = format!("redis://:s3cret@127.0.0.1:{}", server.port());
    let authed = RedisBackend::connect(&url).await.unwrap();
    authed
        .set(b"k", b"v", nxlock::backend::SetOptions::new())
        .await
        .unwrap();
    assert_eq!(authed.get(b"k").await.unwrap(), Some(b"v".to_vec()));
    // Without the password, the server's refusal comes back as a typed error, not a panic.
    let refused = match RedisBackend::connect(&server.url()).await {
        Err(e) => e,
        Ok(anonymous) => anonymous.get(b"k").await.unwrap_err(),
    };
    assert!(
        refused.message().contains("NOAUTH") || refused.message().contains("Authentication"),
        "{refused:?}"
    );
}
