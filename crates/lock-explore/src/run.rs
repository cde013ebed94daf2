//! One in-process run: a fresh deployment on a fresh single-threaded runtime with paused
//! time, the clients' cycles, the schedule's steps, then (faults stopped) the liveness
//! probe and the end-of-run checks.

use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use lock_core::{Clock, SeededRandom};
use lock_memory::ScriptRunner;
use tokio::task::{JoinHandle, LocalSet};

use crate::client::ClientView;
use crate::context::Context;
use crate::monitor::Monitor;
use crate::options::Options;
use crate::runner::{Outcome, Recording};
use crate::schedule::Schedule;
use crate::step::{Step, When};
use crate::topology::Deployment;
use crate::trace::What;
use crate::violation::ViolationKind;
use crate::when_woken::WhenWoken;
use crate::workload::Workload;

/// Where every run's clock starts: 2026-01-01T00:00:00Z, so that two runs read the
/// same times.
const START_UNIX_MS: i64 = 1_767_225_600_000;

/// The code under test: the workload, and what runs its Lua scripts on the double.
#[derive(Clone)]
pub(crate) struct Subject {
    pub(crate) workload: Arc<dyn Workload>,
    pub(crate) scripts: Option<Arc<dyn ScriptRunner>>,
}

/// Runs `schedule` once.
pub(crate) fn run(
    subject: &Subject,
    options: &Options,
    schedule: &Schedule,
    recording: Recording,
) -> Outcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime without I/O builds");
    let _tokens = SeededRandom::install(schedule.token_seed);
    let local = LocalSet::new();
    let outcome = local.block_on(
        &runtime,
        WhenWoken::new(run_local(
            subject.clone(),
            options,
            schedule,
            recording == Recording::Kept,
        )),
    );
    drop(local);
    drop(runtime);
    outcome
}

async fn run_local(
    subject: Subject,
    options: &Options,
    schedule: &Schedule,
    record: bool,
) -> Outcome {
    let workload = subject.workload;
    let clock = Clock::simulated(START_UNIX_MS);
    let deployment = Deployment::new(options.topology, &clock);
    if let Some(runner) = &subject.scripts {
        deployment.install(runner);
    }
    let monitor = Arc::new(Monitor::new(
        clock.clone(),
        deployment,
        schedule.clients,
        &schedule.steps,
        options,
        record,
        schedule.token_seed,
    ));
    let bound = options.liveness_bound();
    // The run owns its clients' connections: one per Redlock node, else one, made once
    // and shared by the client's cycles.
    let views: Vec<Arc<[ClientView]>> = (0..schedule.clients)
        .map(|client| views_of(&monitor, client))
        .collect();

    let driver = tokio::task::spawn_local(drive(monitor.clone(), timed(&schedule.steps)));
    let clients: Vec<_> = (0..schedule.clients)
        .map(|client| {
            tokio::task::spawn_local(cycles(
                workload.clone(),
                monitor.clone(),
                views[client].clone(),
                client,
                0..schedule.cycles,
            ))
        })
        .collect();

    // The planned cycles run until done, a violation, or a horizon long enough for
    // every fault to have ended and every cycle to have had its bound.
    let horizon = options.horizon(schedule);
    let finished = wait_all(&monitor, &clock, clients, horizon).await;
    let main_us = monitor.now_us();
    if let Err(unfinished) = finished {
        monitor.report(
            ViolationKind::Liveness,
            format!(
                "client {unfinished} had not finished its {} cycles {} ms into the run",
                schedule.cycles,
                horizon.as_millis()
            ),
            vec![unfinished],
        );
    }
    driver.abort();

    if !monitor.has_violation() && options.liveness_ttls.is_some() {
        probe(
            &workload, &monitor, &views, &clock, schedule, options, bound,
        )
        .await;
    }
    if !monitor.has_violation() {
        monitor.check_end();
    }
    Outcome {
        violation: monitor.violation(),
        ops: monitor.ops(),
        trace: monitor.take_trace(),
        main_us,
        unplaced: monitor.unplaced(),
        op_logs: monitor.op_logs(),
        commands: monitor.commands(),
        checked: monitor.checked(),
        states: monitor.take_states(),
        op_states: monitor.op_states(),
        failures: Vec::new(),
        void: None,
    }
}

/// `client`'s connections: one per Redlock node, else one.
fn views_of(monitor: &Arc<Monitor>, client: usize) -> Arc<[ClientView]> {
    let backends = monitor.deployment.client_backends();
    let several = backends.len() > 1;
    backends
        .into_iter()
        .enumerate()
        .map(|(node, backend)| {
            ClientView::new(backend, monitor.clone(), client, several.then_some(node))
        })
        .collect()
}

/// The steps placed at times, sorted.
fn timed(steps: &[Step]) -> Vec<(u64, Step)> {
    let mut timed: Vec<_> = steps
        .iter()
        .filter_map(|s| match s.when {
            When::At { ms } => Some((ms, s.clone())),
            _ => None,
        })
        .collect();
    timed.sort_by_key(|(ms, _)| *ms);
    timed
}

