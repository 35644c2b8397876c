//! The `sojourn` binary: argument parsing and wiring, nothing else.
#![forbid(unsafe_code)]

mod cli;
mod exit;
mod run;
mod serve;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    match cli::Cli::try_parse() {
        Ok(cli) => exit::report(cli::dispatch(cli)),
        Err(e) => exit::clap_error(e),
    }
}
