//! One run: a fresh server on fresh loopback ports, the command started once per
//! client with its environment, and the verdict once every process has ended its part
//! (or its bounds have passed). The machine is watched meanwhile: a run in which a
//! process stalled longer than the slack a validity allows is voided.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lock_core::Clock;
use lock_explore::{ExternalRun, Options, Outcome, RunnerError, Schedule, Topology, Void};
use lock_server::{ClusterLayout, Server, ServerOptions};

use crate::observer::WireObserver;
use crate::primary_endpoint::{Primaries, PrimaryEndpoint, PrimaryWatch};
use crate::processes::{self, Addresses, End, Lanes, Terms};
use crate::shard_layout::{ShardAddresses, ShardLayout};
use crate::stalls::StallMeter;
use crate::starts::Starts;

/// How long a client's process may take to send its first command: an interpreter
/// and its imports, on a loaded machine. Beyond it the run is a harness error.
pub(crate) const STARTUP: Duration = Duration::from_secs(10);

/// Runs `command` (a shell command line) once per client of `schedule`: started for
/// this run, or on a long-lived lane of `lanes`.
pub(crate) async fn run(
    command: &str,
    options: &Options,
    schedule: &Schedule,
    lanes: Option<&Lanes>,
    startup: Duration,
) -> Result<Outcome, RunnerError> {
    let started = Instant::now();
    let clients = schedule.clients;
    let external = Arc::new(ExternalRun::new(options, schedule, Clock::system()));
    let meter = StallMeter::default();
    let starts = Arc::new(Starts::new(clients, meter.clone()));
    let primaries = Arc::new(Primaries::new(&external));
    let shard_addresses = ShardAddresses::default();
    let servers = serve_nodes(
        &external,
        options,
        clients,
        &primaries,
        &shard_addresses,
        &starts,
    )
    .await?;
    let (addresses, endpoints) =
        client_addresses(&external, clients, &servers, &primaries, &shard_addresses).await?;
    // Timed node faults end in real time: a dead node restarts, a black hole heals,
    // replication flows again.
    let recoveries = tokio::spawn(recover(external.clone()));
    let sampling = tokio::spawn(meter.clone().sample());
    let horizon = options.horizon(schedule);
    let terms = Terms {
        cycles: schedule.cycles,
        clients,
        ttl_ms: options.ttl_ms,
        replicas: options.topology.replicas(),
        startup,
        horizon,
    };
    let processes = async {
        match lanes {
            Some(lanes) => lanes.run(&addresses, &terms, &starts).await,
            None => processes::one_shot(command, &terms, &addresses, &starts).await,
        }
    };
    let ends = tokio::select! {
        ends = processes => ends,
        never = close_on_failover(primaries.watch(), &servers) => match never {},
    };
    sampling.abort();
    recoveries.abort();
    drop(endpoints);
    for server in servers {
        server.stop().await;
    }
    let mut failures = Vec::new();
    let mut void = None;
    for (client, end) in ends?.into_iter().enumerate() {
        match end {
            End::Ok => {}
            End::Failed(text) => failures.push(format!("client {client}: {text}")),
            End::Unfinished => external.unfinished(client, horizon),
            End::NotStarted => {
                void.get_or_insert(Void::Startup {
                    client,
                    bound: startup,
                });
            }
        }
    }
    let ops = external.ops();
    let op_logs = external.op_logs();
    let commands = external.commands();
    let checked = external.checked();
    let unplaced = external.unplaced();
    let states = external.states();
    let op_states = external.op_states();
    let (violation, trace) = external.finish();
    // A stall acts like a pause of a client or the server, which a correct lock must
    // survive anyway, but for one thing: a validity stated as PX counts from when the
    // server reads the marker, and a stall between the client and the server makes it
    // too long by as much. A finding judged against a validity, with less of it left
    // than the worst stall past the slack taken off it, proves nothing: the run is
    // voided. (A MONOTONIC deadline is not moved by stalls.)
    if void.is_none() && starts.used_relative_validity() {
        void = stall_void(violation.as_ref(), meter.worst(), validity_slack(options));
    }
    Ok(Outcome {
        violation,
        trace,
        ops,
        op_logs,
        commands,
        main_us: i64::try_from(started.elapsed().as_micros()).unwrap_or(i64::MAX),
        unplaced,
        failures,
        void,
        checked,
        states,
        op_states,
    })
}

