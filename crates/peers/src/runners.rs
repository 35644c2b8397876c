//! The exact command line of each peer tool for one run: pure functions of a [`RunSpec`], so
//! what sojourn runs can be printed, tested and reproduced by hand. Running them, and then
//! [`crate::import`]ing `files`, is the caller's job.
//!
//! Closed loops (no rate): ab, wrk, hey, k6 `constant-vus`, locust, oha without `-q`, h2load.
//! Paced closed loops (each connection capped at its share of the rate): hey `-q`, fortio `-qps`,
//! h2load `--rps`.
//! Rate-driven: wrk2 `-R`, vegeta `-rate`, k6 `constant-arrival-rate`, oha `-q` (with and
//! without `--latency-correction`).
//! gRPC: ghz `--rps` (a paced pool of workers), apart from [`all`], which is HTTP only.
use std::path::{Path, PathBuf};
use std::time::Duration;

use sojourn_core::Mode;

use crate::PeerTool;

/// What to run: the same for every tool, so their results can be compared.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// The target, e.g. `http://127.0.0.1:8080/api`.
    pub url: String,
    /// Requests per second (rate-driven tools only).
    pub rate: f64,
    pub duration: Duration,
    /// Connections (closed loops: the loop's width; others: the pool, where the tool has one).
    pub connections: u32,
    /// Where the tool's output files go.
    pub out_dir: PathBuf,
}

/// One tool's run, ready to execute.
#[derive(Debug, Clone, PartialEq)]
pub struct RunnerPlan {
    pub tool: PeerTool,
    /// How the tool drives the target, for [`crate::ImportContext::mode`].
    pub mode: Mode,
    /// The program and its arguments (the program is looked up on PATH).
    pub argv: Vec<String>,
    /// Commands to run after `argv` succeeds, in order (vegeta's `encode`).
    pub then: Vec<Vec<String>>,
    /// Save the tool's standard output here (it is one of `files`).
    pub stdout: Option<PathBuf>,
    /// Save the tool's standard error here (locust prints its tables there).
    pub stderr: Option<PathBuf>,
    /// The files to hand to [`crate::import`] once everything ran.
    pub files: Vec<PathBuf>,
    /// A script or targets file to write before running: (path, contents).
    pub script: Option<(PathBuf, String)>,
    /// What this tool cannot express of the spec, in plain words.
    pub limitations: Vec<String>,
    /// How long the tool runs before it measures anything (wrk2's calibration). The run is
    /// that much longer than the spec's duration; a scenario's faults must be delayed by as
    /// much to fall where the tool measures.
    pub lead_in: Duration,
}

impl RunnerPlan {
    fn new(tool: PeerTool, mode: Mode, argv: Vec<String>) -> RunnerPlan {
        RunnerPlan {
            tool,
            mode,
            argv,
            then: Vec::new(),
            stdout: None,
            stderr: None,
            files: Vec::new(),
            script: None,
            limitations: Vec::new(),
            lead_in: Duration::ZERO,
        }
    }
}

fn args<const N: usize>(items: [&str; N]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn path_arg(p: &Path) -> String {
    p.display().to_string()
}

/// Whole seconds, rounded up, at least one: what wrk, ab and locust accept.
fn whole_seconds(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// A duration Go's `time.ParseDuration` reads exactly, e.g. `2500ms`.
fn go_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis().max(1))
    }
}

fn whole_seconds_note(tool: &str, d: Duration) -> Option<String> {
    (d.subsec_nanos() > 0).then(|| {
        format!(
            "{tool} takes whole seconds: the duration is rounded up to {} s",
            whole_seconds(d)
        )
    })
}

/// A rate as (requests, per period): an integer count per second when the rate is whole,
/// otherwise per 1000 s, because k6 and vegeta take integer counts.
fn integer_rate(rate: f64) -> (u64, &'static str) {
    if rate.fract() == 0.0 {
        (rate as u64, "1s")
    } else {
        ((rate * 1000.0).round() as u64, "1000s")
    }
}

/// Splits `http://host:port/path?q` into the base URL and the path (locust wants them apart).
fn split_url(url: &str) -> (String, String) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => (
            url[..after_scheme + i].to_string(),
            url[after_scheme + i..].to_string(),
        ),
        None => (url.to_string(), "/".to_string()),
    }
}

/// ab's request cap for a timed run. ab sizes an array of results by `-n` up front (a huge
/// `-n` fails to allocate), and `-t` alone caps at 50000; so: twice what the nominal rate
/// would send, at least 50000.
fn ab_requests(rate: f64, secs: u64) -> u64 {
    ((2.0 * rate.max(0.0) * secs as f64).ceil() as u64).max(50_000)
}

