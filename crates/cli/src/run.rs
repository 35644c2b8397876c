//! `sojourn run URL`: drive HTTP load, open loop by default.
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use sojourn::execute::Job;
use sojourn::parse::{self as args, short_duration, ArrivalKind};
use sojourn::RunSpec;
use sojourn_core::Arrival;
use sojourn_engine::Load;

use crate::exit::{CHECK_FAILED, GATE_FAILED, INTERRUPTED};

/// The arguments as typed.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The target, e.g. http://127.0.0.1:8080/api (or `url` in the --plan file), or a gRPC
    /// server, grpc://HOST:PORT (grpcs:// over TLS) with --proto and --call (see docs/grpc.md).
    /// Beside --targets only a gRPC server, whose calls the file gives (checked when run).
    #[arg(required_unless_present_any = ["plan", "targets", "journey"])]
    pub url: Option<String>,
    /// Many different requests instead of one URL: a file in vegeta's HTTP format (a
    /// `METHOD URL` line, header lines, an optional `@body-file`, a blank line between
    /// targets) or JSON Lines ({"method", "url", "header", "body" (base64), "label",
    /// "weight"}). Request i sends a target chosen from i alone, and each label gets its own
    /// histograms (see docs/targets.md). Beside a grpc://HOST:PORT server: JSON Lines of calls,
    /// {"call", "data", "metadata", "label", "weight"} (see docs/grpc.md).
    #[arg(long, value_name = "FILE",
          conflicts_with_all = ["method", "headers", "body_file"])]
    pub targets: Option<PathBuf>,
    /// With --targets: take them in turn (weights interleaved), or at random by weight
    /// (seeded by --seed).
    #[arg(long, value_enum, default_value_t = sojourn::transport::TargetsOrder::RoundRobin)]
    pub targets_order: sojourn::transport::TargetsOrder,
    /// Journeys instead of requests: a TOML journey file (see docs/journeys.md). Journeys
    /// arrive by --rate (journeys per second), --arrival, --stages or --plan; step 1 is due with
    /// its journey, step k+1 when step k's answer arrived plus its think time, and every step
    /// is timed from when it was due. Each step and each journey gets its own histograms.
    #[arg(long, value_name = "FILE",
          conflicts_with_all = ["url", "targets", "method", "headers", "body", "body_file", "http2"])]
    pub journey: Option<PathBuf>,
    /// With --journey: the most journeys running at once, each on a connection of its own; a
    /// due journey with no free place waits, FIFO, timed from its due time. With --closed: the
    /// virtual users, each starting its next journey when the last ends, timed from the sends
    /// (k6's constant VUs). [default: 1000 open, 10 closed]
    #[arg(long, value_name = "N", requires = "journey", value_parser = args::connections)]
    pub max_journeys: Option<usize>,
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
    #[arg(long, value_parser = args::positive_duration, default_value = sojourn::defaults::TIMEOUT_TEXT)]
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
    #[command(flatten)]
    pub reach: ReachArgs,
    #[command(flatten)]
    pub grpc: GrpcArgs,
    /// Request body. With a grpc:// target: the call's message as JSON, e.g. '{"name":"x"}'.
    #[arg(long, short = 'd', conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Request body read from a file.
    #[arg(long)]
    pub body_file: Option<PathBuf>,
    /// Write the result document (JSON, schema sojourn.result/5) here. `-`: to standard output, and the summary and everything else to standard error.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Width of the timeline's intervals, and of the last interval the live panel and
    /// --metrics-listen show.
    #[arg(long, value_parser = args::positive_duration, default_value = sojourn::defaults::INTERVAL_TEXT)]
    pub interval: Duration,
    /// A name for this run in reports.
    #[arg(long)]
    pub label: Option<String>,
    /// Exit 3 if the self-check finds that the generator itself fell behind, that the sends
    /// did not follow the arrival process (conformance), or that the run is not valid (a test
    /// of the validity verdict failed: rate, arrival law, independence or stationarity).
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
    #[arg(long, value_parser = args::duration, default_value = sojourn::defaults::TIMER_SPIN_TEXT)]
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
    #[arg(long, value_name = "[ADDRESS:]PORT", value_parser = sojourn::metrics::listen_addr)]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Serve a live web page of the run on http://ADDR/ (response time, service time and send
    /// lag per interval, rates, stage markers, what is due and waiting, failures, the machine's
    /// floor, the self-check and the --slo objectives so far), which becomes the run's HTML
    /// report when it ends. Alone it
    /// listens on 127.0.0.1:5665; a bare port listens on 127.0.0.1; ADDRESS:PORT exactly there;
    /// port 0 picks a free one. The URL is printed on stderr first.
    #[arg(long, value_name = "[ADDRESS:]PORT", num_args = 0..=1,
          default_missing_value = sojourn::dashboard::DEFAULT_ADDR,
          value_parser = sojourn::dashboard::listen_addr)]
    pub dashboard: Option<std::net::SocketAddr>,
    /// With --dashboard: keep serving the report this long after the run ends.
    #[arg(long, value_name = "DURATION", value_parser = args::duration, default_value = "0s",
          requires = "dashboard")]
    pub dashboard_linger: Duration,
    /// --slo and --junit: gate the run on service-level objectives (exit 4 when one fails).
    #[command(flatten)]
    pub gate: crate::gate::GateArgs,
    /// Run N independent repetitions, each with a fresh arrival seed (--seed is the first's),
    /// and report each plus a between-run interval for every percentile. The document holds
    /// every repetition; its histograms are the repetitions merged.
    #[arg(long, value_name = "N", value_parser = args::repetitions)]
    pub repeat: Option<u32>,
    /// With --repeat: the pause between two repetitions, for the target to settle.
    #[arg(long, value_name = "DURATION", value_parser = args::duration,
          default_value = sojourn::defaults::REPEAT_PAUSE_TEXT)]
    pub repeat_pause: Duration,
}

