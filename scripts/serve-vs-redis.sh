#!/usr/bin/env bash
# nxlock serve against redis-server: redis-benchmark (pipelined SET/GET; one request at a
# time SET, GET and INCR; an EVAL of a compare-and-delete), and a 3 s redis-rs token-lock
# cycle (`nxlock bench --wait poll`), against `nxlock serve` and against a stock
# redis-server started the same way, in one run, alternating within each round, and the
# ratios of the sums.
# Usage: scripts/serve-vs-redis.sh [rounds]   (needs redis-server and redis-benchmark)
#
# With taskset and two or more CPUs, both servers are pinned to CPU 0 and the benchmark
# client to CPU 1, so neither server competes with the client for a core and both get
# exactly the same one (redis-benchmark's own documentation recommends pinning).
# NXLOCK_NO_PIN=1 runs everything unpinned.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
server_cpu=() client_cpu=()
if [ -z "${NXLOCK_NO_PIN:-}" ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  server_cpu=(taskset -c 0) client_cpu=(taskset -c 1)
  echo "servers pinned to CPU 0, redis-benchmark to CPU 1"
fi
cargo build --release --quiet
scratch=$(mktemp -d)
"${server_cpu[@]}" ./target/release/nxlock serve --port 6392 >/dev/null &
serve_pid=$!
"${server_cpu[@]}" redis-server --port 6393 --save '' --appendonly no --dir "$scratch" >/dev/null &
redis_pid=$!
trap 'kill $serve_pid $redis_pid 2>/dev/null; rm -rf "$scratch"' EXIT
# Wait for both servers by asking them.
for port in 6392 6393; do
  for _ in $(seq 100); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.05
  done
done
bench() {
  "${client_cpu[@]}" redis-benchmark -p "$1" -t set,get -n 200000 -P 16 -q 2>/dev/null | tr '\r' '\n' \
    | grep -E '^(SET|GET): [0-9.]+ requests per second' | awk '{s += $2} END {printf "%d", s}'
}
# One request at a time (no pipelining): what a lock client's round trips cost.
single() {
  "${client_cpu[@]}" redis-benchmark -p "$1" -t set,get,incr -n 50000 -q 2>/dev/null | tr '\r' '\n' \
    | grep -E '^(SET|GET|INCR): [0-9.]+ requests per second' | awk '{s += $2} END {printf "%d", s}'
}
# The compare-and-delete release every token lock sends.
release() {
  "${client_cpu[@]}" redis-benchmark -p "$1" -n 50000 -q \
    EVAL "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end" 1 lock token \
    2>/dev/null | tr '\r' '\n' | grep -oE '[0-9.]+ requests per second' | awk '{s += $1} END {printf "%d", s}'
}
cycles() {
  "${client_cpu[@]}" ./target/release/nxlock bench --url "redis://127.0.0.1:$1" --wait poll --duration 3 \
    | awk '/^cycles/ {print $2}'
}
serve_total=0; redis_total=0; serve_cycles=0; redis_cycles=0
serve_single=0; redis_single=0; serve_eval=0; redis_eval=0
# Each round measures serve, redis, redis, serve, so that a drift in the machine's speed
# during the round weighs on both servers alike.
for _ in $(seq "$rounds"); do
  s1=$(bench 6392); r1=$(bench 6393); r2=$(bench 6393); s2=$(bench 6392)
  n1=$(single 6392); m1=$(single 6393); m2=$(single 6393); n2=$(single 6392)
  e1=$(release 6392); f1=$(release 6393); f2=$(release 6393); e2=$(release 6392)
  echo "one at a time: nxlock serve $n1 $n2, redis-server $m1 $m2 req/s (SET+GET+INCR); EVAL compare-and-delete: $e1 $e2 against $f1 $f2 req/s"
  serve_single=$((serve_single + n1 + n2)); redis_single=$((redis_single + m1 + m2))
  serve_eval=$((serve_eval + e1 + e2)); redis_eval=$((redis_eval + f1 + f2))
  sc1=$(cycles 6392); rc1=$(cycles 6393); rc2=$(cycles 6393); sc2=$(cycles 6392)
  echo "nxlock serve $s1 $s2 req/s (SET+GET), $sc1 $sc2 token cycles in 3 s;   redis-server $r1 $r2 req/s, $rc1 $rc2 cycles"
  serve_total=$((serve_total + s1 + s2)); redis_total=$((redis_total + r1 + r2))
  serve_cycles=$((serve_cycles + sc1 + sc2)); redis_cycles=$((redis_cycles + rc1 + rc2))
done
echo "throughput:  nxlock serve / redis-server = $(echo "scale=3; $serve_total / $redis_total" | bc)"
echo "one request at a time (SET, GET, INCR): nxlock serve / redis-server = $(echo "scale=3; $serve_single / $redis_single" | bc)"
echo "EVAL compare-and-delete: nxlock serve / redis-server = $(echo "scale=3; $serve_eval / $redis_eval" | bc)"
echo "token cycle: redis-server / nxlock serve = $(echo "scale=3; $redis_cycles / $serve_cycles" | bc) (time per cycle, serve relative to redis)"
