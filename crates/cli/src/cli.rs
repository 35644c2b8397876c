//! The command tree. Each subcommand owns its arguments in its own module.
use std::any::TypeId;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Arg, CommandFactory, FromArgMatches, Parser, Subcommand};

/// sojourn: a load generator that measures every request from the moment it was due.
#[derive(Parser, Debug)]
#[command(name = "sojourn", version, about, long_about = None, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The exit codes, for `--help` (crate::exit has them as constants).
const EXIT_CODES: &str = "Exit codes: 0 success; 1 the run could not be carried out; 2 bad input \
(the message names the flag); 3 --strict and the self-check failed or the run is not valid; \
4 --slo: an objective was breached or had too few samples to judge; 5 merge: a shard is \
missing or cut short (not with --allow-partial); 6 the run was interrupted (Ctrl-C or \
SIGTERM) and wrote what it gathered. 6 wins over 3, and 3 over 4.";

#[derive(Subcommand, Debug)]
pub enum Command {
    /// The main job: an embedded misbehaving server, closed loop vs open loop side by side,
    /// the simulator's prediction, and an HTML report.
    Demo(Box<crate::demo::DemoArgs>),
    /// Closed loop then open loop against your own URL, side by side, with a verdict.
    Compare(Box<crate::compare::CompareArgs>),
    /// Drive HTTP load on a schedule (open loop) or from N looping connections (--closed).
    #[command(after_help = EXIT_CODES)]
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
    #[command(after_help = EXIT_CODES)]
    Report(crate::report::ReportArgs),
    /// Every scenario × every peer tool installed here, against the model: who hides the stall.
    Suite(Box<crate::suite::SuiteArgs>),
    /// Compare two runs' tails: per-percentile differences with bootstrap intervals.
    Diff(Box<crate::diff::DiffArgs>),
    /// Merge the shard results of one plan (`run --shard`) into one result, losslessly; a
    /// missing or short shard is named and counted as not measured.
    #[command(after_help = EXIT_CODES)]
    Merge(Box<crate::merge::MergeArgs>),
    /// Print a shell completion script for sojourn (docs/install.md says where to put it).
    Completions(crate::manual::CompletionsArgs),
    /// Print sojourn's man page, or a command's (`sojourn man run`), as roff.
    Man(crate::manual::ManArgs),
    /// The control hiccup meter a run starts beside itself (not for direct use).
    #[command(name = "__hiccup-control", hide = true)]
    HiccupControl(crate::control::ControlArgs),
}

/// Parses the command line. Number and duration flags take values that start with a hyphen,
/// so that `--rate -5` is answered by the flag's own parser ("expected requests per second
/// above 0") rather than by clap's "unexpected argument '-5'".
pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut command = command();
    let matches = command.try_get_matches_from_mut(args)?;
    let mut cli = Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command))?;
    if let (Command::Run(run), Some(("run", sub))) = (&mut cli.command, matches.subcommand()) {
        run.explicit = given_on_command_line(sub);
    }
    Ok(cli)
}

