//! [`RedisInstances`]: N independent `redis-server` processes on loopback, for Redlock,
//! each behind its own [`Proxy`] so a test can black-hole it, and each with its own data
//! directory so it can restart with or without its data.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lock_redis::{RedisBackend, RedisOptions};

use super::proxy::Proxy;
use super::server::RedisServer;

/// Shortens every key's TTL by `ARGV[1]` ms (deleting those it runs out): what a node's
/// clock stepping that far ahead does to its keys.
const JUMP_CLOCK: &str = r#"local jump = tonumber(ARGV[1])
for _, key in ipairs(redis.call('KEYS', '*')) do
  local left = redis.call('PTTL', key)
  if left > 0 then
    if left <= jump then redis.call('DEL', key) else redis.call('PEXPIRE', key, left - jump) end
  end
end
return 0"#;

/// Whether spawned instances keep their data across a restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// No persistence (benchmarks): a restarted instance is empty.
    None,
    /// `appendonly yes`, `appendfsync always`, each in a data directory of its own, so
    /// [`RedisInstances::restart`] can bring it back with or without its data.
    AppendFsyncAlways,
}

/// One instance: its process, its proxy and its data directory.
#[derive(Debug)]
struct Instance {
    server: Mutex<RedisServer>,
    proxy: Proxy,
    dir: Option<PathBuf>,
}

/// N independent `redis-server` processes on free loopback ports (no replication between
/// them), each reached through a [`Proxy`]; killed, and their data directories removed,
/// on drop.
#[derive(Debug)]
pub struct RedisInstances {
    instances: Vec<Instance>,
}

fn data_dir() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("nxlock-instance-{}-{n}", std::process::id()))
}

impl RedisInstances {
    /// Spawns `n` instances with `durability`, each behind a proxy, and waits until each
    /// answers. Needs a tokio runtime (for the proxies).
    pub async fn spawn(n: usize, durability: Durability) -> Result<Self, String> {
        let mut instances = Vec::with_capacity(n);
        for _ in 0..n {
            let (args, dir) = match durability {
                Durability::None => (Vec::new(), None),
                Durability::AppendFsyncAlways => {
                    let dir = data_dir();
                    std::fs::create_dir_all(&dir)
                        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                    let args = ["--appendonly", "yes", "--appendfsync", "always", "--dir"]
                        .map(String::from)
                        .into_iter()
                        .chain([dir.display().to_string()])
                        .collect();
                    (args, Some(dir))
                }
            };
            let server = RedisServer::spawn_with(&args)?;
            let upstream = ([127, 0, 0, 1], server.port()).into();
            let proxy = Proxy::start(upstream)
                .await
                .map_err(|e| format!("cannot start a proxy: {e}"))?;
            instances.push(Instance {
                server: Mutex::new(server),
                proxy,
                dir,
            });
        }
        Ok(Self { instances })
    }

    /// How many instances there are.
    pub fn len(&self) -> usize {
        self.instances.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.instances.is_empty()
    }

    fn at(&self, index: usize) -> Result<&Instance, String> {
        self.instances
            .get(index)
            .ok_or_else(|| format!("no instance {index}: there are {}", self.len()))
    }

    /// Each instance's URL through its proxy (what the controls act on).
    pub fn urls(&self) -> Vec<String> {
        let url = |i: &Instance| format!("redis://{}", i.proxy.addr());
        self.instances.iter().map(url).collect()
    }

    /// Each instance's own URL, bypassing its proxy (for benchmarks).
    pub fn server_urls(&self) -> Vec<String> {
        let url = |i: &Instance| i.server.lock().map(|s| s.url()).unwrap_or_default();
        self.instances.iter().map(url).collect()
    }

    /// A [`RedisBackend`] on each instance, through its proxy.
    pub async fn backends(&self, options: RedisOptions) -> Result<Vec<RedisBackend>, String> {
        let mut backends = Vec::with_capacity(self.len());
        for url in self.urls() {
            let backend = RedisBackend::connect_with(&url, options).await;
            backends.push(backend.map_err(|e| format!("cannot connect to {url}: {e}"))?);
        }
        Ok(backends)
    }

    /// Kills instance `index` (SIGKILL); its clients' commands fail until a restart.
    pub fn kill(&self, index: usize) -> Result<(), String> {
        let instance = self.at(index)?;
        let mut server = instance.server.lock().map_err(|e| e.to_string())?;
        server.kill();
        // Connections through the proxy close now, not at their next command.
        instance.proxy.cut();
        Ok(())
    }

    /// Starts instance `index` again on its port: with the data its append-only file
    /// holds when `keep_data` (and it was spawned with [`Durability::AppendFsyncAlways`]),
    /// else empty.
    pub fn restart(&self, index: usize, keep_data: bool) -> Result<(), String> {
        let instance = self.at(index)?;
        let mut server = instance.server.lock().map_err(|e| e.to_string())?;
        server.kill();
        match (&instance.dir, keep_data) {
            (Some(dir), false) => {
                let aof = dir.join("appendonlydir");
                if aof.exists() {
                    std::fs::remove_dir_all(&aof)
                        .map_err(|e| format!("cannot remove {}: {e}", aof.display()))?;
                }
            }
            (None, true) => {
                return Err(format!(
                    "instance {index} has no persistence to keep its data with"
                ));
            }
            _ => {}
        }
        server.restart()
    }

    /// Keeps every instance on `cpus` from now on, restarted ones included (Linux; see
    /// [`CpuPlacement`](super::CpuPlacement)).
    pub fn keep_on_cpus(&self, cpus: &[usize]) -> Result<(), String> {
        for instance in &self.instances {
            let mut server = instance.server.lock().map_err(|e| e.to_string())?;
            server.keep_on_cpus(cpus)?;
        }
        Ok(())
    }

    /// Each instance's process id, while it runs.
    pub fn pids(&self) -> Vec<Option<u32>> {
        let pid = |i: &Instance| i.server.lock().ok().and_then(|s| s.pid());
        self.instances.iter().map(pid).collect()
    }

    /// Throws away all traffic to and from instance `index` (see [`Proxy::blackhole`]).
    pub fn blackhole(&self, index: usize) -> Result<(), String> {
        self.at(index)?.proxy.blackhole();
        Ok(())
    }

    /// Ends [`RedisInstances::blackhole`] on instance `index`.
    pub fn heal(&self, index: usize) -> Result<(), String> {
        self.at(index)?.proxy.heal();
        Ok(())
    }

    /// What instance `index`'s clock jumping `by` ahead does to its keys: every TTL
    /// shortened by `by`, keys it runs out deleted. A real server's clock cannot be
    /// stepped from a test; to a lock this is the same.
    pub async fn jump_clock(&self, index: usize, by: Duration) -> Result<(), String> {
        let url = self
            .server_urls()
            .swap_remove(self.at(index).map(|_| index)?);
        let backend = RedisBackend::connect(&url)
            .await
            .map_err(|e| e.to_string())?;
        let mut eval = redis::cmd("EVAL");
        eval.arg(JUMP_CLOCK).arg(0).arg(by.as_millis().to_string());
        backend
            .query::<i64>(&eval)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

impl Drop for RedisInstances {
    fn drop(&mut self) {
        for instance in &self.instances {
            if let Ok(mut server) = instance.server.lock() {
                server.kill();
            }
            if let Some(dir) = &instance.dir {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
}
