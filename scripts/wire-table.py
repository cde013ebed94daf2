#!/usr/bin/env python3
"""Prints EXPLORE.md's table of lock code in other languages explored through
`nxlock explore --exec`: each buggy lock's first report on 3 seeds (a budget of 2,000
runs), the correct ones' clean searches (1,000 runs on each seed), and real libraries.

    python3 scripts/wire-table.py [--nxlock target/release/nxlock] [--only NAME ...]
        [--seeds 1,2,3] [--clean-runs 1000] [--budget 2000] [--threads N] [--guided]

It needs redis-py, python-redis-lock and the helper (`pip install ./clients/python
redis python-redis-lock`), and Node with `npm ci` in tests/clients (ioredis, redlock 5
and the helper). Every search runs with --long-lived and --json; the table is built from
the JSON.
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name, command, extra arguments, what its own bug is ("clean": none of its own)
LOCKS = [
    ("python get_then_del", "python3 examples/python/get_then_del.py", [], "lost-ownership"),
    ("python blind_del", "python3 examples/python/blind_del.py", [], "lost-ownership"),
    ("python blind_extend", "python3 examples/python/blind_extend.py", [], "lost-ownership mutual-exclusion"),
    ("python setnx_expire", "python3 examples/python/setnx_expire.py", [], "liveness key-without-ttl"),
    ("python split_fence", "python3 examples/python/split_fence.py", [], "fence-order"),
    ("python redlock_answered", "python3 examples/python/redlock_answered.py", ["--topology", "redlock"], "mutual-exclusion lost-ownership"),
    ("python redlock_no_elapsed", "python3 examples/python/redlock_no_elapsed.py", ["--topology", "redlock"], "lost-ownership mutual-exclusion"),
    ("python late_watchdog", "python3 examples/python/late_watchdog.py", [], "mutual-exclusion lost-ownership"),
    ("python token_lock", "python3 examples/python/token_lock.py", [], "clean"),
    ("python fenced_lock", "python3 examples/python/fenced_lock.py", [], "clean"),
    ("node get_then_del", "node examples/node/get_then_del.js", [], "lost-ownership"),
    ("node blind_del", "node examples/node/blind_del.js", [], "lost-ownership"),
    ("node blind_extend", "node examples/node/blind_extend.js", [], "lost-ownership mutual-exclusion"),
    ("node split_fence", "node examples/node/split_fence.js", [], "fence-order"),
    ("node token_lock", "node examples/node/token_lock.js", [], "clean"),
    ("node fenced_lock", "node examples/node/fenced_lock.js", [], "clean"),
    ("redis-py Lock", "python3 examples/python/redis_py_lock.py", [], "clean"),
    ("python-redis-lock, auto-renewal", "python3 examples/python/python_redis_lock.py", ["--ttl-ms", "1000", "--cycles", "2"], "mutual-exclusion lost-ownership"),
    ("node redlock v5", "node examples/node/node_redlock.js", ["--topology", "redlock"], "clean"),
]


def explore(nxlock, command, extra, seed, runs, threads=None, guided=False):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "clients", "python", "src")
    env["NODE_PATH"] = os.path.join(ROOT, "tests", "clients", "node_modules")
    args = [nxlock, "explore", "--exec", command, "--long-lived", "--json", "--quiet"]
    args += ["--seed", str(seed), "--runs", str(runs)] + extra
    if threads:
        args += ["--threads", str(threads)]
    if guided:
        args += ["--guided"]
    started = time.monotonic()
    out = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
    took = time.monotonic() - started
    try:
        return json.loads(out.stdout), took
    except json.JSONDecodeError:
        return {"error": (out.stderr or out.stdout).strip().splitlines()[-1:]}, took


def cell(report, own):
    """The first report, as the table shows it."""
    if "error" in report:
        return "error: %s" % report["error"], "-", "-", "-"
    verdict = report.get("verdict")
    if verdict == "found":
        kind = report["violation"]
        mark = "" if kind in own.split() else " (not its bug)"
        run = report.get("found_by_run")
        return (
            kind + mark,
            "fault-free" if run is None else str(run),
            str(len(report.get("steps", []))),
            "%s/%s" % (report.get("reproduced"), report.get("replays")),
        )
    if verdict == "nothing-checked":
        return "NOTHING CHECKED", "-", "-", "-"
    inherent = sum(report.get("inherent", {}).values())
    unconfirmed = len(report.get("unconfirmed", []))
    words = "clean in %d runs" % report["runs"]
    if inherent:
        first = report.get("inherent_finding") or {}
        detail = first.get("detail", "")
        # The first inherent finding, named by what it saw.
        named = "no validity left" if "no validity left" in detail else first.get("violation", "")
        words += ", %d inherent (%s)" % (inherent, named)
    if unconfirmed:
        words += ", %d unconfirmed" % unconfirmed
    return words, "-", "-", "-"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nxlock", default=os.path.join(ROOT, "target", "release", "nxlock"))
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--clean-runs", type=int, default=1000)
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--threads", type=int, help="runs in flight per search (explore's --threads)")
    parser.add_argument("--guided", action="store_true", help="coverage feedback (explore's --guided)")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    print("| lock | its bug | seed | first report | found by run | steps | reproduced | voided | runs/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    failures = []
    for name, command, extra, own in LOCKS:
        if args.only and not any(o in name for o in args.only):
            continue
        for seed in seeds:
            runs = args.clean_runs if own == "clean" else args.budget
            report, _ = explore(args.nxlock, command, extra, seed, runs, args.threads, args.guided)
            first, run, steps, reproduced = cell(report, own)
            voided = sum(report.get("voided", {}).values()) if "error" not in report else "-"
            rate = "%.1f" % report.get("runs_per_second", 0) if "error" not in report else "-"
            print(
                "| %s | %s | %d | %s | %s | %s | %s | %s | %s |"
                % (name, own, seed, first, run, steps, reproduced, voided, rate),
                flush=True,
            )
            ok = (own == "clean") == (report.get("verdict") == "clean") and (
                own == "clean" or report.get("violation") in own.split()
            )
            if not ok:
                failures.append("%s seed %d: %s" % (name, seed, first))
    if failures:
        print("\nnot as expected:\n  " + "\n  ".join(failures), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
