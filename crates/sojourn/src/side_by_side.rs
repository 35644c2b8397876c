//! The seeds' side-by-side table, for `demo` and `compare`. What the pair shows (the closed
//! loop's columns, the load check, the verdict) is `sojourn_report::finding`, which the HTML
//! report states in the same words.
use sojourn_core::RunResult;
use sojourn_report::compare::{self, Column, Ratio};
use sojourn_report::html::ReportRun;
use sojourn_report::samples::Sample;

pub use sojourn_report::finding::{closed_columns, verdict};

/// The seeds' table: one column per run, and the ratio of the `numerator` column over the
/// first column.
pub fn table(columns: &[Column], numerator: &str) -> String {
    let ratio = columns.first().map(|first| Ratio {
        numerator,
        denominator: &first.label,
    });
    compare::table(columns, ratio)
}

/// A run for the HTML report, with the per-request samples to draw as dots (may be empty).
pub fn report_run(r: &RunResult, samples: Vec<Sample>) -> ReportRun {
    ReportRun {
        source: r.label.clone(),
        result: r.clone(),
        samples,
    }
}

/// Writes one HTML report with these runs (for `--report`), and returns it as written.
pub fn write_report(
    path: &std::path::Path,
    title: String,
    runs: Vec<ReportRun>,
) -> anyhow::Result<String> {
    let html = sojourn_report::html::render(
        &runs,
        &sojourn_report::html::HtmlOptions { title: Some(title) },
    )?;
    std::fs::write(path, &html)
        .map_err(|e| crate::bad_input!("--report: cannot write {}: {e}", path.display()))?;
    Ok(html)
}
