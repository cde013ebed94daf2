//! Lock libraries of other languages against `nxlock serve`: redis-py's `Lock` (and
//! redis-py's own lock tests, conftest included), pottery (Redlock and containers on
//! hashes, lists and sets), node `redlock` and `redis-semaphore` (sorted sets) with ioredis
//! run their scripts (tests/clients/) against the server, and against a real redis-server
//! as the control that the scripts themselves are right. And `nxlock check` against
//! fakeredis, a Redis-compatible server nxlock did not write.
//!
//! A client that is not installed is SKIPPED loudly; with `NXLOCK_REQUIRE_CLIENTS=1` (set
//! by `.ci/run` once it has installed them) that is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use nxlock::server::{Server, ServerOptions};
use nxlock::testing::RedisTarget;

const REQUIRE_VAR: &str = "NXLOCK_REQUIRE_CLIENTS";

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// Whether `program args…` runs and exits 0 (used to probe for an installed client).
fn works(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .current_dir(clients_dir())
        .output()
        .is_ok_and(|output| output.status.success())
}

/// `Some(())` when the client is there; otherwise a loud SKIPPED line, or a panic when
/// clients are required.
pub(crate) fn installed(client: &str, probe: bool, how: &str) -> Option<()> {
    if probe {
        return Some(());
    }
    let why = format!("{client} is not installed ({how})");
    if std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1") {
        panic!("{why}, and {REQUIRE_VAR}=1");
    }
    eprintln!(
        "\n*** SKIPPED {client} against nxlock serve: {why}. {REQUIRE_VAR}=1 makes this a failure. ***"
    );
    None
}

