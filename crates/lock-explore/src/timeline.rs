//! A counterexample's timeline as a self-contained HTML page with one SVG: a lane per
//! client with its critical sections as bars (and the validity its lock promised as a
//! green rule under each), its commands as spans from send to reply (errors in red, lost
//! replies in purple, cancelled ones hollow), its faults as markers; a lane per node and
//! one for the deployment as a whole, with node events; and the violation as a marker
//! that shows even when the overlap has no width.

use std::fmt::Write as _;

use crate::counterexample::Counterexample;
use crate::trace::{Event, Trace, What};
use crate::violation::Violation;

const WIDTH: f64 = 1100.0;
const LEFT: f64 = 120.0;
const LANE: f64 = 46.0;
const TOP: f64 = 20.0;

/// A section: client, resource, from, to (µs), fenced, the validity's end.
struct Section {
    client: usize,
    resource: String,
    from: i64,
    to: i64,
    fence: Option<i64>,
    valid_until: Option<i64>,
}

/// The sections of `trace`; one still open at the end is drawn through `end`.
fn sections(trace: &[Event], end: i64) -> Vec<Section> {
    let mut open: Vec<Section> = Vec::new();
    let mut done = Vec::new();
    for event in trace {
        let Some(client) = event.client else { continue };
        match &event.what {
            What::Enter {
                resource,
                fence,
                valid_for_us,
            } => open.push(Section {
                client,
                resource: resource.clone(),
                from: event.at_us,
                to: end,
                fence: *fence,
                valid_until: valid_for_us.map(|v| event.at_us + v),
            }),
            What::Extended {
                resource,
                valid_for_us,
            } => {
                if let Some(s) = open
                    .iter_mut()
                    .rev()
                    .find(|s| s.client == client && s.resource == *resource)
                {
                    s.valid_until = Some(event.at_us + valid_for_us);
                }
            }
            What::Exit { resource } => {
                if let Some(i) = open
                    .iter()
                    .rposition(|s| s.client == client && s.resource == *resource)
                {
                    let mut section = open.remove(i);
                    section.to = event.at_us;
                    done.push(section);
                }
            }
            What::Cancelled => {
                let (closed, kept): (Vec<_>, Vec<_>) =
                    open.into_iter().partition(|s| s.client == client);
                open = kept;
                done.extend(closed.into_iter().map(|mut s| {
                    s.to = event.at_us;
                    s
                }));
            }
            _ => {}
        }
    }
    done.extend(open);
    done
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// How a command's reply is drawn: fill colour and class.
fn reply_style(reply: &str) -> (&'static str, &'static str) {
    if reply == "(cancelled)" {
        ("none", "command cancelled")
    } else if reply.contains("reply lost") {
        ("#9013fe", "command lost")
    } else if reply.starts_with("(error)") {
        ("#d0021b", "command error")
    } else {
        ("#555", "command")
    }
}

/// The page.
pub(crate) fn html(found: &Counterexample) -> String {
    timeline_page(&Timeline {
        clients: found.schedule.clients,
        topology: found.options.topology,
        steps: &found.schedule.steps,
        violation: &found.violation,
        trace: &found.trace,
        text: &found.to_string(),
    })
}

/// What a timeline page shows, wherever the run was made: in process, or with the
/// clients as processes behind serve.
#[derive(Clone, Copy, Debug)]
pub struct Timeline<'a> {
    /// How many clients ran (one lane each).
    pub clients: usize,
    /// What they ran against (a lane per node).
    pub topology: crate::Topology,
    /// The schedule's steps, listed under the picture.
    pub steps: &'a [crate::Step],
    /// What broke.
    pub violation: &'a Violation,
    /// The run's trace.
    pub trace: &'a Trace,
    /// The report in words, shown under the steps.
    pub text: &'a str,
}

