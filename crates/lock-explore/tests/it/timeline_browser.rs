//! The timeline page in a real browser (headless Chromium): it loads without script
//! errors and shows a lane per client and per node, the violation marker (even when the
//! overlap has no width) and the list of steps. Without Chromium the test says SKIPPED;
//! with `NXLOCK_REQUIRE_BROWSER=1` (CI) a missing browser is a failure.

use std::process::Command;

use lock_explore::{Algorithm, FaultKind, Topology};

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
    let found = explorer(Algorithm::Legacy.explorer(Topology::Single, TTL))
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
    assert!(dom.contains(r#"class="overlap""#), "{dom}");
}

#[test]
fn node_lanes_and_error_replies_show_on_a_redlock_timeline() {
    let found = explorer(Algorithm::Redlock.explorer(Topology::Redlock { nodes: 3 }, TTL))
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
