#!/usr/bin/env python3
"""What the live dashboard costs a run: sojourn at a fixed rate against nginx, with and without
`--dashboard` and VIEWERS viewers reading its event stream, side by side in one run. 127.0.0.1
only, bounded in time.

    nginx (one worker) pinned to CPU 0; sojourn pinned to CPU 1, one thread. Each round runs
    the plain run and the dashboard run back to back, in alternating order, with the load
    average noted before each round. The viewers are curl processes pinned to CPU 0, each
    reading /events for the whole run, started once the dashboard says where it listens. CPU is
    user + system of the sojourn process alone (wait4's rusage), divided by the requests that
    completed; send lag p99 and peak RSS come from the result and the kernel, and the control
    meter's p99 (the machine's own floor during the run) from the result: a round whose
    control p99 is over 1 ms ran on a machine too noisy to compare, and says so.

Needs: nginx, curl, taskset, and a release build (cargo build --release -p sojourn-cli).
Usage: bench/dashboard.py
Environment: SECS (10), ROUNDS (3), RATE (20000), VIEWERS (3), OUT (target/bench).
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

SECS = int(os.environ.get("SECS", "10"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
RATE = int(os.environ.get("RATE", "20000"))
VIEWERS = int(os.environ.get("VIEWERS", "3"))
OUT = os.environ.get("OUT", os.path.join(peers.ROOT, "target", "bench"))


def dashboard_url(proc):
    """Reads sojourn's stderr up to `dashboard: http://ADDR/`; the rest is left in the pipe."""
    while True:
        line = proc.stderr.readline()
        if not line:
            sys.exit("sojourn ended without saying where its dashboard listens")
        m = re.match(r"dashboard: (http://\S+/)", line)
        if m:
            return m.group(1)


def run(url, rnd, dashboard, work):
    path = os.path.join(work, "run.json")
    argv = peers.pinned([peers.SOJOURN, "run", url, "--rate", str(RATE), "--duration",
                         f"{SECS}s", "--threads", "1", "--json", path])
    if dashboard:
        argv += ["--dashboard", "127.0.0.1:0"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    viewers = []
    if dashboard:
        events = dashboard_url(proc) + "events"
        viewers = [subprocess.Popen(["taskset", "-c", peers.SERVER_CPU, "curl", "-sN", events],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                   for _ in range(VIEWERS)]
    proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    for v in viewers:
        v.kill()
        v.wait()
    if status != 0:
        sys.exit(f"sojourn exited with status {status}")
    f = peers.sojourn_figures(path)
    cpu = usage.ru_utime + usage.ru_stime
    label = f"sojourn --dashboard, {VIEWERS} viewers" if dashboard else "sojourn"
    peers.record("dashboard", label, round=rnd, achieved=f["achieved"],
                 completed=f["completed"], cpu_us_per_request=peers.per_request(cpu, f["completed"]),
                 lag_p99_us=f["lag_p99_us"], peak_rss_mib=round(usage.ru_maxrss / 1024, 1),
                 control_p99_us=f.get("control_p99_us"))


def main():
    for tool in ["nginx", "curl", "taskset"]:
        if not shutil.which(tool):
            sys.exit(f"missing {tool} (apt-get install nginx-light curl util-linux)")
    if not os.path.exists(peers.SOJOURN):
        sys.exit("build first: cargo build --release -p sojourn-cli")
    os.makedirs(OUT, exist_ok=True)
    print(f"== {RATE} req/s for {SECS}s, with and without --dashboard and {VIEWERS} viewers, "
          f"{ROUNDS} rounds")
    with tempfile.TemporaryDirectory() as work:
        nginx = peers.Nginx(work)
        try:
            for rnd in range(1, ROUNDS + 1):
                print(f"-- round {rnd}, load average {peers.load_average():.2f}")
                order = [False, True] if rnd % 2 else [True, False]
                for dashboard in order:
                    run(nginx.url, rnd, dashboard, work)
        finally:
            nginx.stop()
    out = os.path.join(OUT, "dashboard.json")
    json.dump(peers.results, open(out, "w"), indent=1)
    print(f"results: {out}")


if __name__ == "__main__":
    main()
