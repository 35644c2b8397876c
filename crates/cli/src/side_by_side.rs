//! The seeds' side-by-side table and the one-line verdict, for `demo` and `compare`.
use sojourn_core::RunResult;
use sojourn_report::compare::{self, Column, Ratio};
use sojourn_report::html::ReportRun;
use sojourn_report::samples::Sample;

/// The seeds' table: one column per run, and the ratio of the second column over the first.
pub fn table(columns: &[(&str, &RunResult)]) -> String {
    let cols: Vec<Column> = columns
        .iter()
        .map(|(label, result)| Column { label, result })
        .collect();
    let ratio = match columns {
        [(a, _), (b, _), ..] => Some(Ratio {
            numerator: b,
            denominator: a,
        }),
        _ => None,
    };
    compare::table(&cols, ratio)
}

/// `b`'s response time at `p` over `a`'s.
pub fn ratio_at(a: &RunResult, b: &RunResult, p: f64) -> Option<f64> {
    let x = a.histograms.response.percentiles.get(p)? as f64;
    let y = b.histograms.response.percentiles.get(p)? as f64;
    (x > 0.0).then(|| y / x)
}

/// "closed-loop p99 understates open-loop p99 by 31x", or that they agree.
pub fn verdict(closed: &RunResult, open: &RunResult) -> String {
    match ratio_at(closed, open, 99.0) {
        Some(r) if r >= 1.5 => format!("verdict: closed-loop p99 understates open-loop p99 by {r:.0}x"),
        Some(r) if r <= 1.0 / 1.5 => format!("verdict: closed-loop p99 is {:.1}x above open-loop p99 (unusual: check the connection counts and the run lengths)", 1.0 / r),
        Some(r) => format!("verdict: closed and open loops agree at p99 (ratio {r:.2}x)"),
        None => "verdict: not enough answers to compare p99".into(),
    }
}

/// A run for the HTML report, with the per-request samples to draw as dots (may be empty).
pub fn report_run(r: &RunResult, samples: Vec<Sample>) -> ReportRun {
    ReportRun {
        source: r.label.clone(),
        result: r.clone(),
        samples,
    }
}

/// Writes one HTML report with these runs (for `--report`).
pub fn write_report(
    path: &std::path::Path,
    title: String,
    runs: Vec<ReportRun>,
) -> anyhow::Result<()> {
    let html = sojourn_report::html::render(
        &runs,
        &sojourn_report::html::HtmlOptions { title: Some(title) },
    )?;
    std::fs::write(path, html)
        .map_err(|e| crate::bad_input!("--report: cannot write {}: {e}", path.display()))?;
    Ok(())
}
