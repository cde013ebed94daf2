//! Lock libraries of other languages against `nxlock serve`: redis-py's `Lock` (and
//! redis-py's own lock tests, conftest included), pottery (Redlock and containers on
//! hashes, lists and sets), node `redlock` and `redis-semaphore` (sorted sets) with ioredis
//! run their scripts (tests/clients/) against the server, and against a real redis-server
//! as the control that the scripts themselves are right.
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
fn installed(client: &str, probe: bool, how: &str) -> Option<()> {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_lock_works_against_nxlock_serve() {
    let probe = works("python3", &["-c", "import redis"]);
    if installed("redis-py", probe, "apt-get install python3-redis").is_none() {
        return;
    }
    against_both("python3", "redis_py_lock.py").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_redlock_with_ioredis_works_against_nxlock_serve() {
    let probe = works("node", &["-e", "require('redlock'); require('ioredis')"]);
    if installed("node redlock + ioredis", probe, "npm ci in tests/clients").is_none() {
        return;
    }
    against_both("node", "redlock.mjs").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pottery_works_against_nxlock_serve() {
    let probe = works("python3", &["-c", "import pottery"]);
    if installed("pottery", probe, "pip install pottery").is_none() {
        return;
    }
    against_both("python3", "pottery_check.py").await;
}

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
