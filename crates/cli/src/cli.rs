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
    /// The main job: an embedded misbehaving server, closed loop vs open loop side by side,
    /// the simulator's prediction, and an HTML report.
    Demo(Box<crate::demo::DemoArgs>),
    /// Closed loop then open loop against your own URL, side by side, with a verdict.
    Compare(Box<crate::compare::CompareArgs>),
    /// Drive HTTP load on a schedule (open loop) or from N looping connections (--closed).
    Run(Box<crate::run::RunArgs>),
    /// Serve a misbehaving scenario over HTTP on 127.0.0.1.
    ///
    /// Limits, so that no client can hold the server: a request head must arrive whole within
    /// --header-timeout (which also closes connections that send nothing, new or kept alive)
    /// and be at most 32 KiB; a request body is read and discarded up to 1 MiB. A body declared
    /// longer is answered 413 unread; a chunked one is read no further and its connection
    /// closed. Such abuse (slow or oversized heads, idle connections, malformed requests,
    /// oversized bodies) is counted by kind in the summary printed at exit; the first of each
    /// kind is logged on stderr with the client's address.
    Serve(crate::serve::ServeArgs),
    /// Simulate a scenario × client model in virtual time: the ground truth, in milliseconds.
    Sim(Box<crate::sim::SimArgs>),
    /// Step or search the offered rate against your URL: find the capacity cliff.
    Sweep(Box<crate::sweep::SweepArgs>),
    /// Turn result files into one self-contained HTML report with plots.
    Report(crate::report::ReportArgs),
    /// Every scenario × every peer tool installed here, against the model: who hides the stall.
    Suite(Box<crate::suite::SuiteArgs>),
    /// Compare two runs' tails: per-percentile differences with bootstrap intervals.
    Diff(Box<crate::diff::DiffArgs>),
}

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Demo(args) => crate::demo::run(*args),
        Command::Compare(args) => crate::compare::run(*args),
        Command::Run(args) => crate::run::run(*args),
        Command::Serve(args) => crate::serve::run(args),
        Command::Report(args) => crate::report::run(args),
        Command::Sim(args) => crate::sim::run(*args),
        Command::Sweep(args) => crate::sweep::run(*args),
        Command::Diff(args) => crate::diff::run(*args),
        Command::Suite(args) => crate::suite::run(*args),
    }
}
