//! `sojourn run URL`: drive HTTP load, open loop by default.
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use sojourn_core::{Arrival, End, RunResult, Shard};
use sojourn_engine::{HttpRequest, Load, Plan, Progress, Trust};
use tokio_util::sync::CancellationToken;
use url::Url;

use crate::args::{self, ArrivalKind};
use crate::bad_input;
use crate::exit::{CHECK_FAILED, GATE_FAILED, INTERRUPTED};
use crate::requests::{AnyTransport, Protocol, Requests, TargetsOrder};

/// The arguments as typed.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The target, e.g. http://127.0.0.1:8080/api (or `url` in the --plan file).
    #[arg(required_unless_present_any = ["plan", "targets"], conflicts_with = "targets")]
    pub url: Option<String>,
    /// Many different requests instead of one URL: a file in vegeta's HTTP format (a
    /// `METHOD URL` line, header lines, an optional `@body-file`, a blank line between
    /// targets) or JSON Lines ({"method", "url", "header", "body" (base64), "label",
    /// "weight"}). Request i sends a target chosen from i alone, and each label gets its own
    /// histograms (see docs/targets.md).
    #[arg(long, value_name = "FILE",
          conflicts_with_all = ["method", "headers", "body", "body_file"])]
    pub targets: Option<PathBuf>,
    /// With --targets: take them in turn (weights interleaved), or at random by weight
    /// (seeded by --seed).
    #[arg(long, value_enum, default_value_t = crate::requests::TargetsOrder::RoundRobin)]
    pub targets_order: crate::requests::TargetsOrder,
    /// Speak HTTP/2: ALPN h2 over TLS for https://, prior-knowledge h2c for http://. Each
    /// connection carries up to --streams requests at once; a due request takes any free
    /// stream on any connection, FIFO.
    #[arg(long)]
    pub http2: bool,
    /// With --http2: the most concurrent streams per connection. [default: what the server
    /// advertises, at most 256]
    #[arg(long, value_name = "N", value_parser = args::streams)]
    pub streams: Option<usize>,
    /// A TOML run file: the URL, the stages or rate, the arrival process, connections, timeout
    /// and objectives (see docs/plans.md). Flags given on the command line win over it.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// Run shard K (from 0) of N of the plan: every N-th slice of the one global schedule, so N
    /// processes with the same flags run it exactly once between them. Give every shard the
    /// same --threads (they slice the schedule too) and the same --start-at.
    #[arg(long, value_name = "K/N", value_parser = args::shard, conflicts_with = "shard_from_env")]
    pub shard: Option<sojourn_core::Shard>,
    /// Take K from the environment: JOB_COMPLETION_INDEX (a Kubernetes Indexed Job), else
    /// SLURM_PROCID (with SLURM_NTASKS as N unless --shard-count is given).
    #[arg(long)]
    pub shard_from_env: bool,
    /// With --shard-from-env: the number of shards N.
    #[arg(long, value_name = "N", value_parser = args::shard_count)]
    pub shard_count: Option<u32>,
    /// Start the schedule at this wall-clock instant (RFC 3339, e.g. 2026-11-23T10:00:00Z, or
    /// Unix seconds like 1763892000.5) instead of at once: every shard's requests are due from
    /// the same instant, so their timelines line up. A process that starts late sends what
    /// fell due at once, and that lateness is counted as send lag, never hidden. Shards rely
    /// on the nodes' clocks being synchronised (NTP or PTP); each result records how late its
    /// process was ready.
    #[arg(long, value_name = "TIME", value_parser = args::instant)]
    pub start_at: Option<std::time::SystemTime>,
    /// Flags given on the command line (filled by the parser, for --plan).
    #[arg(skip)]
    pub explicit: Vec<String>,
    /// Open loop: requests per second, due on a schedule whatever the responses do.
    #[arg(long, value_parser = args::rate)]
    pub rate: Option<f64>,
    /// How arrivals are spaced: constant, poisson (seeded), or ramp (from --rate to --ramp-to).
    #[arg(long, value_enum, default_value_t = ArrivalKind::Constant)]
    pub arrival: ArrivalKind,
    /// With --arrival ramp: the rate at the end of the run.
    #[arg(long, value_parser = args::rate)]
    pub ramp_to: Option<f64>,
    /// With --arrival poisson: the random seed.
    #[arg(long, value_parser = args::seed)]
    pub seed: Option<u64>,
    /// Shaped load instead of one rate: stages run in order, each holding a rate or moving it
    /// linearly, e.g. `30s@0..1000,5m@1000,spike=30s@1000..5000,1m@5000` (NAME= is optional).
    /// Arrivals follow them evenly spaced, or Poisson with --arrival poisson.
    #[arg(long, value_name = "STAGES", value_parser = args::stages,
          conflicts_with_all = ["rate", "duration", "requests", "ramp_to"])]
    pub stages: Option<sojourn_core::Stages>,
    /// How long to send for (default 10s).
    #[arg(long, value_parser = args::positive_duration, conflicts_with = "requests")]
    pub duration: Option<Duration>,
    /// Send this many requests in all, instead of a duration.
    #[arg(long, value_parser = args::requests)]
    pub requests: Option<u64>,
    /// Open loop: the most connections to open (lazily; due requests queue FIFO for a free one).
    /// Closed loop: the number of looping connections. With --http2, connections each carry
    /// --streams requests. [default: 2048 open, 10 closed; with --http2, 16]
    #[arg(long, short = 'c', value_parser = args::connections)]
    pub connections: Option<usize>,
    /// Worker threads, each with its own connections and slice of the schedule.
    /// [default: closed loop, the number of CPUs; open loop, one per 50,000 req/s of peak
    /// rate, up to the number of CPUs]
    #[arg(long, value_parser = args::threads)]
    pub threads: Option<usize>,
    /// Longest wait for one answer; also the longest drain after the schedule ends.
    #[arg(long, value_parser = args::positive_duration, default_value = "10s")]
    pub timeout: Duration,
    /// Closed loop: each connection sends, waits for the answer, records, repeats.
    /// For comparison and for truly closed workloads; every output labels it. With --rate, a
    /// paced closed loop: each connection owns rate/N of the slots and sends at its next slot
    /// or when its answer arrives, whichever is later (hey -q, bombardier -r, fortio -qps).
    #[arg(long)]
    pub closed: bool,
    /// HTTP method. [default: GET]
    #[arg(long, short = 'X')]
    pub method: Option<String>,
    /// A request header, "Name: value"; repeatable.
    #[arg(long = "header", short = 'H', value_parser = args::header)]
    pub headers: Vec<(String, String)>,
    /// Request body.
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Request body read from a file.
    #[arg(long)]
    pub body_file: Option<PathBuf>,
    /// Skip TLS certificate verification (self-signed test servers).
    #[arg(long, conflicts_with = "cacert")]
    pub insecure: bool,
    /// Trust only the CA certificates in this PEM file for https (a private CA), instead of
    /// the public roots.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Write the result document (JSON, schema sojourn.result/3) here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Width of the timeline's intervals, and of the last interval the live panel and
    /// --metrics-listen show.
    #[arg(long, value_parser = args::positive_duration, default_value = "1s")]
    pub interval: Duration,
    /// A name for this run in reports.
    #[arg(long)]
    pub label: Option<String>,
    /// Exit 3 if the self-check finds that the generator itself fell behind, or that the
    /// sends did not follow the arrival process (conformance).
    #[arg(long)]
    pub strict: bool,
    /// Leave a warm-up out of the percentiles: `auto` finds it from the per-interval medians
    /// (MSER), a duration (e.g. `5s`) trims exactly that, rounded up to a whole interval. The
    /// trimmed requests stay in the counts and the timeline.
    #[arg(long, value_name = "auto|DURATION", value_parser = args::warmup)]
    pub warmup: Option<sojourn_core::result::WarmupRequest>,
    /// Write HdrHistogram percentile distributions: PREFIX.response.hgrm, PREFIX.service.hgrm
    /// and PREFIX.send_lag.hgrm (milliseconds).
    #[arg(long, value_name = "PREFIX")]
    pub hgrm: Option<PathBuf>,
    /// Write an HdrHistogram interval log (one response and one send-lag histogram per
    /// interval), readable by HistogramLogProcessor.
    #[arg(long)]
    pub hlog: Option<PathBuf>,
    /// Stream every finished request (due offset, response, service, outcome) to this file:
    /// CSV if it ends in .csv, compact binary otherwise.
    #[arg(long)]
    pub samples: Option<PathBuf>,
    /// With --samples: keep this share of requests, chosen uniformly (seeded), to keep long
    /// runs small.
    #[arg(long, value_parser = args::fraction, default_value_t = 1.0)]
    pub sample_ratio: f64,
    /// The most the pacer spins before one due time. It learns how late the kernel's wake-ups
    /// come, arms its timer that much early (up to this cap) and spins the rest, so requests
    /// leave within microseconds of schedule for a few microseconds of CPU each. 0: no
    /// spinning; requests then leave late by the kernel's wake-up latency.
    #[arg(long, value_parser = args::duration, default_value = "100us")]
    pub timer_spin: Duration,
    /// The least time between two wake-ups of the pacer: requests due closer together leave
    /// together, each up to this late. Fewer wake-ups cost less CPU; the lateness is send lag,
    /// counted in response time. `auto`: as late as the pacer's own wake-ups have been coming
    /// (tens of µs), so a request never waits longer than a wake-up of its own would have
    /// taken; 0: a wake-up for every due time.
    #[arg(long, value_name = "auto|DURATION", value_parser = args::slack, default_value = "auto")]
    pub timer_slack: sojourn_engine::Slack,
    /// Run without the hiccup meters: a thread beside the run that measures how late this
    /// process's own threads are woken, and an idle control process that measures how late the
    /// machine wakes a sleeping process (the floor under any send lag). Without the control,
    /// no lateness is excused as the machine's.
    #[arg(long)]
    pub no_hiccup_meter: bool,
    /// Serve live metrics (OpenMetrics text, for Prometheus) on http://ADDR/metrics while the
    /// run goes on: counts by outcome, in flight and the age of the oldest in flight, target
    /// and achieved rate, the last interval's response-time percentiles and send lag. A bare port (9464) or :9464 listens on
    /// 127.0.0.1 only; ADDRESS:PORT listens exactly there. Port 0 picks a free one. The address
    /// is printed on stderr; the endpoint stops with the run.
    #[arg(long, value_name = "[ADDRESS:]PORT", value_parser = crate::metrics::listen_addr)]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// --slo and --junit: gate the run on service-level objectives (exit 4 when one fails).
    #[command(flatten)]
    pub gate: crate::gate::GateArgs,
}