/// Runs the client script against `url`; panics with its output when it fails.
async fn run(program: &'static str, script: &'static str, url: String, mode: &'static str) {
    let output = tokio::task::spawn_blocking(move || {
        Command::new(program)
            .arg(script)
            .arg(&url)
            .arg(mode)
            .current_dir(clients_dir())
            .output()
            .expect("run the client")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{program} {script} ({mode}) failed:\n{stdout}\n{stderr}"
    );
    println!("{}", stdout.trim());
}

/// The script against nxlock serve (with fast-forward), then against redis-server.
async fn against_both(program: &'static str, script: &'static str) {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    run(program, script, server.url(), "fastforward").await;
    server.stop().await;
    match RedisTarget::from_env() {
        Ok(target) => run(program, script, target.url(), "plain").await,
        Err(why) => nxlock::testing::announce_skip(&format!("{script} against redis-server"), &why),
    }
}

#[cfg_attr(
    missing = "redis_py",
    ignore = "redis-py is not installed: pip install redis"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_lock_works_against_nxlock_serve() {
    let probe = works("python3", &["-c", "import redis"]);
    if installed("redis-py", probe, "apt-get install python3-redis").is_none() {
        return;
    }
    against_both("python3", "redis_py_lock.py").await;
}

#[cfg_attr(
    missing = "node_redlock",
    ignore = "node redlock is not installed: npm ci in tests/clients"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_redlock_with_ioredis_works_against_nxlock_serve() {
    let probe = works("node", &["-e", "require('redlock'); require('ioredis')"]);
    if installed("node redlock + ioredis", probe, "npm ci in tests/clients").is_none() {
        return;
    }
    against_both("node", "redlock.mjs").await;
}

#[cfg_attr(
    missing = "pottery",
    ignore = "pottery is not installed: pip install pottery"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pottery_works_against_nxlock_serve() {
    let probe = works("python3", &["-c", "import pottery"]);
    if installed("pottery", probe, "pip install pottery").is_none() {
        return;
    }
    against_both("python3", "pottery_check.py").await;
}

#[cfg_attr(
    missing = "redis_semaphore",
    ignore = "redis-semaphore is not installed: npm ci in tests/clients"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_redis_semaphore_works_against_nxlock_serve() {
    let probe = works(
        "node",
        &["-e", "require('redis-semaphore'); require('ioredis')"],
    );
    if installed("node redis-semaphore", probe, "npm ci in tests/clients").is_none() {
        return;
    }
    against_both("node", "redis_semaphore.mjs").await;
}

/// redis-py's own test suite (its sources, as `.ci/run` unpacks them into
/// tests/clients/redis-py), unmodified: its conftest reads INFO when the session starts,
/// then its lock tests run.
#[cfg_attr(
    any(missing = "redis_py", missing = "pytest"),
    ignore = "redis-py or pytest is not installed: pip install redis pytest packaging"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_own_lock_tests_pass_against_nxlock_serve() {
    let suite = clients_dir().join("redis-py");
    let probe = suite.join("tests/conftest.py").exists()
        && works("python3", &["-c", "import pytest, packaging, redis"]);
    let how = "pip install pytest packaging, and redis-py's sources in tests/clients/redis-py";
    if installed("redis-py's test suite", probe, how).is_none() {
        return;
    }
    let server = Server::start(ServerOptions::default()).await.unwrap();
    pytest(&suite, server.url()).await;
    server.stop().await;
    match RedisTarget::from_env() {
        Ok(target) => pytest(&suite, target.url()).await,
        Err(why) => nxlock::testing::announce_skip("redis-py's suite against redis-server", &why),
    }
}

async fn pytest(suite: &Path, url: String) {
    let suite = suite.to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .args([
                "-m",
                "pytest",
                "tests/test_lock.py",
                "-q",
                "-p",
                "no:cacheprovider",
            ])
            .arg(format!("--redis-url={url}"))
            .current_dir(suite)
            .output()
            .expect("run pytest")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "redis-py's tests failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary = stdout.lines().rev().find(|l| l.contains("passed"));
    println!(
        "redis-py tests/test_lock.py: {}",
        summary.unwrap_or("passed")
    );
}

/// fakeredis (a Python Redis-compatible server, in its TCP mode) kills the process on drop.
struct FakeRedis(std::process::Child);

impl Drop for FakeRedis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `nxlock check --url` against a server nxlock did not write: whatever fails is named in
/// protocol terms (the command, the reply, what Redis replies, or the server's own error
/// text), never as a bare client-library message, and a dropped connection names the
/// command it dropped.
#[cfg_attr(
    missing = "fakeredis",
    ignore = "fakeredis is not installed: pip install fakeredis"
)]
#[test]
fn check_against_fakeredis_names_every_difference() {
    let probe = works("python3", &["-c", "from fakeredis import TcpFakeServer"]);
    if installed("fakeredis", probe, "pip install fakeredis").is_none() {
        return;
    }
    {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let _server = FakeRedis(
            Command::new("python3")
                .arg("fakeredis_server.py")
                .arg(port.to_string())
                .current_dir(clients_dir())
                .spawn()
                .expect("start fakeredis"),
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "fakeredis never listened"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = Command::new(env!("CARGO_BIN_EXE_nxlock"))
            .args([
                "check",
                "--url",
                &format!("redis://127.0.0.1:{port}"),
                "--json",
            ])
            .output()
            .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut failed = 0;
        for case in report["cases"].as_array().unwrap() {
            if case["outcome"] != "fail" {
                continue;
            }
            failed += 1;
            let detail = case["detail"].as_str().unwrap();
            assert!(
                !detail.contains("Incompatible type") && !detail.contains("Response type"),
                "{}: a client library's message, not the protocol's: {detail}",
                case["name"]
            );
            for lost in ["broken pipe", "Connection reset", "connection closed"] {
                if let Some(at) = detail.find(lost) {
                    assert!(
                        detail[..at].trim_end().ends_with(':'),
                        "{}: a lost connection without its command: {detail}",
                        case["name"]
                    );
                }
            }
        }
        println!("fakeredis: {failed} cases differ from Redis, each named");
    }
}

/// One step of `redis_py_interop.py`: its output.
fn redis_py(url: &str, key: &str, step: &str, token: Option<&str>) -> String {
    let mut command = Command::new("python3");
    command.args(["redis_py_interop.py", url, key, step]);
    command.args(token);
    let output = command.current_dir(clients_dir()).output().unwrap();
    assert!(
        output.status.success(),
        "redis-py step {step}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// A lock on the plain layout is redis-py's `Lock` on the same key: each side is refused
/// while the other holds it, and each releases only its own. Against nxlock serve and a
/// real redis-server.
async fn shared_with_redis_py(url: String) {
    use nxlock::prelude::*;
    let key = "interop:plain-lock";
    let name = nxlock::LockName::plain(key).unwrap();
    let backend = nxlock::RedisBackend::connect(&url).await.unwrap();
    let ours = nxlock::TokenLock::new(backend.clone(), &name);
    let guard = ours.acquire().await.unwrap();
    let (u, k) = (url.clone(), key.to_string());
    tokio::task::spawn_blocking(move || redis_py(&u, &k, "refused", None))
        .await
        .unwrap();
    assert!(guard.release().await.unwrap());
    let (u, k) = (url.clone(), key.to_string());
    let theirs = tokio::task::spawn_blocking(move || redis_py(&u, &k, "hold", None))
        .await
        .unwrap();
    assert!(
        ours.try_acquire().await.unwrap().acquired().is_none(),
        "nxlock took the key redis-py holds"
    );
    assert_eq!(
        backend.get(key.as_bytes()).await.unwrap(),
        Some(theirs.clone().into_bytes())
    );
    let (u, k) = (url.clone(), key.to_string());
    tokio::task::spawn_blocking(move || redis_py(&u, &k, "release", Some(&theirs)))
        .await
        .unwrap();
    let guard = ours.try_acquire().await.unwrap().acquired();
    assert!(guard.unwrap().release().await.unwrap());
}

#[cfg_attr(
    missing = "redis_py",
    ignore = "redis-py is not installed: pip install redis"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_key_lock_is_shared_with_redis_pys_lock() {
    if installed(
        "redis-py",
        works("python3", &["-c", "import redis"]),
        "pip install redis",
    )
    .is_none()
    {
        return;
    }
    let server = Server::start(ServerOptions::default()).await.unwrap();
    shared_with_redis_py(server.url()).await;
    server.stop().await;
    match RedisTarget::from_env() {
        Ok(target) => shared_with_redis_py(target.url()).await,
        Err(why) => nxlock::testing::announce_skip("redis-py interop against redis-server", &why),
    }
}
