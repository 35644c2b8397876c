#!/bin/bash
# Writes the "before" documents of crates/cli/tests/same_documents.rs into OUT.
# Usage: SOJOURN=path/to/sojourn bash make.sh OUT
# Every server binds 127.0.0.1:0; every command runs inside its own OUT/<kind> directory, with
# relative paths, as the test runs it.
set -euo pipefail
S=${SOJOURN:?set SOJOURN to the sojourn binary}
S=$(realpath "$S")
OUT=$(realpath -m "$1")
mkdir -p "$OUT"/{demo,compare,sweep,sim-sweep,suite,merge,report}

# The binary writes pretty JSON; stored without whitespace (same keys, order and values) to
# keep the repository small. The test parses both sides, so layout never matters.
compact() {
  for f in "$@"; do
    python3 -c 'import json, sys
p = sys.argv[1]
d = json.load(open(p))
open(p, "w").write(json.dumps(d, separators=(",", ":"), ensure_ascii=False))' "$f"
  done
}

# serve ARGS... : starts `sojourn serve ARGS --listen 127.0.0.1:0`, sets ADDR and SERVER.
serve() {
  "$S" serve "$@" --listen 127.0.0.1:0 > serve.log 2>&1 &
  SERVER=$!
  for _ in $(seq 100); do grep -qs '^listening on' serve.log && break; sleep 0.1; done
  ADDR=$(head -1 serve.log | sed 's#^listening on http://##')
}
stop() { kill "$SERVER"; wait "$SERVER" || true; rm -f serve.log; }

cd "$OUT/demo"
"$S" demo --scenario hiccup --rate 100 --duration 2s --json-dir . --report demo.html
rm demo.html
compact closed.json open.json model.json

cd "$OUT/compare"
serve --scenario healthy
"$S" compare "http://$ADDR/api" --rate 100 --duration 1s --json-dir . --report compare.html
stop
rm compare.html
compact closed.json open.json

cd "$OUT/sweep"
"$S" serve --scenario saturation --set saturation.baseline=100ms --set saturation.cap=2 --print > scenario.toml
serve --scenario scenario.toml
"$S" sweep "http://$ADDR/api" --search --from 8 --to 32 --resolution 20 --step 1s --settle 0s --json sweep.json
stop
compact sweep.json

cd "$OUT/sim-sweep"
"$S" sim --scenario bimodal --sweep --search --from 10 --to 80 --resolution 10 --step 4s --json sweep.json
compact sweep.json

cd "$OUT/suite"
mkdir -p empty-home
# No peer tool can be found: the suite is sojourn's own runs and the model, on any machine.
env PATH=/nonexistent HOME="$OUT/suite/empty-home" "$S" suite --scenarios healthy --tools wrk --duration 2s --rate 100 --out suite
mv suite/suite.json suite.json
mv suite/healthy/model.json model.json
rm -r suite empty-home
compact suite.json model.json

cd "$OUT/merge"
serve --scenario healthy
AT=$(python3 -c 'import time; print(f"{time.time() + 1.5:.3f}")')
"$S" run "http://$ADDR/api" --rate 100 --duration 1s --threads 1 --start-at "$AT" --shard 0/2 --json shard-0.json &
SHARD0=$!
"$S" run "http://$ADDR/api" --rate 100 --duration 1s --threads 1 --start-at "$AT" --shard 1/2 --json shard-1.json
wait "$SHARD0"
stop
compact shard-0.json shard-1.json
"$S" merge shard-0.json shard-1.json -o merged.json
compact merged.json

# The report of the demo's open loop and model (inputs: ../demo/open.json, ../demo/model.json).
cd "$OUT/report"
cp ../demo/open.json ../demo/model.json .
"$S" report open.json model.json -o report.html
rm open.json model.json