impl RunArgs {
    /// `sojourn run URL` with every other flag at its default: what `compare` and `sweep`
    /// start from before setting their own.
    pub fn for_target(url: &str) -> RunArgs {
        use clap::{Args, FromArgMatches};
        let command = RunArgs::augment_args(clap::Command::new("run"));
        let matches = command
            .try_get_matches_from(["run", url])
            .expect("a URL alone is a valid run");
        RunArgs::from_arg_matches(&matches).expect("the defaults parse")
    }
}

/// A run that has passed validation: the engine's plan plus what to send and where to write.
pub struct Validated {
    pub plan: Plan,
    pub requests: Requests,
    pub protocol: Protocol,
    /// Connections asked for; with HTTP/2 the plan's pool holds this many times the streams.
    pub connections: usize,
    /// `h2`/`h2c` once connected over HTTP/2.
    pub protocol_name: Option<String>,
    pub trust: Trust,
    pub json: Option<PathBuf>,
    pub outputs: Outputs,
    pub label: String,
    pub strict: bool,
    pub warmup: Option<sojourn_core::result::WarmupRequest>,
    pub gate: crate::gate::Gate,
}

/// The HdrHistogram and per-request files asked for.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    pub hgrm: Option<PathBuf>,
    pub hlog: Option<PathBuf>,
    pub samples: Option<PathBuf>,
    pub sample_ratio: f64,
}