/// ab: a closed loop of `-c` keep-alive connections for `-t` seconds.
pub fn ab(spec: &RunSpec) -> RunnerPlan {
    let csv = spec.out_dir.join("ab.csv");
    let text = spec.out_dir.join("ab.txt");
    let secs = whole_seconds(spec.duration);
    let n = ab_requests(spec.rate, secs).to_string();
    let c = spec.connections.to_string();
    let mut argv = args([
        "ab",
        "-k",
        "-c",
        &c,
        "-t",
        &secs.to_string(),
        "-n",
        &n,
        "-e",
    ]);
    argv.extend([path_arg(&csv), spec.url.clone()]);
    let mut plan = RunnerPlan::new(PeerTool::Ab, Mode::Closed, argv);
    plan.stdout = Some(text.clone());
    plan.files = vec![csv, text];
    plan.limitations = vec![
        format!(
            "ab cannot bound a run by duration alone: it stops at -t or after {n} requests, \
             whichever comes first"
        ),
        "ab has no rate: it is a closed loop".into(),
        "ab speaks HTTP/1.0 (keep-alive with -k)".into(),
    ];
    plan.limitations
        .extend(whole_seconds_note("ab", spec.duration));
    plan
}

/// wrk: a closed loop of `-c` connections on up to four threads.
pub fn wrk(spec: &RunSpec) -> RunnerPlan {
    wrk_family(PeerTool::Wrk, spec)
}

/// wrk2: wrk with a constant-throughput schedule (`-R`), measured from intended send times.
pub fn wrk2(spec: &RunSpec) -> RunnerPlan {
    wrk_family(PeerTool::Wrk2, spec)
}

/// wrk2 measures nothing until each thread's calibration is over: `CALIBRATE_DELAY_MS`
/// (10 s) plus 5 ms for each of the thread's connections (giltene/wrk2 `src/wrk.c`).
pub fn wrk2_calibration(connections_per_thread: u32) -> Duration {
    Duration::from_secs(10) + Duration::from_millis(5 * u64::from(connections_per_thread))
}

fn wrk_family(tool: PeerTool, spec: &RunSpec) -> RunnerPlan {
    let c = spec.connections.max(1);
    // wrk gives each thread c ÷ threads connections (integer division): pick a thread count
    // that divides c, so all c are opened.
    let threads = (1..=c.min(4)).rev().find(|t| c % t == 0).unwrap_or(1);
    let lead_in = if tool == PeerTool::Wrk2 {
        wrk2_calibration(c / threads)
    } else {
        Duration::ZERO
    };
    let (threads, c) = (threads.to_string(), c.to_string());
    let d = format!("{}s", whole_seconds(spec.duration + lead_in));
    // wrk leaves requests slower than its timeout (2 s by default) out of its histogram: keep
    // every stall of the scenarios inside it.
    let mut argv = args([
        tool.name(),
        "-t",
        &threads,
        "-c",
        &c,
        "-d",
        &d,
        "--timeout",
        "10s",
        "--latency",
    ]);
    let mode = if tool == PeerTool::Wrk2 {
        argv.extend(["-R".to_string(), format!("{}", spec.rate.round().max(1.0))]);
        Mode::Open
    } else {
        Mode::Closed
    };
    argv.push(spec.url.clone());
    let text = spec.out_dir.join(format!("{tool}.txt"));
    let mut plan = RunnerPlan::new(tool, mode, argv);
    plan.stdout = Some(text.clone());
    plan.files = vec![text];
    plan.lead_in = lead_in;
    plan.limitations = if tool == PeerTool::Wrk2 {
        vec![
            "wrk2 is in no package registry: build it from source and put it on PATH as wrk2"
                .into(),
            format!(
                "wrk2 measures only after a calibration of {}: its run is that much longer, \
                 and the scenario's faults are delayed by as much so they fall in what it measures",
                sojourn_core::format_ns(sojourn_core::nanos(lead_in))
            ),
            "wrk2's -R is a whole number of requests per second".into(),
        ]
    } else {
        vec![
            "wrk has no rate: it is a closed loop".into(),
            "wrk back-fills its latency histogram after the fact (an estimate)".into(),
        ]
    };
    plan.limitations
        .extend(whole_seconds_note(tool.name(), spec.duration));
    plan
}

