//! `sojourn sweep URL`: one open-loop step per offered rate, or a search for the highest rate
//! that meets an SLO; the seed's capacity-cliff table with an honest saturation verdict. The
//! sweep itself is `sojourn::sweep`; this is its flags and its terminal.
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use sojourn::bad_input;
use sojourn::parse as args;
use sojourn::sweep::{cliff_line, finish, show_step, HttpSweep, SweepSettings};

/// The flags that describe a sweep, shared by `sojourn sweep` and `sojourn sim --sweep`.
#[derive(clap::Args, Debug, Clone)]
pub struct SweepFlags {
    /// Offered rates, comma-separated, in requests per second: --rates 5,10,20,30.
    #[arg(long, value_parser = args::rate, value_delimiter = ',', conflicts_with_all = ["from", "to", "steps"])]
    pub rates: Option<Vec<f64>>,
    /// The lowest rate (with --to and --steps, or with --search).
    #[arg(long, value_parser = args::rate)]
    pub from: Option<f64>,
    /// The highest rate; --search never offers more.
    #[arg(long, value_parser = args::rate)]
    pub to: Option<f64>,
    /// How many evenly spaced rates from --from to --to.
    #[arg(long, value_parser = args::steps)]
    pub steps: Option<usize>,
    /// How long each step offers its rate, settle included.
    #[arg(long, value_parser = args::positive_duration, default_value = "20s")]
    pub step: Duration,
    /// The start of each step left out of its percentiles and verdict. [default: a quarter
    /// of --step, at most 5s]
    #[arg(long, value_parser = args::duration)]
    pub settle: Option<Duration>,
    /// A latency objective on the response time, e.g. "p99<200ms"; repeatable.
    #[arg(long)]
    pub slo: Vec<String>,
    /// Find the highest rate that is not saturated and meets every --slo: double from --from
    /// until a step fails, then bisect to --resolution.
    #[arg(long)]
    pub search: bool,
    /// With --search: stop once the bracket is this many requests per second wide.
    #[arg(long, value_parser = args::rate, default_value_t = 1.0)]
    pub resolution: f64,
    /// With --search: the most steps it may run.
    #[arg(long, value_parser = args::steps, default_value_t = 16)]
    pub max_probes: usize,
    /// Write an HTML report here: the table, offered vs achieved rate, and response
    /// percentiles against the offered rate, with the cliff shaded.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

impl From<SweepFlags> for SweepSettings {
    fn from(a: SweepFlags) -> Self {
        SweepSettings {
            rates: a.rates,
            from: a.from,
            to: a.to,
            steps: a.steps,
            step: a.step,
            settle: a.settle,
            slo: a.slo,
            search: a.search,
            resolution: a.resolution,
            max_probes: a.max_probes,
            report: a.report,
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    /// The target, e.g. http://127.0.0.1:8080/api, or a gRPC server, grpc://HOST:PORT with
    /// --proto and --call (see docs/grpc.md).
    pub url: String,
    #[command(flatten)]
    pub sweep: SweepFlags,
    /// The most connections to open (due requests queue FIFO for a free one).
    #[arg(long, short = 'c', value_parser = args::connections, default_value_t = sojourn::defaults::OPEN_CONNECTIONS)]
    pub connections: usize,
    /// Worker threads. [default: the number of CPUs]
    #[arg(long, value_parser = args::threads)]
    pub threads: Option<usize>,
    /// Longest wait for one answer, and the drain after each step: requests still unanswered
    /// then are censored, which marks the step saturated.
    #[arg(long, value_parser = args::positive_duration, default_value = sojourn::defaults::SWEEP_TIMEOUT_TEXT)]
    pub timeout: Duration,
    #[command(flatten)]
    pub reach: crate::run::ReachArgs,
    #[command(flatten)]
    pub grpc: crate::run::GrpcArgs,
    /// With a grpc:// target: the call's message as JSON, e.g. '{"name":"x"}'.
    #[arg(long, short = 'd')]
    pub body: Option<String>,
    /// Write the sweep (every step's figures, verdict and whole result) as JSON (schema
    /// sojourn.sweep/1) here. `-`: to standard output, and the summary and everything else to standard error.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The scenario the target serves (a built-in name or a TOML file), when it is `sojourn
    /// serve`: the same steps are simulated, and the model's cliff is printed and drawn beside
    /// the measured one.
    #[arg(long, value_name = "SCENARIO")]
    pub model: Option<String>,
    /// Serve a live web page of the sweep on http://ADDR/: each step's response time, service
    /// time, send lag and rates per interval as it runs, a table of the finished steps (rate
    /// asked, achieved, p50, p99, verdict) that grows as each finishes, then the sweep's report
    /// (the --report page). Alone it listens on 127.0.0.1:5665; a bare port listens on
    /// 127.0.0.1; ADDRESS:PORT exactly there; port 0 picks a free one. The URL is printed on
    /// stderr first.
    #[arg(long, value_name = "[ADDRESS:]PORT", num_args = 0..=1,
          default_missing_value = sojourn::dashboard::DEFAULT_ADDR,
          value_parser = sojourn::dashboard::listen_addr)]
    pub dashboard: Option<std::net::SocketAddr>,
    /// With --dashboard: keep serving the report this long after the command ends.
    #[arg(long, value_name = "DURATION", value_parser = args::duration, default_value = "0s",
          requires = "dashboard")]
    pub dashboard_linger: Duration,
}

