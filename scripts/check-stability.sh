#!/usr/bin/env bash
# `nxlock check` gives the same table every time: runs it N times (default 500) on the
# embedded double and counts the runs whose verdicts differ from the first run's.
#
#   scripts/check-stability.sh [N] [NXLOCK_BINARY] [-- CHECK ARGS...]
#
# Exits 1 if any run differs, printing which cases changed. CI runs it with a small N.
set -euo pipefail
runs=${1:-500}
binary=${2:-target/debug/nxlock}
shift $(( $# < 2 ? $# : 2 ))
[ "${1:-}" = "--" ] && shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
verdicts() {
  # One line per case: its name and its result, without the detail (which may name
  # times or ports).
  python3 -c '
import json, sys
report = json.load(sys.stdin)
for case in report["cases"]:
    print(case["name"], case["outcome"])
'
}
"$binary" check --json "$@" | verdicts >"$work/first" || true
differing=0
for run in $(seq 2 "$runs"); do
  "$binary" check --json "$@" | verdicts >"$work/this" || true
  if ! cmp -s "$work/first" "$work/this"; then
    differing=$((differing + 1))
    echo "run $run differs:" >&2
    diff "$work/first" "$work/this" >&2 || true
  fi
done
echo "nxlock check $*: $runs runs, $(wc -l <"$work/first") cases, $differing runs with differing verdicts"
[ "$differing" -eq 0 ]
