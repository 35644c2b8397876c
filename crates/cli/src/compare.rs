//! `sojourn compare`: its flags. The command itself is `sojourn::compare`.
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use sojourn::compare::*;
use sojourn::parse as args;

#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// The target, e.g. http://127.0.0.1:8080/api, or a gRPC server, grpc://HOST:PORT with
    /// --proto and --call (see docs/grpc.md).
    #[arg(required_unless_present = "journey", conflicts_with = "journey")]
    pub url: Option<String>,
    /// What the server receives, in requests per second: a paced closed loop and the open loop
    /// each send half, at once (an unpaced closed loop has no rate; the open loop beside it
    /// sends all of it).
    #[arg(long, value_parser = args::rate)]
    pub rate: f64,
    /// The closed loop: paced (each connection sends at its share of --rate, or when its answer
    /// arrives if later) or unpaced (each sends as soon as it has its answer).
    #[arg(long, value_enum, default_value_t = ClosedMode::Paced)]
    pub closed_mode: ClosedMode,
    /// How long the two loops run (at once).
    #[arg(long, value_parser = args::positive_duration, default_value = "20s")]
    pub duration: Duration,
    /// Connections of the closed loop (a paced loop gives each rate/N of the slots).
    #[arg(long, short = 'c', value_parser = args::connections, default_value_t = sojourn::defaults::CLOSED_CONNECTIONS)]
    pub connections: usize,
    /// Worker threads for each loop. [default: the number of CPUs]
    #[arg(long, value_parser = args::threads)]
    pub threads: Option<usize>,
    /// Longest wait for one answer.
    #[arg(long, value_parser = args::positive_duration, default_value = sojourn::defaults::TIMEOUT_TEXT)]
    pub timeout: Duration,
    #[command(flatten)]
    pub reach: crate::run::ReachArgs,
    #[command(flatten)]
    pub grpc: crate::run::GrpcArgs,
    /// With a grpc:// target: the call's message as JSON, e.g. '{"name":"x"}'.
    #[arg(long, short = 'd')]
    pub body: Option<String>,
    /// Where to write the HTML report.
    #[arg(long, default_value = "compare.html")]
    pub report: PathBuf,
    /// Also write closed.json and open.json here.
    #[arg(long)]
    pub json_dir: Option<PathBuf>,
    /// Journeys instead of one URL: the closed journey loop (--connections virtual users, each
    /// starting its next journey when the last ends, timed from the sends, as k6's VUs are;
    /// --closed-mode does not apply) beside the open journey loop at --rate journeys per second,
    /// with a table step by step of what the closed loop hid (see docs/journeys.md).
    #[arg(long, value_name = "FILE")]
    pub journey: Option<PathBuf>,
    /// Write the comparison as one JSON document (schema sojourn.compare/1: the verdict and
    /// both loops' results) here. `-`: to standard output, and the table and everything else to standard error.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Serve a live web page of both loops on http://ADDR/ while they run: each loop's
    /// response time, service time, send lag and rates per interval, its lines dashed its own
    /// way, then the comparison's report (the --report page). Alone it listens on
    /// 127.0.0.1:5665; a bare port listens on 127.0.0.1; ADDRESS:PORT exactly there; port 0
    /// picks a free one. The URL is printed on stderr first.
    #[arg(long, value_name = "[ADDRESS:]PORT", num_args = 0..=1,
          default_missing_value = sojourn::dashboard::DEFAULT_ADDR,
          value_parser = sojourn::dashboard::listen_addr)]
    pub dashboard: Option<std::net::SocketAddr>,
    /// With --dashboard: keep serving the report this long after the command ends.
    #[arg(long, value_name = "DURATION", value_parser = args::duration, default_value = "0s",
          requires = "dashboard")]
    pub dashboard_linger: Duration,
}

impl From<CompareArgs> for sojourn::compare::CompareSettings {
    fn from(a: CompareArgs) -> Self {
        sojourn::compare::CompareSettings {
            url: a.url.unwrap_or_default(),
            rate: a.rate,
            closed_mode: a.closed_mode,
            duration: a.duration,
            connections: a.connections,
            threads: a.threads,
            timeout: a.timeout,
            headers: a.reach.headers,
            insecure: a.reach.insecure,
            cacert: a.reach.cacert,
            tls_server_name: a.reach.tls_server_name,
            report: a.report,
            json_dir: a.json_dir,
            json: a.json,
            journey: a.journey,
            grpc: a.grpc.into(),
            body: a.body,
        }
    }
}

pub fn run(a: CompareArgs) -> anyhow::Result<ExitCode> {
    let page = sojourn::dashboard::Page::open_if(a.dashboard, a.dashboard_linger)?;
    let mut sinks = crate::panel::TerminalSinks::feeding(page.as_ref());
    let html = sojourn::compare::run(a.into(), &mut sinks)?;
    if let Some(page) = page {
        page.end(html)?;
    }
    Ok(ExitCode::SUCCESS)
}