/// hey: a closed loop of `-c` workers for `-z`, one CSV row per answered request.
pub fn hey(spec: &RunSpec) -> RunnerPlan {
    let csv = spec.out_dir.join("hey.csv");
    let c = spec.connections.to_string();
    let z = go_duration(spec.duration);
    let mut argv = args(["hey", "-z", &z, "-c", &c, "-o", "csv"]);
    argv.push(spec.url.clone());
    let mut plan = RunnerPlan::new(PeerTool::Hey, Mode::Closed, argv);
    plan.stdout = Some(csv.clone());
    plan.files = vec![csv];
    plan.limitations = vec![
        "hey without -q has no rate: a closed loop (the hey -q run is its paced variant)".into(),
        "hey's CSV leaves out requests that ended in a transport error; only its text summary \
         (a separate run) counts them"
            .into(),
    ];
    plan
}

/// The k6 CSV output with microsecond stamps (the default is whole seconds).
fn k6_argv(spec: &RunSpec, name: &str) -> (Vec<String>, PathBuf, PathBuf) {
    let csv = spec.out_dir.join(format!("{name}.csv"));
    let summary = spec.out_dir.join(format!("{name}.summary.json"));
    let script = spec.out_dir.join(format!("{name}.js"));
    let mut argv = args(["k6", "run", "--quiet", "--no-color", "--out"]);
    argv.push(format!(
        "csv=fileName={},timeFormat=unix_micro",
        path_arg(&csv)
    ));
    argv.extend([
        "--summary-export".to_string(),
        path_arg(&summary),
        path_arg(&script),
    ]);
    (argv, csv, script)
}

fn k6_script(url: &str, scenario: &str) -> String {
    format!(
        "import http from 'k6/http';\n\n\
         export const options = {{\n  scenarios: {{\n    {scenario}\n  }},\n}};\n\n\
         export default function () {{\n  http.get({url:?});\n}}\n"
    )
}

/// k6 `constant-vus`: `connections` VUs, each a closed loop.
pub fn k6_closed(spec: &RunSpec) -> RunnerPlan {
    let (argv, csv, script) = k6_argv(spec, "k6-closed");
    let scenario = format!(
        "closed: {{ executor: 'constant-vus', vus: {}, duration: '{}' }},",
        spec.connections.max(1),
        go_duration(spec.duration)
    );
    let mut plan = RunnerPlan::new(PeerTool::K6, Mode::Closed, argv);
    plan.script = Some((script, k6_script(&spec.url, &scenario)));
    plan.files = vec![csv];
    plan.limitations = vec![
        "k6 constant-vus has no rate: each VU is a closed loop".into(),
        "k6's http_req_duration leaves out waiting for and opening a connection".into(),
    ];
    plan
}

/// VUs for `constant-arrival-rate`, sized as seed 001 sizes them: enough for a one-second
/// stall's queue (about `rate` requests at once) with 1.5× pre-allocated and 5× as ceiling.
pub fn k6_vus(rate: f64) -> (u64, u64) {
    let per_stall_second = rate.max(1.0);
    (
        (1.5 * per_stall_second).ceil() as u64,
        (5.0 * per_stall_second).ceil() as u64,
    )
}

/// k6 `constant-arrival-rate`: `rate` iterations a second whatever the answers, while a VU is
/// free.
pub fn k6_open(spec: &RunSpec) -> RunnerPlan {
    let (argv, csv, script) = k6_argv(spec, "k6-open");
    let (count, per) = integer_rate(spec.rate);
    let (pre, max) = k6_vus(spec.rate);
    let scenario = format!(
        "open: {{ executor: 'constant-arrival-rate', rate: {count}, timeUnit: '{per}', \
         duration: '{}', preAllocatedVUs: {pre}, maxVUs: {max} }},",
        go_duration(spec.duration)
    );
    let mut plan = RunnerPlan::new(PeerTool::K6, Mode::Open, argv);
    plan.script = Some((script, k6_script(&spec.url, &scenario)));
    plan.files = vec![csv];
    plan.limitations = vec![
        format!(
            "k6 drops an iteration when no initialised VU is free and adds VUs only one at a \
             time up to {max}, so drops begin at stalls longer than about {:.1} s (its {pre} \
             pre-allocated VUs): they are imported as never sent",
            pre as f64 / spec.rate.max(1.0)
        ),
        "k6 opens connections per VU: `connections` is not a cap".into(),
        "k6's http_req_duration leaves out waiting for and opening a connection".into(),
    ];
    plan
}

