#!/usr/bin/env python3
"""sojourn against ghz over gRPC, side by side in one run. 127.0.0.1 only, bounded in time.

    The gRPC project's greeter (helloworld/greeter_server, built by scripts/grpc-servers.sh)
    pinned to CPU 0; ghz and sojourn pinned to CPU 1, one thread (Go sees one CPU through the
    affinity mask), the same shape on the wire: one HTTP/2 connection carrying up to CONC calls
    at once (ghz -c CONC --connections 1; sojourn -c 1 --streams CONC). Tools run back to back,
    in alternating order, ROUNDS times, with the load average noted before each round. CPU is
    user + system from rusage, divided by the calls that completed (status OK) for both alike.

Sections (default: both):
  fixed  1k, 5k and 20k calls/s (RATES): ghz --rps R -z SECS against sojourn --rate R
         --duration SECS; achieved rate and CPU per completed call.
  max    as fast as each goes for SECS: ghz without --rps, sojourn --closed.

Needs: taskset, ghz (scripts/install-peer-tools.sh ghz), the greeter in $SOJOURN_GRPC_SERVERS,
and a release build (cargo build --release -p sojourn-cli).
Usage: bench/grpc.py [SECTION...]
Environment: SECS (8), ROUNDS (3), RATES (1000,5000,20000), CONC (50), OUT (target/bench).
"""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

_spec = importlib.util.spec_from_file_location(
    "peers", os.path.join(os.path.dirname(os.path.abspath(__file__)), "engine-vs-peers.py"))
peers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peers)

SECS = int(os.environ.get("SECS", "8"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
RATES = [int(r) for r in os.environ.get("RATES", "1000,5000,20000").split(",")]
CONC = int(os.environ.get("CONC", "50"))
OUT = os.environ.get("OUT", os.path.join(peers.ROOT, "target", "bench"))
PROTO = os.path.join(peers.ROOT, "crates", "cli", "tests", "data", "grpc", "helloworld.proto")
DATA = '{"name":"x"}'
record, timed, pinned, per_request = peers.record, peers.timed, peers.pinned, peers.per_request


class Greeter:
    """The greeter on CPU 0, on a port the kernel picks; its log goes to a file."""

    def __init__(self, binary, work):
        self.log = open(os.path.join(work, "greeter.log"), "w+")
        self.proc = subprocess.Popen(["taskset", "-c", peers.SERVER_CPU, binary, "-port", "0"],
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 10
        self.port = None
        while self.port is None:
            if time.monotonic() > deadline:
                self.stop()
                sys.exit("the greeter did not say where it listens")
            time.sleep(0.05)
            self.log.seek(0)
            m = re.search(r"server listening at .*:(\d+)", self.log.read())
            self.port = m and int(m.group(1))

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def ghz(port, rnd, section, extra, work):
    path = os.path.join(work, "ghz.json")
    _, cpu, _ = timed(pinned(["ghz", "--insecure", "--proto", PROTO, "--call",
                              "helloworld.Greeter.SayHello", "-d", DATA, "-c", str(CONC),
                              "--connections", "1", "-z", f"{SECS}s", "-O", "json", "-o", path,
                              *extra, f"127.0.0.1:{port}"]))
    report = json.load(open(path))
    ok = report.get("statusCodeDistribution", {}).get("OK", 0)
    record(section, "ghz " + " ".join(extra), round=rnd, achieved=round(ok / SECS),
           completed=ok, count=report.get("count"), cpu_us_per_call=per_request(cpu, ok))


def sojourn(port, rnd, section, extra, work):
    path = os.path.join(work, "sojourn.json")
    _, cpu, _ = timed(pinned([peers.SOJOURN, "run", f"grpc://127.0.0.1:{port}", "--proto", PROTO,
                              "--call", "helloworld.Greeter/SayHello", "-d", DATA, "-c", "1",
                              "--streams", str(CONC), "--threads", "1", "--duration",
                              f"{SECS}s", "--json", path, *extra]))
    f = peers.sojourn_figures(path)
    record(section, "sojourn " + " ".join(extra), round=rnd, achieved=f["achieved"],
           completed=f["completed"], scheduled=f["scheduled"],
           cpu_us_per_call=per_request(cpu, f["completed"]), lag_p99_us=f["lag_p99_us"])


def fixed(port, work):
    print(f"== fixed rates {RATES} calls/s, {CONC} calls at once on one connection, "
          f"{SECS}s each, {ROUNDS} rounds")
    for rnd in range(1, ROUNDS + 1):
        print(f"-- round {rnd}, load average {peers.load_average():.2f}")
        for rate in RATES:
            runs = [lambda: ghz(port, rnd, "fixed", ["--rps", str(rate)], work),
                    lambda: sojourn(port, rnd, "fixed", ["--rate", str(rate)], work)]
            for run in (runs if rnd % 2 else runs[::-1]):
                run()


def maximum(port, work):
    print(f"== maximum rate, {CONC} calls at once on one connection, {SECS}s each, "
          f"{ROUNDS} rounds")
    for rnd in range(1, ROUNDS + 1):
        print(f"-- round {rnd}, load average {peers.load_average():.2f}")
        runs = [lambda: ghz(port, rnd, "max", [], work),
                lambda: sojourn(port, rnd, "max", ["--closed"], work)]
        for run in (runs if rnd % 2 else runs[::-1]):
            run()


def main():
    sections = sys.argv[1:] or ["fixed", "max"]
    for tool in ["taskset", "ghz"]:
        if not shutil.which(tool):
            sys.exit(f"missing {tool} (util-linux; scripts/install-peer-tools.sh ghz, with "
                     "~/go/bin on PATH)")
    greeter = os.path.join(os.environ.get("SOJOURN_GRPC_SERVERS", ""), "greeter_server")
    if not os.path.isfile(greeter):
        sys.exit("set SOJOURN_GRPC_SERVERS to the folder scripts/grpc-servers.sh built")
    if not os.path.exists(peers.SOJOURN):
        sys.exit("build first: cargo build --release -p sojourn-cli")
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        server = Greeter(greeter, work)
        try:
            for s in sections:
                {"fixed": fixed, "max": maximum}[s](server.port, work)
        finally:
            server.stop()
    out = os.path.join(OUT, "grpc.json")
    json.dump(peers.results, open(out, "w"), indent=1)
    print(f"results: {out}")


if __name__ == "__main__":
    main()