const DEFAULT_DURATION: Duration = Duration::from_secs(10);
const DEFAULT_OPEN_CONNECTIONS: usize = 2048;
/// HTTP/2: 16 connections of up to 128 streams (nginx's limit) hold as many requests at once
/// as the HTTP/1.1 default pool.
const DEFAULT_HTTP2_CONNECTIONS: usize = 16;
const DEFAULT_CLOSED_CONNECTIONS: usize = 10;

pub fn validate(mut a: RunArgs) -> anyhow::Result<Validated> {
    if let Some(path) = a.plan.clone() {
        crate::plan::apply(&mut a, &path)?;
    }
    let gate = crate::gate::Gate::parse(a.gate.clone())?;
    partners(&a)?;
    let requests = match &a.targets {
        Some(path) => Requests::from_file(path, a.targets_order, a.seed)?,
        None => Requests::one(request(&a)?),
    };
    let end = end(&a)?;
    let load = if a.closed {
        closed_load(&a, end)?
    } else {
        open_load(&a, end)?
    };
    let (connections, threads) = pool(&a, &load)?;
    let shard = shard(&a, &|name| std::env::var(name).ok())?;
    if !shard.is_whole() && matches!(load, Load::Closed(_)) {
        return Err(bad_input!(
            "--shard: a closed loop without --rate has no schedule to share out; give --rate (a paced closed loop) or run the open loop"
        ));
    }
    check_start(a.start_at, &load)?;
    let stages = match &load {
        Load::Open(s) | Load::Paced(s) => s.stages.as_ref().map(sojourn_core::Stages::configs),
        Load::Closed(_) => None,
    };
    gate.check_stages(stages.as_deref())?;
    let default_label = match load {
        Load::Open(_) => "open",
        Load::Closed(_) => "closed",
        Load::Paced(_) => "paced",
    };
    Ok(Validated {
        plan: Plan {
            load,
            connections,
            threads,
            timeout: a.timeout,
            interval: a.interval,
            spin: a.timer_spin,
            slack: a.timer_slack,
            hiccup: (!a.no_hiccup_meter).then_some(sojourn_engine::HICCUP_TICK),
            control: (!a.no_hiccup_meter).then(crate::control::command).flatten(),
            samples: None,
            shard,
            start_at: a.start_at,
            targets: requests.targets.clone(),
            streams: None,
        },
        requests,
        protocol: match a.http2 {
            true => Protocol::Http2 { streams: a.streams },
            false => Protocol::Http1,
        },
        connections,
        protocol_name: None,
        trust: trust(a.insecure, a.cacert.as_deref())?,
        outputs: Outputs {
            hgrm: a.hgrm,
            hlog: a.hlog,
            samples: a.samples,
            sample_ratio: a.sample_ratio,
        },
        json: a.json,
        label: a.label.unwrap_or_else(|| default_label.into()),
        strict: a.strict,
        warmup: a.warmup,
        gate,
    })
}

/// Flags that only mean something beside another, checked once the plan file (which may give
/// either) has been applied.
fn partners(a: &RunArgs) -> anyhow::Result<()> {
    if a.streams.is_some() && !a.http2 {
        return Err(bad_input!(
            "--streams: only with --http2 (HTTP/1.1 carries one request per connection)"
        ));
    }
    if a.targets_order != TargetsOrder::RoundRobin && a.targets.is_none() {
        return Err(bad_input!(
            "--targets-order: only with --targets FILE (one URL has nothing to order)"
        ));
    }
    Ok(())
}

