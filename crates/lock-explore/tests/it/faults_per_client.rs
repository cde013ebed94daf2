//! Faults aim at one client: the others do not feel them.

use std::time::Duration;

use lock_core::{KvBackend, OwnedCommands, SetOptions};
use lock_explore::{Context, Explorer, Fault, Schedule, Step, What, When};

fn schedule(steps: Vec<Step>) -> Schedule {
    Schedule {
        clients: 2,
        cycles: 1,
        token_seed: 1,
        steps,
    }
}

/// Each client sets its own key, then reads it back.
fn explorer() -> Explorer {
    Explorer::new(|ctx: Context| async move {
        let key = format!("k{}", ctx.client());
        let _ = ctx
            .backend()
            .set(key.as_bytes(), b"v", SetOptions::new())
            .await;
        let _ = ctx.backend().get(key.as_bytes()).await;
    })
    .clients(2)
    .cycles(1)
    .liveness(None)
    .permanent_keys("k")
}

fn commands(trace: &[lock_explore::Event], client: usize) -> Vec<(i64, String, String)> {
    trace
        .iter()
        .filter(|e| e.client == Some(client))
        .filter_map(|e| match &e.what {
            What::Command { command, reply, .. } => Some((e.at_us, command.clone(), reply.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_pause_delays_only_its_client() {
    let (trace, violation) = explorer().run_schedule(&schedule(vec![Step {
        when: When::At { ms: 0 },
        fault: Fault::Pause { client: 1, ms: 700 },
    }]));
    assert_eq!(violation, None);
    let (zero, one) = (commands(&trace, 0), commands(&trace, 1));
    assert_eq!(zero[0].0, 0);
    assert_eq!(one[0].0, 700_000, "{one:?}");
}

#[test]
fn a_lost_reply_hits_only_its_client_and_the_command_still_ran() {
    let (trace, _) = explorer().run_schedule(&schedule(vec![Step {
        when: When::At { ms: 0 },
        fault: Fault::LostReply { client: 0 },
    }]));
    let zero = commands(&trace, 0);
    assert!(zero[0].2.contains("injected fault (Timeout)"), "{zero:?}");
    assert_eq!(zero[1].2, "\"v\"", "the SET ran: {zero:?}");
    assert_eq!(commands(&trace, 1)[0].2, "OK");
}

#[test]
fn a_refused_command_does_not_run() {
    let (trace, _) = explorer().run_schedule(&schedule(vec![Step {
        when: When::At { ms: 0 },
        fault: Fault::Refuse { client: 1 },
    }]));
    let one = commands(&trace, 1);
    assert!(one[0].2.contains("injected fault (Connection)"), "{one:?}");
    assert_eq!(one[1].2, "(nil)", "the SET never ran: {one:?}");
}

#[test]
fn a_late_reply_arrives_after_the_command_ran_on_time() {
    let explorer = Explorer::new(|ctx: Context| async move {
        if ctx.client() == 0 {
            let _ = ctx.backend().set(b"k", b"zero", SetOptions::new()).await;
        } else {
            ctx.work(Duration::from_millis(10)).await;
            let _ = ctx.backend().get(b"k").await;
        }
    })
    .clients(2)
    .cycles(1)
    .liveness(None)
    .permanent_keys("k");
    let (trace, _) = explorer.run_schedule(&schedule(vec![Step {
        when: When::At { ms: 0 },
        fault: Fault::LateReply { client: 0, ms: 50 },
    }]));
    let (zero, one) = (commands(&trace, 0), commands(&trace, 1));
    assert_eq!(zero[0].0, 50_000, "the reply came 50 ms late: {zero:?}");
    assert_eq!(
        one[0].2, "\"zero\"",
        "the write was there at 10 ms: {one:?}"
    );
}

#[test]
fn a_skew_moves_only_its_clients_clock() {
    let explorer = Explorer::new(|ctx: Context| async move {
        ctx.work(Duration::from_millis(1)).await;
        let key = format!("now{}", ctx.client());
        let now = ctx.clock().now_ms().to_string();
        let _ = ctx
            .backend()
            .set(key.as_bytes(), now.as_bytes(), SetOptions::new())
            .await;
    })
    .clients(2)
    .cycles(1)
    .liveness(None)
    .permanent_keys("now");
    let (trace, _) = explorer.run_schedule(&schedule(vec![Step {
        when: When::At { ms: 0 },
        fault: Fault::ClientClock {
            client: 1,
            ms: 5_000,
        },
    }]));
    let stamp = |client| -> i64 {
        let command = &commands(&trace, client)[0].1;
        command.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert_eq!(stamp(1) - stamp(0), 5_000);
}

#[test]
fn a_cancelled_cycle_stops_at_its_next_operation() {
    let explorer = Explorer::new(|ctx: Context| async move {
        let _ = ctx.backend().set(b"a", b"1", SetOptions::new()).await;
        let _ = ctx.backend().set(b"b", b"1", SetOptions::new()).await;
    })
    .clients(1)
    .cycles(2)
    .liveness(None)
    .permanent_keys("a")
    .permanent_keys("b");
    let (trace, _) = explorer.run_schedule(&Schedule {
        clients: 1,
        cycles: 2,
        token_seed: 1,
        steps: vec![Step {
            when: When::After { client: 0, op: 0 },
            fault: Fault::Cancel { client: 0 },
        }],
    });
    let whats: Vec<_> = trace.iter().map(|e| e.what.to_string()).collect();
    let cancelled = whats
        .iter()
        .position(|w| w == "cycle cancelled")
        .expect("cancelled");
    assert!(
        whats[..cancelled]
            .iter()
            .filter(|w| w.starts_with("SET"))
            .count()
            == 1,
        "{whats:#?}"
    );
    assert!(
        whats[cancelled + 1].contains("cycle 1 starts"),
        "{whats:#?}"
    );
}

#[test]
fn a_cancelled_increment_counts_as_unknown() {
    let explorer = Explorer::new(|ctx: Context| async move {
        let hit = ctx.increment("n");
        let value = ctx.read_counter("n").await;
        ctx.write_counter("n", value + 1).await;
        ctx.work(Duration::from_millis(1)).await;
        hit.done();
    })
    .clients(1)
    .cycles(1)
    .liveness(None);
    let (trace, violation) = explorer.run_schedule(&Schedule {
        clients: 1,
        cycles: 1,
        token_seed: 1,
        steps: vec![Step {
            when: When::After { client: 0, op: 1 },
            fault: Fault::Cancel { client: 0 },
        }],
    });
    assert_eq!(violation, None, "{trace:#?}");
    assert!(
        trace
            .iter()
            .any(|e| matches!(e.what, What::Counted { applied: None, .. }))
    );
}

#[test]
fn a_drifting_node_clock_expires_keys_early_by_its_share() {
    let explorer = Explorer::new(|ctx: Context| async move {
        let _ = ctx
            .backend()
            .set(b"k", b"v", SetOptions::new().px(1_000))
            .await;
        ctx.work(Duration::from_millis(500)).await;
        let _ = ctx.backend().pttl(b"k").await;
    })
    .clients(1)
    .cycles(1)
    .liveness(None);
    let pttl = |steps| {
        let (trace, _) = explorer.run_schedule(&Schedule {
            clients: 1,
            cycles: 1,
            token_seed: 1,
            steps,
        });
        commands(&trace, 0)[1].2.clone()
    };
    assert_eq!(pttl(vec![]), "(integer) 500");
    let drift = Step {
        when: When::At { ms: 0 },
        fault: Fault::NodeDrift {
            node: 0,
            permille: 100,
            ms: 500,
        },
    };
    // 10% fast for 500 ms: the node's clock gained 50 ms, in 10 ms steps; the first
    // step (1 ms) may land just before the SET, at the same instant.
    let left: i64 = pttl(vec![drift])
        .trim_start_matches("(integer) ")
        .parse()
        .unwrap();
    assert!((450..=451).contains(&left), "{left}");
}

#[test]
fn a_late_reply_shows_when_the_command_was_sent_and_when_it_answered() {
    let (trace, _) = explorer().run_schedule(&schedule(vec![Step {
        when: When::At { ms: 0 },
        fault: Fault::LateReply { client: 0, ms: 300 },
    }]));
    let set = trace
        .iter()
        .find(|e| {
            e.client == Some(0)
                && matches!(&e.what, What::Command { command, .. } if command.starts_with("SET"))
        })
        .unwrap();
    let What::Command { sent_us, .. } = set.what else {
        unreachable!()
    };
    assert_eq!((sent_us, set.at_us), (0, 300_000));
    assert!(set.to_string().contains("(sent 0.000 ms)"), "{set}");
}

/// One client, one cycle of `workload`, under `step` alone: the run's trace.
fn alone<F, Fut>(workload: F, step: Step) -> Vec<lock_explore::Event>
where
    F: Fn(Context) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let explorer = Explorer::new(workload).clients(1).cycles(1).liveness(None);
    let schedule = Schedule {
        clients: 1,
        cycles: 1,
        token_seed: 1,
        steps: vec![step],
    };
    explorer.run_schedule(&schedule).0
}

#[test]
fn a_command_dropped_by_the_users_timeout_is_recorded_as_cancelled() {
    let trace = alone(
        |ctx: Context| async move {
            let get = ctx.backend().get_owned(b"k".to_vec());
            let _ = tokio::time::timeout(Duration::from_millis(100), get).await;
        },
        Step {
            when: When::At { ms: 0 },
            fault: Fault::Latency { client: 0, ms: 500 },
        },
    );
    let cancelled: Vec<_> = commands(&trace, 0)
        .into_iter()
        .filter(|(_, _, reply)| reply == "(cancelled)")
        .collect();
    assert_eq!(cancelled.len(), 1, "{trace:#?}");
    assert_eq!(cancelled[0].0, 100_000);
}

#[test]
fn work_is_an_operation_a_step_can_follow() {
    // Op 0 is the work: a pause after it delays the GET.
    let trace = alone(
        |ctx: Context| async move {
            ctx.work(Duration::from_millis(10)).await;
            let _ = ctx.backend().get(b"k").await;
        },
        Step {
            when: When::After { client: 0, op: 0 },
            fault: Fault::Pause { client: 0, ms: 200 },
        },
    );
    assert_eq!(commands(&trace, 0)[0].0, 210_000, "{trace:#?}");
}