/// A gRPC call (`grpc://HOST:PORT`): its service definition, method and metadata; the flags
/// `run`, `compare` and `sweep` share. Beside another target they are refused when checked
/// (a clap conflict could only name flags every one of those commands has).
#[derive(clap::Args, Debug, Clone)]
pub struct GrpcArgs {
    /// With a grpc:// target: the .proto file that declares the service, compiled in-process
    /// (no protoc needed). Without it, the server is asked by server reflection.
    #[arg(long, value_name = "FILE")]
    pub proto: Option<PathBuf>,
    /// With --proto: a directory its imports are looked up in (before the file's own);
    /// repeatable.
    #[arg(long, value_name = "DIR")]
    pub import_path: Vec<PathBuf>,
    /// With a grpc:// target: the unary method to call, pkg.Service/Method.
    #[arg(long, value_name = "METHOD")]
    pub call: Option<String>,
    /// With a grpc:// target: call metadata, "key: value"; repeatable.
    #[arg(long, short = 'm', value_name = "KEY: VALUE")]
    pub metadata: Vec<String>,
}

impl From<GrpcArgs> for sojourn::grpc::GrpcSettings {
    fn from(a: GrpcArgs) -> Self {
        sojourn::grpc::GrpcSettings {
            proto: a.proto,
            import_paths: a.import_path,
            call: a.call,
            metadata: a.metadata,
        }
    }
}

/// How to reach an HTTP target: the flags `run`, `compare` and `sweep` share.
#[derive(clap::Args, Debug, Clone)]
pub struct ReachArgs {
    /// A request header, "Name: value"; repeatable.
    #[arg(long = "header", short = 'H', value_parser = args::header)]
    pub headers: Vec<(String, String)>,
    /// Skip TLS certificate verification (self-signed test servers).
    #[arg(long, conflicts_with = "cacert")]
    pub insecure: bool,
    /// Trust only the CA certificates in this PEM file for https (a private CA), instead of
    /// the public roots.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Check the server's TLS certificate against NAME, and send NAME as SNI, instead of the
    /// URL's host (https:// and grpcs://): for a server reached by an address its certificate
    /// does not name. Host and :authority stay the URL's.
    #[arg(long, value_name = "NAME")]
    pub tls_server_name: Option<String>,
}