/// `--shard K/N`, or `--shard-from-env` with the index from the environment (`var` reads it).
fn shard(a: &RunArgs, var: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<Shard> {
    if let Some(s) = a.shard {
        if a.shard_count.is_some() {
            return Err(bad_input!(
                "--shard-count: only with --shard-from-env; --shard K/N gives N already"
            ));
        }
        return Ok(s);
    }
    if !a.shard_from_env {
        if a.shard_count.is_some() {
            return Err(bad_input!("--shard-count: only with --shard-from-env"));
        }
        return Ok(Shard::WHOLE);
    }
    shard_from_env(var, a.shard_count)
}

/// Kubernetes' Indexed Job sets JOB_COMPLETION_INDEX; Slurm sets SLURM_PROCID and SLURM_NTASKS.
fn shard_from_env(
    var: &dyn Fn(&str) -> Option<String>,
    count: Option<u32>,
) -> anyhow::Result<Shard> {
    let number = |name: &str, text: String| {
        text.trim()
            .parse::<u32>()
            .map_err(|_| bad_input!("--shard-from-env: {name} is {text:?}, not a shard number"))
    };
    let (index, slurm_count) = match (var("JOB_COMPLETION_INDEX"), var("SLURM_PROCID")) {
        (Some(k), _) => (number("JOB_COMPLETION_INDEX", k)?, None),
        (None, Some(k)) => (
            number("SLURM_PROCID", k)?,
            var("SLURM_NTASKS").map(|n| number("SLURM_NTASKS", n)).transpose()?,
        ),
        (None, None) => {
            return Err(bad_input!(
                "--shard-from-env: neither JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) nor SLURM_PROCID is set; give --shard K/N instead"
            ))
        }
    };
    let count = count.or(slurm_count).ok_or_else(|| {
        bad_input!("--shard-count: required with --shard-from-env: the number of shards, e.g. the Job's completions")
    })?;
    Shard::new(index, count).map_err(|e| bad_input!("--shard-from-env: {e}"))
}

/// The longest a process waits for `--start-at`: longer is a mistyped date.
const MAX_START_AHEAD: Duration = Duration::from_secs(24 * 3600);

/// A start too far ahead is a typo; one so far behind that the whole schedule is already past
/// would send everything at once and measure only that.
fn check_start(start_at: Option<std::time::SystemTime>, load: &Load) -> anyhow::Result<()> {
    let Some(at) = start_at else { return Ok(()) };
    let shown = humantime::format_rfc3339_millis(at);
    match at.duration_since(std::time::SystemTime::now()) {
        Ok(ahead) if ahead > MAX_START_AHEAD => Err(bad_input!(
            "--start-at: {shown} is {} ahead; the most a run waits is a day",
            short_duration(ahead)
        )),
        Ok(_) => Ok(()),
        Err(behind) => {
            let late = behind.duration();
            let length = match load {
                Load::Open(s) | Load::Paced(s) => sojourn_engine::run::schedule_end(s),
                Load::Closed(_) => Duration::ZERO,
            };
            if late < length {
                return Ok(());
            }
            Err(bad_input!(
                "--start-at: {shown} is {} ago, past the whole schedule ({}); give a time still to come",
                short_duration(late),
                short_duration(length)
            ))
        }
    }
}

/// A duration as a person reads it at a glance, in one unit with at most one decimal:
/// `3.2 s`, `12.5 min`, `2.0 h`, `25 days`, `6.9 years`. Never `6years 10months 25days …`.
pub fn short_duration(d: Duration) -> String {
    const MINUTE: f64 = 60.0;
    const HOUR: f64 = 60.0 * MINUTE;
    const DAY: f64 = 24.0 * HOUR;
    const YEAR: f64 = 365.25 * DAY;
    let secs = d.as_secs_f64();
    match secs {
        s if s < MINUTE => format!("{s:.1} s"),
        s if s < HOUR => format!("{:.1} min", s / MINUTE),
        s if s < 2.0 * DAY => format!("{:.1} h", s / HOUR),
        s if s < YEAR => format!("{:.0} days", s / DAY),
        s => format!("{:.1} years", s / YEAR),
    }
}

/// What a process says before it sends: where it stands in a sharded plan (`shard K/N of plan
/// FINGERPRINT at R req/s (this shard: R/N req/s)`) and how long it waits for `--start-at`, or
/// how late it is for it. `None` for an unsharded run that starts at once.
fn announcement(v: &Validated, now: std::time::SystemTime) -> Option<String> {
    let place = (!v.plan.shard.is_whole()).then(|| shard_line(v));
    let start = v.plan.start_at.map(|at| start_line(at, now));
    match (place, start) {
        (None, None) => None,
        (Some(place), None) => Some(format!("{place}; starting now")),
        (None, Some(start)) => Some(start),
        (Some(place), Some(start)) => Some(format!("{place}; {start}")),
    }
}

/// `shard 1/4 of plan 8f3a1c2d… at 1000 req/s (this shard: 250 req/s)`: the fingerprint is the
/// one the result will carry, so shards that print different ones will not merge.
fn shard_line(v: &Validated) -> String {
    let shard = v.plan.shard;
    let fingerprint = v.fingerprint();
    let short = &fingerprint[..fingerprint.len().min(8)];
    let rates = match &v.plan.load {
        Load::Open(s) | Load::Paced(s) => {
            let varies = s.stages.is_some() || matches!(s.arrival, Arrival::Ramp { .. });
            let (up_to, rate) = match varies {
                true => ("up to ", s.peak_rate()),
                false => ("", s.rate.get()),
            };
            let share = rate / f64::from(shard.count);
            format!(
                " at {up_to}{} req/s (this shard: {up_to}{} req/s)",
                rate_text(rate),
                rate_text(share)
            )
        }
        Load::Closed(_) => String::new(),
    };
    format!("shard {shard} of plan {short}…{rates}")
}

/// How long until `--start-at`, or how long ago it was.
fn start_line(at: std::time::SystemTime, now: std::time::SystemTime) -> String {
    match at.duration_since(now) {
        Ok(ahead) => format!(
            "waiting {} for --start-at {}",
            short_duration(ahead),
            humantime::format_rfc3339_millis(at)
        ),
        Err(behind) => format!(
            "--start-at was {} ago: requests due since then are sent at once and timed from their due time",
            short_duration(behind.duration())
        ),
    }
}

/// A rate in req/s: whole when it is, else to one decimal.
fn rate_text(rate: f64) -> String {
    if (rate - rate.round()).abs() < 0.05 {
        format!("{rate:.0}")
    } else {
        format!("{rate:.1}")
    }
}

/// Which certificates an https target may present.
fn trust(insecure: bool, cacert: Option<&std::path::Path>) -> anyhow::Result<Trust> {
    Ok(match cacert {
        Some(path) => Trust::from_pem_file(path).map_err(|e| bad_input!("--cacert: {e}"))?,
        None if insecure => Trust::AnyCertificate,
        None => Trust::PublicRoots,
    })
}

/// The URL, method, headers and body, checked.
fn request(a: &RunArgs) -> anyhow::Result<HttpRequest> {
    let text = a.url.as_deref().ok_or_else(|| {
        bad_input!(
            "URL: required; give it on the command line or as url = \"…\" in the --plan file"
        )
    })?;
    if let Some(guess) = sojourn_core::targets::with_http_scheme(text) {
        return Err(bad_input!(
            "URL: {text:?} has no scheme; write {guess} (or https:// for TLS)"
        ));
    }
    let url = Url::parse(text).map_err(|e| {
        bad_input!(
            "URL: {text:?} is not a valid URL ({e}); expected e.g. http://127.0.0.1:8080/api"
        )
    })?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(bad_input!(
            "URL: scheme {:?} is not supported; use http:// or https://",
            url.scheme()
        ));
    }
    let given = a.method.as_deref().unwrap_or("GET");
    let method = given.to_ascii_uppercase();
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(bad_input!(
            "--method: {given:?} is not an HTTP method; expected e.g. GET or POST"
        ));
    }
    let body = match (&a.body, &a.body_file) {
        (Some(b), _) => b.clone().into_bytes(),
        (None, Some(path)) => std::fs::read(path)
            .map_err(|e| bad_input!("--body-file: cannot read {}: {e}", path.display()))?,
        (None, None) => Vec::new(),
    };
    Ok(HttpRequest {
        url,
        method,
        headers: a.headers.clone(),
        body,
    })
}

