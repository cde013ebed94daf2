//! How the user's command runs: started once per client for each run, or, long-lived,
//! started once per client for many runs and told on its stdin when each begins.
//!
//! The long-lived protocol, for any language: the process is started with
//! `NXLOCK_LONG_LIVED=1` (and its client's `NXLOCK_CLIENT`, `NXLOCK_TTL_MS`, ...). For
//! each run it reads one line on stdin, `REDIS_URL=<url> NXLOCK_NODES=<url>,<url>...
//! NXLOCK_CYCLES=<n>`, connects there, runs its cycles, closes its connections and
//! writes the line `ended` on stdout (other stdout lines are ignored). At the end of
//! stdin it exits. A process that exits, or does not end a run within its bounds, is
//! replaced by a fresh one for the next run.
//!
//! Each client has two bounds in a run: it must send its first command within the
//! start-up bound (else the run is a harness error, not the lock's), and end within the
//! liveness horizon counted from that first command.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lock_explore::RunnerError;
use parking_lot::Mutex;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::starts::Starts;

/// Where one client connects in one run.
#[derive(Clone, Debug)]
pub(crate) struct Addresses {
    /// `REDIS_URL`: the client's port on the first node.
    pub(crate) url: String,
    /// `NXLOCK_NODES`: its port on every node, comma-separated.
    pub(crate) nodes: String,
}

/// How a client's process ended its part of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// It ended the run (exited 0, or said `ended`).
    Ok,
    /// It failed: the last lines it wrote to stderr.
    Failed(String),
    /// It was still running at the liveness horizon (and was killed).
    Unfinished,
    /// It sent no command within the start-up bound.
    NotStarted,
}

/// What every client of a run is told, and held to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Terms {
    /// `NXLOCK_CYCLES`.
    pub(crate) cycles: u32,
    /// `NXLOCK_CLIENTS`.
    pub(crate) clients: usize,
    /// `NXLOCK_TTL_MS`.
    pub(crate) ttl_ms: u64,
    /// `NXLOCK_REPLICAS`.
    pub(crate) replicas: usize,
    /// From being started (or told of the run) to the first command.
    pub(crate) startup: Duration,
    /// From the first command to the end of its part.
    pub(crate) horizon: Duration,
}

/// A client's process: `sh -c` in a process group of its own, killed whole when dropped,
/// so that what the shell started (the interpreter) never outlives the run or the
/// search.
#[derive(Debug)]
struct Spawned {
    child: Child,
    group: Option<u32>,
}

