#!/usr/bin/env bash
# What a journey step costs beside the same request sent as a plain targets file (issue 30's
# aim: at most 1.3x the CPU per completed request). Both send GET /api?step=N, three steps a
# journey (no think time, no extraction: the loop's own cost, not the file's work), at the same
# requests per second, against `sojourn serve --scenario healthy` with no delay (server on CPU
# 0, generator on CPU 1). Journeys: `run --journey` at RATE/3 journeys/s; targets: `run
# --targets` at RATE req/s round robin over the same three URLs. CPU from /usr/bin/time, divided
# by the completed requests (steps) in each run's JSON. Rounds alternate the two, and each
# round prints both and their ratio. Loopback only; bounded by the runs' durations.
#
# Usage: bench/journeys-cost.sh [rounds]   (RATE=3000 req/s and SECS=10 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
rate="${RATE:-3000}"
secs="${SECS:-10}"
cargo build --release -q -p sojourn-cli --bin sojourn
sojourn=target/release/sojourn
out=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$out"' EXIT
echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
taskset -c 0 "$sojourn" serve --scenario healthy --set healthy.baseline=0ms --listen 127.0.0.1:0 \
  > "$out/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do grep -qs '^listening on' "$out/serve.log" && break; sleep 0.1; done
origin="$(head -1 "$out/serve.log" | sed 's#^listening on ##')"

{
  echo "base_url = \"$origin\""
  echo
  echo '[[journey]]'
  echo 'name = "three"'
  for step in 1 2 3; do
    printf '\n  [[journey.step]]\n  name = "s%s"\n  url = "/api?step=%s"\n' "$step" "$step"
  done
} > "$out/journey.toml"
for step in 1 2 3; do
  printf 'GET %s/api?step=%s\n\n' "$origin" "$step"
done > "$out/targets.txt"

cpu_per_request() { # $1: time file, $2: result JSON
  python3 - "$1" "$2" <<'PY'
import json, sys
user, system = map(float, open(sys.argv[1]).read().split()[-2:])
run = json.load(open(sys.argv[2]))
completed = run["counts"]["completed"]
assert completed == run["counts"]["scheduled"], run["counts"]
print(f"{(user + system) / completed * 1e6:.2f} {completed}")
PY
}

journey_rate=$(python3 -c "print($rate / 3)")
echo "== $rate req/s for ${secs}s each: journeys of three steps at $journey_rate/s, and a targets file of the same three requests"
for round in $(seq 1 "$rounds"); do
  echo "-- round $round, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  /usr/bin/time -f "%U %S" -o "$out/journeys.cpu" taskset -c 1 "$sojourn" run \
    --journey "$out/journey.toml" --rate "$journey_rate" --duration "${secs}s" \
    --json "$out/journeys.json" > /dev/null
  /usr/bin/time -f "%U %S" -o "$out/targets.cpu" taskset -c 1 "$sojourn" run \
    --targets "$out/targets.txt" --rate "$rate" --duration "${secs}s" \
    --json "$out/targets.json" > /dev/null
  read -r j jn <<< "$(cpu_per_request "$out/journeys.cpu" "$out/journeys.json")"
  read -r t tn <<< "$(cpu_per_request "$out/targets.cpu" "$out/targets.json")"
  python3 -c "print(f'journey steps {$j:.2f} µs CPU each ($jn), targets {$t:.2f} µs each ($tn): {$j / $t:.2f}x')"
done
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
