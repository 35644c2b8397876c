#!/usr/bin/env bash
# A journey run's memory is bounded by --max-journeys, never by the run's length (issue 30's
# target: under 64 MiB). `sojourn run --journey` at 10,000 one-step journeys/s, at most 1000 at
# once, against a black hole on 127.0.0.1 (a python3 listener that accepts every connection
# and never reads or answers), so every place is held for the whole --timeout and nearly every
# journey waits in the FIFO of due journeys until the end. The same run for 60 s and for 20 s:
# the sojourn process's peak resident memory (VmHWM from /proc/PID/status, sampled until it
# exits; the control meter it starts is a process of its own and not counted) should not grow
# with the 3x more journeys of the longer run. What does grow with the run's length is the
# timeline: one set of histograms per --interval (1 s by default), about 125 KiB each here.
#
# Usage: bench/journeys-memory.sh   (honours CARGO_TARGET_DIR; about 2 minutes after the build;
# SECS="60 20" are the durations, SOJOURN=PATH runs that binary instead of building one)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${SOJOURN:-}" ]; then
  cargo build --release -q -p sojourn-cli --bin sojourn
fi
sojourn="${SOJOURN:-${CARGO_TARGET_DIR:-target}/release/sojourn}"
out=$(mktemp -d)
hole=""
trap '[ -n "$hole" ] && kill "$hole" 2>/dev/null; rm -rf "$out"' EXIT

# The black hole: accepts and holds each connection, never reads, never writes. A connection
# is closed 30 s after it was accepted (three --timeouts: sojourn gave up on it long before),
# so the listener's descriptors stay bounded; the listener ends after 200 s whatever happens.
python3 - "$out/port" <<'PY' &
import resource, socket, sys, time, collections
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
l = socket.socket()
l.bind(("127.0.0.1", 0))
l.listen(4096)
l.settimeout(0.5)
open(sys.argv[1] + ".tmp", "w").write(str(l.getsockname()[1]))
__import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
held, end = collections.deque(), time.monotonic() + 200
while time.monotonic() < end:
    try:
        held.append((time.monotonic(), l.accept()[0]))
    except socket.timeout:
        pass
    while held and held[0][0] < time.monotonic() - 30:
        held.popleft()[1].close()
PY
hole=$!
for _ in $(seq 100); do [ -s "$out/port" ] && break; sleep 0.1; done
port=$(cat "$out/port")
cat > "$out/hole.toml" <<EOF
base_url = "http://127.0.0.1:$port"

[[journey]]
name = "void"

  [[journey.step]]
  name = "get"
  url = "/"
EOF

echo "== machine: $(nproc) CPUs, kernel $(uname -r)"
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for secs in ${SECS:-60 20}; do
  cmd=("$sojourn" run --journey "$out/hole.toml" --rate 10000 --duration "${secs}s"
    --max-journeys 1000 --timeout 10s --json "$out/run-$secs.json")
  echo "-- ${cmd[*]}"
  "${cmd[@]}" > "$out/run-$secs.log" 2>&1 &
  run=$!
  peak=0
  # Until it is a zombie (kill -0 would still find it then): VmHWM only grows.
  while hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$run/status" 2>/dev/null) && [ -n "$hwm" ]; do
    peak=$hwm
    sleep 0.2
  done
  wait "$run" || echo "   (sojourn exited $?: $(tail -1 "$out/run-$secs.log"))"
  python3 - "$out/run-$secs.json" "$peak" "$secs" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
peak_kib, secs = int(sys.argv[2]), sys.argv[3]
j = r["journeys"][0]["counts"]
failed = sum(j["failed"].values())
scheduled = j["completed"] + failed + j["censored"] + j["never_sent"]
print(f"   {secs} s: peak RSS {peak_kib / 1024:.1f} MiB (VmHWM {peak_kib} kB); journeys "
      f"scheduled {scheduled}, completed {j['completed']}, failed {failed} "
      f"({', '.join(f'{k} {v}' for k, v in j['failed'].items() if v) or 'none'}), "
      f"censored {j['censored']}, never started {j['never_sent']}")
print(f"   {secs} s: under 64 MiB: {'yes' if peak_kib < 64 * 1024 else 'NO'}")
PY
done
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