/// `--duration` or `--requests`.
fn end(a: &RunArgs) -> anyhow::Result<End> {
    Ok(match (a.duration, a.requests) {
        (_, Some(0)) => return Err(bad_input!("--requests: must be at least 1, got 0")),
        (_, Some(n)) => End::Count(n),
        (Some(d), None) => End::After(d),
        (None, None) => End::After(DEFAULT_DURATION),
    })
}

/// One open-loop worker thread paces this many requests a second on one core (measured in
/// docs/benchmarks.md); more threads only add wake-ups, and wake-ups are what an open loop
/// pays for.
const OPEN_RATE_PER_THREAD: f64 = 50_000.0;

/// `--connections` and `--threads`, with their defaults: a closed loop gets a thread per CPU;
/// an open loop as many as its peak rate needs, up to one per CPU.
fn pool(a: &RunArgs, load: &Load) -> anyhow::Result<(usize, usize)> {
    let default_connections = match (a.closed, a.http2) {
        (true, _) => DEFAULT_CLOSED_CONNECTIONS,
        (false, true) => DEFAULT_HTTP2_CONNECTIONS,
        (false, false) => DEFAULT_OPEN_CONNECTIONS,
    };
    let connections = match a.connections {
        Some(0) => return Err(bad_input!("--connections: must be at least 1, got 0")),
        Some(n) => n,
        None => default_connections,
    };
    let threads = match a.threads {
        Some(0) => return Err(bad_input!("--threads: must be at least 1, got 0")),
        Some(n) => n,
        None => {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            match load {
                Load::Open(s) | Load::Paced(s) => {
                    ((s.peak_rate() / OPEN_RATE_PER_THREAD).ceil() as usize).clamp(1, cpus)
                }
                Load::Closed(_) => cpus,
            }
        }
    };
    Ok((connections, threads))
}

