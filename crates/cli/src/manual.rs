//! `sojourn completions SHELL` and `sojourn man [COMMAND]`: generated from the same clap
//! definitions that parse the command line, so they cannot fall behind a flag.
use std::io::Write;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use clap_complete::Shell;

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

/// The shells a completion script is written for.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
    Powershell,
}

impl From<CompletionShell> for Shell {
    fn from(s: CompletionShell) -> Shell {
        match s {
            CompletionShell::Bash => Shell::Bash,
            CompletionShell::Zsh => Shell::Zsh,
            CompletionShell::Fish => Shell::Fish,
            CompletionShell::Powershell => Shell::PowerShell,
        }
    }
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// A command (`run`, `report`, …) for its own page; none for sojourn's.
    pub command: Option<String>,
}

/// The command tree people type: without the hidden commands a run starts for itself, which
/// the shells' generators would offer. clap cannot remove a subcommand, so the root is rebuilt
/// around the visible ones.
fn public_command(full: clap::Command) -> clap::Command {
    let visible = full.get_subcommands().filter(|s| !s.is_hide_set()).cloned();
    clap::Command::new("sojourn")
        .version(env!("CARGO_PKG_VERSION"))
        .subcommands(visible)
}

/// Prints the completion script of `command` (the binary's whole tree) for the shell asked for.
pub fn completions(args: CompletionsArgs, command: clap::Command) -> anyhow::Result<ExitCode> {
    let mut command = public_command(command);
    let mut out = std::io::stdout().lock();
    clap_complete::generate(Shell::from(args.shell), &mut command, "sojourn", &mut out);
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the man page of `command` (the binary's whole tree), or of the subcommand asked for.
pub fn man(args: ManArgs, mut command: clap::Command) -> anyhow::Result<ExitCode> {
    command.build();
    let page = match &args.command {
        None => command,
        Some(name) => match command.find_subcommand(name).filter(|s| !s.is_hide_set()) {
            // A command's page is named as man(1) expects: sojourn-run(1).
            Some(sub) => sub
                .clone()
                .name(format!("sojourn-{name}"))
                .version(env!("CARGO_PKG_VERSION")),
            None => {
                let known: Vec<&str> = command
                    .get_subcommands()
                    .filter(|s| !s.is_hide_set())
                    .map(|s| s.get_name())
                    .collect();
                return Err(sojourn::BadInput(format!(
                    "sojourn man: no command `{name}`; give one of {}",
                    known.join(", ")
                ))
                .into());
            }
        },
    };
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(page).render(&mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
