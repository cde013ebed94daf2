//! `redis-server --sentinel` processes watching a spawned primary, and what tests ask
//! them (`SENTINEL replicas`, `get-master-addr-by-name`).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::server::{answers_as, free_port};

/// The master name the spawned sentinels watch.
pub const MASTER_NAME: &str = "nxlock";

/// A `redis-server --sentinel` process and its config file.
#[derive(Debug)]
pub(crate) struct Sentinel {
    child: Child,
    pub(crate) port: u16,
    dir: PathBuf,
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A sentinel watching `primary`, on a free port; a few tries, as for a server (another
/// spawn may take the port between our look and the sentinel's bind).
pub(crate) fn spawn_sentinel(primary: u16) -> Result<Sentinel, String> {
    let mut last_error = String::new();
    for _ in 0..3 {
        match try_spawn_sentinel(primary) {
            Ok(sentinel) => return Ok(sentinel),
            Err(e) => last_error = e,
        }
    }
    Err(last_error)
}

fn try_spawn_sentinel(primary: u16) -> Result<Sentinel, String> {
    let port = free_port().map_err(|e| format!("no free loopback port: {e}"))?;
    let dir = std::env::temp_dir().join(format!("nxlock-sentinel-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("sentinel directory: {e}"))?;
    let config = dir.join("sentinel.conf");
    let text = format!(
        "port {port}\nbind 127.0.0.1\nprotected-mode no\ndir {}\n\
         sentinel monitor {MASTER_NAME} 127.0.0.1 {primary} 1\n\
         sentinel down-after-milliseconds {MASTER_NAME} 500\n\
         sentinel failover-timeout {MASTER_NAME} 2000\n",
        dir.display()
    );
    std::fs::write(&config, text).map_err(|e| format!("sentinel config: {e}"))?;
    let child = Command::new("redis-server")
        .arg(&config)
        .arg("--sentinel")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run redis-server --sentinel: {e}"))?;
    let mut sentinel = Sentinel { child, port, dir };
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if answers_as(port, sentinel.child.id()) {
            return Ok(sentinel);
        }
        if let Ok(Some(status)) = sentinel.child.try_wait() {
            return Err(format!("redis-server --sentinel exited at start: {status}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = sentinel.child.kill();
    Err("the sentinel did not answer within 10 s".into())
}

async fn sentinel_query(port: u16, args: &[&str]) -> Option<redis::Value> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).ok()?;
    let mut connection = client.get_multiplexed_async_connection().await.ok()?;
    let mut cmd = redis::cmd("SENTINEL");
    for arg in args {
        cmd.arg(*arg);
    }
    cmd.query_async(&mut connection).await.ok()
}

pub(crate) async fn sentinel_replicas(port: u16) -> Option<usize> {
    match sentinel_query(port, &["replicas", MASTER_NAME]).await? {
        redis::Value::Array(replicas) => Some(replicas.len()),
        _ => None,
    }
}

pub(crate) async fn master_port(port: u16) -> Option<u16> {
    match sentinel_query(port, &["get-master-addr-by-name", MASTER_NAME]).await? {
        redis::Value::Array(parts) => match parts.as_slice() {
            [_, redis::Value::BulkString(port)] => std::str::from_utf8(port).ok()?.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}