/// `--seed` as the arrival process sees it: random target order takes it too, so it is not
/// a mistake there without Poisson arrivals.
fn arrival_seed(a: &RunArgs) -> Option<u64> {
    let for_targets = a.targets.is_some() && a.targets_order == TargetsOrder::Random;
    a.seed
        .filter(|_| a.arrival == ArrivalKind::Poisson || !for_targets)
}

fn open_load(a: &RunArgs, end: End) -> anyhow::Result<Load> {
    if let Some(stages) = &a.stages {
        return Ok(Load::Open(args::staged_schedule(
            stages,
            a.arrival,
            arrival_seed(a),
        )?));
    }
    let rate = a.rate.ok_or_else(|| bad_input!("--rate: required for the open loop, e.g. --rate 1000 (requests per second); or use --closed"))?;
    Ok(Load::Open(args::schedule(
        rate,
        a.arrival,
        a.ramp_to,
        arrival_seed(a),
        end,
    )?))
}

fn closed_load(a: &RunArgs, end: End) -> anyhow::Result<Load> {
    if let Some(stages) = &a.stages {
        return Ok(Load::Paced(args::staged_schedule(
            stages,
            a.arrival,
            arrival_seed(a),
        )?));
    }
    if let Some(rate) = a.rate {
        return Ok(Load::Paced(args::schedule(
            rate,
            a.arrival,
            a.ramp_to,
            arrival_seed(a),
            end,
        )?));
    }
    if a.arrival != ArrivalKind::Constant || a.ramp_to.is_some() || arrival_seed(a).is_some() {
        return Err(bad_input!(
            "--arrival: an unpaced closed loop has no schedule; give --rate or --stages for a paced closed loop, or drop --arrival/--ramp-to/--seed"
        ));
    }
    Ok(Load::Closed(end))
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let metrics = args.metrics_listen.map(crate::metrics::bind).transpose()?;
    let mut v = validate(args)?;
    raise_fd_limit();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let transport = rt.block_on(connectable(&v))?;
    v.fit_pool(&transport);
    if let Some(line) = announcement(&v, std::time::SystemTime::now()) {
        eprintln!("{line}");
    }
    let samples = crate::outputs::SampleThread::start(&v.outputs)?;
    v.plan.samples = samples.as_ref().map(|s| s.sender());
    let result = execute_watched(
        &rt,
        &v.plan,
        transport,
        &v.label,
        &v.requests.shown(),
        v.warmup,
        metrics,
    )
    .map(|r| v.describe(r));
    v.plan.samples = None;
    let written = samples.map(|s| s.finish()).transpose()?;
    let result = result?;
    print!("{}", sojourn_report::text::summary(&result));
    if let Some(path) = &v.json {
        write_json(path, &result)?;
    }
    crate::outputs::write_histograms(&v.outputs, &result)?;
    if let (Some(counts), Some(path)) = (written, &v.outputs.samples) {
        println!(
            "samples: {} of {} finished requests written to {}",
            counts.written,
            counts.seen,
            path.display()
        );
    }
    let conforms = result
        .statistics
        .conformance
        .as_ref()
        .is_none_or(|c| c.conforms);
    let gate_passed = v.gate.check(&result)?;
    Ok(ExitCode::from(exit_code(
        result.interrupted,
        v.strict && !(result.checks.passed() && conforms),
        gate_passed,
    )))
}

/// The run's exit code once everything is written. A run cut short (6) says least about what
/// was asked for, so it wins; then a generator that fell behind (3), which measured itself;
/// then the objectives (4).
fn exit_code(interrupted: bool, check_failed: bool, gate_passed: bool) -> u8 {
    if interrupted {
        INTERRUPTED
    } else if check_failed {
        CHECK_FAILED
    } else if !gate_passed {
        GATE_FAILED
    } else {
        0
    }
}

/// Resolves the target and opens one connection (see [`crate::requests::connectable`]).
pub async fn connectable(v: &Validated) -> anyhow::Result<AnyTransport> {
    crate::requests::connectable(&v.requests, &v.trust, v.protocol, v.plan.timeout).await
}

impl Validated {
    /// Sizes the pool in stream slots: each connection carries as many streams as the
    /// transport was allowed (one for HTTP/1.1).
    pub fn fit_pool(&mut self, transport: &AnyTransport) {
        self.plan.connections = self.connections.saturating_mul(transport.streams());
        self.protocol_name = transport.protocol_name(&self.requests.first().url);
        self.plan.streams = self.protocol_name.is_some().then(|| transport.streams());
    }

    /// What the result says about the protocol and the requests.
    pub fn describe(&self, mut r: RunResult) -> RunResult {
        r.config.protocol = self.protocol_name.clone();
        r.config.targets = self.requests.config.clone();
        // The plan's fingerprint covers what was just added (targets, streams).
        if let Some(p) = &mut r.placement {
            p.fingerprint = sojourn_engine::result::plan_fingerprint(&self.plan, &r.config);
        }
        r
    }

    /// The fingerprint of the plan this process runs a shard of, before it runs: the one
    /// [`Validated::describe`] gives its result.
    pub fn fingerprint(&self) -> String {
        let mut config = sojourn_engine::result::config(&self.plan, Some(self.requests.shown()));
        config.targets = self.requests.config.clone();
        sojourn_engine::result::plan_fingerprint(&self.plan, &config)
    }
}

