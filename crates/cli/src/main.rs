//! The `sojourn` binary: argument parsing and wiring, nothing else.
#![forbid(unsafe_code)]

mod args;
mod cli;
mod compare;
mod control;
mod demo;
mod diff;
mod embedded;
mod exit;
mod gate;
mod live;
mod merge;
mod metrics;
mod outputs;
mod panel;
mod peer_run;
mod plan;
mod progress;
mod report;
mod requests;
mod run;
mod scenario_arg;
mod serve;
mod side_by_side;
mod sim;
mod suite;
mod sweep;

use std::process::ExitCode;

fn main() -> ExitCode {
    match cli::parse_from(std::env::args_os()) {
        Ok(cli) => exit::report(cli::dispatch(cli)),
        Err(e) => exit::clap_error(e),
    }
}