/// The timeline page of `found`: an SVG lane per client and per node, the steps, and
/// the report, in one self-contained HTML file.
pub fn timeline_page(found: &Timeline<'_>) -> String {
    let trace = found.trace;
    let end = trace
        .iter()
        .map(|e| e.at_us)
        .max()
        .unwrap_or(0)
        .max(found.violation.at_us)
        .max(1);
    // A little room after the violation, so that a marker at the end shows.
    let span = end + end / 50 + 1;
    let x = |us: i64| LEFT + (us as f64 / span as f64) * (WIDTH - LEFT - 20.0);
    let clients = found.clients;
    let nodes = found.topology.nodes().max(1);
    // Lanes: clients, then nodes, then the deployment (failovers, replication, heals).
    let lanes = clients + nodes + 1;
    let lane_y = |lane: usize| TOP + LANE * lane as f64;
    let node_lane = |node: Option<usize>| match node {
        Some(node) if node < nodes => clients + node,
        _ => clients + nodes,
    };
    let height = lane_y(lanes) + 40.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="monospace" font-size="12">"#
    );
    for lane in 0..lanes {
        let y = lane_y(lane);
        let label = if lane < clients {
            format!("client {lane}")
        } else if lane < clients + nodes {
            format!("node {}", lane - clients)
        } else {
            "deployment".to_owned()
        };
        let _ = write!(
            svg,
            r##"<g class="lane" data-lane="{label}"><text x="8" y="{}">{label}</text><line x1="{LEFT}" x2="{}" y1="{}" y2="{}" stroke="#ccc"/></g>"##,
            y + 20.0,
            WIDTH - 20.0,
            y + 30.0,
            y + 30.0
        );
    }
    let violation_at = found.violation.at_us;
    let sections = sections(trace, violation_at.max(end));
    for s in &sections {
        let y = lane_y(s.client) + 8.0;
        let label = match s.fence {
            Some(f) => format!("{} (fence {f})", s.resource),
            None => s.resource.clone(),
        };
        let _ = write!(
            svg,
            r##"<rect class="section" x="{:.1}" y="{y}" width="{:.1}" height="18" fill="#4a90d9" opacity="0.8"><title>{}</title></rect>"##,
            x(s.from),
            (x(s.to) - x(s.from)).max(3.0),
            escape(&label)
        );
        if let Some(valid) = s.valid_until {
            let _ = write!(
                svg,
                r##"<line class="validity" x1="{:.1}" x2="{:.1}" y1="{}" y2="{}" stroke="#7ed321" stroke-width="3"><title>validity its lock promised</title></line>"##,
                x(s.from),
                x(valid).clamp(x(s.from) + 1.0, WIDTH - 20.0),
                y + 20.0,
                y + 20.0
            );
        }
    }
    // The overlap of two clients' unfenced sections on one resource, in red on both.
    for (i, a) in sections.iter().enumerate() {
        for b in &sections[i + 1..] {
            if a.client == b.client
                || a.resource != b.resource
                || a.fence.is_some()
                || b.fence.is_some()
            {
                continue;
            }
            let (from, to) = (a.from.max(b.from), a.to.min(b.to));
            if from > to {
                continue;
            }
            for client in [a.client, b.client] {
                let y = lane_y(client) + 8.0;
                let _ = write!(
                    svg,
                    r##"<rect class="overlap" x="{:.1}" y="{y}" width="{:.1}" height="18" fill="#d0021b"><title>overlap on {}</title></rect>"##,
                    x(from),
                    (x(to) - x(from)).max(3.0),
                    escape(&a.resource)
                );
            }
        }
    }
    for event in trace {
        let title = escape(event.to_string().trim());
        match (&event.what, event.client) {
            (What::Command { sent_us, reply, .. }, Some(client)) => {
                let y = lane_y(client) + 28.0;
                let (fill, class) = reply_style(reply);
                let from = x(*sent_us);
                let _ = write!(
                    svg,
                    r##"<rect class="{class}" x="{from:.1}" y="{y}" width="{:.1}" height="8" fill="{fill}" stroke="{}"><title>{title}</title></rect>"##,
                    (x(event.at_us) - from).max(2.0),
                    if fill == "none" { "#555" } else { "none" },
                );
            }
            (What::Cancelled, Some(client)) => {
                let y = lane_y(client) + 17.0;
                let _ = write!(
                    svg,
                    r##"<text class="cancelled" x="{:.1}" y="{y}" fill="#d0021b">✕<title>{title}</title></text>"##,
                    x(event.at_us) - 4.0
                );
            }
            (What::Fault { fault }, _) => {
                let lane = match fault.client() {
                    Some(client) => client,
                    None => node_lane(fault.node()),
                };
                let at = x(event.at_us);
                let y = lane_y(lane) - 4.0;
                let _ = write!(
                    svg,
                    r##"<path class="fault" d="M{at:.1},{y:.1} l-6,12 h12 z" fill="#f5a623"><title>{title}</title></path>"##
                );
            }
            (What::Recovered { node, .. }, _) => {
                let at = x(event.at_us);
                let y = lane_y(node_lane(*node)) - 4.0;
                let _ = write!(
                    svg,
                    r##"<path class="recovery" d="M{at:.1},{y:.1} l-6,12 h12 z" fill="#7ed321"><title>{title}</title></path>"##
                );
            }
            (What::Healed, _) => {
                let at = x(event.at_us);
                let y = lane_y(clients + nodes) - 4.0;
                let _ = write!(
                    svg,
                    r##"<path class="recovery" d="M{at:.1},{y:.1} l-6,12 h12 z" fill="#7ed321"><title>{title}</title></path>"##
                );
            }
            _ => {}
        }
    }
    // The violation: a dashed line, and a marker on each client involved, visible even
    // when the overlap has no width.
    let at = x(violation_at);
    let colour = if found.violation.is_inherent() {
        "#f5a623"
    } else {
        "#d0021b"
    };
    let _ = write!(
        svg,
        r##"<g id="violation"><title>{}</title><line x1="{at:.1}" x2="{at:.1}" y1="10" y2="{:.1}" stroke="{colour}" stroke-dasharray="4 3"/>"##,
        escape(&found.violation.to_string()),
        lane_y(lanes) + 4.0
    );
    let involved: Vec<usize> = if found.violation.clients.is_empty() {
        (0..clients).collect()
    } else {
        found.violation.clients.clone()
    };
    for client in involved.into_iter().filter(|c| *c < clients) {
        let y = lane_y(client) + 17.0;
        let _ = write!(
            svg,
            r##"<circle cx="{at:.1}" cy="{y:.1}" r="7" fill="{colour}" stroke="#fff" stroke-width="2"/>"##
        );
    }
    let _ = write!(
        svg,
        r##"<text x="{:.1}" y="12" fill="{colour}">{}</text></g>"##,
        (at + 6.0).min(WIDTH - 160.0),
        found.violation.kind
    );
    let _ = write!(
        svg,
        r##"<text x="{LEFT}" y="{:.1}">0 ms</text><text x="{:.1}" y="{:.1}" text-anchor="end">{:.1} ms</text></svg>"##,
        height - 8.0,
        WIDTH - 20.0,
        height - 8.0,
        span as f64 / 1000.0
    );
    let steps: String = found
        .steps
        .iter()
        .map(|s| format!("<li>{}</li>", escape(&s.to_string())))
        .collect();
    let steps = if steps.is_empty() {
        "<li>(none: the workload breaks without faults)</li>".to_owned()
    } else {
        steps
    };
    format!(
        r##"<!doctype html>
<html><head><meta charset="utf-8"><title>nxlock explore: {kind}</title>
<style>body{{font-family:sans-serif;margin:2em}} pre{{background:#f6f6f6;padding:1em;overflow:auto}} #steps li{{cursor:pointer}} .picked{{background:#fff3cd}} .legend span{{display:inline-block;width:1em;height:.8em;margin:0 .3em 0 1em;vertical-align:middle}}</style>
<script>window.onerror = function (message) {{ document.documentElement.setAttribute("data-errors", String(message)); }};</script></head>
<body><h1>{kind}</h1><p id="detail">{detail}</p>
<p class="legend"><span style="background:#4a90d9"></span>critical section<span style="background:#7ed321"></span>validity its lock promised<span style="background:#d0021b"></span>two clients inside at once, or an error reply<span style="background:#9013fe"></span>lost reply<span style="background:#555"></span>command, from send to reply<span style="background:#f5a623"></span>fault<span style="background:#7ed321"></span>recovery. Hover for details; the dashed line and the dots mark the violation.</p>
{svg}
<h2>Steps</h2><ol id="steps">{steps}</ol>
<h2>Counterexample</h2><pre>{text}</pre>
<script>
(function () {{
  var lanes = document.querySelectorAll("#timeline .lane").length;
  var steps = document.querySelectorAll("#steps li");
  steps.forEach(function (item) {{
    item.addEventListener("click", function () {{ item.classList.toggle("picked"); }});
  }});
  document.body.setAttribute("data-lanes", String(lanes));
  document.body.setAttribute("data-steps", String(steps.length));
  document.body.setAttribute("data-ready", document.getElementById("violation") ? "1" : "0");
}})();
</script></body></html>
"##,
        kind = found.violation.kind,
        detail = escape(&found.violation.to_string()),
        text = escape(found.text),
    )
}
