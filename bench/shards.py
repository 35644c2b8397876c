#!/usr/bin/env python3
"""Two shards against one process at the same total rate, on this machine. 127.0.0.1 only,
bounded in time.

    `sojourn serve --scenario healthy` (1 ms baseline) pinned to CPU 0. Against it, in
    alternating order, ROUNDS times, with the load average noted before each:
      single  one `sojourn run --rate RATE` (one thread) pinned to CPU 1;
      shards  `--shard 0/2` and `--shard 1/2` at the same RATE, both pinned to CPU 1, from one
              `--start-at` a second ahead, merged with `sojourn merge`.
    Reported for each: the merged (or single) achieved rate, requests scheduled and answered,
    send lag p50 / p99 / p99.9, response p99, the hiccup meters' p99 (sojourn's own thread's, and
    the control process's: the machine's floor), the
    shards' start skew, and the CPU the generator process(es) used per request.

Two cores leave no core per shard beside the server: both shards share CPU 1, as the single
process does, so the figure says what sharding costs in CPU and in send lag when it buys no
extra core. On a cluster each shard has its own machine.

Usage: bench/shards.py            Environment: RATE (4000), SECS (10), ROUNDS (3), OUT
"""
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse",
                       "--show-toplevel"], capture_output=True, text=True, check=True).stdout.strip()
SOJOURN = os.path.join(ROOT, "target", "release", "sojourn")
RATE = int(os.environ.get("RATE", "4000"))
SECS = int(os.environ.get("SECS", "10"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
OUT = os.environ.get("OUT", os.path.join(ROOT, "target", "bench"))
CONNS = 256


def load_average():
    return os.getloadavg()[0]


def start_server():
    proc = subprocess.Popen(
        ["taskset", "-c", "0", SOJOURN, "serve", "--scenario", "healthy", "--set",
         "healthy.baseline=1ms", "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline().strip()
    assert line.startswith("listening on http://"), line
    return proc, line.removeprefix("listening on ") + "/api"


def run(args, out):
    """Runs sojourn pinned to CPU 1; returns its CPU seconds (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["taskset", "-c", "1", SOJOURN, *args], check=True, stdout=out,
                   stderr=subprocess.STDOUT, timeout=SECS + 60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def load_args(url, json_path):
    return ["run", url, "--rate", str(RATE), "--duration", f"{SECS}s", "--threads", "1",
            "-c", str(CONNS), "--json", json_path]


def single(url, work):
    path = os.path.join(work, "single.json")
    with open(os.path.join(work, "single.log"), "w") as log:
        cpu = run(load_args(url, path), log)
    return path, cpu, []


def shards(url, work):
    start = f"{time.time() + 1.0:.3f}"
    procs, paths = [], []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for k in range(2):
        path = os.path.join(work, f"shard-{k}.json")
        paths.append(path)
        log = open(os.path.join(work, f"shard-{k}.log"), "w")
        procs.append(subprocess.Popen(
            ["taskset", "-c", "1", SOJOURN, *load_args(url, path), "--shard", f"{k}/2",
             "--start-at", start], stdout=log, stderr=subprocess.STDOUT))
    for p in procs:
        assert p.wait(timeout=SECS + 60) == 0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    merged = os.path.join(work, "merged.json")
    with open(os.path.join(work, "merge.log"), "w") as log:
        subprocess.run([SOJOURN, "merge", *paths, "-o", merged], check=True, stdout=log)
    skews = [json.load(open(p))["placement"]["start_skew_ns"] / 1e6 for p in paths]
    return merged, cpu, skews


def figures(path, cpu, skews):
    r = json.load(open(path))
    h = r["histograms"]
    pct = lambda name, p: h[name]["percentiles"][p] / 1e3  # µs
    answered = r["counts"]["completed"] + sum(r["counts"]["failed"].values())
    return {
        "scheduled": r["counts"]["scheduled"],
        "answered": answered,
        "achieved": r["rate"]["achieved"],
        "lag": [pct("send_lag", "50"), pct("send_lag", "99"), pct("send_lag", "99.9")],
        "response_p99_ms": pct("response", "99") / 1e3,
        "hiccup_p99": h["hiccup"]["percentiles"]["99"] / 1e3 if h.get("hiccup") else None,
        # The control meters' (idle processes of their own): the machine's floor.
        "control_p99": (h["control_hiccup"]["percentiles"]["99"] / 1e3
                        if h.get("control_hiccup") else None),
        "cpu_us_per_request": cpu / max(answered, 1) * 1e6,
        "skews_ms": skews,
    }


def main():
    if not os.path.exists(SOJOURN):
        sys.exit(f"build first: cargo build --release ({SOJOURN} is missing)")
    os.makedirs(OUT, exist_ok=True)
    server, url = start_server()
    rows = []
    try:
        for round_ in range(1, ROUNDS + 1):
            order = [single, shards] if round_ % 2 else [shards, single]
            for kind in order:
                la = load_average()
                with tempfile.TemporaryDirectory(dir=OUT) as work:
                    f = figures(*kind(url, work))
                rows.append((round_, kind.__name__, la, f))
                print(f"round {round_} {kind.__name__:6} load {la:.2f}: {json.dumps(f)}", flush=True)
    finally:
        server.terminate()
        server.wait()
    print(f"\n| round | run | load avg | scheduled | answered | achieved req/s | send lag p50 / p99 / "
          f"p99.9 (µs) | response p99 (ms) | hiccup p99 (µs) | control p99 (µs) | CPU µs/request | "
          f"start skew (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for round_, kind, la, f in rows:
        lag = " / ".join(f"{v:.0f}" for v in f["lag"])
        skew = ", ".join(f"{s:+.1f}" for s in f["skews_ms"]) or "-"
        hic = f"{f['hiccup_p99']:.0f}" if f["hiccup_p99"] is not None else "-"
        ctl = f"{f['control_p99']:.0f}" if f["control_p99"] is not None else "-"
        print(f"| {round_} | {kind} | {la:.2f} | {f['scheduled']} | {f['answered']} | "
              f"{f['achieved']:.0f} | {lag} | {f['response_p99_ms']:.2f} | {hic} | {ctl} | "
              f"{f['cpu_us_per_request']:.1f} | {skew} |")


if __name__ == "__main__":
    main()
