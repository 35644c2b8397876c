//! `--slo` and `--junit` on `run` and `report`: judge results against objectives, print the
//! verdict table, write JUnit XML, and fail the gate (exit 4) on a breach or an objective the
//! sample cannot judge.
use std::path::{Path, PathBuf};

use sojourn_core::gate::{evaluate, passes, resolve_stage, Judgement, Objective};
use sojourn_core::result::StageConfig;
use sojourn_core::RunResult;
use sojourn_report::gate::{table, Gated};
use sojourn_report::output::{Junit, Output as _};
use sojourn_report::ReportError;

use crate::bad_input;

/// The objectives as given (`--slo`, `--junit`, or a plan file's `slo` key).
#[derive(Debug, Clone, Default)]
pub struct GateSettings {
    /// Objectives as written, e.g. `p99<200ms`.
    pub slo: Vec<String>,
    /// Where to write the verdicts as JUnit XML.
    pub junit: Option<std::path::PathBuf>,
    /// The `--plan` file the objectives came from, when they did not come from the command
    /// line: a message about one names the file and the key.
    pub from_plan: Option<std::path::PathBuf>,
}

/// The objectives parsed (before any run, so a typo costs nothing) and where to write JUnit.
#[derive(Debug, Clone, Default)]
pub struct Gate {
    /// The objectives, parsed.
    pub objectives: Vec<Objective>,
    /// Where to write JUnit XML.
    pub junit: Option<PathBuf>,
    /// Where the objectives were given, as a message names it: `--slo`, or `--plan: FILE: slo`.
    origin: String,
}

impl Gate {
    /// Parses the objectives; a bad one is named with where it was given.
    pub fn parse(args: GateSettings) -> anyhow::Result<Gate> {
        let origin = match &args.from_plan {
            Some(path) => format!("--plan: {}: slo", path.display()),
            None => "--slo".to_string(),
        };
        let objectives = args
            .slo
            .iter()
            .map(|text| {
                text.parse::<Objective>()
                    .map_err(|e| bad_input!("{origin}: {e}"))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Gate {
            objectives,
            junit: args.junit,
            origin,
        })
    }

    /// No objectives: nothing to judge.
    pub fn is_empty(&self) -> bool {
        self.objectives.is_empty()
    }

    /// The verdicts on one result. A stage the result does not have is bad input.
    pub fn judge(&self, result: &RunResult) -> anyhow::Result<Vec<Judgement>> {
        evaluate(result, &self.objectives).map_err(|e| bad_input!("{}: {e}", self.origin))
    }

    /// Prints each result's verdict table, writes `--junit`, and says whether every objective
    /// of every result was met.
    pub fn report(&self, runs: &[Gated]) -> anyhow::Result<bool> {
        for run in runs {
            println!("\nobjectives for {}:", run.label);
            print!("{}", table(run.judgements));
        }
        if let Some(path) = &self.junit {
            write_junit(path, runs)?;
        }
        Ok(runs.iter().all(|r| passes(r.judgements)))
    }

    /// Every objective's stage exists among `stages` (the plan's): checked before a run, so a
    /// typo costs nothing.
    pub fn check_stages(&self, stages: Option<&[StageConfig]>) -> anyhow::Result<()> {
        for o in &self.objectives {
            if let Some(stage) = &o.stage {
                resolve_stage(o, stage, stages).map_err(|e| bad_input!("{}: {e}", self.origin))?;
            }
        }
        Ok(())
    }

    /// [`Gate::judge`] and [`Gate::report`] for one result; `true` without objectives.
    pub fn check(&self, result: &RunResult) -> anyhow::Result<bool> {
        if self.is_empty() {
            return Ok(true);
        }
        let judgements = self.judge(result)?;
        self.report(&[Gated {
            label: &result.label,
            judgements: &judgements,
        }])
    }
}

fn write_junit(path: &Path, runs: &[Gated]) -> anyhow::Result<()> {
    let failed = match Junit.write(runs, path) {
        Ok(_) => {
            println!("junit: {}", path.display());
            return Ok(());
        }
        Err(e) => e,
    };
    Err(match failed {
        ReportError::Io { source, .. } => {
            bad_input!("--junit: cannot write {}: {source}", path.display())
        }
        ReportError::Junit(e) => anyhow::Error::new(e).context("--junit: serializing the verdicts"),
        other => other.into(),
    })
}