impl Spawned {
    /// Kills the whole group at once.
    fn kill(&mut self) {
        #[cfg(unix)]
        if let Some(group) = self.group.and_then(|g| i32::try_from(g).ok()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(group),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.child.start_kill();
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The environment every client process gets, whichever way it runs.
fn command(line: &str, client: usize, terms: &Terms) -> Command {
    let mut command = Command::new("sh");
    #[cfg(unix)]
    command.process_group(0);
    command
        .arg("-c")
        .arg(line)
        .env("NXLOCK_CLIENT", client.to_string())
        .env("NXLOCK_CLIENTS", terms.clients.to_string())
        .env("NXLOCK_CYCLES", terms.cycles.to_string())
        .env("NXLOCK_TTL_MS", terms.ttl_ms.to_string())
        // How many replicas the primary behind REDIS_URL has, for a client's WAIT.
        .env("NXLOCK_REPLICAS", terms.replicas.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

fn spawn(mut command: Command, line: &str) -> Result<Spawned, RunnerError> {
    let child = command
        .spawn()
        .map_err(|error| RunnerError(format!("could not start {line:?}: {error}")))?;
    let group = child.id();
    Ok(Spawned { child, group })
}

/// Runs `line` once per client, each with its `addresses`, and waits for each within
/// its bounds (those still running then are killed).
pub(crate) async fn one_shot(
    line: &str,
    terms: &Terms,
    addresses: &[Addresses],
    starts: &Starts,
) -> Result<Vec<End>, RunnerError> {
    let mut children = Vec::new();
    for (client, address) in addresses.iter().enumerate() {
        let mut command = command(line, client, terms);
        command
            .env("REDIS_URL", &address.url)
            .env("NXLOCK_NODES", &address.nodes);
        let mut spawned = spawn(command, line)?;
        if let Some(pid) = spawned.child.id() {
            starts.meter().register(client, pid);
        }
        let stderr = StderrTail::read(spawned.child.stderr.take());
        children.push((spawned, stderr, Instant::now()));
    }
    let mut ends = Vec::new();
    for (client, (mut spawned, stderr, spawned_at)) in children.into_iter().enumerate() {
        // The first command, or the process's end, whichever comes first: a process
        // that exits at once (with an error, or with nothing to do) is not waited on.
        let first = tokio::select! {
            first = starts.first(client, spawned_at + terms.startup) => first.ok_or(None),
            status = spawned.child.wait() => Err(Some(status)),
        };
        let end = match first {
            Err(None) => End::NotStarted,
            Err(Some(Ok(status))) if status.success() => End::Ok,
            Err(Some(_)) => End::Failed(stderr.finish().await),
            Ok(first) => {
                let waited =
                    tokio::time::timeout_at((first + terms.horizon).into(), spawned.child.wait())
                        .await;
                match waited {
                    Ok(Ok(status)) if status.success() => End::Ok,
                    Ok(_) => End::Failed(stderr.finish().await),
                    Err(_) => End::Unfinished,
                }
            }
        };
        starts.meter().ended(client);
        spawned.kill();
        let _ = spawned.child.wait().await;
        ends.push(end);
    }
    Ok(ends)
}

/// One long-lived process per client, run after run.
#[derive(Debug)]
pub(crate) struct Lane {
    processes: Vec<LongLived>,
}

#[derive(Debug)]
struct LongLived {
    process: Spawned,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    stderr: StderrTail,
}

impl Lane {
    fn spawn(line: &str, terms: &Terms) -> Result<Self, RunnerError> {
        let mut processes = Vec::new();
        for client in 0..terms.clients {
            let mut command = command(line, client, terms);
            command
                .env("NXLOCK_LONG_LIVED", "1")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped());
            let mut process = spawn(command, line)?;
            let child = &mut process.child;
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                unreachable!("both were asked for as pipes");
            };
            let stderr = StderrTail::read(child.stderr.take());
            processes.push(LongLived {
                process,
                stdin,
                stdout: BufReader::new(stdout).lines(),
                stderr,
            });
        }
        Ok(Self { processes })
    }

    /// Tells each of the first `addresses.len()` processes its run, and waits for each
    /// to say it ended, within its bounds. Whether the lane can serve another run comes
    /// back too.
    async fn run(
        &mut self,
        addresses: &[Addresses],
        terms: &Terms,
        starts: &Starts,
    ) -> (Vec<End>, bool) {
        let told = Instant::now();
        for (client, (process, address)) in self.processes.iter_mut().zip(addresses).enumerate() {
            if let Some(pid) = process.process.child.id() {
                starts.meter().register(client, pid);
            }
            let line = format!(
                "REDIS_URL={} NXLOCK_NODES={} NXLOCK_CYCLES={} NXLOCK_CLIENTS={}\n",
                address.url, address.nodes, terms.cycles, terms.clients
            );
            // A process that has exited cannot take it; reading its stdout then says so.
            let _ = process.stdin.write_all(line.as_bytes()).await;
            let _ = process.stdin.flush().await;
        }
        let mut reusable = true;
        let mut result = Vec::new();
        for (client, process) in self.processes.iter_mut().take(addresses.len()).enumerate() {
            let first = tokio::select! {
                first = starts.first(client, told + terms.startup) => first.ok_or(None),
                end = process.ended() => Err(Some(end)),
            };
            let end = match first {
                Err(None) => End::NotStarted,
                // It ended its part, or exited, without a command.
                Err(Some(end)) => end,
                Ok(first) => {
                    match tokio::time::timeout_at((first + terms.horizon).into(), process.ended())
                        .await
                    {
                        Ok(end) => end,
                        // `next_line` is cancel-safe: a line that arrived at the bound is
                        // not lost, and one that did not means the process is still busy.
                        Err(_) => End::Unfinished,
                    }
                }
            };
            starts.meter().ended(client);
            if end != End::Ok {
                reusable = false;
            }
            if let End::Failed(text) = &end {
                process.process.kill();
                let status = process.process.child.wait().await.ok();
                let status = status.map_or_else(String::new, |s| format!("({s}) "));
                result.push(End::Failed(format!("{status}{text}")));
                continue;
            }
            result.push(end);
        }
        (result, reusable)
    }
}

impl LongLived {
    /// Reads stdout up to the line `ended` (`End::Ok`) or its end (`End::Failed`).
    async fn ended(&mut self) -> End {
        loop {
            match self.stdout.next_line().await {
                Ok(Some(line)) if line.trim() == "ended" => return End::Ok,
                Ok(Some(_)) => continue,
                Ok(None) | Err(_) => return End::Failed(self.stderr.now()),
            }
        }
    }
}

/// The long-lived lanes of a search: a run takes one (or starts one), and gives it back
/// if every process ended its part.
#[derive(Debug)]
pub(crate) struct Lanes {
    line: String,
    idle: Mutex<Vec<Lane>>,
}

impl Lanes {
    pub(crate) fn new(line: &str) -> Arc<Self> {
        Arc::new(Self {
            line: line.to_owned(),
            idle: Mutex::new(Vec::new()),
        })
    }

    /// Runs one run on an idle lane (or a new one) of processes started with `terms`.
    pub(crate) async fn run(
        &self,
        addresses: &[Addresses],
        terms: &Terms,
        starts: &Starts,
    ) -> Result<Vec<End>, RunnerError> {
        let idle = self.idle.lock().pop();
        let mut lane = match idle {
            Some(lane) => lane,
            None => Lane::spawn(&self.line, terms)?,
        };
        let (ends, reusable) = lane.run(addresses, terms, starts).await;
        if reusable {
            self.idle.lock().push(lane);
        }
        Ok(ends)
    }
}

/// The last lines a process wrote to stderr, read as they come so that a chatty process
/// never blocks on a full pipe (at most 4 KiB are kept).
#[derive(Debug)]
struct StderrTail {
    kept: Arc<Mutex<Vec<u8>>>,
    reader: tokio::task::JoinHandle<()>,
}

impl StderrTail {
    fn read(stderr: Option<tokio::process::ChildStderr>) -> Self {
        use tokio::io::AsyncReadExt;
        let kept = Arc::new(Mutex::new(Vec::new()));
        let into = kept.clone();
        let reader = tokio::spawn(async move {
            let Some(mut stderr) = stderr else {
                return;
            };
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                let mut kept = into.lock();
                kept.extend_from_slice(&chunk[..n]);
                if kept.len() > 4096 {
                    let cut = kept.len() - 4096;
                    kept.drain(..cut);
                }
            }
        });
        Self { kept, reader }
    }

    /// The last 5 lines so far.
    fn now(&self) -> String {
        last_lines(&self.kept.lock())
    }

    /// The last 5 lines once the process closed stderr (or a moment later: what it
    /// started may hold the pipe open).
    async fn finish(self) -> String {
        let _ = tokio::time::timeout(Duration::from_millis(200), self.reader).await;
        last_lines(&self.kept.lock())
    }
}

/// The last 5 lines of what a process wrote, and before them the last line that names
/// an error, where that is further up: Node's `Cannot find module 'ioredis'` comes 9
/// lines before its end, Python's exception after its traceback.
fn last_lines(kept: &[u8]) -> String {
    let text = String::from_utf8_lossy(kept);
    let all: Vec<&str> = text.lines().collect();
    let tail = &all[all.len().saturating_sub(5)..];
    let names_an_error = |line: &str| {
        let line = line.trim_start();
        ["Error", "Exception", "error:", "Traceback"]
            .iter()
            .any(|word| line.starts_with(word) || line.contains(&format!("{word}: ")))
    };
    let headline = all[..all.len() - tail.len()]
        .iter()
        .rev()
        .find(|line| names_an_error(line))
        .filter(|_| !tail.iter().any(|line| names_an_error(line)));
    let mut lines: Vec<&str> = headline.into_iter().copied().collect();
    if headline.is_some() {
        lines.push("…");
    }
    lines.extend(tail);
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::last_lines;

    #[test]
    fn a_failure_keeps_the_line_that_names_its_error() {
        let node = "node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module 'ioredis'
Require stack:
- /work/examples/node/cycle.js
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at Module._load (node:internal/modules/cjs/loader:1051:27) {
  code: 'MODULE_NOT_FOUND',
  requireStack: [ '/work/examples/node/cycle.js' ]
}

Node.js v20.20.2";
        let shown = last_lines(node.as_bytes());
        assert!(
            shown.starts_with("Error: Cannot find module 'ioredis'"),
            "{shown}"
        );
        assert!(shown.ends_with("Node.js v20.20.2"), "{shown}");
        let python = "Traceback (most recent call last):\n  File \"x.py\", line 1\nModuleNotFoundError: No module named 'redis'";
        assert_eq!(last_lines(python.as_bytes()), python, "short: all of it");
    }
}