impl From<RunArgs> for sojourn::RunSettings {
    fn from(a: RunArgs) -> Self {
        sojourn::RunSettings {
            workload: sojourn::transport::WorkloadSettings {
                url: a.url,
                targets: a.targets,
                targets_order: a.targets_order,
                method: a.method,
                headers: a.reach.headers,
                body: a.body,
                body_file: a.body_file,
                journey: a.journey,
                grpc: a.grpc.into(),
            },
            protocol: sojourn::transport::ProtocolSettings {
                http2: a.http2,
                streams: a.streams,
                insecure: a.reach.insecure,
                cacert: a.reach.cacert,
                tls_server_name: a.reach.tls_server_name,
            },
            plan: a.plan,
            shard: a.shard,
            shard_from_env: a.shard_from_env,
            shard_count: a.shard_count,
            start_at: a.start_at,
            explicit: a.explicit,
            load: sojourn::settings::LoadSettings {
                rate: a.rate,
                arrival: a.arrival,
                ramp_to: a.ramp_to,
                seed: a.seed,
                stages: a.stages,
                duration: a.duration,
                requests: a.requests,
            },
            connections: a.connections,
            max_journeys: a.max_journeys,
            threads: a.threads,
            timeout: a.timeout,
            closed: a.closed,
            json: a.json,
            interval: a.interval,
            label: a.label,
            strict: a.strict,
            warmup: a.warmup,
            hgrm: a.hgrm,
            hlog: a.hlog,
            samples: a.samples,
            sample_ratio: a.sample_ratio,
            timer_spin: a.timer_spin,
            timer_slack: a.timer_slack,
            no_hiccup_meter: a.no_hiccup_meter,
            metrics_listen: a.metrics_listen,
            gate: a.gate.into(),
            repeat: a.repeat,
            repeat_pause: a.repeat_pause,
        }
    }
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    if args.dashboard.is_some() && args.repeat.is_some() {
        return Err(sojourn::bad_input!("--repeat: not with --dashboard: the page shows one run as it goes, and would show the first repetition only; drop --dashboard"));
    }
    let metrics = args
        .metrics_listen
        .map(sojourn::metrics::bind)
        .transpose()?;
    let dashboard = args.dashboard.map(sojourn::dashboard::bind).transpose()?;
    let linger = args.dashboard_linger;
    let mut v = sojourn::validate(args.into())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let transport = rt.block_on(v.connectable())?;
    v.fit_pool(&transport);
    if let Some(line) = announcement(&v, std::time::SystemTime::now()) {
        eprintln!("{line}");
    }
    let samples = sojourn::outputs::SampleThread::start(&v.outputs)?;
    let dashboard = dashboard
        .map(sojourn::dashboard::Dashboard::start)
        .transpose()?;
    if let Some(d) = &dashboard {
        d.judge(v.gate.objectives.clone());
    }
    let mut plan = v.plan();
    plan.samples = samples.as_ref().map(|s| s.sender());
    let result = match v.repeat {
        None => {
            let sinks = crate::panel::TerminalSinks {
                metrics,
                dashboard: dashboard.as_ref().map(|d| d.feeder()),
            };
            watched_run(&rt, &plan, transport, &v, sinks)
        }
        Some(repeat) => sojourn::repeat::run_repeated(&rt, &plan, repeat, |k, plan| {
            eprintln!("repetition {} of {}", k + 1, repeat.count);
            let sinks = crate::panel::TerminalSinks::default();
            watched_run(&rt, plan, transport.clone(), &v, sinks)
        }),
    };
    drop(plan);
    let written = samples.map(|s| s.finish()).transpose()?;
    let result = result?;
    print!("{}", sojourn_report::text::summary(&result));
    if let Some(path) = &v.json {
        sojourn::outputs::write_json(path, &result)?;
    }
    sojourn::outputs::write_files(&v.outputs, &result)?;
    if let (Some(counts), Some(path)) = (written, &v.outputs.samples) {
        println!(
            "samples: {} of {} finished requests written to {}",
            counts.written,
            counts.seen,
            path.display()
        );
    }
    let gate_passed = v.gate.check(&result)?;
    if let Some(dashboard) = dashboard {
        dashboard.end(&result)?;
        dashboard.linger(&rt, linger);
    }
    Ok(ExitCode::from(exit_code(
        result.interrupted,
        v.strict && !self_check_passed(&result),
        gate_passed,
    )))
}