/// Starts one server per node of the run's deployment, each reporting to the run (and,
/// where primaries can move, publishing them after every operation; on a cluster, each
/// the shard of its node).
async fn serve_nodes(
    external: &Arc<ExternalRun>,
    options: &Options,
    clients: usize,
    primaries: &Arc<Primaries>,
    shard_addresses: &ShardAddresses,
    starts: &Arc<Starts>,
) -> Result<Vec<Server>, RunnerError> {
    let nodes = external.nodes();
    let several = nodes.len() > 1;
    let groups = external.primary_groups();
    let cluster = matches!(options.topology, Topology::Cluster { .. });
    let mut servers = Vec::new();
    for (node, db) in nodes.into_iter().enumerate() {
        let mut observer = WireObserver::new(
            external.clone(),
            several.then_some(node),
            clients,
            validity_slack(options),
            starts.clone(),
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
        .map_err(listen)?;
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
    clients: usize,
    servers: &[Server],
    primaries: &Primaries,
    shard_addresses: &ShardAddresses,
) -> Result<(Vec<Addresses>, Vec<PrimaryEndpoint>), RunnerError> {
    let groups = external.primary_groups().len();
    let mut addresses = Vec::new();
    let mut endpoints = Vec::new();
    let mut per_client = Vec::new();
    for client in 0..clients {
        let mut ports = Vec::new();
        for server in servers {
            ports.push(server.listen_as(client).await.map_err(listen)?);
        }
        let mut urls = Vec::new();
        for group in 0..groups {
            let endpoint = PrimaryEndpoint::start(ports.clone(), primaries.watch(), group)
                .await
                .map_err(listen)?;
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

/// The void a stall makes of a run with a validity stated as PX: its finding was
/// judged against a validity with less left than the worst stall (past the slack taken
/// off every PX validity), so the stall may have moved the verdict.
fn stall_void(
    violation: Option<&lock_explore::Violation>,
    worst: Option<(String, Duration)>,
    slack: Duration,
) -> Option<Void> {
    let margin = violation?.margin_us?;
    let (who, stalled) = worst?;
    let stalled_us = i64::try_from(stalled.as_micros()).unwrap_or(i64::MAX);
    (stalled > slack && margin < stalled_us).then(|| Void::Stall {
        who,
        ms: u64::try_from(stalled.as_millis()).unwrap_or(u64::MAX),
    })
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

fn listen(error: std::io::Error) -> RunnerError {
    RunnerError(format!("the server could not listen: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lock_explore::{Violation, ViolationKind};

    fn lost(margin_ms: i64) -> Violation {
        Violation {
            kind: ViolationKind::LostOwnership,
            detail: String::new(),
            at_us: 0,
            clients: vec![0],
            dumps: Vec::new(),
            inherent: None,
            margin_us: Some(margin_ms * 1000),
        }
    }

    #[test]
    fn a_stall_voids_a_run_only_where_it_could_have_moved_the_verdict() {
        let slack = Duration::from_millis(10);
        let stall = |ms| Some(("client 1".to_owned(), Duration::from_millis(ms)));
        // A finding 5 ms inside a validity, with a 30 ms stall: void.
        let void = stall_void(Some(&lost(5)), stall(30), slack).expect("void");
        assert_eq!(
            void.to_string(),
            "client 1 was not scheduled for 30 ms, longer than the slack a validity allows"
        );
        // 100 ms inside: no stall of 30 ms moves it.
        assert_eq!(stall_void(Some(&lost(100)), stall(30), slack), None);
        // Within the slack: already allowed for.
        assert_eq!(stall_void(Some(&lost(5)), stall(8), slack), None);
        // Nothing found, or a finding judged against no validity: nothing to void.
        assert_eq!(stall_void(None, stall(300), slack), None);
        let mut order = lost(5);
        order.margin_us = None;
        assert_eq!(stall_void(Some(&order), stall(300), slack), None);
    }
}