/// Runs the plan on worker threads while this thread shows progress and listens for Ctrl-C.
/// Ctrl-C stops the schedule; everything gathered so far is still reported.
pub fn execute(
    rt: &tokio::runtime::Runtime,
    plan: &Plan,
    transport: impl Into<AnyTransport>,
    label: &str,
    url: &str,
    warmup: Option<sojourn_core::result::WarmupRequest>,
) -> anyhow::Result<RunResult> {
    execute_watched(rt, plan, transport, label, url, warmup, None)
}

/// [`execute`], also serving live metrics on `metrics` (`--metrics-listen`) during the run.
pub fn execute_watched(
    rt: &tokio::runtime::Runtime,
    plan: &Plan,
    transport: impl Into<AnyTransport>,
    label: &str,
    url: &str,
    warmup: Option<sojourn_core::result::WarmupRequest>,
    metrics: Option<std::net::TcpListener>,
) -> anyhow::Result<RunResult> {
    let cancel = CancellationToken::new();
    let progress = if metrics.is_some() || interactive() {
        Progress::with_live(plan.worker_count(), plan.interval)
    } else {
        Progress::new(plan.worker_count())
    };
    let watched = crate::live::Watched::new(plan, progress.clone());
    let server = metrics
        .map(|l| crate::metrics::MetricsServer::start(l, watched.clone()))
        .transpose()?;
    let mut panel = crate::panel::Panel::new(watched, || {
        crate::progress::Bar::new(plan, progress.clone())
    });
    let report = std::thread::scope(|scope| {
        let transport = transport.into();
        let engine = scope
            .spawn(|| sojourn_engine::execute(plan, transport, cancel.clone(), progress.clone()));
        rt.block_on(watch(&cancel, &mut panel, || engine.is_finished()));
        engine.join().expect("engine thread panicked")
    });
    panel.finish();
    if let Some(server) = server {
        server.stop();
    }
    Ok(sojourn_engine::result::build(
        plan,
        &report.context("running the load")?,
        label,
        Some(url.to_string()),
        warmup,
    ))
}

/// Two plans at once against one target (`compare`), so that whatever the server does, both
/// meet it; one Ctrl-C or SIGTERM stops both. The live view follows the first plan.
pub fn execute_both(
    rt: &tokio::runtime::Runtime,
    runs: [(&Plan, AnyTransport, &str); 2],
    url: &str,
) -> anyhow::Result<[RunResult; 2]> {
    let cancel = CancellationToken::new();
    let progress = runs
        .each_ref()
        .map(|(plan, ..)| Progress::new(plan.worker_count()));
    let first = runs[0].0;
    let watched = crate::live::Watched::new(first, progress[0].clone());
    let mut panel = crate::panel::Panel::new(watched, || {
        crate::progress::Bar::new(first, progress[0].clone())
    });
    let reports = std::thread::scope(|scope| {
        let engines: Vec<_> = runs
            .iter()
            .zip(&progress)
            .map(|((plan, transport, _), progress)| {
                let (cancel, progress, transport) =
                    (cancel.clone(), progress.clone(), transport.clone());
                scope.spawn(move || sojourn_engine::execute(plan, transport, cancel, progress))
            })
            .collect();
        rt.block_on(watch(&cancel, &mut panel, || {
            engines.iter().all(|e| e.is_finished())
        }));
        engines
            .into_iter()
            .map(|e| e.join().expect("engine thread panicked"))
            .collect::<Vec<_>>()
    });
    panel.finish();
    let mut built =
        runs.iter()
            .zip(reports)
            .map(|((plan, _, label), report)| -> anyhow::Result<RunResult> {
                Ok(sojourn_engine::result::build(
                    plan,
                    &report.context("running the load")?,
                    label,
                    Some(url.to_string()),
                    None,
                ))
            });
    let (a, b) = (built.next(), built.next());
    Ok([a.expect("two runs")?, b.expect("two runs")?])
}

