#!/usr/bin/env bash
# What `sojourn serve` sustains on this machine: concurrent connections, hang-ups, memory, and
# delay accuracy at a few rates, read from its own truth log. Loopback only; every step is
# bounded by `timeout`. Takes about two minutes.
#
#   bench/serve-capacity.sh [CONNECTIONS]   (default 10000)
#
# Results go to stdout and out/serve-capacity/.
set -euo pipefail
cd "$(dirname "$0")/.."

CONNECTIONS=${1:-10000}
OUT=out/serve-capacity
mkdir -p "$OUT"
cargo build --release -q -p sojourn-cli --bin sojourn
cargo build --release -q -p sojourn-server --example conn_storm
SOJOURN=target/release/sojourn
STORM=target/release/examples/conn_storm
ulimit -n "$(ulimit -Hn)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"

server_pid=""
sampler_pid=""
cleanup() {
    [ -n "$sampler_pid" ] && kill "$sampler_pid" 2>/dev/null || true
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
}
trap cleanup EXIT

# start NAME ARGS...: starts the server, sets $server_pid and $addr.
start() {
    local name=$1; shift
    "$SOJOURN" serve --listen 127.0.0.1:0 --truth "$OUT/truth-$name.csv" "$@" \
        >"$OUT/serve-$name.out" 2>"$OUT/serve-$name.err" &
    server_pid=$!
    for _ in $(seq 50); do
        addr=$(sed -n 's|^listening on http://||p' "$OUT/serve-$name.out")
        [ -n "$addr" ] && return 0
        sleep 0.1
    done
    echo "server did not start" >&2; exit 1
}

# stop NAME: SIGTERM, and the server must exit 0 on its own.
stop() {
    local name=$1
    kill -TERM "$server_pid"
    local status=0
    timeout 10 tail --pid="$server_pid" -f /dev/null || status=$?
    wait "$server_pid" || status=$?
    server_pid=""
    echo "  shutdown on SIGTERM: exit $status; $(grep '^stopped' "$OUT/serve-$name.err")"
}

rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$server_pid/status"; }

# Samples the server's RSS every 100 ms into $OUT/rss.txt.
sample_rss() {
    : >"$OUT/rss.txt"
    ( while kill -0 "$server_pid" 2>/dev/null; do rss_kib >>"$OUT/rss.txt" 2>/dev/null || true; sleep 0.1; done ) &
    sampler_pid=$!
}

# lateness FILE: departure - due percentiles from a truth log, in microseconds.
lateness() {
    awk -F, 'NR > 1 && $7 == "ok" { print ($4 - $5) / 1000 }' "$1" | sort -n | awk '
        { v[NR] = $1 }
        END {
            if (NR == 0) { print "  no requests"; exit }
            printf "  %d requests; lateness p50 %.0f us, p90 %.0f us, p99 %.0f us, p99.9 %.0f us, max %.0f us\n",
                NR, v[int(NR * 0.5) + 1], v[int(NR * 0.9) + 1], v[int(NR * 0.99) + 1], v[int(NR * 0.999) + 1], v[NR]
        }'
}

echo "== $CONNECTIONS concurrent connections, each with a request in service (2 s), three rounds"
start hold --scenario healthy --set healthy.baseline=2s
sample_rss
echo "  idle RSS: $(rss_kib) KiB"
for round in 1 2 3; do
    timeout 120 "$STORM" "$addr" hold "$CONNECTIONS" | sed "s/^/  round $round: /"
    sleep 1
    echo "  round $round: RSS after $(rss_kib) KiB, peak $(sort -n "$OUT/rss.txt" | tail -1) KiB"
done
echo "== $CONNECTIONS clients hanging up mid-request"
timeout 120 "$STORM" "$addr" hangup "$CONNECTIONS" | sed 's/^/  /'
sleep 3
echo "  RSS after the hang-ups drained: $(rss_kib) KiB"
abandoned=$(grep -c ',abandoned$' "$OUT/truth-hold.csv" || true)
kill "$sampler_pid" 2>/dev/null || true; sampler_pid=""
stop hold
echo "  truth log: $(($(wc -l <"$OUT/truth-hold.csv") - 1)) requests, $abandoned abandoned"

# Service times spread over 2–20 ms so the closed loops do not fall into lockstep: with a fixed
# 10 ms every connection's deadline lands in the same instant and the last one served of each
# bunch is late by the time it takes to serve the others.
printf '[law]\nkind = "uniform"\nmin = "2ms"\nmax = "20ms"\n' >"$OUT/uniform.toml"
for conns in 16 64 160; do
    echo "== delay accuracy: $conns keep-alive connections in closed loop, uniform 2-20 ms, 5 s"
    start "loop$conns" --scenario "$OUT/uniform.toml"
    timeout 30 "$STORM" "$addr" loop "$conns" 5 | sed 's/^/  /'
    stop "loop$conns"
    lateness "$OUT/truth-loop$conns.csv"
done
echo "== delay accuracy: 16 connections, fixed 10 ms (deadlines in lockstep)"
start fixed16 --scenario healthy
timeout 30 "$STORM" "$addr" loop 16 5 | sed 's/^/  /'
stop fixed16
lateness "$OUT/truth-fixed16.csv"
echo "== load average now: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine blurs the tail)"
