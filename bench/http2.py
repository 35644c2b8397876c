#!/usr/bin/env python3
"""sojourn over HTTP/2 against h2load and oha, on this machine. 127.0.0.1 only, bounded in time.

    nginx (one worker, h2c, `return 200`, keepalive_requests 1000000 so no tool meets a GOAWAY
    mid-run; engine-vs-peers.py's, with `http2` on its listen line) pinned to CPU 0; every load generator pinned to CPU 1, one thread, CONNS
    connections of STREAMS streams each. Tools in a section run back to back, in alternating
    order, ROUNDS times, with the load average noted before each round.

Sections (default: both):
  max   maximum rate: h2load (closed, -n for SECS at its first round's rate), oha --http2
        (closed, -z SECS), sojourn --closed --http2, and sojourn's open loop asked for 400k
        req/s on the same connections and streams.
  cpu   CPU per request (user + system, from rusage) at RATE req/s: oha -q RATE --http2
        --latency-correction against sojourn --rate RATE --http2, by default and with
        --timer-slack 1ms (sends batched up to 1 ms late, as oha's 1 ms ticks batch them), with
        sojourn's send lag and the control meter's floor (the machine's, from an idle process).

Needs: nginx (Debian nginx-light), taskset, h2load (Debian nghttp2-client), oha (cargo install
oha); missing peers are reported and skipped.
Usage: bench/http2.py [SECTION...]
Environment: SECS (8), ROUNDS (3), RATE (20000), CONNS (4), STREAMS (32), OUT (target/bench).
"""
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile

_spec = importlib.util.spec_from_file_location(
    "peers", os.path.join(os.path.dirname(os.path.abspath(__file__)), "engine-vs-peers.py"))
peers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peers)

SECS = int(os.environ.get("SECS", "8"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
RATE = int(os.environ.get("RATE", "20000"))
CONNS = int(os.environ.get("CONNS", "4"))
STREAMS = int(os.environ.get("STREAMS", "32"))
OUT = os.environ.get("OUT", os.path.join(peers.ROOT, "target", "bench"))
SOJOURN = peers.SOJOURN
record, timed, pinned, per_request = peers.record, peers.timed, peers.pinned, peers.per_request


def h2load_max(url, rnd, n):
    out, cpu, wall = timed(pinned(["h2load", "-n", str(n), "-c", str(CONNS), "-m", str(STREAMS),
                                   url]))
    rate = float(re.search(r"finished in [\d.]+m?s, ([\d.]+) req/s", out).group(1))
    done = int(re.search(r"(\d+) succeeded", out).group(1))
    record("max", "h2load", round=rnd, achieved=round(rate), succeeded=done,
           cpu_us_per_req=per_request(cpu, done))
    return rate


def oha(url, rnd, section, extra):
    out, cpu, _ = timed(pinned(["oha", "--http2", "-c", str(CONNS), "-p", str(STREAMS), "-z",
                                f"{SECS}s", "--no-tui", "--output-format", "json", *extra, url]))
    summary = json.loads(out)
    done = sum(summary["statusCodeDistribution"].values())
    record(section, "oha --http2 " + " ".join(extra), round=rnd,
           achieved=round(summary["summary"]["requestsPerSec"]), succeeded=done,
           cpu_us_per_req=per_request(cpu, done))


def sojourn(url, rnd, section, name, args, path):
    _, cpu, _ = timed(pinned([SOJOURN, "run", url, "--http2", "-c", str(CONNS), "--streams",
                              str(STREAMS), "--threads", "1", "--duration", f"{SECS}s",
                              "--json", path, *args]))
    f = peers.sojourn_figures(path)
    record(section, name, round=rnd, achieved=f["achieved"], completed=f["completed"],
           scheduled=f["scheduled"], cpu_us_per_req=per_request(cpu, f["completed"]),
           lag_p99_us=f["lag_p99_us"], hiccup_p99_us=f.get("hiccup_p99_us"),
           control_p99_us=f.get("control_p99_us"))


def maximum(url, work, have):
    print(f"== maximum rate over HTTP/2, {CONNS} connections x {STREAMS} streams, one thread, "
          f"{SECS}s each, {ROUNDS} rounds")
    path = os.path.join(work, "max.json")
    n = None
    for rnd in range(1, ROUNDS + 1):
        print(f"-- round {rnd}, load average {peers.load_average():.2f}")
        order = [0, 1, 2, 3] if rnd % 2 else [3, 2, 1, 0]
        for i in order:
            if i == 0 and have["h2load"]:
                # h2load runs a count, not a duration: about SECS at its first round's rate.
                rate = h2load_max(url, rnd, n or 200_000)
                n = n or int(rate * SECS)
            elif i == 1 and have["oha"]:
                oha(url, rnd, "max", [])
            elif i == 2:
                sojourn(url, rnd, "max", "sojourn --closed --http2", ["--closed"], path)
            elif i == 3:
                sojourn(url, rnd, "max", "sojourn open, 400k req/s asked",
                        ["--rate", "400000", "--timeout", "2s"], path)


def cpu(url, work, have):
    print(f"== CPU per request at {RATE} req/s over HTTP/2, {SECS}s each, {ROUNDS} rounds")
    path = os.path.join(work, "cpu.json")
    for rnd in range(1, ROUNDS + 1):
        print(f"-- round {rnd}, load average {peers.load_average():.2f}")
        runs = [lambda: have["oha"] and oha(url, rnd, "cpu", ["-q", str(RATE),
                                                              "--latency-correction"]),
                lambda: sojourn(url, rnd, "cpu", f"sojourn --rate {RATE} --http2",
                                ["--rate", str(RATE)], path),
                lambda: sojourn(url, rnd, "cpu", "  ... --timer-slack 1ms",
                                ["--rate", str(RATE), "--timer-slack", "1ms"], path)]
        for run in (runs if rnd % 2 else runs[::-1]):
            run()


def main():
    sections = sys.argv[1:] or ["max", "cpu"]
    for tool in ["nginx", "taskset"]:
        if not shutil.which(tool):
            sys.exit(f"missing {tool} (apt-get install nginx-light util-linux)")
    if not os.path.exists(SOJOURN):
        sys.exit("build first: cargo build --release -p sojourn-cli")
    have = {t: shutil.which(t) is not None for t in ["h2load", "oha"]}
    for tool, present in have.items():
        if not present:
            print(f"note: {tool} is not installed; its rows are skipped")
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        nginx = peers.Nginx(work, http2=True)
        try:
            for s in sections:
                {"max": maximum, "cpu": cpu}[s](nginx.url, work, have)
        finally:
            nginx.stop()
    out = os.path.join(OUT, "http2.json")
    json.dump(peers.results, open(out, "w"), indent=1)
    print(f"results: {out}")


if __name__ == "__main__":
    main()
