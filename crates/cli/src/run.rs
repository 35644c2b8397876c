//! `sojourn run`: placeholder while the engine is wired.
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct RunArgs {}

pub fn run(_args: RunArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("sojourn run is not built yet")
}