/// locust headless: `connections` users, each a closed loop without wait.
pub fn locust(spec: &RunSpec) -> RunnerPlan {
    let (host, path) = split_url(&spec.url);
    let script = spec.out_dir.join("locustfile.py");
    let prefix = spec.out_dir.join("locust");
    let users = spec.connections.max(1).to_string();
    let t = format!("{}s", whole_seconds(spec.duration));
    let mut argv = args(["locust", "-f"]);
    argv.extend([path_arg(&script)]);
    argv.extend(args([
        "--headless",
        "-u",
        &users,
        "-r",
        &users,
        "-t",
        &t,
        "--host",
        &host,
        "--csv",
    ]));
    argv.push(path_arg(&prefix));
    let text = spec.out_dir.join("locust.txt");
    let mut plan = RunnerPlan::new(PeerTool::Locust, Mode::Closed, argv);
    plan.script = Some((
        script,
        format!(
            "from locust import HttpUser, task\n\n\nclass Peer(HttpUser):\n    \
             @task\n    def get(self):\n        self.client.get({path:?})\n"
        ),
    ));
    plan.stderr = Some(text.clone());
    plan.files = vec![
        spec.out_dir.join("locust_stats.csv"),
        spec.out_dir.join("locust_failures.csv"),
        text,
    ];
    plan.limitations = vec![
        "locust users are closed loops; locust has no overall rate".into(),
        "locust keeps response times rounded and prints whole milliseconds".into(),
        "locust writes its CSV on a timer: its printout (stderr) has the final counts".into(),
    ];
    plan.limitations
        .extend(whole_seconds_note("locust", spec.duration));
    plan
}

fn oha_argv(spec: &RunSpec, name: &str) -> (Vec<String>, PathBuf) {
    let csv = spec.out_dir.join(format!("{name}.csv"));
    let c = spec.connections.max(1).to_string();
    let z = go_duration(spec.duration);
    let mut argv = args([
        "oha",
        "--no-tui",
        "-z",
        &z,
        "-c",
        &c,
        "--output-format",
        "csv",
    ]);
    argv.extend(["-o".to_string(), path_arg(&csv)]);
    (argv, csv)
}

fn oha_plan(mode: Mode, mut argv: Vec<String>, csv: PathBuf, spec: &RunSpec) -> RunnerPlan {
    argv.push(spec.url.clone());
    let mut plan = RunnerPlan::new(PeerTool::Oha, mode, argv);
    plan.files = vec![csv];
    plan.limitations = vec![
        "oha's CSV leaves out requests that ended in an error (its JSON summary, a separate run, \
         counts them)"
            .into(),
    ];
    plan
}

/// oha without `-q`: a closed loop of `-c` connections.
pub fn oha_closed(spec: &RunSpec) -> RunnerPlan {
    let (argv, csv) = oha_argv(spec, "oha-closed");
    let mut plan = oha_plan(Mode::Closed, argv, csv, spec);
    plan.limitations
        .push("oha without -q has no rate: it is a closed loop".into());
    plan
}

/// oha `-q`: requests due at `rate`, sent over at most `-c` connections. Without
/// `--latency-correction` each is timed from its actual send; with it, from when it was due.
pub fn oha_rate(spec: &RunSpec, latency_correction: bool) -> RunnerPlan {
    let name = if latency_correction {
        "oha-rate-corrected"
    } else {
        "oha-rate"
    };
    let (mut argv, csv) = oha_argv(spec, name);
    argv.extend(["-q".to_string(), format!("{}", spec.rate)]);
    if latency_correction {
        argv.push("--latency-correction".into());
    }
    let mut plan = oha_plan(Mode::Open, argv, csv, spec);
    if !latency_correction {
        plan.limitations.push(
            "without --latency-correction oha times each request from its actual send: time \
             spent waiting for a busy connection is lost"
                .into(),
        );
    }
    plan
}

/// vegeta attack at `rate` (workers grow as needed), then its results encoded as CSV.
pub fn vegeta(spec: &RunSpec) -> RunnerPlan {
    let targets = spec.out_dir.join("vegeta-targets.txt");
    let bin = spec.out_dir.join("vegeta.bin");
    let csv = spec.out_dir.join("vegeta.csv");
    let (count, per) = integer_rate(spec.rate);
    let mut argv = args(["vegeta", "attack"]);
    argv.extend([
        format!("-rate={count}/{per}"),
        format!("-duration={}", go_duration(spec.duration)),
        format!("-max-connections={}", spec.connections.max(1)),
        format!("-targets={}", path_arg(&targets)),
        format!("-output={}", path_arg(&bin)),
    ]);
    let mut plan = RunnerPlan::new(PeerTool::Vegeta, Mode::Open, argv);
    plan.then = vec![vec![
        "vegeta".into(),
        "encode".into(),
        "--to".into(),
        "csv".into(),
        format!("--output={}", path_arg(&csv)),
        path_arg(&bin),
    ]];
    plan.script = Some((targets, format!("GET {}\n", spec.url)));
    plan.files = vec![csv];
    plan.limitations =
        vec!["vegeta stamps a request when its worker starts it, not at its scheduled tick".into()];
    plan
}

