#!/usr/bin/env bash
# Runs units of Redis's own TCL test suite against `nxlock serve`.
#
# Usage: scripts/redis-tcl-suite.sh REDIS_SOURCES [UNIT ...]
#   REDIS_SOURCES: a checkout of the Redis sources at the release serve matches (7.0.15),
#                  e.g. `git clone --branch 7.0.15 https://github.com/redis/redis`.
#   UNIT:          default unit/pubsub unit/type/list unit/introspection.
#
# Each test is bounded by --timeout, so a hang shows as TIMEOUT instead of stopping the
# run. Tests needing a feature serve lacks are skipped by scripts/redis-tcl/skip.txt
# (with the reasons), and by Redis's own tags for servers without a feature: needs:debug
# (serve refuses DEBUG, as Redis does by default), needs:repl (the replication stream)
# and needs:config-maxmemory (serve has no maxmemory). The baseline skips the same tags. Redis's runner flushes functions before each unit; serve has none, so the
# copy it runs from ignores that error. Exits 1 if a unit hangs, raises an exception or
# fails a test. With NXLOCK_TCL_BASELINE=redis-server, the same units run against a
# redis-server on PATH instead (nothing skipped): the count serve's is read against.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
sources=${1:?usage: $0 REDIS_SOURCES [UNIT ...]}
shift
units=("$@")
[ ${#units[@]} -gt 0 ] || units=(unit/pubsub unit/type/list unit/introspection)
command -v tclsh >/dev/null || { echo "tclsh is needed (Debian: tcl)" >&2; exit 2; }

work=$(mktemp -d)
serve_pid=
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cp -r "$sources/tests" "$sources/runtest" "$work/"
sed -i 's/^\(\s*\)r function flush$/\1catch {r function flush}/' "$work/tests/support/server.tcl"

skipfile=("--skipfile" "$here/redis-tcl/skip.txt")
if [ "${NXLOCK_TCL_BASELINE:-}" = redis-server ]; then
  # The baseline: the same units against a redis-server, which skips nothing, so that
  # serve's count can be read against what Redis itself passes.
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis-server --port "$port" --dir "$work" --save "" --enable-debug-command no \
    >"$work/serve.log" 2>&1 &
  serve_pid=$!
  until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
  skipfile=()
else
  (cd "$root" && cargo build --release --quiet --bin nxlock)
  # The 7.0 profile: the suite is 7.0.15's, and serve answers as 7.4 unless told.
  "$root/target/release/nxlock" serve --port 0 --redis-version 7.0 >"$work/serve.log" 2>&1 &
  serve_pid=$!
  port=
  for _ in $(seq 100); do
    port=$(sed -n 's/.*redis:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/serve.log" | head -n 1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "nxlock serve did not start:" >&2; cat "$work/serve.log" >&2; exit 2; }
fi

status=0
for unit in "${units[@]}"; do
  log="$work/$(echo "$unit" | tr / _).log"
  (cd "$work" && ./runtest --host 127.0.0.1 --port "$port" --single "$unit" --timeout 60 \
    --tags "-needs:debug -needs:repl -needs:config-maxmemory" "${skipfile[@]}") >"$log" 2>&1 || true
  plain=$(sed 's/\x1b\[[0-9;]*m//g' "$log")
  count() { grep -c "^\[$1\]" <<<"$plain" || true; }
  ok=$(count ok) err=$(count err) skip=$(count skip) ignore=$(count ignore)
  hung=$(grep -c "^\[TIMEOUT\]" <<<"$plain" || true)
  raised=$(grep -c "^\[exception\]" <<<"$plain" || true)
  ended=$(grep -c "All tests passed\|The following tests failed" <<<"$plain" || true)
  echo "$unit: $ok passed, $err failed, $skip skipped, $ignore not for external servers; hangs: $hung, exceptions: $raised"
  grep -A2 "^\[err\]\|^\[exception\]\|^\[TIMEOUT\]" <<<"$plain" | sed 's/^/    /' || true
  if [ "$err" != 0 ] || [ "$hung" != 0 ] || [ "$raised" != 0 ] || [ "$ended" = 0 ]; then
    status=1
  fi
done
exit "$status"
