#!/usr/bin/env bash
# sojourn's engine against wrk, on nginx, on this machine. 127.0.0.1 only, bounded in time.
#
#   nginx (one worker) pinned to CPU 0; every load generator pinned to CPU 1, one thread.
#   1. maximum rate: wrk -t1 -c64 vs sojourn --closed -c64 (like for like), and the highest
#      open-loop rate sojourn sustains (achieved >= 98% of target, nothing censored, and its
#      own self-check passing: not CPU-bound, dispatching on time);
#   2. generator CPU per request at a fixed 50k req/s (sojourn open loop, with and without its
#      timer spin; wrk2 -R50000 too when `wrk2` is on PATH);
#   3. sojourn's send-lag percentiles at 50k req/s.
#
# Needs: nginx (Debian nginx-light), wrk (Debian wrk), taskset, python3.
# Usage: bench/engine-vs-wrk.sh [seconds-per-measurement]   (default 10)
set -euo pipefail
SECS=${1:-10}
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
for tool in nginx wrk taskset python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install nginx-light wrk util-linux)"; exit 2; }
done
[ "$(nproc)" -ge 2 ] || { echo "needs 2 CPUs: one for nginx, one for the generator"; exit 2; }
cargo build --release -q -p sojourn-cli
SOJOURN=$PWD/target/release/sojourn
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$work/nginx.conf" <<EOF
worker_processes 1;
worker_cpu_affinity 01;
daemon off;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 8192; }
http {
  access_log off;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$port; location / { return 200 "ok"; } }
}
EOF
taskset -c 0 nginx -c "$work/nginx.conf" -p "$work" &
nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
sleep 0.5
URL=http://127.0.0.1:$port/

# CPU seconds (user+system) a command used, printed after its own output on fd 3.
cpu_of() { python3 - "$@" <<'PY'
import resource, subprocess, sys
out = subprocess.run(sys.argv[1:], capture_output=True, text=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stdout.write(out.stdout)
print(f"CPU_SECONDS {r.ru_utime + r.ru_stime:.3f}")
PY
}
json() { python3 -c "import json,sys; r=json.load(open('$1')); print(eval(sys.argv[1]))" "$2"; }

echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
echo "== nginx $(nginx -v 2>&1 | cut -d/ -f2), $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2), sojourn $($SOJOURN --version | cut -d' ' -f2)"

echo "== 1. maximum rate, ${SECS}s each"
wrk_out=$(cpu_of taskset -c 1 wrk -t1 -c64 -d"${SECS}s" "$URL")
wrk_rate=$(echo "$wrk_out" | awk '/Requests\/sec/ {print $2}')
wrk_reqs=$(echo "$wrk_out" | awk '/requests in/ {print $1}')
wrk_cpu=$(echo "$wrk_out" | awk '/CPU_SECONDS/ {print $2}')
echo "wrk -t1 -c64:                 ${wrk_rate} req/s, $(python3 -c "print(f'{1e6*$wrk_cpu/$wrk_reqs:.2f}')") µs CPU/request"
closed_out=$(cpu_of taskset -c 1 "$SOJOURN" run "$URL" --closed -c 64 --threads 1 --duration "${SECS}s" --json "$work/closed.json")
closed_rate=$(json "$work/closed.json" "round(r['rate']['achieved'])")
closed_cpu=$(echo "$closed_out" | awk '/CPU_SECONDS/ {print $2}')
closed_n=$(json "$work/closed.json" "r['counts']['completed']")
echo "sojourn --closed -c64:        ${closed_rate} req/s ($(python3 -c "print(f'{$closed_rate/$wrk_rate:.2f}')")x wrk), $(python3 -c "print(f'{1e6*$closed_cpu/$closed_n:.2f}')") µs CPU/request"
best=0
for rate in 10000 20000 30000 40000 50000 60000 80000; do
  taskset -c 1 "$SOJOURN" run "$URL" --rate $rate -c 256 --threads 1 --duration "${SECS}s" --timeout 2s --json "$work/open.json" >/dev/null
  achieved=$(json "$work/open.json" "round(r['rate']['achieved'])")
  censored=$(json "$work/open.json" "r['counts']['censored'] + r['counts']['never_sent']")
  p99=$(json "$work/open.json" "round(r['histograms']['response']['percentiles']['99']/1e3)")
  lag=$(json "$work/open.json" "round(r['histograms']['send_lag']['percentiles']['99']/1e3)")
  verdict=$(json "$work/open.json" "r['checks']['generator']")
  echo "sojourn open loop @ $rate:    achieved ${achieved} req/s, censored ${censored}, response p99 ${p99} µs, send lag p99 ${lag} µs, generator ${verdict}"
  if python3 -c "import sys; sys.exit(0 if $achieved >= 0.98*$rate and $censored == 0 and '$verdict' == 'ok' else 1)"; then best=$rate; else break; fi
done
echo "highest open-loop rate sustained: ${best} req/s ($(python3 -c "print(f'{$best/$wrk_rate:.2f}')")x wrk's closed-loop maximum)"

echo "== 2+3. fixed 50k req/s for ${SECS}s: CPU per request and send lag"
for spin in 100us 0s; do
  out=$(cpu_of taskset -c 1 "$SOJOURN" run "$URL" --rate 50000 -c 256 --threads 1 --duration "${SECS}s" --timer-spin $spin --json "$work/fixed.json")
  cpu=$(echo "$out" | awk '/CPU_SECONDS/ {print $2}')
  n=$(json "$work/fixed.json" "r['counts']['scheduled']")
  lag=$(json "$work/fixed.json" "' '.join(f\"p{k} {v/1e3:.1f}\" for k,v in r['histograms']['send_lag']['percentiles'].items())")
  echo "sojourn open 50k (spin $spin): $(python3 -c "print(f'{1e6*$cpu/$n:.2f}')") µs CPU/request; send lag µs: $lag; generator $(json "$work/fixed.json" "r['checks']['generator']")"
done
if command -v wrk2 >/dev/null; then
  out=$(cpu_of taskset -c 1 wrk2 -t1 -c64 -R50000 -d"${SECS}s" "$URL")
  n=$(echo "$out" | awk '/requests in/ {print $1}')
  cpu=$(echo "$out" | awk '/CPU_SECONDS/ {print $2}')
  echo "wrk2 -R50000: $(python3 -c "print(f'{1e6*$cpu/$n:.2f}')") µs CPU/request"
else
  echo "wrk2 not on PATH: no wrk2 comparison (it is in no package registry)"
fi
