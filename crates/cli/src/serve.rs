//! `sojourn serve`: placeholder until the scenario server lands.
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {}

pub fn run(_args: ServeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("sojourn serve is not built yet")
}
