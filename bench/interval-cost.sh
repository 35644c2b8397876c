#!/usr/bin/env bash
# What the run-level statistics add to a run's CPU: the batch-means intervals of every response
# percentile and the validity verdict, for a 10-minute run at 20k req/s (issue 35's budget: under
# 2%). Both figures come from this one invocation:
#   1. their CPU, timed on a simulated 10-minute run at 20k req/s with 1 s intervals
#      (crates/sim/examples/interval_cost.rs, median of five);
#   2. a real run's CPU per completed request: `sojourn run` at 20k req/s for SECS seconds
#      against `sojourn serve --scenario healthy` (server on CPU 0, generator on CPU 1), CPU
#      from /usr/bin/time, completed requests from its JSON; times the simulated run's count.
# Loopback only; bounded by the run's duration.
#
# Usage: bench/interval-cost.sh [rounds]   (SECS=10 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-2}"
secs="${SECS:-10}"
cargo build --release -q -p sojourn-cli --bin sojourn
cargo build --release -q -p sojourn-sim --example interval_cost
sojourn=target/release/sojourn
out=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$out"' EXIT
echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
taskset -c 0 "$sojourn" serve --scenario healthy --listen 127.0.0.1:0 > "$out/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do grep -qs '^listening on' "$out/serve.log" && break; sleep 0.1; done
url="$(head -1 "$out/serve.log" | sed 's#^listening on ##')/api"
for round in $(seq 1 "$rounds"); do
  echo "-- round $round, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  stats=$(taskset -c 1 target/release/examples/interval_cost 20000 600)
  /usr/bin/time -f "%U %S" -o "$out/cpu" taskset -c 1 "$sojourn" run "$url" --rate 20000 \
    --duration "${secs}s" --json "$out/run.json" > /dev/null
  python3 - "$stats" "$out/cpu" "$out/run.json" <<'PY'
import json, sys
stats = dict(zip(*[iter(sys.argv[1].split())] * 2))
user, system = map(float, open(sys.argv[2]).read().split()[-2:])
run = json.load(open(sys.argv[3]))
completed = run["counts"]["completed"]
per_request = (user + system) / completed
requests = int(stats["requests"])
analysis = float(stats["batch_intervals_s"]) + float(stats["validity_s"])
whole = per_request * requests
print(f"statistics of a 10-minute run ({requests} requests, {stats['intervals']} intervals): "
      f"batch means {float(stats['batch_intervals_s']):.3f} s + validity {float(stats['validity_s']) * 1e3:.3f} ms CPU")
print(f"the run itself: {per_request * 1e6:.1f} µs CPU per completed request ({completed} in {user + system:.2f} s) "
      f"-> {whole:.0f} s for {requests} requests")
print(f"added: {100 * analysis / whole:.3f}% of the run's CPU")
PY
done