/// Applies timed steps when their time comes, and ends timed node faults when due.
async fn drive(monitor: Arc<Monitor>, steps: Vec<(u64, Step)>) {
    let mut steps = steps.into_iter().peekable();
    loop {
        let next_step = steps
            .peek()
            .map(|(ms, _)| i64::try_from(*ms).unwrap_or(i64::MAX / 4) * 1000);
        let next_recovery = monitor.next_recovery();
        let next = match (next_step, next_recovery) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => {
                monitor.recovery_armed.notified().await;
                continue;
            }
        };
        let wait = u64::try_from(next - monitor.now_us()).unwrap_or(0);
        tokio::select! {
            biased;
            () = monitor.clock.sleep(Duration::from_micros(wait)) => {}
            () = monitor.recovery_armed.notified() => continue,
        }
        let now = monitor.now_us();
        while let Some((ms, step)) = steps.peek() {
            if i64::try_from(*ms).unwrap_or(i64::MAX / 4) * 1000 > now {
                break;
            }
            monitor.apply(step);
            steps.next();
        }
        monitor.recover_due();
    }
}

/// One client's cycles, each cancellable at its await points.
async fn cycles(
    workload: Arc<dyn Workload>,
    monitor: Arc<Monitor>,
    views: Arc<[ClientView]>,
    client: usize,
    range: std::ops::Range<u32>,
) {
    for cycle in range {
        if !one_cycle(&workload, &monitor, &views, client, cycle).await {
            return;
        }
    }
}

/// Runs one cycle; false once the run has a violation (the client stops).
async fn one_cycle(
    workload: &Arc<dyn Workload>,
    monitor: &Arc<Monitor>,
    views: &Arc<[ClientView]>,
    client: usize,
    cycle: u32,
) -> bool {
    if monitor.has_violation() {
        return false;
    }
    monitor.record(Some(client), What::CycleStart { cycle });
    monitor.cycle_started(client);
    let context = Context::new(monitor.clone(), client, cycle, views.clone());
    let mut body = workload.cycle(context);
    // A cancellation is requested by the client's own operation, inside this poll of its
    // body, which then stays pending for good: the request is read as each poll returns.
    // While it is polled, the monitor knows whose cycle runs, so that a lock's background
    // task (polled apart) never takes the cancellation meant for the cycle.
    let finished = std::future::poll_fn(|cx| {
        monitor.polling(Some(client));
        let polled = body.as_mut().poll(cx);
        monitor.polling(None);
        match polled {
            Poll::Ready(()) => Poll::Ready(true),
            Poll::Pending if monitor.take_cancel_request(client) => Poll::Ready(false),
            Poll::Pending => Poll::Pending,
        }
    })
    .await;
    drop(body);
    if finished {
        monitor.record(Some(client), What::CycleEnd);
    } else {
        monitor.cancelled(client);
    }
    true
}

/// Waits for every client (a panic is a violation), a violation, or the horizon: the
/// first client still running then.
async fn wait_all(
    monitor: &Arc<Monitor>,
    clock: &Clock,
    clients: Vec<JoinHandle<()>>,
    horizon: Duration,
) -> Result<(), usize> {
    let aborts: Vec<_> = clients.iter().map(JoinHandle::abort_handle).collect();
    let all = async {
        for (client, handle) in clients.into_iter().enumerate() {
            if let Err(error) = handle.await
                && error.is_panic()
            {
                monitor.report(
                    ViolationKind::Panic,
                    format!("client {client}'s cycle panicked: {}", panic_text(error)),
                    vec![client],
                );
                return;
            }
        }
    };
    let result = tokio::select! {
        biased;
        () = monitor.stop.notified() => Ok(()),
        () = all => Ok(()),
        () = clock.sleep(horizon) => Err(aborts.iter().position(|a| !a.is_finished()).unwrap_or(0)),
    };
    for abort in aborts {
        abort.abort();
    }
    result
}

fn panic_text(error: tokio::task::JoinError) -> String {
    let payload = error.into_panic();
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}

/// Faults stop; every client runs cycles until it makes progress, within `bound`.
async fn probe(
    workload: &Arc<dyn Workload>,
    monitor: &Arc<Monitor>,
    views: &[Arc<[ClientView]>],
    clock: &Clock,
    schedule: &Schedule,
    options: &Options,
    bound: Duration,
) {
    monitor.heal();
    let probes: Vec<_> = (0..schedule.clients)
        .map(|client| {
            let workload = workload.clone();
            let monitor = monitor.clone();
            let views = views[client].clone();
            let first = schedule.cycles;
            tokio::task::spawn_local(async move {
                let mut cycle = first;
                while !monitor.progressed(client) {
                    let started = monitor.now_us();
                    if !one_cycle(&workload, &monitor, &views, client, cycle).await {
                        return;
                    }
                    // A cycle that gives up at once (no retry, no backoff) would spin
                    // without letting virtual time pass: a millisecond between tries.
                    if monitor.now_us() == started {
                        monitor.clock.sleep(Duration::from_millis(1)).await;
                    }
                    cycle += 1;
                }
            })
        })
        .collect();
    if let Err(client) = wait_all(monitor, clock, probes, bound).await
        && !monitor.has_violation()
    {
        let stuck = monitor.keys_without_ttl();
        let hint = if stuck.is_empty() {
            String::new()
        } else {
            format!("; keys without a TTL: {}", stuck.join(", "))
        };
        monitor.report(
            ViolationKind::Liveness,
            format!(
                "faults stopped, and client {client} made no progress within {} ms ({} TTLs){hint}",
                bound.as_millis(),
                options.liveness_ttls.unwrap_or(0)
            ),
            vec![client],
        );
    }
}
