//! `sojourn demo`: its flags. The command itself is `sojourn::demo`.
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use sojourn::compare::ClosedMode;
use sojourn::parse as args;

#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// The pathology to demonstrate: a built-in (hiccup, healthy, gc-pauses, ramp, saturation,
    /// every-nth, bimodal, spike) or a scenario TOML file.
    #[arg(long, value_name = "NAME|FILE", default_value = "hiccup")]
    pub scenario: String,
    /// Override a scenario parameter, e.g. `--set hiccup.duration=2s`. Repeatable.
    #[arg(long = "set", value_name = "NAME.PARAM=VALUE")]
    pub set: Vec<String>,
    /// Requests per second for the open loop. [default: 1000; 450 for every-nth and 20 for
    /// bimodal, as in their seeds: their one-worker servers cannot take 1000]
    #[arg(long, value_parser = args::rate)]
    pub rate: Option<f64>,
    /// How long each loop runs.
    #[arg(long, value_parser = args::positive_duration, default_value = "20s")]
    pub duration: Duration,
    /// Connections of the closed loop (each sends, waits, records, repeats). [default: paced,
    /// 20 (each carries rate/20, half busy at the default 1000 req/s × 10 ms, so it can catch
    /// up after a stall); unpaced, 10 as in seed 001; 1 for one-worker scenarios (every-nth,
    /// bimodal), as in their seeds: more would queue behind the one worker and measure the
    /// client's own contention]
    #[arg(long, value_parser = args::connections)]
    pub connections: Option<usize>,
    /// The closed loop: paced at --rate (hey -q, bombardier -r) or unpaced (ab, wrk).
    #[arg(long, value_enum, default_value_t = ClosedMode::Paced)]
    pub closed_mode: ClosedMode,
    /// Where to write the HTML report.
    #[arg(long, default_value = "demo.html")]
    pub report: PathBuf,
    /// Also write the three result documents (closed.json, open.json, model.json) here.
    #[arg(long)]
    pub json_dir: Option<PathBuf>,
    /// Journeys instead of single requests: a built-in three-step journey (log in, browse,
    /// check out, with think times) against the embedded server; the closed journey loop
    /// (virtual users sized to the same journey rate, timed from the sends, as k6's VUs are)
    /// beside the open journey loop at once, step by step. --rate is then journeys per second
    /// [default: 50] and --connections the virtual users.
    #[arg(long)]
    pub journey: bool,
    /// Serve a live web page of the demo on http://ADDR/: the closed loop, then the open loop,
    /// each with its own lines (response time, service time, send lag and rates per interval),
    /// then the demo's report (the --report page). It opens no browser: the URL is printed on
    /// stderr before anything else. Alone it listens on 127.0.0.1:5665; a bare port listens on
    /// 127.0.0.1; ADDRESS:PORT exactly there; port 0 picks a free one.
    #[arg(long, value_name = "[ADDRESS:]PORT", num_args = 0..=1,
          default_missing_value = sojourn::dashboard::DEFAULT_ADDR,
          value_parser = sojourn::dashboard::listen_addr)]
    pub dashboard: Option<std::net::SocketAddr>,
    /// With --dashboard: keep serving the report this long after the command ends.
    #[arg(long, value_name = "DURATION", value_parser = args::duration, default_value = "0s",
          requires = "dashboard")]
    pub dashboard_linger: Duration,
}

impl From<DemoArgs> for sojourn::demo::DemoSettings {
    fn from(a: DemoArgs) -> Self {
        sojourn::demo::DemoSettings {
            scenario: a.scenario,
            set: a.set,
            rate: a.rate,
            duration: a.duration,
            connections: a.connections,
            closed_mode: a.closed_mode,
            report: a.report,
            json_dir: a.json_dir,
            journey: a.journey,
        }
    }
}

pub fn run(a: DemoArgs) -> anyhow::Result<ExitCode> {
    // First, before the demo prints anything: where to look.
    let page = sojourn::dashboard::Page::open_if(a.dashboard, a.dashboard_linger)?;
    let mut sinks = crate::panel::TerminalSinks::feeding(page.as_ref());
    let html = sojourn::demo::run(a.into(), &mut sinks)?;
    if let Some(page) = page {
        page.end(html)?;
    }
    Ok(ExitCode::SUCCESS)
}
