#!/usr/bin/env bash
# Where the open loop's CPU goes, beside a program that only lets the kernel time its sends.
#
#   [WRK2=PATH] [SHALLOW_IDLE=1] bench/wakeups.sh PROBE
#
# PROBE is an io_uring timed-send probe built from C: each message an absolute timeout linked to
# an 8-byte write on a socketpair, 32 queued ahead, a reader thread stamping arrivals; it prints
# how late arrivals land after their deadlines (`PROBE COUNT GAP_US BATCH`). It does no HTTP: it
# shows what a wake-up and a kernel-timed send cost on this machine, not what an HTTP request
# costs.
#
# nginx (one process, `return 200`) on CPU 0; the probe and `sojourn run` (release build, one
# thread, 64 connections, defaults) each on CPU 1, 8 s at 5k, 20k and 50k a second, ROUNDS
# rounds (default 2). perf stat counts context switches, CPU (task-clock) and system calls of
# the process and its children (sojourn's control meter included; it is then measured alone).
# With WRK2 (wrk2's binary, built from giltene/wrk2's source: it is in no registry), wrk2 -t1
# -c64 -R runs beside them, over its completed requests. Last, a perf profile at 5k req/s of
# sojourn (and of wrk2): the kernel paths that take its CPU.
# With SHALLOW_IDLE=1 every CPU is held in its shallowest idle state throughout (the kernel's PM
# QoS request, /dev/cpu_dma_latency 0; root only): a CPU with nothing to run then polls instead
# of halting, so waking it costs no exit to the host, and the host's CPU goes to the polling,
# which no task's counters show.
# 127.0.0.1 only; about 3 minutes.
set -euo pipefail
if [ "${SHALLOW_IDLE:-0}" = 1 ]; then
  # Written as text, the request is read as hex; it holds while descriptor 3 stays open.
  exec 3> /dev/cpu_dma_latency
  printf 0 >&3
  echo "holding every CPU in shallow idle (/dev/cpu_dma_latency $(od -An -td4 /dev/cpu_dma_latency | tr -d ' '))"
fi
probe=${1:?usage: bench/wakeups.sh PROBE (the io_uring timed-send probe, built)}
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
sojourn=$root/target/release/sojourn
[ -x "$sojourn" ] || { echo "build it first: cargo build --release -p sojourn-cli" >&2; exit 2; }
out=$(mktemp -d /tmp/sojourn-wakeups.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$out/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
error_log $out/error.log;
pid $out/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$port; location / { return 200 "ok"; } }
}
EOF
taskset -c 0 nginx -c "$out/nginx.conf" &
nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null' EXIT
sleep 1

events=context-switches,task-clock,raw_syscalls:sys_enter
# One line per run: what, rate, count, CPU µs per message, switches and system calls per message.
stat() {
  local what=$1 rate=$2 count=$3 file=$4
  awk -F, -v w="$what" -v r="$rate" -v n="$count" '
    $3 == "context-switches" { cs = $1 }
    $3 == "task-clock" { ms = $1 }
    $3 == "raw_syscalls:sys_enter" { sc = $1 }
    END { printf "%-8s %6d/s  %7d  cpu %6.1f us  switches %5.2f  syscalls %5.2f  (per message)\n",
          w, r, n, ms * 1000 / n, cs / n, sc / n }' "$file"
}
for round in $(seq "${ROUNDS:-2}"); do
  for rate in 5000 20000 50000; do
    n=$((rate * 8))
    echo "== round $round, $rate/s, load $(cut -d' ' -f1-3 /proc/loadavg)"
    perf stat -x, -e "$events" -o "$out/probe.txt" taskset -c 1 "$probe" "$n" $((1000000 / rate)) 32
    stat probe "$rate" "$n" "$out/probe.txt"
    perf stat -x, -e "$events" -o "$out/sojourn.txt" taskset -c 1 "$sojourn" run \
      "http://127.0.0.1:$port/" --rate "$rate" -c 64 --threads 1 --duration 8s \
      --json "$out/run.json" > /dev/null 2>&1
    completed=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['counts']['completed'])" "$out/run.json")
    stat sojourn "$rate" "$completed" "$out/sojourn.txt"
    python3 -c "
import json, sys
h = json.load(open(sys.argv[1]))['histograms']
ms = lambda name: h[name]['percentiles']['99'] / 1e6 if name in h else float('nan')
print(f'         send lag p99 {ms(\"send_lag\"):.3f} ms, control meter p99 {ms(\"control_hiccup\"):.3f} ms')
" "$out/run.json"
    if [ -n "${WRK2:-}" ]; then
      perf stat -x, -e "$events" -o "$out/wrk2.txt" taskset -c 1 "$WRK2" -t1 -c64 -R"$rate" -d8s \
        "http://127.0.0.1:$port/" > "$out/wrk2.out"
      completed=$(awk '/requests in/ { print $1 }' "$out/wrk2.out")
      stat wrk2 "$rate" "$completed" "$out/wrk2.txt"
    fi
  done
done

echo "== the control meter alone, 8 s (it ticks until its stdin closes)"
sleep 8 | perf stat -x, -e "$events" -o "$out/control.txt" taskset -c 1 "$sojourn" __hiccup-control --tick 1ms > /dev/null
awk -F, '$3 == "context-switches" { cs = $1 } $3 == "task-clock" { ms = $1 }
  END { printf "control  %.1f ms of CPU a second, %d wake-ups a second, %.1f us each\n", ms / 8, cs / 8, ms * 1000 / cs }' "$out/control.txt"

echo "== where sojourn's CPU goes at 5k req/s (perf record, kernel call chains)"
perf record -q -F 2000 -g -o "$out/perf.data" taskset -c 1 "$sojourn" run "http://127.0.0.1:$port/" \
  --rate 5000 -c 64 --threads 1 --duration 8s --json "$out/run.json" > /dev/null 2>&1
profile() {
  perf report -i "$1" --no-children --sort comm,symbol --stdio -g caller,0.5,callee --percent-limit 5 2>/dev/null \
    | grep -v '^#' | grep -v '^$' | grep -v '^ *| *$' | head -40
}
profile "$out/perf.data"
if [ -n "${WRK2:-}" ]; then
  echo "== where wrk2's CPU goes at 5k req/s"
  perf record -q -F 2000 -g -o "$out/wrk2.data" taskset -c 1 "$WRK2" -t1 -c64 -R5000 -d8s \
    "http://127.0.0.1:$port/" > /dev/null
  profile "$out/wrk2.data"
fi
echo "files: $out"