/// hey -q: `-c` workers, each capped at `-q` = rate/c queries per second, so a paced closed
/// loop at the rate: a worker waits for its answer and for its next tick, and times each request
/// from its send.
pub fn hey_paced(spec: &RunSpec) -> RunnerPlan {
    let csv = spec.out_dir.join("hey.csv");
    let workers = spec.connections.max(1);
    let c = workers.to_string();
    let q = format!("{}", spec.rate / f64::from(workers));
    let z = go_duration(spec.duration);
    let mut argv = args(["hey", "-z", &z, "-c", &c, "-q", &q, "-o", "csv"]);
    argv.push(spec.url.clone());
    let mut plan = RunnerPlan::new(PeerTool::Hey, Mode::Paced, argv);
    plan.stdout = Some(csv.clone());
    plan.files = vec![csv];
    plan.limitations = vec![
        "hey -q is a paced closed loop: each worker waits for its answer and for its next tick; \
         ticks it missed while waiting are dropped, so the requests it owed are never sent"
            .into(),
        "hey times each request from its actual send".into(),
        "hey's CSV leaves out requests that ended in a transport error".into(),
    ];
    plan
}

/// fortio load: `-c` connections, each pacing itself at `rate / c` and waiting for answers.
pub fn fortio(spec: &RunSpec) -> RunnerPlan {
    let json = spec.out_dir.join("fortio.json");
    let log = spec.out_dir.join("fortio.access.jsonl");
    let mut argv = args(["fortio", "load"]);
    argv.extend([
        "-qps".to_string(),
        format!("{}", spec.rate),
        "-c".to_string(),
        spec.connections.max(1).to_string(),
        "-t".to_string(),
        go_duration(spec.duration),
        "-json".to_string(),
        path_arg(&json),
        "-access-log-file".to_string(),
        path_arg(&log),
        spec.url.clone(),
    ]);
    let mut plan = RunnerPlan::new(PeerTool::Fortio, Mode::Paced, argv);
    plan.files = vec![log, json];
    plan.limitations = vec![
        "fortio -qps is a rate-capped closed loop: each connection waits for its answer, then \
         catches up by sending back to back"
            .into(),
        "fortio times each request from its actual send".into(),
    ];
    plan
}

/// How h2load talks to the target: HTTP/2 unless told `--h1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum H2loadProtocol {
    /// h2load's default: h2c with prior knowledge for `http://` URLs, ALPN h2 over TLS.
    Http2,
    /// `--h1`: HTTP/1.1, for servers without HTTP/2, such as sojourn's own.
    Http1,
}

/// h2load for `-D` with `-c` connections of one stream each (`-m 1`: with more, each connection
/// is that many closed loops), writing its log and its text summary. The URL comes last.
fn h2load_plan(spec: &RunSpec, name: &str, protocol: H2loadProtocol) -> RunnerPlan {
    let log = spec.out_dir.join(format!("{name}.log"));
    let text = spec.out_dir.join(format!("{name}.txt"));
    let c = spec.connections.max(1).to_string();
    // h2load reads a DURATION as an integer with h, m, s or ms: what go_duration writes.
    let d = go_duration(spec.duration);
    let mut argv = args(["h2load", "-D", &d, "-c", &c, "-m", "1", "--log-file"]);
    argv.push(path_arg(&log));
    let speaks = match protocol {
        H2loadProtocol::Http1 => {
            argv.push("--h1".into());
            "h2load runs with --h1 (HTTP/1.1): its default is HTTP/2, which sojourn's servers \
             do not speak"
        }
        H2loadProtocol::Http2 => {
            "h2load speaks HTTP/2 (h2c with prior knowledge for http://): the target must too"
        }
    };
    let mut plan = RunnerPlan::new(PeerTool::H2load, Mode::Closed, argv);
    plan.stdout = Some(text.clone());
    plan.files = vec![log, text];
    plan.limitations = vec![
        speaks.into(),
        "h2load -D leaves requests still in flight at the end out of its totals: they are \
         imported as censored"
            .into(),
    ];
    plan
}

/// h2load `-D`: a closed loop of `-c` connections, one request in flight on each.
pub fn h2load(spec: &RunSpec, protocol: H2loadProtocol) -> RunnerPlan {
    let mut plan = h2load_plan(spec, "h2load", protocol);
    plan.argv.push(spec.url.clone());
    plan.limitations
        .push("h2load without --rps has no rate: it is a closed loop".into());
    plan
}

