//! The control hiccup meter's process: `sojourn __hiccup-control` (hidden), which a run starts
//! beside itself. It only sleeps to a tick and notes how late it woke, in a process of its own,
//! so that a generator burning its own CPU cannot inflate the floor that excuses its lateness.
use std::process::ExitCode;
use std::time::Duration;

use sojourn_engine::ControlCommand;

use sojourn::parse as args;

/// The hidden subcommand's name: not for people, only for the run that starts it.
pub const SUBCOMMAND: &str = "__hiccup-control";

#[derive(clap::Args, Debug)]
pub struct ControlArgs {
    /// How often to wake.
    #[arg(long, value_parser = args::positive_duration, default_value = "1ms")]
    pub tick: Duration,
}

/// Ticks until stdin closes or SIGTERM comes, then writes the figures line on stdout.
pub fn run(a: ControlArgs) -> anyhow::Result<ExitCode> {
    sojourn_engine::serve_control(a.tick, &mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}

/// How a run starts its control meter: this very binary, with the hidden subcommand. `None` if
/// the binary cannot name itself, in which case the run has no control meter and says so.
pub fn command() -> Option<ControlCommand> {
    let program = std::env::current_exe().ok()?;
    let tick = humantime::format_duration(sojourn_engine::HICCUP_TICK).to_string();
    Some(ControlCommand {
        program,
        args: vec![SUBCOMMAND.into(), "--tick".into(), tick.into()],
        env: Vec::new(),
    })
}
