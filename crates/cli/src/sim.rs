//! `sojourn sim`: its flags. The command itself is `sojourn::sim`.
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use sojourn::parse::{self as args, ArrivalKind};
use sojourn::sim::{ClientKind, ClosedUntil};

#[derive(clap::Args, Debug)]
pub struct SimArgs {
    /// A built-in scenario (healthy, hiccup, ramp, gc-pauses, saturation, every-nth, bimodal,
    /// spike) or the path of a scenario TOML file. See `sojourn serve --list`.
    #[arg(long, value_name = "NAME|FILE", default_value = "hiccup")]
    scenario: String,
    /// Override a built-in's parameter, e.g. `--set hiccup.at=5s`. Repeatable.
    #[arg(long = "set", value_name = "NAME.PARAM=VALUE")]
    set: Vec<String>,
    /// The client model: open (schedule, FIFO pool), closed (N looping connections), both
    /// (side by side), tracking (one request at a time, measured from its slot: seeds 000/004),
    /// or paced (N connections, each on its share of the slots: hey -q, bombardier -r). With
    /// --journey: open (journeys arriving at --rate), closed (virtual users, each starting its
    /// next journey when the last ends, every step timed from its send, as k6's and Locust's
    /// users are) or both. [default: both; with --journey, open]
    #[arg(long, value_enum)]
    client: Option<ClientKind>,
    /// Requests per second of the open loop's (or tracking client's) schedule. [default: 1000]
    #[arg(long, value_parser = args::rate)]
    rate: Option<f64>,
    /// How arrivals are spaced: constant, poisson (seeded), or ramp (from --rate to --ramp-to).
    #[arg(long, value_enum, default_value_t = ArrivalKind::Constant)]
    arrival: ArrivalKind,
    /// With --arrival ramp: the rate at the end of the run.
    #[arg(long, value_parser = args::rate)]
    ramp_to: Option<f64>,
    /// With --arrival poisson: the random seed.
    #[arg(long, value_parser = args::seed)]
    seed: Option<u64>,
    /// Shaped load instead of one rate, as `sojourn run --stages`: e.g.
    /// `30s@0..1000,5m@1000,spike=30s@1000..5000,1m@5000`.
    #[arg(long, value_name = "STAGES", value_parser = args::stages,
          conflicts_with_all = ["rate", "duration", "requests", "ramp_to", "sweep"])]
    stages: Option<sojourn_core::Stages>,
    /// How long the schedule runs (virtual time). [default: 60s]
    #[arg(long, value_parser = args::positive_duration, conflicts_with = "requests")]
    duration: Option<Duration>,
    /// This many requests in all, instead of a duration.
    #[arg(long, value_parser = args::requests)]
    requests: Option<u64>,
    /// Open loop: the most connections (due requests queue FIFO for one). Closed loop: the number
    /// of looping connections. [default: 2048 open, 10 closed]
    #[arg(long, short = 'c', value_parser = args::connections)]
    connections: Option<usize>,
    /// With --client both: the closed loop's connections, when they differ from the open pool.
    /// With --journey: the closed journey loop's virtual users (--max-journeys is the open
    /// loop's). [default: 10]
    #[arg(long, value_parser = args::connections)]
    closed_connections: Option<usize>,
    /// With --duration: stop the closed loop at the duration, or after as many requests as the
    /// open schedule has (rate × duration, like the seeds' iteration-counted tools).
    #[arg(long, value_enum, default_value_t = ClosedUntil::Duration)]
    closed_until: ClosedUntil,
    /// Lanes, as the engine's worker threads: each has its slice of the schedule and its share of
    /// the connections. Give a run's --threads to reproduce its Poisson arrivals exactly.
    #[arg(long, value_parser = args::threads, default_value_t = 1)]
    threads: usize,
    /// Longest wait for one answer; also the longest drain after the schedule ends.
    #[arg(long, value_parser = args::positive_duration, default_value = sojourn::defaults::TIMEOUT_TEXT)]
    timeout: Duration,
    /// A fixed round trip added to every exchange (network plus client overhead).
    #[arg(long, value_parser = args::duration, default_value = "0s")]
    rtt: Duration,
    /// Journeys in virtual time: a TOML journey file (see docs/journeys.md), arriving by --rate
    /// (journeys per second); each step's service is drawn from the scenario, and its think
    /// times are the draws `run --journey` makes with the same --seed. The ground truth for
    /// `run --journey`.
    #[arg(long, value_name = "FILE", conflicts_with = "sweep")]
    journey: Option<PathBuf>,
    /// With --journey: the most journeys at once, each on a connection of its own; with
    /// --client closed, the virtual users (with --client both, give them --closed-connections).
    /// [default: 1000 open, 10 closed]
    #[arg(long, value_name = "N", requires = "journey", value_parser = args::connections)]
    max_journeys: Option<usize>,
    /// Write the result document(s); with both clients, FILE.closed.json and FILE.open.json.
    /// `-`: the document of one client (or of --sweep) to standard output, and everything
    /// else to standard error.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write HdrHistogram percentile distributions PREFIX[.CLIENT].response.hgrm (and .service,
    /// .send_lag), in milliseconds.
    #[arg(long, value_name = "PREFIX")]
    hgrm: Option<PathBuf>,
    /// Write an HdrHistogram interval log; with both clients, FILE.closed.hlog and FILE.open.hlog.
    #[arg(long, value_name = "FILE")]
    hlog: Option<PathBuf>,
    /// Width of the timeline's intervals.
    #[arg(long, value_parser = args::positive_duration, default_value = sojourn::defaults::INTERVAL_TEXT)]
    interval: Duration,
    /// Sweep the offered rate like `sojourn sweep` (open loop, one step per rate): the model's
    /// capacity cliff, for comparison with a real sweep. --json writes the sweep document.
    #[arg(long)]
    sweep: bool,
    #[command(flatten)]
    sweep_flags: crate::sweep::SweepFlags,
    /// Simulate N independent repetitions, each with fresh arrival and scenario seeds (the
    /// given ones are the first's), and report each plus a between-run interval for every
    /// percentile. In virtual time, so no pause between them.
    #[arg(long, value_name = "N", value_parser = args::repetitions)]
    repeat: Option<u32>,
}

impl From<SimArgs> for sojourn::sim::SimSettings {
    fn from(a: SimArgs) -> Self {
        sojourn::sim::SimSettings {
            scenario: a.scenario,
            set: a.set,
            // Journeys default to the open loop alone, as `run --journey` runs them.
            client: a.client.unwrap_or(match a.journey {
                Some(_) => ClientKind::Open,
                None => ClientKind::Both,
            }),
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
            closed_connections: a.closed_connections,
            closed_until: a.closed_until,
            threads: a.threads,
            timeout: a.timeout,
            rtt: a.rtt,
            json: a.json,
            hgrm: a.hgrm,
            hlog: a.hlog,
            interval: a.interval,
            sweep: a.sweep,
            sweep_flags: a.sweep_flags.into(),
            repeat: a.repeat,
            journey: a.journey,
            max_journeys: a.max_journeys,
        }
    }
}

pub fn run(a: SimArgs) -> anyhow::Result<ExitCode> {
    sojourn::sim::run(a.into())?;
    Ok(ExitCode::SUCCESS)
}
