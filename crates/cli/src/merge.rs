//! `sojourn merge A.json B.json … -o run.json`: the shards of one plan as one result.
use std::path::PathBuf;
use std::process::ExitCode;

use sojourn_core::RunResult;

use crate::exit::{GATE_FAILED, PARTIAL};
use sojourn::outputs::Outputs;

#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// Shard results (the JSON files `sojourn run --shard` wrote), or earlier merges of some
    /// of them. `-` reads one of them from standard input.
    #[arg(required = true, value_name = "RESULT")]
    pub inputs: Vec<PathBuf>,
    /// Write the merged result here (an ordinary result: report, diff, --hgrm all read it).
    /// `-`: to standard output, and the summary and everything else to standard error.
    #[arg(long, short = 'o', visible_alias = "json", value_name = "FILE")]
    pub output: PathBuf,
    /// Exit 0 even if a shard is missing or cut short. Its requests are still counted as not
    /// measured and named; only the exit status changes.
    #[arg(long)]
    pub allow_partial: bool,
    /// Merge results of different plans anyway (the merged result says it was forced).
    #[arg(long)]
    pub force: bool,
    /// Also write HdrHistogram percentile distributions of the merge, as `run --hgrm` does.
    #[arg(long, value_name = "PREFIX")]
    pub hgrm: Option<PathBuf>,
    /// Also write the merged timeline as an HdrHistogram interval log, as `run --hlog` does.
    #[arg(long, value_name = "FILE")]
    pub hlog: Option<PathBuf>,
    /// --slo and --junit: gate the merged result on objectives, as `run` does (exit 4).
    #[command(flatten)]
    pub gate: crate::gate::GateArgs,
}

pub fn run(a: MergeArgs) -> anyhow::Result<ExitCode> {
    let gate = sojourn::gate::Gate::parse(a.gate.clone().into())?;
    let merged = sojourn::merge_files(&a.inputs, a.force)?;
    print!("{}", sojourn_report::text::summary(&merged));
    print!("{}", sojourn_report::text::shard_table(&merged));
    sojourn::outputs::write_json(&a.output, &merged)?;
    let outputs = Outputs {
        hgrm: a.hgrm.clone(),
        hlog: a.hlog.clone(),
        ..Outputs::default()
    };
    sojourn::outputs::write_files(&outputs, &merged)?;
    match sojourn::outputs::is_stdio(&a.output) {
        true => println!("merged: standard output"),
        false => println!("merged: {}", a.output.display()),
    }
    let gate_passed = gate.check(&merged)?;
    Ok(match verdict(&merged, a.allow_partial) {
        Some(partial) => partial,
        None if !gate_passed => ExitCode::from(GATE_FAILED),
        None => ExitCode::SUCCESS,
    })
}

/// A partial merge is never silent: it says which shards, and exits 5 unless allowed (before
/// any gate: objectives judged on part of a plan say little about the whole).
fn verdict(merged: &RunResult, allow_partial: bool) -> Option<ExitCode> {
    let gaps = sojourn_report::text::shard_gaps(merged.merged.as_ref()?);
    if gaps.is_empty() {
        return None;
    }
    eprintln!(
        "partial merge: {}; {} requests not measured{}",
        gaps.join(", "),
        merged.counts.not_measured,
        if allow_partial {
            " (--allow-partial)"
        } else {
            ""
        }
    );
    (!allow_partial).then_some(ExitCode::from(PARTIAL))
}
