//! The command tree. Each subcommand owns its arguments in its own module.
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// sojourn: a load generator that measures every request from the moment it was due.
#[derive(Parser, Debug)]
#[command(name = "sojourn", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Drive HTTP load on a schedule (open loop) or from N looping connections (--closed).
    Run(crate::run::RunArgs),
    /// Serve a misbehaving scenario over HTTP on 127.0.0.1.
    Serve(crate::serve::ServeArgs),
}

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => crate::run::run(args),
        Command::Serve(args) => crate::serve::run(args),
    }
}
