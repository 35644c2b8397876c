#!/usr/bin/env python3
"""sojourn's engine against its peers on nginx, on this machine. 127.0.0.1 only, bounded in time.

    nginx (one worker) pinned to CPU 0; every load generator pinned to CPU 1, one thread,
    64 connections. Tools in the same section run back to back, in alternating order, ROUNDS
    times, with the load average noted before each round.

Sections (default: all, in this order):
  fixed      CPU per request and send lag at 5k, 20k and 50k req/s: wrk2 -R, oha -q
             --latency-correction, vegeta, and sojourn three ways: --timer-slack 0 (a wake-up
             per due time), the default (auto), and --timer-slack 1ms (wrk2's millisecond
             batching). sojourn's runs carry both hiccup meters: its own thread's, and the
             control process's (the machine's floor).
  max        maximum rate: wrk -t1 (closed), sojourn --closed, and sojourn's open loop asked
             for 400k req/s (far above capacity) on the same 64 connections.
  blackhole  sojourn at 100k req/s for BLACKHOLE_SECS against a server that accepts and never
             answers: RSS at 10 s and at the end, and the peak.
  soak       sojourn at 20k req/s for SOAK_SECS (+10 s): RSS at 60 s, half way and SOAK_SECS,
             each while it sends; the peak (which comes as it builds its result); CPU, send lag.
  serve      sojourn run at 500 req/s against sojourn serve on the same two cores, unpinned,
             defaults: send lag and the control meter's floor.
  compare    `sojourn compare --rate 2000` against nginx (10 connections, one thread, SECS each):
             both loops' achieved rates must be 2,000 ± 2% (the paced closed loop's default), and
             the unpaced closed loop's (--closed-mode unpaced) is shown beside them.
  cliff      `sojourn sweep --search` against nginx (one thread, 64 connections, 4 s steps), and
             in the same run the closed loop's maximum: the search must bracket nginx's limit
             within 10% of that maximum, or say GENERATOR-BOUND.

Needs: nginx (Debian nginx-light), wrk, taskset; wrk2 (built from giltene/wrk2's source),
oha and vegeta on PATH where available (missing tools are reported and skipped).
Usage: bench/engine-vs-peers.py [SECTION...]
Environment: SECS (8), ROUNDS (2), BLACKHOLE_SECS (60), SOAK_SECS (600), OUT (target/bench).
"""
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse",
                       "--show-toplevel"], capture_output=True, text=True, check=True).stdout.strip()
