//! A counterexample's timeline as a self-contained HTML page with one SVG.
//!
//! - Time starts at the first command a client sent (a process's start-up is not drawn)
//!   and runs along an axis with ticks.
//! - A lane per client: its critical sections as bars, the validity its lock promised
//!   as a rule under each, its commands as spans from send to reply.
//! - A lane per node: who held each lock key a client declared (`holds`), and until
//!   when, with the node's own events.
//! - A lane for the deployment as a whole; every fault marked where it struck, and
//!   labelled.
//! - One colour per meaning, and red for the violation alone: its marker, and the
//!   overlap it is. Two sections that meet at one instant (a clean hand-off) overlap
//!   nowhere.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::counterexample::Counterexample;
use crate::trace::{Event, Trace, What};
use crate::violation::{Violation, ViolationKind};

const WIDTH: f64 = 1100.0;
const LEFT: f64 = 120.0;
const RIGHT: f64 = 20.0;
const LANE: f64 = 46.0;
const TOP: f64 = 24.0;

/// The colours, one per meaning.
mod colour {
    pub(super) const SECTION: &str = "#4a90d9";
    pub(super) const VALIDITY: &str = "#7ed321";
    pub(super) const HELD: &str = "#50a3a4";
    pub(super) const COMMAND: &str = "#555555";
    pub(super) const ERROR_REPLY: &str = "#8b572a";
    pub(super) const LOST_REPLY: &str = "#9013fe";
    pub(super) const CANCELLED: &str = "#222222";
    pub(super) const FAULT: &str = "#f5a623";
    pub(super) const RECOVERY: &str = "#417505";
    /// Two clients inside at once where that is no violation of the lock's own (a
    /// holder past its validity).
    pub(super) const OVERLAP: &str = "#c9a000";
    pub(super) const INHERENT: &str = "#b8860b";
    /// The violation, and nothing else.
    pub(super) const VIOLATION: &str = "#d0021b";
    pub(super) const AXIS: &str = "#cccccc";
}

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
            } => {
                // An enter while inside re-states the section: it does not nest.
                if let Some(s) = open
                    .iter_mut()
                    .find(|s| s.client == client && s.resource == *resource)
                {
                    s.fence = *fence;
                    s.valid_until = valid_for_us.map(|v| event.at_us + v);
                    continue;
                }
                open.push(Section {
                    client,
                    resource: resource.clone(),
                    from: event.at_us,
                    to: end,
                    fence: *fence,
                    valid_until: valid_for_us.map(|v| event.at_us + v),
                });
            }
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

/// A stretch during which one node held a lock key with one value.
struct Held {
    node: usize,
    key: String,
    from: i64,
    to: i64,
    /// The client whose token it is, if one declared it.
    holder: Option<usize>,
}

