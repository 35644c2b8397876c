//! `sojourn sim`: placeholder until the simulator lands.
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct SimArgs {}

pub fn run(_args: SimArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("sojourn sim is not built yet")
}

/// The simulator's prediction for a plan against a scenario (filled in with the simulator).
pub fn model(
    _scenario: &sojourn_scenario::Scenario,
    _plan: &sojourn_engine::Plan,
    _label: &str,
) -> anyhow::Result<sojourn_core::RunResult> {
    anyhow::bail!("the simulator is not built yet")
}
