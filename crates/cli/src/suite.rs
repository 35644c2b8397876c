//! `sojourn suite`: its flags. The command itself is `sojourn::suite`.
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use sojourn::parse as args;
use sojourn::suite::*;

#[derive(clap::Args, Debug)]
pub struct SuiteArgs {
    /// Scenarios to run, comma-separated (built-ins or scenario TOML files).
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_SCENARIOS)]
    pub scenarios: Vec<String>,
    /// Peer tools to run, comma-separated: wrk, wrk2, ab, hey, vegeta, k6, oha, fortio, locust,
    /// h2load, ghz (against the same scenario served as gRPC).
    /// [default: every one found on PATH, ~/go/bin or ~/.cargo/bin]
    #[arg(long, value_delimiter = ',')]
    pub tools: Vec<String>,
    /// Run length and rate: short (10 s at 200 req/s) or full (seed 001: 60 s at 1,000 req/s).
    #[arg(long, value_enum, default_value = "short")]
    pub profile: Profile,
    /// Override the profile's run length.
    #[arg(long, value_parser = args::positive_duration)]
    pub duration: Option<Duration>,
    /// Override the profile's rate (one-worker scenarios keep their seeds' lower rates).
    #[arg(long, value_parser = args::rate)]
    pub rate: Option<f64>,
    /// Where the results, per-tool outputs and reports go.
    #[arg(long, default_value = "suite")]
    pub out: PathBuf,
    /// Also write the summary (schema sojourn.suite/1, as OUT/suite.json holds it) here once
    /// the suite is done. `-`: to standard output, and the tables and everything else to
    /// standard error.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl From<SuiteArgs> for sojourn::suite::SuiteSettings {
    fn from(a: SuiteArgs) -> Self {
        sojourn::suite::SuiteSettings {
            scenarios: a.scenarios,
            tools: a.tools,
            profile: a.profile,
            duration: a.duration,
            rate: a.rate,
            out: a.out,
            json: a.json,
        }
    }
}

pub fn run(a: SuiteArgs) -> anyhow::Result<ExitCode> {
    sojourn::suite::run(a.into(), &mut crate::panel::TerminalSinks::default())?;
    Ok(ExitCode::SUCCESS)
}
