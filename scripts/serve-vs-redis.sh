#!/usr/bin/env bash
# Issue 6's throughput target: redis-benchmark against `nxlock serve` and against a stock
# redis-server started the same way, in one run, alternating, and the ratio of the sums.
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
"${server_cpu[@]}" ./target/release/nxlock serve --port 6392 >/dev/null &
serve_pid=$!
"${server_cpu[@]}" redis-server --port 6393 --save '' --appendonly no >/dev/null &
redis_pid=$!
trap 'kill $serve_pid $redis_pid 2>/dev/null' EXIT
sleep 1
bench() {
  "${client_cpu[@]}" redis-benchmark -p "$1" -t set,get -n 200000 -P 16 -q 2>/dev/null | tr '\r' '\n' \
    | grep -E '^(SET|GET): [0-9.]+ requests per second' | awk '{s += $2} END {printf "%d", s}'
}
serve_total=0; redis_total=0
for _ in $(seq "$rounds"); do
  s=$(bench 6392); r=$(bench 6393)
  echo "nxlock serve ${s} req/s (SET+GET)   redis-server ${r} req/s"
  serve_total=$(echo "$serve_total + $s" | bc); redis_total=$(echo "$redis_total + $r" | bc)
done
echo "nxlock serve / redis-server = $(echo "scale=3; $serve_total / $redis_total" | bc)"
for port in 6392 6393; do
  "${client_cpu[@]}" ./target/release/nxlock bench --url "redis://127.0.0.1:$port" --wait poll --duration 5 \
    | grep -E '^cycles' | sed "s/^/port $port token cycle: /"
done
