//! One run: a fresh server on fresh loopback ports, the command started once per
//! client with its environment, and the verdict once every process has exited (or the
//! liveness bound has passed).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use lock_core::Clock;
use lock_explore::{ExternalRun, Options, Step, Topology, Trace, Violation};
use lock_server::{ClusterLayout, Server, ServerOptions};

use crate::observer::WireObserver;
use crate::primary_endpoint::{Primaries, PrimaryEndpoint, PrimaryWatch};
use crate::processes::{self, Addresses, End, Lanes};
use crate::shard_layout::{ShardAddresses, ShardLayout};

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
    /// Every client of the fault-free first run exited with a failure: the command
    /// itself does not work, and no search would mean anything.
    #[error("every client of the fault-free run failed; the first said: {0}")]
    ClientsFailed(String),
}

/// Runs `command` (a shell command line) once per client under `steps`: started for
/// this run, or on a long-lived lane of `lanes`.
pub(crate) async fn run(
    command: &str,
    options: &Options,
    steps: &[Step],
    lanes: Option<&Lanes>,
) -> Result<Outcome, RunError> {
    let external = Arc::new(ExternalRun::new(options, steps, Clock::system()));
    let primaries = Arc::new(Primaries::new(&external));
    let shard_addresses = ShardAddresses::default();
    let servers = serve_nodes(&external, options, &primaries, &shard_addresses).await?;
    let (addresses, endpoints) =
        client_addresses(&external, options, &servers, &primaries, &shard_addresses).await?;
    // Timed node faults end in real time: a dead node restarts, a black hole heals,
    // replication flows again.
    let recoveries = tokio::spawn(recover(external.clone()));
    let bound = liveness_bound(options);
    let processes = async {
        match lanes {
            Some(lanes) => lanes.run(&addresses, bound).await,
            None => processes::one_shot(command, options, &addresses, bound).await,
        }
    };
    let ends = tokio::select! {
        ends = processes => ends,
        never = close_on_failover(primaries.watch(), &servers) => match never {},
    };
    recoveries.abort();
    drop(endpoints);
    for server in servers {
        server.stop().await;
    }
    let mut failures = Vec::new();
    for (client, end) in ends?.into_iter().enumerate() {
        match end {
            End::Ok => {}
            End::Failed(text) => failures.push(format!("client {client}: {text}")),
            End::Unfinished => external.unfinished(client, bound),
        }
    }
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

/// Starts one server per node of the run's deployment, each reporting to the run (and,
/// where primaries can move, publishing them after every operation; on a cluster, each
/// the shard of its node).
async fn serve_nodes(
    external: &Arc<ExternalRun>,
    options: &Options,
    primaries: &Arc<Primaries>,
    shard_addresses: &ShardAddresses,
) -> Result<Vec<Server>, RunError> {
    let nodes = external.nodes();
    let several = nodes.len() > 1;
    let groups = external.primary_groups();
    let cluster = matches!(options.topology, Topology::Cluster { .. });
    let mut servers = Vec::new();
    for (node, db) in nodes.into_iter().enumerate() {
        let mut observer = WireObserver::new(
            external.clone(),
            several.then_some(node),
            options.clients,
            validity_slack(options),
        );
        if !groups.is_empty() {
            observer = observer.publishing(primaries.clone());
        }
        let cluster_layout = cluster.then(|| {
            let own = groups.iter().position(|g| g.contains(&node)).unwrap_or(0);
            Arc::new(ShardLayout {
                run: external.clone(),
                own,
                shards: groups.len(),
                addresses: shard_addresses.clone(),
            }) as Arc<dyn ClusterLayout>
        });
        let server = Server::start(ServerOptions {
            observer: Some(Arc::new(observer)),
            db: Some(db),
            replication: external.replica_set_of(node),
            cluster_layout,
            ..ServerOptions::default()
        })
        .await
        .map_err(RunError::Listen)?;
        servers.push(server);
    }
    Ok(servers)
}

/// Each client's addresses: its own port on every server; or, where nodes stand behind
/// a primary (a replicated set, each cluster shard), one endpoint per client and group,
/// which reaches the group's primary (on a cluster, the servers learn them through
/// `shard_addresses`). The endpoints live as long as they are kept.
async fn client_addresses(
    external: &ExternalRun,
    options: &Options,
    servers: &[Server],
    primaries: &Primaries,
    shard_addresses: &ShardAddresses,
) -> Result<(Vec<Addresses>, Vec<PrimaryEndpoint>), RunError> {
    let groups = external.primary_groups().len();
    let mut addresses = Vec::new();
    let mut endpoints = Vec::new();
    let mut per_client = Vec::new();
    for client in 0..options.clients {
        let mut ports = Vec::new();
        for server in servers {
            ports.push(server.listen_as(client).await.map_err(RunError::Listen)?);
        }
        let mut urls = Vec::new();
        for group in 0..groups {
            let endpoint = PrimaryEndpoint::start(ports.clone(), primaries.watch(), group)
                .await
                .map_err(RunError::Listen)?;
            urls.push(endpoint.addr());
            endpoints.push(endpoint);
        }
        if groups == 0 {
            urls = ports;
        } else {
            per_client.push(urls.clone());
        }
        let urls: Vec<String> = urls.iter().map(|a| format!("redis://{a}")).collect();
        addresses.push(Addresses {
            url: urls[0].clone(),
            nodes: urls.join(","),
        });
    }
    // Set before any client starts, so every CLUSTER reply names the endpoints.
    let _ = shard_addresses.set(per_client);
    Ok((addresses, endpoints))
}

/// Closes the waiting connections (subscribers, blocked commands) of each primary that
/// fails over, as its death would: they send no command for the old node to refuse, and
/// would wait on a node nobody writes to. For as long as it is polled.
async fn close_on_failover(mut primaries: PrimaryWatch, servers: &[Server]) -> Infallible {
    loop {
        let before = primaries.borrow_and_update().clone();
        if primaries.changed().await.is_err() {
            return std::future::pending().await;
        }
        let now = primaries.borrow().clone();
        for (old, new) in before.iter().zip(&now) {
            if old != new
                && let Some(server) = old.and_then(|old| servers.get(old))
            {
                server.disconnect_waiting();
            }
        }
    }
}

/// Ends each timed node fault when it is due, until aborted.
async fn recover(external: Arc<ExternalRun>) {
    loop {
        let wait = external.recover_due().unwrap_or(Duration::from_millis(5));
        tokio::time::sleep(wait.clamp(Duration::from_micros(100), Duration::from_millis(5))).await;
    }
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
