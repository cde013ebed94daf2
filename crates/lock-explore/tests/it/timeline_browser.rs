//! The timeline page in a real browser (headless Chromium): it loads without script
//! errors; shows a lane per client and per node, the violation marker (even when the
//! overlap has no width) and the list of steps; starts its time axis, with ticks, at the
//! first command; labels every fault; draws who held the lock key on each node; draws
//! no overlap at a clean hand-off; and uses red for the violation alone. Without
//! Chromium the tests say SKIPPED; with `NXLOCK_REQUIRE_BROWSER=1` (CI) a missing
//! browser is a failure.

use std::process::Command;
use std::time::Duration;

use lock_core::{KvBackend, SetOptions, SetReply};
use lock_explore::{
    Algorithm, Context, Explorer, Fault, FaultKind, Schedule, Step, Timeline, Topology, Violation,
    ViolationKind, When, timeline_page,
};

use crate::support::{TTL, explorer};

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|name| {
            Command::new(name)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// The page's DOM once its scripts ran.
fn rendered(html: &str) -> Option<String> {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var("NXLOCK_REQUIRE_BROWSER").as_deref() != Ok("1"),
            "NXLOCK_REQUIRE_BROWSER=1 but no chromium on PATH"
        );
        eprintln!(
            "*** SKIPPED: no chromium on PATH; the timeline was not checked in a browser ***"
        );
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("timeline.html");
    std::fs::write(&page, html).unwrap();
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--virtual-time-budget=2000",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn the_timeline_loads_in_a_browser_with_lanes_marker_and_steps() {
    // Legacy under client clock jumps: the violation is the instant the second client
    // enters, an overlap of zero width.
    let found = explorer(Explorer::builtin(Algorithm::Legacy, Topology::Single, TTL))
        .faults(&[FaultKind::ClientClock])
        .runs(500)
        .explore()
        .unwrap()
        .counterexample
        .expect("found");
    let Some(dom) = rendered(&found.timeline_html()) else {
        return;
    };
    assert!(!dom.contains("data-errors=\""), "a script error: {dom}");
    assert!(dom.contains(r#"data-ready="1""#), "{dom}");
    // Clients, the single node, and the deployment.
    let lanes = found.schedule.clients + 2;
    assert!(dom.contains(&format!(r#"data-lanes="{lanes}""#)), "{dom}");
    assert!(
        dom.contains(&format!(r#"data-steps="{}""#, found.schedule.steps.len())),
        "{dom}"
    );
    assert!(
        dom.contains(r#"id="violation""#) && dom.contains("<circle"),
        "{dom}"
    );
    assert!(dom.contains(r#"data-red-outside="0""#), "{dom}");
}

/// The value of the body's `data-<name>` attribute in the rendered page.
fn attribute<'a>(dom: &'a str, name: &str) -> &'a str {
    let start = format!("data-{name}=\"");
    let at = dom
        .find(&start)
        .unwrap_or_else(|| panic!("no data-{name}: {dom}"))
        + start.len();
    &dom[at..at + dom[at..].find('"').unwrap()]
}

/// Two clients on a token lock of 300 ms that each work 100 ms inside: client 1 waits
/// 500 ms before its first command (a process starting), then polls every 10 ms.
async fn two_clients(ctx: Context) {
    let (backend, clock) = (ctx.backend(), ctx.clock());
    let token = format!("t{}", ctx.client());
    ctx.work(Duration::from_millis(500 + 50 * ctx.client() as u64))
        .await;
    let mut started = clock.now_ms();
    loop {
        let set = backend.set(b"lock", token.as_bytes(), SetOptions::new().nx().px(300));
        if matches!(set.await, Ok(SetReply::Applied)) {
            break;
        }
        clock.sleep(Duration::from_millis(10)).await;
        started = clock.now_ms();
    }
    ctx.holds(b"lock", token.as_bytes());
    ctx.enter_until("r", started + 300).await;
    ctx.work(Duration::from_millis(100)).await;
    ctx.exit("r").await;
    // A blind release: a client whose lock expired deletes the next one's.
    let _ = backend.del(&[b"lock"]).await;
}

#[test]
fn the_timeline_starts_at_the_first_command_labels_faults_shows_holders_and_red_alone() {
    // Client 0 is paused past its TTL before its DEL: client 1 takes the lock, and client
    // 0's DEL then deletes it.
    let found = Explorer::new(two_clients)
        .ttl(Duration::from_millis(300))
        .clients(2)
        .cycles(1)
        .faults(&[FaultKind::Pause])
        .seed(3)
        .runs(2_000)
        .threads(1)
        .explore()
        .unwrap()
        .counterexample
        .expect("found");
    assert_eq!(
        found.violation.kind,
        ViolationKind::LostOwnership,
        "{found}"
    );
    let faults = found
        .trace
        .iter()
        .filter(|e| matches!(e.what, lock_explore::What::Fault { .. }))
        .count();
    let html = found.timeline_html();
    // The clients' first command came at 500 ms: time starts there.
    assert!(html.contains(r#"data-origin-us="500000""#), "{html}");
    let Some(dom) = rendered(&html) else {
        return;
    };
    assert!(!dom.contains("data-errors=\""), "a script error: {dom}");
    assert_eq!(attribute(&dom, "first-tick"), "0 ms", "{dom}");
    assert!(
        attribute(&dom, "ticks").parse::<usize>().unwrap() >= 5,
        "{dom}"
    );
    assert_eq!(
        attribute(&dom, "fault-labels").parse::<usize>().unwrap(),
        faults,
        "{dom}"
    );
    let holders = attribute(&dom, "holders");
    assert!(
        holders.contains("client 0") && holders.contains("client 1"),
        "{holders}"
    );
    assert_eq!(attribute(&dom, "red-outside"), "0", "{dom}");
}

#[test]
fn a_clean_hand_off_draws_no_overlap_and_the_violation_alone_is_red() {
    // Client 0 leaves at 100 ms and client 1 enters at 100 ms: a clean hand-off.
    let hand_off = Explorer::new(|ctx: Context| async move {
        let clock = ctx.clock();
        if ctx.client() == 1 {
            ctx.work(Duration::from_millis(100)).await;
        }
        ctx.enter_until("r", clock.now_ms() + 500).await;
        ctx.work(Duration::from_millis(100)).await;
        ctx.exit("r").await;
    })
    .clients(2)
    .cycles(1)
    .liveness(None);
    let schedule = Schedule {
        clients: 2,
        cycles: 1,
        token_seed: 1,
        steps: vec![Step {
            when: When::At { ms: 150 },
            fault: Fault::Pause { client: 0, ms: 10 },
        }],
    };
    let (trace, violation) = hand_off.run_schedule(&schedule);
    assert!(violation.is_none(), "{violation:?}");
    let shown = Violation {
        kind: ViolationKind::Liveness,
        detail: "(drawn for the test)".to_owned(),
        at_us: 200_000,
        clients: vec![0],
        dumps: Vec::new(),
        inherent: None,
        margin_us: None,
    };
    let page = |trace, violation| {
        timeline_page(&Timeline {
            clients: 2,
            topology: Topology::Single,
            steps: &schedule.steps,
            violation,
            trace,
            text: "",
        })
    };
    let html = page(&trace, &shown);
    let Some(dom) = rendered(&html) else {
        return;
    };
    assert_eq!(attribute(&dom, "overlaps"), "0", "{dom}");
    assert_eq!(attribute(&dom, "red-outside"), "0", "{dom}");

    // Client 1 entering at 50 ms instead is the violation: its marker is red, and
    // nothing else is.
    let overlap = Explorer::new(|ctx: Context| async move {
        let clock = ctx.clock();
        if ctx.client() == 1 {
            ctx.work(Duration::from_millis(50)).await;
        }
        ctx.enter_until("r", clock.now_ms() + 500).await;
        ctx.work(Duration::from_millis(100)).await;
        ctx.exit("r").await;
    })
    .clients(2)
    .cycles(1)
    .liveness(None);
    let (trace, violation) = overlap.run_schedule(&schedule);
    let violation = violation.expect("mutual exclusion");
    assert_eq!(violation.kind, ViolationKind::MutualExclusion);
    let html = page(&trace, &violation);
    let Some(dom) = rendered(&html) else {
        return;
    };
    let marker = &dom[dom.find(r#"id="violation""#).expect("a marker")..];
    assert!(marker.contains(r##"fill="#d0021b""##), "{dom}");
    assert_eq!(attribute(&dom, "red-outside"), "0", "{dom}");
}

#[test]
fn node_lanes_and_error_replies_show_on_a_redlock_timeline() {
    let found = explorer(Explorer::builtin(
        Algorithm::Redlock,
        Topology::Redlock { nodes: 3 },
        TTL,
    ))
    .faults(&[
        FaultKind::RestartEmpty,
        FaultKind::Blackhole,
        FaultKind::Refuse,
    ])
    .runs(2_000)
    .explore()
    .unwrap()
    .inherent_finding
    .expect("a node that restarts empty");
    let html = found.timeline_html();
    assert!(html.contains(r#"data-lane="node 2""#), "one lane per node");
    let Some(dom) = rendered(&html) else {
        return;
    };
    assert!(!dom.contains("data-errors=\""), "a script error: {dom}");
    let lanes = found.schedule.clients + 3 + 1;
    assert!(dom.contains(&format!(r#"data-lanes="{lanes}""#)), "{dom}");
    assert!(dom.contains(r#"class="fault""#), "{dom}");
}
