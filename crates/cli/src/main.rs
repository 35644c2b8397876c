//! The `sojourn` binary: argument parsing and wiring, nothing else.
#![forbid(unsafe_code)]

mod cli;
mod compare;
mod control;
mod demo;
mod diff;
mod exit;
mod gate;
mod manual;
mod merge;
mod panel;
#[cfg(test)]
mod plan_tests;
mod progress;
mod report;
mod run;
mod serve;
mod sim;
mod suite;
mod sweep;

use std::process::ExitCode;

fn main() -> ExitCode {
    sojourn::control::install(control::command());
    match cli::parse_from(std::env::args_os()) {
        Ok(cli) => exit::report(cli::dispatch(cli)),
        Err(e) => exit::clap_error(e),
    }
}