/// h2load `--rps`: each of `-c` connections paced at rate ÷ c, one request in flight on each.
/// Ticks that come while the request is out are kept and sent back to back when it answers.
/// (h2load's `-r` is no request rate: it starts connections at a rate.)
pub fn h2load_rps(spec: &RunSpec, protocol: H2loadProtocol) -> RunnerPlan {
    let mut plan = h2load_plan(spec, "h2load-rps", protocol);
    let per_connection = spec.rate / f64::from(spec.connections.max(1));
    plan.argv
        .extend(["--rps".to_string(), format!("{per_connection}")]);
    plan.argv.push(spec.url.clone());
    plan.mode = Mode::Paced;
    plan.limitations.push(
        "h2load --rps is a paced closed loop: each connection waits for its answer, then sends \
         the ticks it owes back to back, timed from their late send"
            .into(),
    );
    plan
}

/// A gRPC call for ghz: the service's `.proto`, the method and its request as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct GrpcCall {
    pub proto: PathBuf,
    /// `package.Service.Method` (ghz also takes `package.Service/Method`).
    pub call: String,
    /// The request message as JSON, e.g. `{"name":"x"}`.
    pub data: String,
}

/// ghz `--rps`: `call` at `rate` over one connection (plaintext), with `connections` workers
/// (`-c`, ghz's cap on calls in flight), for `-z`, its report as JSON. The URL is
/// `grpc://host:port` or `host:port`. Not in [`all`]: it needs a proto and a gRPC server (the
/// suite gives it both).
pub fn ghz(spec: &RunSpec, call: &GrpcCall) -> RunnerPlan {
    let json = spec.out_dir.join("ghz.json");
    let host = spec.url.strip_prefix("grpc://").unwrap_or(&spec.url);
    let mut argv = args(["ghz", "--insecure", "--proto"]);
    argv.push(path_arg(&call.proto));
    argv.extend([
        "--call".into(),
        call.call.clone(),
        "-d".into(),
        call.data.clone(),
    ]);
    argv.extend([
        "--rps".to_string(),
        format!("{}", spec.rate.round().max(1.0)),
        "-z".to_string(),
        go_duration(spec.duration),
        "-c".to_string(),
        spec.connections.max(1).to_string(),
        "-O".to_string(),
        "json".to_string(),
        "-o".to_string(),
        path_arg(&json),
        host.to_string(),
    ]);
    let mut plan = RunnerPlan::new(PeerTool::Ghz, Mode::Paced, argv);
    plan.files = vec![json];
    plan.limitations = vec![
        format!(
            "ghz's pacer waits while all {} of its workers (-c) are busy, then sends the calls it \
             owes back to back: each is timed from its late send",
            spec.connections.max(1)
        ),
        "ghz's --rps is a whole number of calls per second".into(),
        "ghz closes its connection when -z runs out: calls cut off then are imported as censored"
            .into(),
    ];
    plan
}