async fn watch(
    cancel: &CancellationToken,
    panel: &mut crate::panel::Panel,
    finished: impl Fn() -> bool,
) {
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    // SIGTERM as Ctrl-C: it is how Kubernetes stops a pod (a failed Job stops its other
    // shards so), and a shard stopped early must still write what it measured, so that a
    // merge names it short rather than missing.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    loop {
        let terminated = async {
            match term.as_mut() {
                Some(t) => {
                    t.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c(), if !cancel.is_cancelled() => {
                // The panel goes first, so the terminal is itself again for the message and
                // the summary while the last answers drain.
                panel.finish();
                eprintln!("\ninterrupted: stopping the schedule and reporting what was gathered");
                cancel.cancel();
            }
            _ = terminated, if !cancel.is_cancelled() => {
                eprintln!("\nterminated (SIGTERM): stopping the schedule and reporting what was gathered");
                cancel.cancel();
            }
            _ = tick.tick() => {
                if finished() {
                    return;
                }
                panel.update();
            }
        }
    }
}

pub fn write_json(path: &std::path::Path, result: &RunResult) -> anyhow::Result<()> {
    use sojourn_report::output::{Json, Output as _};
    use sojourn_report::ReportError;
    let (what, cause): (&str, anyhow::Error) = match Json.write(result, path) {
        Ok(_) => return Ok(()),
        Err(ReportError::Io { source, .. }) => ("create", source.into()),
        Err(ReportError::Write(source)) => ("write", source.into()),
        Err(other) => ("write", other.into()),
    };
    Err(cause.context(format!("--json: cannot {what} {}", path.display())))
}

/// An open loop may need thousands of sockets during a stall; lift the soft limit to the hard
/// one so the pool, not the file-descriptor limit, decides.
fn raise_fd_limit() {
    let _ = rlimit::increase_nofile_limit(u64::MAX);
}

/// Whether the terminal shows the live panel (or progress line).
pub fn interactive() -> bool {
    std::io::stderr().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn durations_read_at_a_glance_in_one_unit() {
        let secs = Duration::from_secs_f64;
        for (d, text) in [
            (secs(0.04), "0.0 s"),
            (secs(3.21), "3.2 s"),
            (secs(59.9), "59.9 s"),
            (secs(750.0), "12.5 min"),
            (secs(7_200.0), "2.0 h"),
            (secs(47.0 * 3600.0), "47.0 h"),
            (secs(25.0 * 86_400.0), "25 days"),
            // What a --start-at of 2019 was in late 2026: never "6years 10months 25days …".
            (secs(6.9 * 365.25 * 86_400.0), "6.9 years"),
        ] {
            assert_eq!(short_duration(d), text, "{d:?}");
        }
    }

    fn validated(args: &[&str]) -> Validated {
        let mut all = vec!["sojourn", "run", "http://127.0.0.1:9/api"];
        all.extend_from_slice(args);
        let cli = crate::cli::parse_from(all).expect("parses");
        let crate::cli::Command::Run(a) = cli.command else {
            unreachable!()
        };
        validate(*a).expect("valid")
    }

    #[test]
    fn a_shard_says_where_it_stands_and_how_long_it_waits() {
        let at = SystemTime::now() + Duration::from_secs(60);
        let at_text = humantime::format_rfc3339_millis(at).to_string();
        let v = validated(&["--rate", "1000", "--shard", "1/4", "--start-at", &at_text]);
        let fingerprint = v.fingerprint();
        let early = at - Duration::from_millis(12_300);
        assert_eq!(
            announcement(&v, early).unwrap(),
            format!(
                "shard 1/4 of plan {}… at 1000 req/s (this shard: 250 req/s); \
                 waiting 12.3 s for --start-at {at_text}",
                &fingerprint[..8]
            )
        );
        let late = at + Duration::from_millis(3_200);
        assert!(
            announcement(&v, late).unwrap().ends_with(
                "(this shard: 250 req/s); --start-at was 3.2 s ago: requests due since then \
                 are sent at once and timed from their due time"
            ),
            "{:?}",
            announcement(&v, late)
        );
    }

    #[test]
    fn a_shaped_plan_gives_its_peak_and_a_plain_run_says_nothing() {
        let v = validated(&["--stages", "10s@0..1000,10s@1000", "--shard", "0/3"]);
        let line = announcement(&v, SystemTime::now()).unwrap();
        assert!(
            line.ends_with(" at up to 1000 req/s (this shard: up to 333.3 req/s); starting now"),
            "{line}"
        );
        assert_eq!(
            announcement(&validated(&["--rate", "10"]), SystemTime::now()),
            None
        );
        let at = SystemTime::now() + Duration::from_secs(5);
        let at_text = humantime::format_rfc3339_millis(at).to_string();
        let v = validated(&["--rate", "10", "--start-at", &at_text]);
        assert_eq!(
            announcement(&v, at - Duration::from_secs(5)).unwrap(),
            format!("waiting 5.0 s for --start-at {at_text}")
        );
    }

    #[test]
    fn a_start_at_past_the_schedule_is_refused_in_short_words() {
        let at = SystemTime::now() - Duration::from_secs(3 * 3600);
        let at_text = humantime::format_rfc3339_millis(at).to_string();
        let cli = crate::cli::parse_from([
            "sojourn",
            "run",
            "http://127.0.0.1:9/",
            "--rate",
            "10",
            "--start-at",
            &at_text,
        ])
        .unwrap();
        let crate::cli::Command::Run(a) = cli.command else {
            unreachable!()
        };
        let e = validate(*a).err().expect("refused");
        assert_eq!(
            e.to_string(),
            format!(
                "--start-at: {at_text} is 3.0 h ago, past the whole schedule (10.0 s); give a \
                 time still to come"
            )
        );
    }

    #[test]
    fn an_interruption_wins_over_the_checks_and_the_checks_over_the_objectives() {
        // (interrupted, check failed, gate passed) -> code
        for (interrupted, check_failed, gate_passed, code) in [
            (false, false, true, 0),
            (false, false, false, GATE_FAILED),
            (false, true, false, CHECK_FAILED),
            (true, false, true, INTERRUPTED),
            (true, true, false, INTERRUPTED),
        ] {
            assert_eq!(
                exit_code(interrupted, check_failed, gate_passed),
                code,
                "interrupted {interrupted}, check failed {check_failed}, gate passed {gate_passed}"
            );
        }
    }
}
