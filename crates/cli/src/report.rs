//! `sojourn report`: result files → one self-contained HTML report with plots.
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use sojourn_report::gate::Gated;
use sojourn_report::html::{render_gated, HtmlOptions, ReportRun};
use sojourn_report::ReportError;

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Result files (JSON) from `sojourn run`, `sim`, or imported from a peer tool. A sibling
    /// `NAME.samples.csv` or `NAME.samples.bin` adds a per-request scatter to NAME.json's timeline.
    /// `-` reads one result from standard input (`sojourn run … --json - | sojourn report -`).
    #[arg(required = true, value_name = "RESULT.json")]
    pub results: Vec<PathBuf>,
    /// Where to write the HTML report.
    #[arg(short, long, default_value = "report.html", value_name = "FILE")]
    pub output: PathBuf,
    /// The report's title [default: the runs' labels].
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// --slo and --junit: judge every result file; exit 4 when any fails an objective.
    #[command(flatten)]
    pub gate: crate::gate::GateArgs,
}

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let gate = sojourn::gate::Gate::parse(args.gate.into())?;
    sojourn_report::load::stdin_at_most_once(&args.results).map_err(input_error)?;
    let runs = args
        .results
        .iter()
        .map(|p| ReportRun::load(p).map_err(input_error))
        .collect::<Result<Vec<_>, _>>()?;
    // A partial merge is never silent, here as in `merge`: the page says so too.
    for r in &runs {
        if let Some(line) = sojourn_report::text::partial_line(&r.result) {
            eprintln!("{}: {line}", r.source);
        }
    }
    let verdicts = runs
        .iter()
        .map(|r| gate.judge(&r.result))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let gated: Vec<Gated> = runs
        .iter()
        .zip(&verdicts)
        .map(|(r, judgements)| Gated {
            label: &r.result.label,
            judgements,
        })
        .collect();
    let options = HtmlOptions { title: args.title };
    let html = render_gated(&runs, &options, &gated).context("drawing the report")?;
    std::fs::write(&args.output, html)
        .map_err(|e| sojourn::bad_input!("-o {}: {e}", args.output.display()))?;
    eprintln!(
        "wrote {} ({} run{})",
        args.output.display(),
        runs.len(),
        if runs.len() == 1 { "" } else { "s" }
    );
    if !gate.is_empty() && !gate.report(&gated)? {
        return Ok(ExitCode::from(crate::exit::GATE_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

/// A file the user named that cannot be used is bad input (exit 2); the message names the file.
fn input_error(e: ReportError) -> anyhow::Error {
    match e {
        ReportError::Io { .. }
        | ReportError::NotAResult { .. }
        | ReportError::Schema { .. }
        | ReportError::NotSamples { .. }
        | ReportError::Histogram { .. }
        | ReportError::StdinTwice { .. } => sojourn::bad_input!("{e}"),
        other => anyhow::Error::new(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sojourn::BadInput;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../report/tests/fixtures")
            .join(name)
    }

    fn out_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sojourn-cli-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn writes_one_html_file_from_result_files() {
        let output = out_dir().join("r.html");
        let args = ReportArgs {
            results: vec![fixture("hiccup-closed.json"), fixture("hiccup-open.json")],
            output: output.clone(),
            title: Some("t<1>".into()),
            gate: Default::default(),
        };
        assert_eq!(run(args).unwrap(), ExitCode::SUCCESS);
        let html = std::fs::read_to_string(&output).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<title>t&lt;1&gt;</title>"));
        assert!(html.contains("<svg id=\"spectrum\""));
    }

    #[test]
    fn a_bad_file_is_bad_input_naming_it() {
        let not_result = out_dir().join("notes.json");
        std::fs::write(&not_result, "{\"hello\": 1}").unwrap();
        for path in [PathBuf::from("/nonexistent/a.json"), not_result] {
            let args = ReportArgs {
                results: vec![path.clone()],
                output: out_dir().join("x.html"),
                title: None,
                gate: Default::default(),
            };
            let err = run(args).unwrap_err();
            assert!(
                err.chain().any(|c| c.is::<BadInput>()),
                "exit 2 for {}",
                path.display()
            );
            assert!(
                err.to_string().contains(&path.display().to_string()),
                "{err}"
            );
            assert_eq!(err.to_string().lines().count(), 1);
        }
    }
}