pub fn run(a: SweepArgs) -> anyhow::Result<ExitCode> {
    let page = sojourn::dashboard::Page::open_if(a.dashboard, a.dashboard_linger)?;
    let config = SweepSettings::from(a.sweep.clone()).validate()?;
    let model = a
        .model
        .as_deref()
        .map(|m| sojourn::scenario_arg::resolve(m, &[]))
        .transpose()
        .map_err(|e| bad_input!("--model: {e:#}"))?;
    let sweep = HttpSweep {
        url: a.url.clone(),
        connections: a.connections,
        threads: a.threads,
        timeout: a.timeout,
        headers: a.reach.headers.clone(),
        insecure: a.reach.insecure,
        cacert: a.reach.cacert.clone(),
        tls_server_name: a.reach.tls_server_name.clone(),
        grpc: a.grpc.clone().into(),
        body: a.body.clone(),
    };
    // Before the first line: a target the sweep cannot run is one line of bad input.
    sweep.check(&config)?;
    eprintln!(
        "sweeping {}: {} per step, the first {} settling",
        a.url,
        humantime::format_duration(config.step),
        humantime::format_duration(config.settle)
    );
    let sinks = &mut crate::panel::TerminalSinks::feeding(page.as_ref());
    let (outcome, threads) = sweep.run(&config, sinks, |step| {
        show_step(step);
        if let Some(page) = &page {
            page.step(step);
        }
    })?;
    let modelled = match &model {
        Some(scenario) => {
            let pool = sojourn::model::ModelPool {
                connections: a.connections,
                threads,
                timeout: a.timeout,
                rtt: Duration::ZERO,
            };
            let m = sojourn::model::model_sweep(scenario, &config, &pool, show_step)?;
            Some((scenario, m))
        }
        None => None,
    };
    let model_cliff = modelled
        .as_ref()
        .and_then(|(_, m)| m.bracket.passing.zip(m.bracket.failing));
    let written = finish(&config, &outcome, &a.url, a.json.as_deref(), model_cliff)?;
    if let Some((scenario, m)) = &modelled {
        println!("model ({scenario}): {}", cliff_line(&config, m));
    }
    if let Some(page) = page {
        let html = match written {
            Some(html) => html,
            None => sojourn::sweep::page(&config, &outcome, &a.url, model_cliff)?,
        };
        page.end(html)?;
    }
    Ok(ExitCode::SUCCESS)
}