/// The ids of the flags typed on the command line, as opposed to defaults: a `--plan` file
/// fills only the others.
fn given_on_command_line(m: &clap::ArgMatches) -> Vec<String> {
    m.ids()
        .filter(|id| m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
        .map(|id| id.to_string())
        .collect()
}

/// The command tree, with hyphen values allowed for every number and duration flag.
pub fn command() -> clap::Command {
    Cli::command().mut_subcommands(|sub| {
        sub.mut_args(|arg| {
            if takes_number(&arg) {
                arg.allow_hyphen_values(true)
            } else {
                arg
            }
        })
    })
}

/// Whether a flag's value is a number or a duration (what its parser produces).
pub fn takes_number(arg: &Arg) -> bool {
    let numeric = [
        TypeId::of::<f64>(),
        TypeId::of::<u64>(),
        TypeId::of::<usize>(),
        TypeId::of::<u32>(),
        TypeId::of::<Duration>(),
        TypeId::of::<sojourn_engine::Slack>(),
        TypeId::of::<sojourn_core::result::WarmupRequest>(),
    ];
    let produced = arg.get_value_parser().type_id();
    !arg.is_positional() && numeric.iter().any(|t| produced == *t)
}

impl Command {
    /// Where the command writes its JSON document (`--json`, or merge's `-o`), if it writes one.
    fn document(&self) -> Option<&std::path::Path> {
        match self {
            Command::Run(a) => a.json.as_deref(),
            Command::Sim(a) => a.json.as_deref(),
            Command::Sweep(a) => a.json.as_deref(),
            Command::Diff(a) => a.json.as_deref(),
            Command::Merge(a) => Some(&a.output),
            Command::Compare(a) => a.json.as_deref(),
            Command::Suite(a) => a.json.as_deref(),
            _ => None,
        }
    }
}

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    // `--json -`: standard output carries the document alone, from before anything is printed.
    if cli
        .command
        .document()
        .is_some_and(sojourn::outputs::is_stdio)
    {
        sojourn::outputs::reserve_stdout().map_err(|e| {
            anyhow::anyhow!("--json -: cannot keep standard output for the document: {e}")
        })?;
    }
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
        Command::Merge(args) => crate::merge::run(*args),
        Command::Completions(args) => crate::manual::completions(args, command()),
        Command::Man(args) => crate::manual::man(args, command()),
        Command::HiccupControl(args) => crate::control::run(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;

    /// What a flag accepts, and so which values it must refuse.
    #[derive(Clone, Copy, Debug)]
    enum Kind {
        Rate,
        Whole,
        Seed,
        /// Zero allowed.
        Duration,
        PositiveDuration,
        Fraction,
        Level,
        /// `auto` or a duration, zero allowed.
        Slack,
        /// `auto` or a positive duration.
        Warmup,
    }

    use Kind::*;

    /// Every number and duration flag of every command. The test below fails if a flag is
    /// added without a row here, so none escapes the bad-value checks.
    const FLAGS: &[(&str, &str, Kind)] = &[
        ("demo", "--rate", Rate),
        ("demo", "--duration", PositiveDuration),
        ("demo", "--connections", Whole),
        ("demo", "--dashboard-linger", Duration),
        ("compare", "--rate", Rate),
        ("compare", "--duration", PositiveDuration),
        ("compare", "--connections", Whole),
        ("compare", "--threads", Whole),
        ("compare", "--timeout", PositiveDuration),
        ("compare", "--dashboard-linger", Duration),
        ("run", "--rate", Rate),
        ("run", "--ramp-to", Rate),
        ("run", "--seed", Seed),
        ("run", "--duration", PositiveDuration),
        ("run", "--requests", Whole),
        ("run", "--connections", Whole),
        ("run", "--max-journeys", Whole),
        ("run", "--streams", Whole),
        ("run", "--threads", Whole),
        ("run", "--shard-count", Whole),
        ("run", "--timeout", PositiveDuration),
        ("run", "--interval", PositiveDuration),
        ("run", "--warmup", Warmup),
        ("run", "--sample-ratio", Fraction),
        ("run", "--timer-spin", Duration),
        ("run", "--timer-slack", Slack),
        ("run", "--repeat", Whole),
        ("run", "--repeat-pause", Duration),
        ("run", "--dashboard-linger", Duration),
        ("sim", "--rate", Rate),
        ("sim", "--ramp-to", Rate),
        ("sim", "--seed", Seed),
        ("sim", "--duration", PositiveDuration),
        ("sim", "--requests", Whole),
        ("sim", "--connections", Whole),
        ("sim", "--max-journeys", Whole),
        ("sim", "--closed-connections", Whole),
        ("sim", "--threads", Whole),
        ("sim", "--timeout", PositiveDuration),
        ("sim", "--rtt", Duration),
        ("sim", "--interval", PositiveDuration),
        ("sim", "--rates", Rate),
        ("sim", "--from", Rate),
        ("sim", "--to", Rate),
        ("sim", "--steps", Whole),
        ("sim", "--step", PositiveDuration),
        ("sim", "--settle", Duration),
        ("sim", "--resolution", Rate),
        ("sim", "--max-probes", Whole),
        ("sim", "--repeat", Whole),
        ("sweep", "--rates", Rate),
        ("sweep", "--from", Rate),
        ("sweep", "--to", Rate),
        ("sweep", "--steps", Whole),
        ("sweep", "--step", PositiveDuration),
        ("sweep", "--settle", Duration),
        ("sweep", "--resolution", Rate),
        ("sweep", "--max-probes", Whole),
        ("sweep", "--connections", Whole),
        ("sweep", "--threads", Whole),
        ("sweep", "--timeout", PositiveDuration),
        ("sweep", "--dashboard-linger", Duration),
        ("suite", "--duration", PositiveDuration),
        ("suite", "--rate", Rate),
        ("diff", "--level", Level),
        ("diff", "--draws", Whole),
        ("diff", "--seed", Seed),
        ("serve", "--header-timeout", PositiveDuration),
        ("__hiccup-control", "--tick", PositiveDuration),
    ];

    /// Zero, negative, non-numeric and absurdly large, as each kind understands them.
    fn bad_values(kind: Kind) -> &'static [&'static str] {
        const DURATION: &[&str] = &["-1s", "-5", "ten", "5", "99999999h"];
        match kind {
            Rate => &["0", "-5", "-0.5", "abc", "NaN", "inf", "1e400", "1e12"],
            Whole => &["0", "-5", "abc", "1.5", "99999999999999999999999"],
            Seed => &["-5", "abc", "1.5", "99999999999999999999999"],
            Duration | Slack => DURATION,
            PositiveDuration | Warmup => &["0s", "-1s", "-5", "ten", "5", "99999999h"],
            Fraction => &["0", "-0.5", "abc", "1.5", "1e400"],
            Level => &["0", "-0.95", "abc", "1", "1e400"],
        }
    }

    /// The command line up to the flag: a placeholder for each required positional.
    fn base(command: &clap::Command, name: &str) -> Vec<String> {
        let sub = command.find_subcommand(name).expect(name);
        let mut args = vec!["sojourn".to_string(), name.to_string()];
        // `run`'s URL is required unless --plan gives it: a target all the same.
        for p in sub
            .get_positionals()
            .filter(|p| p.is_required_set() || p.get_id() == "url")
        {
            args.push(format!("http://127.0.0.1:9/{}", p.get_id()));
        }
        args
    }

    #[test]
    fn every_number_and_duration_flag_has_a_row() {
        let command = command();
        let mut found = Vec::new();
        for sub in command.get_subcommands() {
            for arg in sub.get_arguments().filter(|a| takes_number(a)) {
                let long = format!("--{}", arg.get_long().expect("numeric flags are long"));
                found.push((sub.get_name().to_string(), long));
            }
        }
        let listed: Vec<(String, String)> = FLAGS
            .iter()
            .map(|(c, f, _)| (c.to_string(), f.to_string()))
            .collect();
        let missing: Vec<_> = found.iter().filter(|f| !listed.contains(f)).collect();
        let stale: Vec<_> = listed.iter().filter(|f| !found.contains(f)).collect();
        assert!(
            missing.is_empty(),
            "flags without a row in FLAGS: {missing:?}"
        );
        assert!(
            stale.is_empty(),
            "rows for flags that do not exist: {stale:?}"
        );
    }

    /// Each bad value exits 2 (clap's usage error) with one line that names the flag, the value
    /// given, and what is accepted.
    #[test]
    fn bad_values_name_the_flag_the_value_and_what_is_accepted() {
        let command = command();
        let mut checked = 0;
        for &(name, flag, kind) in FLAGS {
            for value in bad_values(kind) {
                let mut args = base(&command, name);
                args.extend([flag.to_string(), value.to_string()]);
                let e = match parse_from(&args) {
                    Ok(_) => panic!("{name} {flag} {value}: accepted"),
                    Err(e) => e,
                };
                assert!(e.use_stderr(), "{name} {flag} {value}: exits 2");
                assert!(
                    matches!(e.kind(), ErrorKind::ValueValidation),
                    "{name} {flag} {value}: {:?}: {}",
                    e.kind(),
                    e.render()
                );
                let line = crate::exit::one_line(&e).expect("a value error has one line");
                let named = line.starts_with(&format!("error: {flag}: "));
                let given = line.ends_with(&format!("got {value:?}"));
                let accepted = line.contains("expected");
                assert!(named && given && accepted, "{name} {flag} {value}: {line}");
                checked += 1;
            }
        }
        assert!(checked > 250, "{checked} cases");
    }

    /// `sojourn --help`, `run --help` and `merge --help` list every exit code, 5 and 6 too.
    #[test]
    fn help_lists_every_exit_code() {
        let mut top = command();
        let mut texts = vec![top.render_long_help().to_string()];
        for name in ["run", "merge"] {
            let sub = top.find_subcommand_mut(name).expect(name);
            texts.push(sub.render_long_help().to_string());
        }
        for text in &texts {
            // Clap wraps the text to the terminal's width.
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            for code in [
                "0 success",
                "2 bad input",
                "3 --strict",
                "4 --slo",
                "5 merge",
                "6 the run was interrupted",
            ] {
                assert!(text.contains(code), "no {code:?} in\n{text}");
            }
        }
    }

    #[test]
    fn good_values_still_parse() {
        let command = command();
        for (name, flag, value) in [
            ("run", "--rate", "0.5"),
            ("run", "--timer-spin", "0s"),
            ("run", "--timer-slack", "auto"),
            ("run", "--seed", "0"),
            ("run", "--timeout", "30days"),
            ("diff", "--level", "0.999"),
        ] {
            let mut args = base(&command, name);
            args.extend([flag.to_string(), value.to_string()]);
            assert!(parse_from(&args).is_ok(), "{name} {flag} {value}");
        }
    }
}