/// Who held each watched key on each node, from the trace's `KeyHeld` events, each
/// stretch ending at the next change, at its TTL, or at `end`.
fn holders(trace: &[Event], end: i64) -> Vec<Held> {
    let mut tokens: HashMap<&str, usize> = HashMap::new();
    for event in trace {
        if let (What::Holds { token, .. }, Some(client)) = (&event.what, event.client) {
            tokens.entry(token.as_str()).or_insert(client);
        }
    }
    // Per node and key: since when, until when its TTL keeps it, whose token.
    type Open = (i64, Option<i64>, Option<usize>);
    let mut open: HashMap<(usize, String), Open> = HashMap::new();
    let mut done = Vec::new();
    let mut close = |node: usize, key: &str, at: i64, entry: Open| {
        let (from, expires, holder) = entry;
        let to = expires.map_or(at, |e| e.min(at));
        if to > from {
            done.push(Held {
                node,
                key: key.to_owned(),
                from,
                to,
                holder,
            });
        }
    };
    for event in trace {
        let What::KeyHeld {
            node,
            key,
            value,
            expires_us,
        } = &event.what
        else {
            continue;
        };
        if let Some(entry) = open.remove(&(*node, key.clone())) {
            close(*node, key, event.at_us, entry);
        }
        if let Some(value) = value {
            let holder = tokens.get(value.as_str()).copied();
            open.insert((*node, key.clone()), (event.at_us, *expires_us, holder));
        }
    }
    for ((node, key), entry) in open {
        close(node, &key, end, entry);
    }
    done.sort_by_key(|h| (h.node, h.from));
    done
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// How a command's reply is drawn: fill, stroke and class.
fn reply_style(reply: &str) -> (&'static str, &'static str, &'static str) {
    if reply == "(cancelled)" {
        ("none", colour::COMMAND, "command cancelled")
    } else if reply.contains("reply lost") {
        (colour::LOST_REPLY, "none", "command lost")
    } else if reply.starts_with("(error)") {
        (colour::ERROR_REPLY, "none", "command error")
    } else {
        (colour::COMMAND, "none", "command")
    }
}

/// A tick step of 1, 2 or 5 times a power of ten ms, for about ten ticks over `span_us`.
fn tick_ms(span_us: i64) -> f64 {
    let span_ms = (span_us as f64 / 1000.0).max(1e-3);
    let raw = span_ms / 10.0;
    let power = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|step| *step >= raw)
        .unwrap_or(10.0 * power)
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
    /// What they ran against (a lane per server).
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
    // Time starts at the first command a client sent: before it, processes were
    // starting, which is no part of the lock.
    let origin = trace
        .iter()
        .filter_map(|e| match &e.what {
            What::Command { sent_us, .. } if e.client.is_some() => Some(*sent_us),
            _ => None,
        })
        .min()
        .unwrap_or(0);
    let end = trace
        .iter()
        .map(|e| e.at_us)
        .max()
        .unwrap_or(0)
        .max(found.violation.at_us)
        .max(origin + 1);
    // A little room after the violation, so that a marker at the end shows.
    let span = (end - origin) + (end - origin) / 50 + 1;
    let plot = WIDTH - LEFT - RIGHT;
    let x = |us: i64| LEFT + ((us - origin).max(0) as f64 / span as f64) * plot;
    let clients = found.clients;
    let nodes = found.topology.servers().max(1);
    // Lanes: clients, then nodes, then the deployment (failovers, replication, heals).
    let lanes = clients + nodes + 1;
    let lane_y = |lane: usize| TOP + LANE * lane as f64;
    let deployment_lane = clients + nodes;
    let node_lane = |node: Option<usize>| match node {
        Some(node) if node < nodes => clients + node,
        _ => deployment_lane,
    };
    let axis_y = lane_y(lanes) + 6.0;
    let height = axis_y + 34.0;
    let own = !found.violation.is_inherent();
    let violation_colour = if own {
        colour::VIOLATION
    } else {
        colour::INHERENT
    };
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="monospace" font-size="12" data-origin-us="{origin}">"#
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
            r##"<g class="lane" data-lane="{label}"><text x="8" y="{}">{label}</text><line x1="{LEFT}" x2="{}" y1="{}" y2="{}" stroke="{}"/></g>"##,
            y + 20.0,
            WIDTH - RIGHT,
            y + 30.0,
            y + 30.0,
            colour::AXIS
        );
    }
    // The axis: ticks every 1, 2 or 5 × 10ⁿ ms from the first command.
    let step = tick_ms(span);
    let _ = write!(svg, r#"<g id="axis">"#);
    let mut t = 0.0;
    while t * 1000.0 <= span as f64 {
        let at = LEFT + (t * 1000.0 / span as f64) * plot;
        let _ = write!(
            svg,
            r##"<line class="tick" x1="{at:.1}" x2="{at:.1}" y1="{TOP}" y2="{axis_y:.1}" stroke="{}" stroke-dasharray="1 3"/><text class="tick-label" x="{at:.1}" y="{:.1}" text-anchor="middle">{} ms</text>"##,
            colour::AXIS,
            axis_y + 14.0,
            trim(t)
        );
        t += step;
    }
    let _ = write!(
        svg,
        r#"<text x="{LEFT}" y="{:.1}" fill="{}">time since the first command</text></g>"#,
        axis_y + 28.0,
        colour::COMMAND
    );
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
            r##"<rect class="section" x="{:.1}" y="{y}" width="{:.1}" height="18" fill="{}" opacity="0.8"><title>{}</title></rect>"##,
            x(s.from),
            (x(s.to) - x(s.from)).max(3.0),
            colour::SECTION,
            escape(&label)
        );
        if let Some(valid) = s.valid_until {
            let _ = write!(
                svg,
                r##"<line class="validity" x1="{:.1}" x2="{:.1}" y1="{}" y2="{}" stroke="{}" stroke-width="3"><title>validity its lock promised</title></line>"##,
                x(s.from),
                x(valid).clamp(x(s.from) + 1.0, WIDTH - RIGHT),
                y + 20.0,
                y + 20.0,
                colour::VALIDITY
            );
        }
    }
    // Who held each lock key, per node.
    for held in holders(trace, violation_at.max(end)) {
        let y = lane_y(clients + held.node.min(nodes - 1)) + 8.0;
        let who = held
            .holder
            .map_or_else(|| "another token".to_owned(), |c| format!("client {c}"));
        let (from, to) = (x(held.from), x(held.to));
        let _ = write!(
            svg,
            r##"<g class="held" data-holder="{who}"><rect x="{from:.1}" y="{y}" width="{:.1}" height="18" fill="{}" opacity="0.7"><title>{} held by {who}</title></rect>"##,
            (to - from).max(2.0),
            colour::HELD,
            escape(&held.key)
        );
        if to - from > 60.0 {
            let _ = write!(
                svg,
                r##"<text x="{:.1}" y="{:.1}" fill="#fff">{who}</text>"##,
                from + 4.0,
                y + 13.0
            );
        }
        let _ = write!(svg, "</g>");
    }
    // Two clients' unfenced sections on one resource at once: red where that is the
    // violation, another colour where it is not (a holder past its validity). Sections
    // that meet at one instant overlap nowhere.
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
            let is_the_violation = own
                && found.violation.kind == ViolationKind::MutualExclusion
                && found.violation.clients.contains(&a.client)
                && found.violation.clients.contains(&b.client)
                && (from..=to).contains(&violation_at);
            let (class, fill) = if is_the_violation {
                ("overlap violation", colour::VIOLATION)
            } else {
                ("overlap", colour::OVERLAP)
            };
            for client in [a.client, b.client] {
                let y = lane_y(client) + 8.0;
                let _ = write!(
                    svg,
                    r##"<rect class="{class}" x="{:.1}" y="{y}" width="{:.1}" height="18" fill="{fill}"><title>overlap on {}</title></rect>"##,
                    x(from),
                    (x(to) - x(from)).max(3.0),
                    escape(&a.resource)
                );
            }
        }
    }
    let mut fault_row = 0usize;
    for event in trace {
        let title = escape(event.to_string().trim());
        match (&event.what, event.client) {
            (What::Command { sent_us, reply, .. }, Some(client)) => {
                let y = lane_y(client) + 28.0;
                let (fill, stroke, class) = reply_style(reply);
                let from = x(*sent_us);
                let _ = write!(
                    svg,
                    r##"<rect class="{class}" x="{from:.1}" y="{y}" width="{:.1}" height="8" fill="{fill}" stroke="{stroke}"><title>{title}</title></rect>"##,
                    (x(event.at_us) - from).max(2.0),
                );
            }
            (What::Cancelled, Some(client)) => {
                let y = lane_y(client) + 17.0;
                let _ = write!(
                    svg,
                    r##"<text class="cancelled" x="{:.1}" y="{y}" fill="{}">✕<title>{title}</title></text>"##,
                    x(event.at_us) - 4.0,
                    colour::CANCELLED
                );
            }
            (What::Fault { fault }, _) => {
                let lane = match fault.client() {
                    Some(client) => client,
                    None => node_lane(fault.node()),
                };
                let at = x(event.at_us);
                let y = lane_y(lane) - 4.0;
                // Labels of faults close together alternate above and below the mark.
                let label_y = if fault_row.is_multiple_of(2) {
                    y + 2.0
                } else {
                    y + 40.0
                };
                fault_row += 1;
                let _ = write!(
                    svg,
                    r##"<g class="fault"><path d="M{at:.1},{y:.1} l-6,12 h12 z" fill="{}"><title>{title}</title></path><text class="fault-label" x="{:.1}" y="{label_y:.1}" fill="{}">{}</text></g>"##,
                    colour::FAULT,
                    at + 8.0,
                    colour::FAULT,
                    escape(&fault.label())
                );
            }
            (What::Recovered { node, .. }, _) => {
                let at = x(event.at_us);
                let y = lane_y(node_lane(*node)) - 4.0;
                let _ = write!(
                    svg,
                    r##"<path class="recovery" d="M{at:.1},{y:.1} l-6,12 h12 z" fill="{}"><title>{title}</title></path>"##,
                    colour::RECOVERY
                );
            }
            (What::Healed, _) => {
                let at = x(event.at_us);
                let y = lane_y(deployment_lane) - 4.0;
                let _ = write!(
                    svg,
                    r##"<path class="recovery" d="M{at:.1},{y:.1} l-6,12 h12 z" fill="{}"><title>{title}</title></path>"##,
                    colour::RECOVERY
                );
            }
            _ => {}
        }
    }
    // The violation: a dashed line, and a marker on each client involved, visible even
    // when the overlap has no width.
    let at = x(violation_at);
    let _ = write!(
        svg,
        r##"<g id="violation" class="violation"><title>{}</title><line x1="{at:.1}" x2="{at:.1}" y1="10" y2="{:.1}" stroke="{violation_colour}" stroke-dasharray="4 3"/>"##,
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
            r##"<circle cx="{at:.1}" cy="{y:.1}" r="7" fill="{violation_colour}" stroke="#fff" stroke-width="2"/>"##
        );
    }
    let _ = write!(
        svg,
        r##"<text x="{:.1}" y="12" fill="{violation_colour}">{}</text></g></svg>"##,
        (at + 6.0).min(WIDTH - 160.0),
        found.violation.kind
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
    let legend: String = [
        (colour::SECTION, "critical section"),
        (colour::VALIDITY, "validity its lock promised"),
        (colour::HELD, "lock key held on a node"),
        (colour::COMMAND, "command, from send to reply"),
        (colour::ERROR_REPLY, "error reply"),
        (colour::LOST_REPLY, "lost reply"),
        (colour::FAULT, "fault"),
        (colour::RECOVERY, "recovery"),
        (colour::OVERLAP, "two clients inside, past a validity"),
        (violation_colour, "the violation"),
    ]
    .iter()
    .map(|(c, meaning)| format!(r#"<span style="background:{c}"></span>{meaning}"#))
    .collect();
    format!(
        r##"<!doctype html>
<html><head><meta charset="utf-8"><title>nxlock explore: {kind}</title>
<style>body{{font-family:sans-serif;margin:2em}} pre{{background:#f6f6f6;padding:1em;overflow:auto}} #steps li{{cursor:pointer}} .picked{{background:#fff3cd}} .legend span{{display:inline-block;width:1em;height:.8em;margin:0 .3em 0 1em;vertical-align:middle}}</style>
<script>window.onerror = function (message) {{ document.documentElement.setAttribute("data-errors", String(message)); }};</script></head>
<body><h1>{kind}</h1><p id="detail">{detail}</p>
<p class="legend">{legend}. Hover for details; the dashed line and the dots mark the violation.</p>
{svg}
<h2>Steps</h2><ol id="steps">{steps}</ol>
<h2>Counterexample</h2><pre>{text}</pre>
<script>
(function () {{
  var svg = document.getElementById("timeline");
  var steps = document.querySelectorAll("#steps li");
  steps.forEach(function (item) {{
    item.addEventListener("click", function () {{ item.classList.toggle("picked"); }});
  }});
  // What a reader sees, counted where the browser drew it: for tests, and for tools.
  var red = "rgb(208, 2, 27)";
  var redOutside = 0;
  svg.querySelectorAll("*").forEach(function (el) {{
    var style = getComputedStyle(el);
    if ((style.fill === red || style.stroke === red) && !el.closest(".violation")) redOutside++;
  }});
  var b = document.body;
  b.setAttribute("data-lanes", String(svg.querySelectorAll(".lane").length));
  b.setAttribute("data-steps", String(steps.length));
  b.setAttribute("data-ticks", String(svg.querySelectorAll(".tick").length));
  b.setAttribute("data-first-tick", (svg.querySelector(".tick-label") || {{}}).textContent || "");
  b.setAttribute("data-fault-labels", String(svg.querySelectorAll(".fault-label").length));
  b.setAttribute("data-held", String(svg.querySelectorAll(".held").length));
  b.setAttribute("data-holders", Array.from(svg.querySelectorAll(".held")).map(function (g) {{ return g.getAttribute("data-holder"); }}).join(","));
  b.setAttribute("data-overlaps", String(svg.querySelectorAll(".overlap").length));
  b.setAttribute("data-red-outside", String(redOutside));
  b.setAttribute("data-ready", document.getElementById("violation") ? "1" : "0");
}})();
</script></body></html>
"##,
        kind = found.violation.kind,
        detail = escape(&found.violation.to_string()),
        text = escape(found.text),
    )
}

/// `t` ms without trailing zeros: `250`, `2.5`.
fn trim(t: f64) -> String {
    let text = format!("{t:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(tick_ms(1_000_000), 100.0);
        assert_eq!(tick_ms(250_000), 50.0);
        assert_eq!(tick_ms(120_000), 20.0);
        assert_eq!(tick_ms(3_000), 0.5);
        assert_eq!(trim(2.5), "2.5");
        assert_eq!(trim(200.0), "200");
    }
}