/// Runs `plan` with the terminal's panel, and the metrics endpoint and dashboard when asked
/// for.
fn watched_run(
    rt: &tokio::runtime::Runtime,
    plan: &sojourn_engine::Plan,
    transport: sojourn::transport::AnyTransport,
    v: &RunSpec,
    mut sinks: crate::panel::TerminalSinks,
) -> anyhow::Result<sojourn_core::RunResult> {
    let job = Job {
        plan,
        transport,
        progress: sojourn::execute::progress(plan, sojourn::execute::Sinks::live(&sinks)),
        about: v.about(),
        journeys: v.script(),
    };
    sojourn::execute::run(rt, job, &mut sinks)
}

fn announcement(v: &RunSpec, now: std::time::SystemTime) -> Option<String> {
    let place = (!v.shard.is_whole()).then(|| shard_line(v));
    let start = v.start_at.map(|at| start_line(at, now));
    match (place, start) {
        (None, None) => None,
        (Some(place), None) => Some(format!("{place}; starting now")),
        (None, Some(start)) => Some(start),
        (Some(place), Some(start)) => Some(format!("{place}; {start}")),
    }
}

/// `shard 1/4 of plan 8f3a1c2d… at 1000 req/s (this shard: 250 req/s)`: the fingerprint is the
/// one the result will carry, so shards that print different ones will not merge.
fn shard_line(v: &RunSpec) -> String {
    let shard = v.shard;
    let fingerprint = v.fingerprint();
    let short = &fingerprint[..fingerprint.len().min(8)];
    let rates = match &v.load {
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

/// The run's exit code once everything is written. A run cut short (6) says least about what
/// was asked for, so it wins; then a generator that fell behind (3), which measured itself;
/// then the objectives (4).
/// What `--strict` asks of a run: the generator kept up, its sends conformed, and the validity
/// verdict found nothing failed. A result without a verdict (none is made for imports) is
/// judged on the first two.
fn self_check_passed(result: &sojourn_core::RunResult) -> bool {
    let s = &result.statistics;
    let conforms = s.conformance.as_ref().is_none_or(|c| c.conforms);
    let valid = s.validity.as_ref().is_none_or(|v| v.valid);
    result.checks.passed() && conforms && valid
}

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

    fn validated(args: &[&str]) -> RunSpec {
        let mut all = vec!["sojourn", "run", "http://127.0.0.1:9/api"];
        all.extend_from_slice(args);
        let cli = crate::cli::parse_from(all).expect("parses");
        let crate::cli::Command::Run(a) = cli.command else {
            unreachable!()
        };
        sojourn::validate((*a).into()).expect("valid")
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
        let e = sojourn::validate((*a).into()).err().expect("refused");
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

    #[test]
    fn a_bad_metrics_listen_exits_2_naming_the_flag() {
        let args = [
            "sojourn",
            "run",
            "http://127.0.0.1:9/",
            "--metrics-listen",
            "abc",
        ];
        let e = crate::cli::parse_from(args).unwrap_err();
        let line = crate::exit::one_line(&e).unwrap();
        assert!(e.use_stderr());
        assert!(
            line.starts_with("error: --metrics-listen: expected") && line.ends_with("got \"abc\""),
            "{line}"
        );
    }

    fn dashboard_of(flags: &[&str]) -> Option<std::net::SocketAddr> {
        let args = ["sojourn", "run", "http://127.0.0.1:9/"]
            .iter()
            .chain(flags);
        match crate::cli::parse_from(args).unwrap().command {
            crate::cli::Command::Run(a) => a.dashboard,
            _ => unreachable!("a run"),
        }
    }

    #[test]
    fn dashboard_alone_is_loopback_5665_and_a_port_alone_is_loopback() {
        let at = |s: &str| Some(s.parse().unwrap());
        assert_eq!(dashboard_of(&["--dashboard"]), at("127.0.0.1:5665"));
        assert_eq!(
            dashboard_of(&["--dashboard", "--rate", "5"]),
            at("127.0.0.1:5665")
        );
        assert_eq!(dashboard_of(&["--dashboard", "0"]), at("127.0.0.1:0"));
        assert_eq!(dashboard_of(&["--dashboard=8080"]), at("127.0.0.1:8080"));
        assert_eq!(
            dashboard_of(&["--dashboard", "0.0.0.0:80"]),
            at("0.0.0.0:80")
        );
        assert_eq!(dashboard_of(&[]), None);
    }
}
