//! Exit codes and error printing, in one place.
//!
//! | code | meaning |
//! |------|---------|
//! | 0    | success |
//! | 1    | the run could not be carried out (I/O error, server vanished, …) |
//! | 2    | bad input: a flag or file is wrong; the message names it |
//! | 3    | `--strict` and a self-check failed (the generator fell behind, the sends did not conform, or the run is not valid) |
//! | 4    | `--slo`: an objective was breached, or had too few samples to judge |
//! | 5    | `merge`: a shard is missing or cut short (not with `--allow-partial`) |
//! | 6    | `run` was interrupted (Ctrl-C or SIGTERM): what it gathered is written all the same |
//!
//! When both 3 and 4 apply, 3 wins: a generator that fell behind measured itself, not the target,
//! and a run that is not valid cannot support a verdict on an objective.
//! When both 4 and 5 apply, 5 wins: objectives judged on part of a plan say little about it.
//! When 6 applies, it wins over 3 and 4 for the same reason: the checks and objectives were
//! judged on a run cut short, not on the run that was asked for.
use std::io::Write;
use std::process::ExitCode;

pub const BAD_INPUT: u8 = 2;
pub const CHECK_FAILED: u8 = 3;
/// The SLO gate failed: a breach, or an objective the sample cannot judge.
pub const GATE_FAILED: u8 = 4;
/// `merge`: a shard is missing or cut short.
pub const PARTIAL: u8 = 5;
/// `run` was stopped by Ctrl-C or SIGTERM before its end: its outputs hold what it gathered.
pub const INTERRUPTED: u8 = 6;

pub fn report(result: anyhow::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let code = if sojourn::is_bad_input(&e) {
                BAD_INPUT
            } else {
                1
            };
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "error: {e}");
            for cause in e.chain().skip(1) {
                let _ = write!(stderr, ": {cause}");
            }
            let _ = writeln!(stderr);
            ExitCode::from(code)
        }
    }
}

pub fn clap_error(e: clap::Error) -> ExitCode {
    if !e.use_stderr() {
        // --help and --version.
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    match one_line(&e) {
        Some(line) => eprintln!("{line}"),
        None => {
            let _ = e.print();
        }
    }
    ExitCode::from(BAD_INPUT)
}

/// A bad flag value, or two flags that conflict, as one line. A value our own parser refused
/// reads like every other bad input, `error: --rate: expected …; got "-5"`: the flag, what is
/// accepted, what was given. Clap's usage and "For more information" footer add nothing.
pub fn one_line(e: &clap::Error) -> Option<String> {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::ValueValidation => refused_value(e).or_else(|| first_paragraph(e)),
        ErrorKind::InvalidValue | ErrorKind::ArgumentConflict => first_paragraph(e),
        _ => None,
    }
}

fn refused_value(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        _ => None,
    };
    // "--rate <RATE>": the flag is the first word.
    let flag = text(ContextKind::InvalidArg)?.split(' ').next()?;
    let given = text(ContextKind::InvalidValue)?;
    let why = std::error::Error::source(e)?;
    Some(format!("error: {flag}: {why}; got {given:?}"))
}

/// Clap's own first paragraph on one line: for a choice flag it goes on with "[possible
/// values: …]".
fn first_paragraph(e: &clap::Error) -> Option<String> {
    let text = e.render().to_string();
    let lines: Vec<&str> = text.lines().take_while(|l| !l.trim().is_empty()).collect();
    (!lines.is_empty()).then(|| lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" "))
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
