//! How the user's command runs: started once per client for each run, or, long-lived,
//! started once per client for many runs and told on its stdin when each begins.
//!
//! The long-lived protocol, for any language: the process is started with
//! `NXLOCK_LONG_LIVED=1` (and its client's `NXLOCK_CLIENT`, `NXLOCK_CYCLES`, ...). For
//! each run it reads one line on stdin, `REDIS_URL=<url> NXLOCK_NODES=<url>,<url>...`,
//! connects there, runs its cycles, closes its connections and writes the line `ended`
//! on stdout (other stdout lines are ignored). At the end of stdin it exits. A process
//! that exits, or does not end a run within the liveness bound, is replaced by a fresh
//! one for the next run.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use lock_explore::Options;
use parking_lot::Mutex;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::run::RunError;

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
    /// It was still running at the liveness bound (and was killed).
    Unfinished,
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
fn command(line: &str, client: usize, options: &Options) -> Command {
    let mut command = Command::new("sh");
    #[cfg(unix)]
    command.process_group(0);
    command
        .arg("-c")
        .arg(line)
        .env("NXLOCK_CLIENT", client.to_string())
        .env("NXLOCK_CLIENTS", options.clients.to_string())
        .env("NXLOCK_CYCLES", options.cycles.to_string())
        .env("NXLOCK_TTL_MS", options.ttl_ms.to_string())
        // How many replicas the primary behind REDIS_URL has, for a client's WAIT.
        .env("NXLOCK_REPLICAS", options.topology.replicas().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

fn spawn(mut command: Command, line: &str) -> Result<Spawned, RunError> {
    let child = command.spawn().map_err(|error| RunError::Spawn {
        command: line.to_owned(),
        error,
    })?;
    let group = child.id();
    Ok(Spawned { child, group })
}

/// Runs `line` once per client, each with its `addresses`, and waits for them all (at
/// most `bound`; those still running then are killed).
pub(crate) async fn one_shot(
    line: &str,
    options: &Options,
    addresses: &[Addresses],
    bound: Duration,
) -> Result<Vec<End>, RunError> {
    let mut children = Vec::new();
    for (client, address) in addresses.iter().enumerate() {
        let mut command = command(line, client, options);
        command
            .env("REDIS_URL", &address.url)
            .env("NXLOCK_NODES", &address.nodes);
        let mut spawned = spawn(command, line)?;
        let stderr = StderrTail::read(spawned.child.stderr.take());
        children.push((spawned, stderr));
    }
    let waited = tokio::time::timeout(bound, async {
        for (spawned, _) in children.iter_mut() {
            let _ = spawned.child.wait().await;
        }
    })
    .await;
    let mut ends = Vec::new();
    for (mut spawned, stderr) in children {
        let end = match spawned.child.try_wait().ok().flatten() {
            Some(status) if status.success() => End::Ok,
            Some(_) => End::Failed(stderr.finish().await),
            None => {
                debug_assert!(waited.is_err());
                spawned.kill();
                let _ = spawned.child.wait().await;
                End::Unfinished
            }
        };
        ends.push(end);
    }
    // Whatever a client left running in its group ends with the run.
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
    fn spawn(line: &str, options: &Options) -> Result<Self, RunError> {
        let mut processes = Vec::new();
        for client in 0..options.clients {
            let mut command = command(line, client, options);
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

    /// Tells each process its run's `addresses` and waits (at most `bound`) for each
    /// to say it ended. Whether the lane can serve another run comes back too.
    async fn run(&mut self, addresses: &[Addresses], bound: Duration) -> (Vec<End>, bool) {
        let mut ends = vec![None; self.processes.len()];
        for (process, address) in self.processes.iter_mut().zip(addresses) {
            let line = format!("REDIS_URL={} NXLOCK_NODES={}\n", address.url, address.nodes);
            // A process that has exited cannot take it; reading its stdout then says so.
            let _ = process.stdin.write_all(line.as_bytes()).await;
            let _ = process.stdin.flush().await;
        }
        let _ = tokio::time::timeout(bound, async {
            for (process, end) in self.processes.iter_mut().zip(ends.iter_mut()) {
                *end = Some(process.ended().await);
            }
        })
        .await;
        let mut reusable = true;
        let mut result = Vec::new();
        for (process, end) in self.processes.iter_mut().zip(ends) {
            let end = match end {
                Some(end) => end,
                None => {
                    // `next_line` is cancel-safe: a line that arrived at the bound is not lost.
                    match tokio::time::timeout(Duration::from_millis(1), process.ended()).await {
                        Ok(end) => end,
                        Err(_) => End::Unfinished,
                    }
                }
            };
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
    options: Options,
    idle: Mutex<Vec<Lane>>,
}

impl Lanes {
    pub(crate) fn new(line: &str, options: &Options) -> Arc<Self> {
        Arc::new(Self {
            line: line.to_owned(),
            options: options.clone(),
            idle: Mutex::new(Vec::new()),
        })
    }

    /// Runs one run on an idle lane (or a new one).
    pub(crate) async fn run(
        &self,
        addresses: &[Addresses],
        bound: Duration,
    ) -> Result<Vec<End>, RunError> {
        let idle = self.idle.lock().pop();
        let mut lane = match idle {
            Some(lane) => lane,
            None => Lane::spawn(&self.line, &self.options)?,
        };
        let (ends, reusable) = lane.run(addresses, bound).await;
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

    /// The last 5 lines once the process closed stderr.
    async fn finish(self) -> String {
        let _ = self.reader.await;
        last_lines(&self.kept.lock())
    }
}

fn last_lines(kept: &[u8]) -> String {
    let text = String::from_utf8_lossy(kept);
    let lines: Vec<_> = text.lines().rev().take(5).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join("\n")
}
