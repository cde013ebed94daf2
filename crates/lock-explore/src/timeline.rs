//! A counterexample's timeline as a self-contained HTML page with one SVG: a lane per
//! client with its critical sections as bars and its commands as ticks, the overlap of
//! two clients' sections in red, each client's faults as markers on its lane, and a lane
//! of node events (failovers, restarts, migrations, clock jumps, recoveries).

use std::fmt::Write as _;

use crate::counterexample::Counterexample;
use crate::trace::{Event, What};

const WIDTH: f64 = 1100.0;
const LEFT: f64 = 120.0;
const LANE: f64 = 46.0;

/// A section: client, resource, from, to (µs), fenced.
struct Section {
    client: usize,
    resource: String,
    from: i64,
    to: i64,
    fence: Option<i64>,
}

fn sections(trace: &[Event], end: i64) -> Vec<Section> {
    let mut open: Vec<Section> = Vec::new();
    let mut done = Vec::new();
    for event in trace {
        let Some(client) = event.client else { continue };
        match &event.what {
            What::Enter { resource, fence } => open.push(Section {
                client,
                resource: resource.clone(),
                from: event.at_us,
                to: end,
                fence: *fence,
            }),
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

/// The page.
pub(crate) fn html(found: &Counterexample) -> String {
    let trace = &found.trace;
    let end = trace
        .iter()
        .map(|e| e.at_us)
        .max()
        .unwrap_or(0)
        .max(found.violation.at_us)
        .max(1);
    let x = |us: i64| LEFT + (us as f64 / end as f64) * (WIDTH - LEFT - 20.0);
    let clients = found.schedule.clients;
    let height = LANE * (clients as f64 + 1.0) + 60.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="monospace" font-size="12">"#
    );
    for client in 0..clients {
        let y = 20.0 + LANE * client as f64;
        let _ = write!(
            svg,
            r##"<text x="8" y="{}">client {client}</text><line x1="{LEFT}" x2="{}" y1="{}" y2="{}" stroke="#ccc"/>"##,
            y + 20.0,
            WIDTH - 20.0,
            y + 30.0,
            y + 30.0
        );
    }
    let faults_y = 20.0 + LANE * clients as f64;
    let _ = write!(svg, r#"<text x="8" y="{}">nodes</text>"#, faults_y + 20.0);
    let sections = sections(trace, end);
    for s in &sections {
        let y = 20.0 + LANE * s.client as f64 + 8.0;
        let label = match s.fence {
            Some(f) => format!("{} (fence {f})", s.resource),
            None => s.resource.clone(),
        };
        let _ = write!(
            svg,
            r##"<rect x="{:.1}" y="{y}" width="{:.1}" height="18" fill="#4a90d9" opacity="0.8"><title>{}</title></rect>"##,
            x(s.from),
            (x(s.to) - x(s.from)).max(2.0),
            escape(&label)
        );
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
            if from >= to {
                continue;
            }
            for client in [a.client, b.client] {
                let y = 20.0 + LANE * client as f64 + 8.0;
                let _ = write!(
                    svg,
                    r##"<rect x="{:.1}" y="{y}" width="{:.1}" height="18" fill="#d0021b"><title>overlap on {}</title></rect>"##,
                    x(from),
                    (x(to) - x(from)).max(2.0),
                    escape(&a.resource)
                );
            }
        }
    }
    for event in trace {
        let title = escape(event.to_string().trim());
        match (&event.what, event.client) {
            (What::Command { .. }, Some(client)) => {
                let y = 20.0 + LANE * client as f64 + 28.0;
                let _ = write!(
                    svg,
                    r##"<rect x="{:.1}" y="{y}" width="2" height="8" fill="#555"><title>{title}</title></rect>"##,
                    x(event.at_us)
                );
            }
            (What::Cancelled, Some(client)) => {
                let y = 20.0 + LANE * client as f64 + 17.0;
                let _ = write!(
                    svg,
                    r##"<text x="{:.1}" y="{y}" fill="#d0021b">✕<title>{title}</title></text>"##,
                    x(event.at_us) - 4.0
                );
            }
            (What::Fault { .. } | What::Recovered { .. } | What::Healed, _) => {
                let at = x(event.at_us);
                let (colour, lane_y) = match &event.what {
                    // A fault aimed at a client sits on that client's lane.
                    What::Fault { step } => match step.fault.client() {
                        Some(client) => ("#f5a623", 20.0 + LANE * client as f64 - 4.0),
                        None => ("#f5a623", faults_y + 8.0),
                    },
                    _ => ("#7ed321", faults_y + 8.0),
                };
                let _ = write!(
                    svg,
                    r##"<path d="M{at:.1},{lane_y:.1} l-6,12 h12 z" fill="{colour}"><title>{title}</title></path>"##
                );
            }
            _ => {}
        }
    }
    let at = x(found.violation.at_us);
    let _ = write!(
        svg,
        r##"<line x1="{at:.1}" x2="{at:.1}" y1="10" y2="{:.1}" stroke="#d0021b" stroke-dasharray="4 3"/><text x="{LEFT}" y="{:.1}">0 ms</text><text x="{:.1}" y="{:.1}" text-anchor="end">{:.1} ms</text></svg>"##,
        faults_y + 30.0,
        height - 8.0,
        WIDTH - 20.0,
        height - 8.0,
        end as f64 / 1000.0
    );
    let steps: String = found
        .schedule
        .steps
        .iter()
        .map(|s| format!("<li>{}</li>", escape(&s.to_string())))
        .collect();
    format!(
        r#"<!doctype html>
<html><head><meta charset="utf-8"><title>nxlock explore: {kind}</title>
<style>body{{font-family:sans-serif;margin:2em}} pre{{background:#f6f6f6;padding:1em;overflow:auto}}</style></head>
<body><h1>{kind}</h1><p>{detail}</p>
<p>Blue bars: critical sections. Red: two clients inside at once. Grey ticks: commands (hover for command and reply). Orange: faults, on the lane of the client they hit, or on the nodes' lane; green: recoveries. The dashed line: the violation.</p>
{svg}
<h2>Steps</h2><ol>{steps}</ol>
<h2>Counterexample</h2><pre>{text}</pre></body></html>
"#,
        kind = found.violation.kind,
        detail = escape(&found.violation.to_string()),
        text = escape(&found.to_string()),
    )
}
