#!/usr/bin/env bash
# What sojourn's library harness costs per call: an empty function driven open-loop at 100k and
# 1M calls a second, async and blocking (crates/sojourn/examples/harness_cost.rs), pinned to
# CPU 1 with nothing else running. Prints the load average beside the table.
#
# Usage: bench/library-harness.sh [rounds]   (SECS=5 per run by default)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-2}"
cargo build --release -q -p sojourn --example harness_cost
bin=target/release/examples/harness_cost
echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
for round in $(seq 1 "$rounds"); do
  echo "-- round $round, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  taskset -c 1 "$bin"
done
