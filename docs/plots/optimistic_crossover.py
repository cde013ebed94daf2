#!/usr/bin/env python3
"""Where a lock beats optimistic retries: runs `nxlock bench` for the counter algorithms
(optimistic compare-and-set, WATCH ... EXEC, and the fair lock around the same read and
write) over a grid of clients and read-compute times, saves every report as JSON, and
draws cycles/s against clients, one panel per read-compute time, as an SVG (standard
library only).

    python3 docs/plots/optimistic_crossover.py --nxlock target/release/nxlock \
        --url redis://127.0.0.1:6379 --out docs/plots/optimistic

writes docs/plots/optimistic.json and docs/plots/optimistic.svg. Without --url the
benchmarks run on the in-memory double. --from-json redraws from a saved JSON file.
"""

import argparse
import json
import subprocess
import sys

ALGORITHMS = ["optimistic", "watch", "locked"]
COLOURS = {"optimistic": "#1b9e77", "watch": "#7570b3", "locked": "#d95f02"}
CLIENTS = [1, 2, 4, 8, 16]
HOLDS_US = [0, 1000]


def run(nxlock, url, algorithm, clients, hold_us, duration):
    args = [nxlock, "bench", "--algorithm", algorithm, "--clients", str(clients),
            "--keys", "1", "--hold-us", str(hold_us), "--duration", str(duration), "--json"]
    if url:
        args += ["--url", url]
    out = subprocess.run(args, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def svg(reports, title):
    panel_w, panel_h, margin = 420, 300, 60
    width = margin + len(HOLDS_US) * (panel_w + margin)
    height = panel_h + 2 * margin + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    for index, hold in enumerate(HOLDS_US):
        x0, y0 = margin + index * (panel_w + margin), margin
        rows = [r for r in reports if r["hold_us"] == hold]
        top = max([r["cycles_per_sec"] for r in rows] + [1]) * 1.1
        parts.append(f'<rect x="{x0}" y="{y0}" width="{panel_w}" height="{panel_h}" '
                     f'fill="none" stroke="#999"/>')
        parts.append(f'<text x="{x0 + panel_w / 2}" y="{y0 - 8}" text-anchor="middle">'
                     f'read-compute {hold} µs</text>')
        parts.append(f'<text x="{x0 + panel_w / 2}" y="{y0 + panel_h + 35}" '
                     f'text-anchor="middle">clients on one counter</text>')
        for tick in range(0, 5):
            value = top * tick / 4
            y = y0 + panel_h - panel_h * tick / 4
            label = f"{value / 1000:.0f}k" if top >= 10_000 else f"{value:.0f}"
            parts.append(f'<text x="{x0 - 5}" y="{y + 4}" text-anchor="end">{label}</text>')
        def px(clients):
            return x0 + panel_w * CLIENTS.index(clients) / (len(CLIENTS) - 1)
        for clients in CLIENTS:
            parts.append(f'<text x="{px(clients)}" y="{y0 + panel_h + 16}" '
                         f'text-anchor="middle">{clients}</text>')
        for algorithm in ALGORITHMS:
            points = sorted((r["clients"], r["cycles_per_sec"]) for r in rows
                            if r["algorithm"] == algorithm)
            if not points:
                continue
            path = " ".join(f"{px(c)},{y0 + panel_h - panel_h * v / top:.1f}"
                            for c, v in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke-width="2" '
                         f'stroke="{COLOURS[algorithm]}"/>')
    for index, algorithm in enumerate(ALGORITHMS):
        x = margin + index * 140
        y = height - 12
        parts.append(f'<rect x="{x}" y="{y - 10}" width="14" height="4" '
                     f'fill="{COLOURS[algorithm]}"/>')
        parts.append(f'<text x="{x + 20}" y="{y - 5}">{algorithm}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nxlock", default="target/release/nxlock")
    parser.add_argument("--url", help="a Redis server; the in-memory double without it")
    parser.add_argument("--duration", type=float, default=2.0)
    parser.add_argument("--out", default="docs/plots/optimistic")
    parser.add_argument("--from-json", help="redraw from this saved JSON instead of running")
    args = parser.parse_args()
    if args.from_json:
        with open(args.from_json) as saved:
            reports = json.load(saved)
    else:
        reports = []
        for hold in HOLDS_US:
            for clients in CLIENTS:
                for algorithm in ALGORITHMS:
                    report = run(args.nxlock, args.url, algorithm, clients, hold, args.duration)
                    if report["violations"] != 0:
                        sys.exit(f"{algorithm} lost increments: {report}")
                    reports.append(report)
                    print(f'{algorithm:10} {clients:2} clients hold {hold:4} µs: '
                          f'{report["cycles_per_sec"]:8.0f}/s, '
                          f'{report["conflicts_per_cycle"]} conflicts/increment',
                          file=sys.stderr)
        with open(args.out + ".json", "w") as saved:
            json.dump(reports, saved, indent=1)
    title = f'Counter increments/s: {reports[0]["backend"]}'
    with open(args.out + ".svg", "w") as drawn:
        drawn.write(svg(reports, title))


if __name__ == "__main__":
    main()
