//! One run: a fresh server on fresh loopback ports, the command started once per
//! client with its environment, and the verdict once every process has exited (or the
//! liveness bound has passed).

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use lock_core::Clock;
use lock_explore::{ExternalRun, Options, Step, Trace, Violation};
use lock_server::{Server, ServerOptions};
use tokio::process::Command;

use crate::observer::WireObserver;

/// What one run found.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Its first violation (of the lock's own, or inherent), if any.
    pub violation: Option<Violation>,
    /// Every command and marker of every client, with the faults.
    pub trace: Trace,
    /// How many operations (commands and markers) each client made.
    pub ops: Vec<u32>,
    /// Each client's operations by name, in order: where steps may be anchored.
    pub op_names: Vec<Vec<String>>,
    /// What the clients wrote to stderr, when one exited with a failure.
    pub failures: Vec<String>,
}

/// Why a run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The server could not listen.
    #[error("the server could not listen: {0}")]
    Listen(std::io::Error),
    /// The command could not start.
    #[error("could not start {command:?}: {error}")]
    Spawn {
        /// The command.
        command: String,
        /// Why.
        error: std::io::Error,
    },
    /// The topology cannot be served to processes yet.
    #[error(transparent)]
    Topology(#[from] lock_explore::UnsupportedTopology),
    /// Every client of the fault-free first run exited with a failure: the command
    /// itself does not work, and no search would mean anything.
    #[error("every client of the fault-free run failed; the first said: {0}")]
    ClientsFailed(String),
}

/// Runs `command` (a shell command line) once per client under `steps`.
pub(crate) async fn run(
    command: &str,
    options: &Options,
    steps: &[Step],
) -> Result<Outcome, RunError> {
    let external = Arc::new(ExternalRun::new(options, steps, Clock::system())?);
    let observer = Arc::new(WireObserver::new(
        external.clone(),
        options.clients,
        validity_slack(options),
    ));
    let server = Server::start(ServerOptions {
        observer: Some(observer),
        db: Some(external.server()),
        ..ServerOptions::default()
    })
    .await
    .map_err(RunError::Listen)?;
    let mut children = Vec::new();
    let mut stderrs = Vec::new();
    for client in 0..options.clients {
        let addr = server.listen_as(client).await.map_err(RunError::Listen)?;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .env("NXLOCK_CLIENT", client.to_string())
            .env("NXLOCK_CLIENTS", options.clients.to_string())
            .env("REDIS_URL", format!("redis://{addr}"))
            .env("NXLOCK_NODES", format!("redis://{addr}"))
            .env("NXLOCK_CYCLES", options.cycles.to_string())
            .env("NXLOCK_TTL_MS", options.ttl_ms.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| RunError::Spawn {
                command: command.to_owned(),
                error,
            })?;
        // Read as it comes, so that a chatty client never blocks on a full pipe.
        stderrs.push(tokio::spawn(tail(child.stderr.take())));
        children.push(child);
    }
    let bound = liveness_bound(options);
    let waited = tokio::time::timeout(bound, async {
        let mut statuses = Vec::new();
        for child in children.iter_mut() {
            statuses.push(child.wait().await.is_ok_and(|s| s.success()));
        }
        statuses
    })
    .await;
    let statuses = match waited {
        Ok(statuses) => statuses,
        Err(_) => {
            let mut statuses = Vec::new();
            for (client, child) in children.iter_mut().enumerate() {
                let ended = child.try_wait().ok().flatten();
                if ended.is_none() {
                    external.unfinished(client, bound);
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                }
                statuses.push(ended.is_some_and(|s| s.success()));
            }
            statuses
        }
    };
    let mut failures = Vec::new();
    for (client, (ok, stderr)) in statuses.into_iter().zip(stderrs).enumerate() {
        let text = stderr.await.unwrap_or_default();
        if !ok {
            failures.push(format!("client {client}: {text}"));
        }
    }
    server.stop().await;
    let ops = external.ops();
    let op_names = external.op_names();
    let (violation, trace) = external.finish();
    Ok(Outcome {
        violation,
        trace,
        ops,
        op_names,
        failures,
    })
}

/// What is taken off a stated validity for the marker's way to the server: a twentieth
/// of the TTL, and at least 5 ms (processes on a busy machine are scheduled that late).
pub(crate) fn validity_slack(options: &Options) -> Duration {
    Duration::from_millis((options.ttl_ms / 20).max(5))
}

/// How long a run may take before a client still running is a liveness violation:
/// each cycle may take its TTL many times over (a pause of three TTLs, retries), and
/// a process needs time to start.
pub(crate) fn liveness_bound(options: &Options) -> Duration {
    let ttls = options.liveness_ttls.unwrap_or(8).max(8);
    Duration::from_millis(options.ttl_ms * ttls * u64::from(options.cycles + 1))
        + Duration::from_secs(5)
}

/// The last lines a client wrote to stderr (at most 4 KiB are kept).
async fn tail(stderr: Option<tokio::process::ChildStderr>) -> String {
    use tokio::io::AsyncReadExt;
    let Some(mut stderr) = stderr else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n) = stderr.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        kept.extend_from_slice(&chunk[..n]);
        if kept.len() > 4096 {
            kept.drain(..kept.len() - 4096);
        }
    }
    let text = String::from_utf8_lossy(&kept);
    let lines: Vec<_> = text.lines().rev().take(5).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join("\n")
}