/// Every runner for one spec, closed loops first. h2load speaks HTTP/1.1 here (`--h1`), as
/// every tool does: the suite's HTTP servers speak nothing else.
pub fn all(spec: &RunSpec) -> Vec<RunnerPlan> {
    vec![
        ab(spec),
        wrk(spec),
        hey(spec),
        hey_paced(spec),
        k6_closed(spec),
        locust(spec),
        oha_closed(spec),
        h2load(spec, H2loadProtocol::Http1),
        wrk2(spec),
        vegeta(spec),
        k6_open(spec),
        oha_rate(spec, false),
        oha_rate(spec, true),
        fortio(spec),
        h2load_rps(spec, H2loadProtocol::Http1),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> RunSpec {
        RunSpec {
            url: "http://127.0.0.1:8080/api".into(),
            rate: 200.0,
            duration: Duration::from_secs(3),
            connections: 10,
            out_dir: PathBuf::from("/tmp/out"),
        }
    }

    fn argv(plan: &RunnerPlan) -> String {
        plan.argv.join(" ")
    }

    #[test]
    fn ghz_argv() {
        let call = GrpcCall {
            proto: PathBuf::from("/p/helloworld.proto"),
            call: "helloworld.Greeter.SayHello".into(),
            data: r#"{"name":"x"}"#.into(),
        };
        let p = ghz(
            &RunSpec {
                url: "grpc://127.0.0.1:50051".into(),
                rate: 1000.0,
                duration: Duration::from_millis(2500),
                connections: 50,
                ..spec()
            },
            &call,
        );
        assert_eq!(
            argv(&p),
            "ghz --insecure --proto /p/helloworld.proto --call helloworld.Greeter.SayHello \
             -d {\"name\":\"x\"} --rps 1000 -z 2500ms -c 50 -O json -o /tmp/out/ghz.json \
             127.0.0.1:50051"
        );
        assert_eq!(p.files, vec![PathBuf::from("/tmp/out/ghz.json")]);
        assert_eq!(p.mode, Mode::Paced);
        assert!(all(&spec()).iter().all(|p| p.tool.speaks_http()));
    }

    #[test]
    fn ab_argv() {
        let p = ab(&spec());
        assert_eq!(
            argv(&p),
            "ab -k -c 10 -t 3 -n 50000 -e /tmp/out/ab.csv http://127.0.0.1:8080/api"
        );
        let fast = ab(&RunSpec {
            rate: 20_000.0,
            ..spec()
        });
        assert!(argv(&fast).contains("-t 3 -n 120000"), "{}", argv(&fast));
        assert_eq!(p.stdout, Some(PathBuf::from("/tmp/out/ab.txt")));
        assert_eq!(p.files.len(), 2);
        assert_eq!(p.mode, Mode::Closed);
        assert!(p.limitations[0].contains("whichever comes first"));
    }

    #[test]
    fn wrk_and_wrk2_argv() {
        assert_eq!(
            argv(&wrk(&spec())),
            "wrk -t 2 -c 10 -d 3s --timeout 10s --latency http://127.0.0.1:8080/api",
            "threads divide the connections: wrk opens c ÷ t per thread"
        );
        // wrk2 calibrates for 10 s plus 5 ms per connection of a thread before it measures:
        // its 3 s run becomes 10.025 s + 3 s, rounded up to whole seconds.
        let p = wrk2(&spec());
        assert_eq!(
            argv(&p),
            "wrk2 -t 2 -c 10 -d 14s --timeout 10s --latency -R 200 http://127.0.0.1:8080/api"
        );
        assert_eq!(p.lead_in, Duration::from_millis(10_025));
        assert_eq!(p.mode, Mode::Open);
        assert_eq!(wrk(&spec()).lead_in, Duration::ZERO);
        let short = RunSpec {
            connections: 2,
            duration: Duration::from_millis(1500),
            ..spec()
        };
        let p = wrk(&short);
        assert_eq!(
            argv(&p),
            "wrk -t 2 -c 2 -d 2s --timeout 10s --latency http://127.0.0.1:8080/api"
        );
        assert!(p
            .limitations
            .iter()
            .any(|l| l.contains("rounded up to 2 s")));
    }

    #[test]
    fn hey_argv() {
        let p = hey(&RunSpec {
            duration: Duration::from_millis(2500),
            ..spec()
        });
        assert_eq!(
            argv(&p),
            "hey -z 2500ms -c 10 -o csv http://127.0.0.1:8080/api"
        );
        assert_eq!(p.stdout, Some(PathBuf::from("/tmp/out/hey.csv")));
    }

    #[test]
    fn k6_argv_and_scripts() {
        let p = k6_closed(&spec());
        assert_eq!(
            argv(&p),
            "k6 run --quiet --no-color --out csv=fileName=/tmp/out/k6-closed.csv,timeFormat=unix_micro \
             --summary-export /tmp/out/k6-closed.summary.json /tmp/out/k6-closed.js"
        );
        let (path, script) = p.script.unwrap();
        assert_eq!(path, PathBuf::from("/tmp/out/k6-closed.js"));
        assert!(
            script.contains("executor: 'constant-vus', vus: 10, duration: '3s'"),
            "{script}"
        );
        assert!(
            script.contains("http.get(\"http://127.0.0.1:8080/api\")"),
            "{script}"
        );
        let p = k6_open(&spec());
        assert_eq!(p.mode, Mode::Open);
        let (_, script) = p.script.unwrap();
        assert!(
            script.contains(
                "executor: 'constant-arrival-rate', rate: 200, timeUnit: '1s', duration: '3s', \
                 preAllocatedVUs: 300, maxVUs: 1000"
            ),
            "{script}"
        );
    }

    #[test]
    fn k6_vus_follow_the_seed() {
        assert_eq!(k6_vus(1000.0), (1500, 5000), "seed 001's k6-good values");
        assert_eq!(k6_vus(0.5), (2, 5), "at least one stall-second's worth");
    }

    #[test]
    fn fractional_rates_stay_exact() {
        let p = vegeta(&RunSpec {
            rate: 12.5,
            ..spec()
        });
        assert!(argv(&p).contains("-rate=12500/1000s"), "{}", argv(&p));
        let (_, script) = k6_open(&RunSpec {
            rate: 12.5,
            ..spec()
        })
        .script
        .unwrap();
        assert!(
            script.contains("rate: 12500, timeUnit: '1000s'"),
            "{script}"
        );
    }

    #[test]
    fn locust_argv() {
        let p = locust(&spec());
        assert_eq!(
            argv(&p),
            "locust -f /tmp/out/locustfile.py --headless -u 10 -r 10 -t 3s --host \
             http://127.0.0.1:8080 --csv /tmp/out/locust"
        );
        let (_, script) = p.script.clone().unwrap();
        assert!(script.contains("self.client.get(\"/api\")"), "{script}");
        assert_eq!(p.stderr, Some(PathBuf::from("/tmp/out/locust.txt")));
        assert!(p.files[0].ends_with("locust_stats.csv"));
    }

    #[test]
    fn oha_argv() {
        assert_eq!(
            argv(&oha_closed(&spec())),
            "oha --no-tui -z 3s -c 10 --output-format csv -o /tmp/out/oha-closed.csv \
             http://127.0.0.1:8080/api"
        );
        let plain = oha_rate(&spec(), false);
        assert_eq!(
            argv(&plain),
            "oha --no-tui -z 3s -c 10 --output-format csv -o /tmp/out/oha-rate.csv -q 200 \
             http://127.0.0.1:8080/api"
        );
        assert!(plain.limitations.iter().any(|l| l.contains("actual send")));
        let corrected = oha_rate(&spec(), true);
        assert_eq!(
            argv(&corrected),
            "oha --no-tui -z 3s -c 10 --output-format csv -o /tmp/out/oha-rate-corrected.csv \
             -q 200 --latency-correction http://127.0.0.1:8080/api"
        );
        assert_eq!(corrected.mode, Mode::Open);
    }

    #[test]
    fn vegeta_argv_then_encode() {
        let p = vegeta(&spec());
        assert_eq!(
            argv(&p),
            "vegeta attack -rate=200/1s -duration=3s -max-connections=10 \
             -targets=/tmp/out/vegeta-targets.txt -output=/tmp/out/vegeta.bin"
        );
        assert_eq!(
            p.then[0].join(" "),
            "vegeta encode --to csv --output=/tmp/out/vegeta.csv /tmp/out/vegeta.bin"
        );
        assert_eq!(p.script.unwrap().1, "GET http://127.0.0.1:8080/api\n");
        assert_eq!(p.files, vec![PathBuf::from("/tmp/out/vegeta.csv")]);
    }

    #[test]
    fn fortio_argv() {
        let p = fortio(&spec());
        assert_eq!(
            argv(&p),
            "fortio load -qps 200 -c 10 -t 3s -json /tmp/out/fortio.json -access-log-file \
             /tmp/out/fortio.access.jsonl http://127.0.0.1:8080/api"
        );
        assert_eq!(p.mode, Mode::Paced);
    }

    #[test]
    fn hey_paced_argv() {
        let p = hey_paced(&spec());
        assert_eq!(
            argv(&p),
            "hey -z 3s -c 10 -q 20 -o csv http://127.0.0.1:8080/api"
        );
        assert_eq!(p.mode, Mode::Paced);
    }

    #[test]
    fn h2load_argv() {
        let p = h2load(&spec(), H2loadProtocol::Http2);
        assert_eq!(
            argv(&p),
            "h2load -D 3s -c 10 -m 1 --log-file /tmp/out/h2load.log http://127.0.0.1:8080/api"
        );
        assert_eq!(p.mode, Mode::Closed);
        assert_eq!(p.stdout, Some(PathBuf::from("/tmp/out/h2load.txt")));
        assert_eq!(
            p.files,
            vec![
                PathBuf::from("/tmp/out/h2load.log"),
                PathBuf::from("/tmp/out/h2load.txt")
            ]
        );
        // 200 req/s over 10 connections: 20 each; sub-second runs in whole milliseconds.
        let p = h2load_rps(
            &RunSpec {
                duration: Duration::from_millis(2500),
                ..spec()
            },
            H2loadProtocol::Http1,
        );
        assert_eq!(
            argv(&p),
            "h2load -D 2500ms -c 10 -m 1 --log-file /tmp/out/h2load-rps.log --h1 --rps 20 \
             http://127.0.0.1:8080/api"
        );
        assert_eq!(p.mode, Mode::Paced);
        assert!(p.limitations.iter().any(|l| l.contains("--h1")));
    }

    #[test]
    fn every_plan_imports_something() {
        let plans = all(&spec());
        assert_eq!(plans.len(), 15);
        for p in plans {
            assert!(!p.files.is_empty(), "{:?}", p.tool);
            assert!(
                p.files.iter().all(|f| f.starts_with("/tmp/out")),
                "{:?}",
                p.tool
            );
        }
    }

    #[test]
    fn urls_split_for_locust() {
        assert_eq!(
            split_url("http://127.0.0.1:8080/api?x=1"),
            ("http://127.0.0.1:8080".into(), "/api?x=1".into())
        );
        assert_eq!(
            split_url("http://127.0.0.1:8080"),
            ("http://127.0.0.1:8080".into(), "/".into())
        );
    }
}
