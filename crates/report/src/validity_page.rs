//! The report's validity section: for each run with a verdict, one small table with a row per
//! test (its figures, its outcome, and what a failure means), in the page's table style.
use std::fmt::Write as _;

use sojourn_core::validity::{TestOutcome, Validity, ValidityTest};

use crate::escape::escape;
use crate::html::{swatch, RunView};

pub(crate) fn section(page: &mut String, views: &[RunView]) {
    let judged: Vec<(&RunView, &Validity)> = views
        .iter()
        .filter_map(|v| v.r().statistics.validity.as_ref().map(|j| (v, j)))
        .collect();
    if judged.is_empty() {
        return;
    }
    page.push_str("<section id=\"validity\">\n<h2>Validity</h2>\n");
    for (v, verdict) in judged {
        let _ = write!(
            page,
            "<h3>{}{} {}</h3>\n<table class=\"validity\">\n<thead><tr><th>test</th><th>outcome</th><th>statistic and limit</th><th>what it means</th></tr></thead>\n<tbody>\n",
            swatch(v.look),
            escape(&v.name()),
            headline(verdict)
        );
        for t in &verdict.tests {
            row(page, t);
        }
        page.push_str("</tbody>\n</table>\n");
    }
    page.push_str("<p class=\"muted\">Each test at 1% (docs/statistics.md, \"Validity\"). Independence and stationarity read the per-interval p50 and p99 after any warm-up: the run keeps no per-request series. A test that does not apply neither passes nor fails.</p>\n</section>\n");
}

/// The summary table's cell: valid, or which tests failed.
pub(crate) fn cell(verdict: Option<&Validity>) -> String {
    match verdict {
        None => "<span class=\"muted\">n/a</span>".into(),
        Some(v) => headline(v),
    }
}

fn headline(v: &Validity) -> String {
    if v.valid {
        return "<span class=\"ok\">valid</span>".into();
    }
    let failed: Vec<&str> = v
        .tests
        .iter()
        .filter(|t| t.outcome == TestOutcome::Fail)
        .map(|t| t.name.label())
        .collect();
    format!(
        "<span class=\"bad\">NOT VALID: {}</span>",
        escape(&failed.join(", "))
    )
}

fn row(page: &mut String, t: &ValidityTest) {
    let (outcome, figures) = match t.outcome {
        TestOutcome::Pass => (
            "<span class=\"ok\">pass</span>",
            crate::text::validity_figures(t),
        ),
        TestOutcome::Fail => (
            "<span class=\"bad\">FAIL</span>",
            crate::text::validity_figures(t),
        ),
        TestOutcome::NotApplicable => ("<span class=\"muted\">n/a</span>", String::new()),
    };
    let _ = writeln!(
        page,
        "<tr><td>{}</td><td>{outcome}</td><td>{}</td><td>{}</td></tr>",
        escape(t.name.label()),
        escape(&figures),
        escape(&t.note)
    );
}
