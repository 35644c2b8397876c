//! `sojourn diff`: its flags. The command itself is `sojourn::diff`.
use std::path::PathBuf;
use std::process::ExitCode;

use sojourn::parse as args;

#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// The baseline: a result file from `run`, `sim`, `suite` or an imported peer tool; `-`
    /// reads it from standard input.
    pub a: PathBuf,
    /// The result to compare with it; `-` reads it from standard input (one of the two at most).
    pub b: PathBuf,
    /// Compare even when the runs asked for different loads (rate, arrival process, length,
    /// mode). The differences are still printed.
    #[arg(long)]
    pub force: bool,
    /// Confidence level of the intervals, between 0.5 and 0.999.
    #[arg(long, value_parser = args::level, default_value_t = 0.95)]
    pub level: f64,
    /// Bootstrap replicates per percentile.
    #[arg(long, value_parser = args::draws, default_value_t = 2000)]
    pub draws: usize,
    /// Seed of the bootstrap, so that a comparison can be repeated exactly.
    #[arg(long, value_parser = args::seed, default_value_t = 1)]
    pub seed: u64,
    /// Also write the comparison as JSON (schema sojourn.diff/1). `-`: to standard output, and the summary and everything else to standard error.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl From<DiffArgs> for sojourn::diff::DiffSettings {
    fn from(a: DiffArgs) -> Self {
        sojourn::diff::DiffSettings {
            a: a.a,
            b: a.b,
            force: a.force,
            level: a.level,
            draws: a.draws,
            seed: a.seed,
            json: a.json,
        }
    }
}

pub fn run(a: DiffArgs) -> anyhow::Result<ExitCode> {
    sojourn::diff::run(a.into())?;
    Ok(ExitCode::SUCCESS)
}