SOJOURN = os.path.join(ROOT, "target", "release", "sojourn")
SECS = int(os.environ.get("SECS", "8"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
BLACKHOLE_SECS = int(os.environ.get("BLACKHOLE_SECS", "60"))
SOAK_SECS = int(os.environ.get("SOAK_SECS", "600"))
OUT = os.environ.get("OUT", os.path.join(ROOT, "target", "bench"))
RATES = [5000, 20000, 50000]
CONNS = 64
TOOL_CPU = "1"
SERVER_CPU = "0"
results = []


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def load_average():
    return os.getloadavg()[0]


def timed(argv, stdin=None):
    """Runs argv; returns (stdout, CPU seconds it used, wall seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    out = subprocess.run(argv, capture_output=True, text=True, input=stdin)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out.returncode not in (0, 3):
        sys.stderr.write(f"{argv[0:4]} exited {out.returncode}: {out.stderr[-500:]}\n")
    return out.stdout, cpu, wall


def pinned(argv):
    return ["taskset", "-c", TOOL_CPU] + argv


def record(section, tool, **figures):
    row = {"section": section, "tool": tool, **figures}
    results.append(row)
    shown = "  ".join(f"{k}={v}" for k, v in figures.items())
    print(f"  {tool:34} {shown}", flush=True)


def us(ns):
    return round(ns / 1e3, 1)


def sojourn_figures(path):
    r = json.load(open(path))
    h = r["histograms"]
    out = {
        "scheduled": r["counts"]["scheduled"],
        "completed": r["counts"]["completed"],
        "achieved": round(r["rate"]["achieved"]),
        "lag_p50_us": us(h["send_lag"]["percentiles"]["50"]),
        "lag_p99_us": us(h["send_lag"]["percentiles"]["99"]),
        "lag_p999_us": us(h["send_lag"]["percentiles"]["99.9"]),
        "generator": r["checks"]["generator"],
    }
    # Two meters: "hiccup" is a thread inside sojourn (its own work can make it late);
    # "control_hiccup" an idle process of its own, the only floor that may excuse send lag.
    if "hiccup" in h:
        out["hiccup_p99_us"] = us(h["hiccup"]["percentiles"]["99"])
        out["hiccup_p999_us"] = us(h["hiccup"]["percentiles"]["99.9"])
    if "control_hiccup" in h:
        out["control_p99_us"] = us(h["control_hiccup"]["percentiles"]["99"])
        out["control_p999_us"] = us(h["control_hiccup"]["percentiles"]["99.9"])
    return out


# ---- targets ------------------------------------------------------------------------------

class Nginx:
    def __init__(self, work, http2=False):
        self.port = free_port()
        listen = f"127.0.0.1:{self.port}" + (" http2" if http2 else "")
        conf = os.path.join(work, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""worker_processes 1;
worker_cpu_affinity 01;
daemon off;
pid {work}/nginx.pid;
error_log {work}/error.log;
events {{ worker_connections 8192; }}
http {{
  access_log off;
  keepalive_requests 1000000;
  server {{ listen {listen}; location / {{ return 200 "ok"; }} }}
}}
""")
        self.proc = subprocess.Popen(["taskset", "-c", SERVER_CPU, "nginx", "-c", conf, "-p", work])
        time.sleep(0.5)
        self.url = f"http://127.0.0.1:{self.port}/"

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


BLACK_HOLE = """
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1024)
def hold(c):
    while c.recv(65536): pass
while True:
    c, _ = s.accept(); threading.Thread(target=hold, args=(c,), daemon=True).start()
"""


# ---- sections -----------------------------------------------------------------------------

def fixed(url, work):
    print(f"== fixed rates, {SECS}s each, {ROUNDS} rounds: CPU per request (user+system) and send lag")
    have = {t: shutil.which(t) for t in ["wrk2", "oha", "vegeta"]}
    for tool, path in have.items():
        if not path:
            print(f"  {tool} not on PATH: skipped")
    for rate in RATES:
        for rnd in range(ROUNDS):
            print(f"-- {rate} req/s, round {rnd + 1}, load average {load_average():.2f}")
            runs = [
                ("wrk2", lambda: run_wrk2(url, rate)),
                ("oha -q --latency-correction", lambda: run_oha(url, rate)),
                ("vegeta", lambda: run_vegeta(url, rate, work)),
                ("sojourn --timer-slack 0", lambda: run_sojourn(url, rate, work, ["--timer-slack", "0"])),
                ("sojourn (default)", lambda: run_sojourn(url, rate, work, [])),
                ("sojourn --timer-slack 1ms", lambda: run_sojourn(url, rate, work, ["--timer-slack", "1ms"])),
            ]
            runs = [r for r in runs if have.get(r[0].split()[0], True)]
            if rnd % 2:
                runs.reverse()
            for name, go in runs:
                figures = go()
                record("fixed", name, rate=rate, round=rnd + 1, **figures)


def per_request(cpu, n):
    return round(1e6 * cpu / max(n, 1), 1)


def run_wrk2(url, rate):
    out, cpu, _ = timed(pinned(["wrk2", "-t1", f"-c{CONNS}", f"-R{rate}", f"-d{SECS}s", url]))
    # wrk2's "N requests in" counts answers: completed requests.
    n = int(next(l.split()[0] for l in out.splitlines() if "requests in" in l))
    return {"completed": n, "cpu_us_per_req": per_request(cpu, n)}


def run_oha(url, rate):
    out, cpu, _ = timed(pinned(["oha", "-z", f"{SECS}s", "-c", str(CONNS), "-q", str(rate),
                                "--latency-correction", "--no-tui", "--output-format", "json", url]))
    # Answers by status: completed requests (errors have no status).
    n = sum(json.loads(out).get("statusCodeDistribution", {}).values())
    return {"completed": n, "cpu_us_per_req": per_request(cpu, n)}


def run_vegeta(url, rate, work):
    bin_path = os.path.join(work, "vegeta.bin")
    with open(bin_path, "wb") as sink:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(pinned(["vegeta", "attack", f"-rate={rate}", f"-duration={SECS}s",
                               f"-max-connections={CONNS}"]), input=f"GET {url}\n".encode(),
                       stdout=sink, stderr=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    report = json.loads(subprocess.run(["vegeta", "report", "-type=json", bin_path],
                                       capture_output=True, text=True).stdout)
    # vegeta's "requests" counts every attack, answered or not; "success" is the answered share.
    n = round(report["requests"] * report.get("success", 0))
    return {"completed": n, "achieved": round(report.get("throughput", 0)),
            "cpu_us_per_req": per_request(cpu, n)}


def run_sojourn(url, rate, work, extra):
    path = os.path.join(work, "sojourn.json")
    _, cpu, _ = timed(pinned([SOJOURN, "run", url, "--rate", str(rate), "-c", str(CONNS),
                              "--threads", "1", "--duration", f"{SECS}s", "--json", path] + extra))
    f = sojourn_figures(path)
    # CPU over completed requests, as for every peer: never over scheduled ones, which would
    # flatter a run that left requests unanswered.
    return {"completed": f["completed"], "cpu_us_per_req": per_request(cpu, f["completed"]),
            **{k: v for k, v in f.items() if k != "completed"}}


def maximum(url, work):
    print(f"== maximum rate on {CONNS} connections, one thread, {SECS}s each, {ROUNDS} rounds")
    path = os.path.join(work, "max.json")
    for rnd in range(ROUNDS):
        print(f"-- round {rnd + 1}, load average {load_average():.2f}")
        out, cpu, _ = timed(pinned(["wrk", "-t1", f"-c{CONNS}", f"-d{SECS}s", url]))
        n = int(next(l.split()[0] for l in out.splitlines() if "requests in" in l))
        rate = float(next(l.split()[1] for l in out.splitlines() if "Requests/sec" in l))
        record("max", "wrk -t1", round=rnd + 1, achieved=round(rate), completed=n,
               cpu_us_per_req=per_request(cpu, n))
        _, cpu, _ = timed(pinned([SOJOURN, "run", url, "--closed", "-c", str(CONNS), "--threads", "1",
                                  "--duration", f"{SECS}s", "--json", path]))
        f = sojourn_figures(path)
        record("max", "sojourn --closed", round=rnd + 1, achieved=f["achieved"],
               completed=f["completed"], cpu_us_per_req=per_request(cpu, f["completed"]))
        # The drain (--timeout) keeps the pool working through the line at full speed, so the
        # answers per second of the whole run are the open loop's maximum.
        _, cpu, _ = timed(pinned([SOJOURN, "run", url, "--rate", "400000", "-c", str(CONNS),
                                  "--threads", "1", "--duration", f"{SECS}s", "--timeout", "2s",
                                  "--json", path]))
        f = sojourn_figures(path)
        record("max", "sojourn open, 400k req/s asked", round=rnd + 1, achieved=f["achieved"],
               cpu_us_per_req=per_request(cpu, f["completed"]), completed=f["completed"],
               scheduled=f["scheduled"])


def rss_kib(pid, field="VmRSS"):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def watch_rss(argv, marks):
    """Runs argv, sampling its RSS each second; returns (RSS at each mark in s, peak, cpu)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    start, seen, peak = time.monotonic(), {}, 0
    while proc.poll() is None:
        t = time.monotonic() - start
        rss, hwm = rss_kib(proc.pid), rss_kib(proc.pid, "VmHWM")
        if hwm:
            peak = max(peak, hwm)
        for m in marks:
            if m not in seen and t >= m and rss:
                seen[m] = rss
        time.sleep(0.2)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seen, peak, cpu


def blackhole(work):
    port = free_port()
    server = subprocess.Popen(["taskset", "-c", SERVER_CPU, sys.executable, "-c", BLACK_HOLE, str(port)])
    time.sleep(0.5)
    print(f"== black hole: 100k req/s for {BLACKHOLE_SECS}s, {CONNS} connections, load average {load_average():.2f}")
    path = os.path.join(work, "blackhole.json")
    # The first timeouts land at 10 s; the run drains for one more timeout after its schedule,
    # so the last sample is taken before it builds its result.
    seen, peak, _ = watch_rss(pinned([SOJOURN, "run", f"http://127.0.0.1:{port}/", "--rate", "100000",
                                      "-c", str(CONNS), "--duration", f"{BLACKHOLE_SECS}s",
                                      "--json", path]), [10, 11, BLACKHOLE_SECS])
    server.terminate()
    r = json.load(open(path))
    c = r["counts"]
    record("blackhole", "sojourn", rss_10s_mib=round(seen.get(10, 0) / 1024, 1),
           rss_11s_mib=round(seen.get(11, 0) / 1024, 1),
           rss_end_mib=round(seen.get(BLACKHOLE_SECS, 0) / 1024, 1), peak_rss_mib=round(peak / 1024, 1),
           scheduled=c["scheduled"], never_sent=c["never_sent"], censored=c["censored"],
           timeouts=c["failed"].get("timeout", 0),
           unaccounted=c["scheduled"] - (c["completed"] + sum(c["failed"].values()) + c["censored"] + c["never_sent"]))


def soak(url, work):
    # The run lasts 10 s past the last sample, so every sample is taken while it sends, not
    # while it builds its result (which reads the whole timeline back).
    print(f"== soak: 20k req/s for {SOAK_SECS + 10}s, RSS sampled to {SOAK_SECS}s, load average {load_average():.2f}")
    path = os.path.join(work, "soak.json")
    marks = [60, SOAK_SECS // 2, SOAK_SECS]
    seen, peak, cpu = watch_rss(pinned([SOJOURN, "run", url, "--rate", "20000", "-c", str(CONNS),
                                        "--duration", f"{SOAK_SECS + 10}s", "--json", path]), marks)
    f = sojourn_figures(path)
    record("soak", "sojourn", **{f"rss_{m}s_mib": round(seen.get(m, 0) / 1024, 1) for m in marks},
           peak_rss_mib=round(peak / 1024, 1), cpu_us_per_req=per_request(cpu, f["completed"]), **f)


def serve(work):
    port = free_port()
    server = subprocess.Popen([SOJOURN, "serve", "--scenario", "healthy", "--listen", f"127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    print(f"== sojourn run at 500 req/s against sojourn serve, same two cores, unpinned, defaults")
    path = os.path.join(work, "serve.json")
    for rnd in range(max(ROUNDS, 3)):
        load = load_average()
        timed([SOJOURN, "run", f"http://127.0.0.1:{port}/api", "--rate", "500", "--duration", "6s",
               "--json", path])
        record("serve", "sojourn run vs sojourn serve", round=rnd + 1, load=round(load, 2), **sojourn_figures(path))
    server.terminate()


def compare(url, work):
    print(f"== same-rate compare against nginx at 2000 req/s (both loops at once, 1000 each), {SECS} s, {ROUNDS} rounds")
    for rnd in range(ROUNDS):
        for mode in ["paced", "unpaced"]:
            out_dir = os.path.join(work, f"compare-{mode}")
            out, _, _ = timed(pinned([SOJOURN, "compare", url, "--rate", "2000", "--duration", f"{SECS}s",
                                      "-c", "10", "--threads", "1", "--closed-mode", mode,
                                      "--json-dir", out_dir, "--report", os.path.join(work, "compare.html")]))
            closed = json.load(open(os.path.join(out_dir, "closed.json")))
            opened = json.load(open(os.path.join(out_dir, "open.json")))
            verdict = next((l for l in out.splitlines() if l.startswith("verdict")), "?")
            record("compare", f"sojourn compare --closed-mode {mode}", round=rnd + 1,
                   load=round(load_average(), 2),
                   closed_mode=closed["mode"], closed_achieved=round(closed["rate"]["achieved"], 1),
                   closed_sent=closed["counts"]["scheduled"] - closed["counts"]["never_sent"],
                   closed_never_sent=closed["counts"]["never_sent"],
                   open_achieved=round(opened["rate"]["achieved"], 1),
                   open_sent=opened["counts"]["scheduled"] - opened["counts"]["never_sent"],
                   verdict=verdict)


def cliff(url, work):
    print(f"== whose cliff: sweep --search against nginx, 4 s steps, {ROUNDS} rounds")
    path = os.path.join(work, "max.json")
    sweep_json = os.path.join(work, "sweep.json")
    for rnd in range(ROUNDS):
        print(f"-- round {rnd + 1}, load average {load_average():.2f}")
        timed(pinned([SOJOURN, "run", url, "--closed", "-c", str(CONNS), "--threads", "1",
                      "--duration", f"{SECS}s", "--json", path]))
        closed_max = sojourn_figures(path)["achieved"]
        out, _, wall = timed(pinned([SOJOURN, "sweep", url, "--search", "--from", "5000", "--to",
                                     "400000", "--slo", "p99<5ms", "--step", "4s", "--resolution",
                                     "5000", "-c", str(CONNS), "--threads", "1", "--json", sweep_json]))
        doc = json.load(open(sweep_json))
        steps = [(s["step"]["target"], s["step"]["status"], round(s["step"]["achieved"])) for s in doc["steps"]]
        verdict = next((l for l in out.splitlines() if l.startswith(("cliff", "no cliff"))), "?")
        record("cliff", "sojourn sweep --search", round=rnd + 1, closed_max=closed_max,
               passing=doc["bracket"]["passing"], failing=doc["bracket"]["failing"],
               stopped_at=(doc.get("search") or {}).get("stopped_at"), steps=steps,
               wall_s=round(wall), verdict=verdict)


def main():
    sections = sys.argv[1:] or ["fixed", "max", "blackhole", "soak", "serve", "compare", "cliff"]
    for tool in ["nginx", "wrk", "taskset"]:
        if not shutil.which(tool):
            sys.exit(f"missing {tool} (apt-get install nginx-light wrk util-linux)")
    if os.cpu_count() < 2:
        sys.exit("needs 2 CPUs: one for the server, one for the generator")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "sojourn-cli"], cwd=ROOT, check=True)
    os.makedirs(OUT, exist_ok=True)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"== machine: {os.cpu_count()} CPUs, {cpu}, kernel {os.uname().release}")
    with tempfile.TemporaryDirectory() as work:
        nginx = Nginx(work) if {"fixed", "max", "soak", "compare", "cliff"} & set(sections) else None
        try:
            for s in sections:
                {"fixed": lambda: fixed(nginx.url, work), "max": lambda: maximum(nginx.url, work),
                 "blackhole": lambda: blackhole(work), "soak": lambda: soak(nginx.url, work),
                 "serve": lambda: serve(work), "compare": lambda: compare(nginx.url, work),
                 "cliff": lambda: cliff(nginx.url, work)}[s]()
        finally:
            if nginx:
                nginx.stop()
    path = os.path.join(OUT, f"engine-vs-peers-{time.strftime('%Y%m%dT%H%M%S')}.json")
    json.dump(results, open(path, "w"), indent=1)
    print(f"== every figure: {path}")


if __name__ == "__main__":
    main()
