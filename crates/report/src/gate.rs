//! The SLO gate's verdicts as people and CI systems read them: a terminal table, a section of
//! the HTML report, and a JUnit XML file with one test case per objective.
use std::fmt::Write as _;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use sojourn_core::gate::{passes, Judgement, Verdict};

use crate::escape::escape;

/// One result's verdicts, under the result's label.
#[derive(Debug, Clone, Copy)]
pub struct Gated<'a> {
    pub label: &'a str,
    pub judgements: &'a [Judgement],
}

const HEADERS: [&str; 6] = [
    "objective",
    "scope",
    "measured",
    "95% CI",
    "verdict",
    "significance",
];

/// The six cells of one objective's row.
fn cells(j: &Judgement) -> [String; 6] {
    let (measured, interval) = match (&j.estimate, j.between_runs) {
        (Some(e), Some(n)) => (
            format!("{} ({n} runs pooled)", e.value_text()),
            format!("{} between runs", e.interval_text()),
        ),
        (Some(e), None) => (e.value_text(), e.interval_text()),
        (None, _) => ("-".into(), "-".into()),
    };
    [
        j.objective.text.clone(),
        scope(j),
        measured,
        interval,
        j.verdict.label().into(),
        j.verdict.significance().into(),
    ]
}

/// What the objective judged: a stage (by its title), a step or the journeys, or the run.
fn scope(j: &Judgement) -> String {
    match (&j.stage, &j.label) {
        (Some(stage), _) => stage.clone(),
        (None, Some(label)) => label.clone(),
        (None, None) => "whole run".into(),
    }
}

/// The verdict table for one result, the reason for every objective that could not be judged,
/// and the gate's outcome.
pub fn table(judgements: &[Judgement]) -> String {
    let rows: Vec<[String; 6]> = judgements.iter().map(cells).collect();
    let mut widths = HEADERS.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    line(&mut out, &HEADERS.map(String::from), &widths);
    for row in &rows {
        line(&mut out, row, &widths);
    }
    for j in judgements {
        if let Verdict::TooFew { reason } = &j.verdict {
            let _ = writeln!(out, "  {} not judged: {reason}", j.objective.text);
        }
    }
    let _ = writeln!(out, "{}", outcome(judgements));
    out
}

fn line(out: &mut String, cells: &[String; 6], widths: &[usize; 6]) {
    let padded: Vec<String> = cells
        .iter()
        .zip(widths)
        .map(|(c, &w)| format!("{c:<w$}"))
        .collect();
    let _ = writeln!(out, "{}", padded.join("  ").trim_end());
}

/// "gate: PASS (3 objectives met)" or "gate: FAIL (1 breached, 1 too few samples to judge)".
pub fn outcome(judgements: &[Judgement]) -> String {
    let count = |f: fn(&Verdict) -> bool| judgements.iter().filter(|j| f(&j.verdict)).count();
    let breached = count(|v| matches!(v, Verdict::Breached { .. }));
    let unjudged = count(|v| matches!(v, Verdict::TooFew { .. }));
    if passes(judgements) {
        let n = judgements.len();
        return format!(
            "gate: PASS ({n} objective{} met)",
            if n == 1 { "" } else { "s" }
        );
    }
    format!("gate: FAIL ({breached} breached, {unjudged} too few samples to judge)")
}

/// What a failed test case's message says: the verdict, the value, its interval and any reason.
fn detail(j: &Judgement) -> String {
    let mut text = format!("{} {}", j.objective.text, j.verdict.label());
    if let Some(e) = &j.estimate {
        let _ = write!(
            text,
            ": measured {}, 95% CI {}",
            e.value_text(),
            e.interval_text()
        );
        if let Some(n) = j.between_runs {
            let _ = write!(text, " (the {n} repetitions pooled, between-run interval)");
        }
    }
    match &j.verdict {
        Verdict::TooFew { reason } => {
            let _ = write!(text, "; {reason}");
        }
        v => {
            let _ = write!(text, " ({})", v.significance());
        }
    }
    text
}

/// JUnit XML: a test suite per result (named by its label), a test case per objective (named by
/// the objective, classed by label and stage), a failure for each breached or unjudged one,
/// and the verdict table as the suite's system-out.
pub fn junit(runs: &[Gated]) -> Result<String, quick_junit::SerializeError> {
    let mut report = Report::new("sojourn gate");
    for run in runs {
        let mut suite = TestSuite::new(run.label);
        for j in run.judgements {
            suite.add_test_case(test_case(run.label, j));
        }
        suite.set_system_out(table(run.judgements));
        report.add_test_suite(suite);
    }
    Ok(without_root_skipped(&report.to_string()?))
}

/// The JUnit schema Jenkins' xUnit plugin validates against (junit-10.xsd, the strictest in
/// use) allows `skipped` on each `<testsuite>` but not on the root `<testsuites>`, where
/// quick-junit always writes it. A gate never skips an objective, so the root's is always
/// `skipped="0"` and says nothing the suites do not: it is dropped.
fn without_root_skipped(xml: &str) -> String {
    let Some(start) = xml.find("<testsuites") else {
        return xml.to_string();
    };
    let end = start + xml[start..].find('>').unwrap_or(0);
    let root = xml[start..end].replacen(" skipped=\"0\"", "", 1);
    format!("{}{root}{}", &xml[..start], &xml[end..])
}

fn test_case(label: &str, j: &Judgement) -> TestCase {
    let status = match &j.verdict {
        Verdict::Met { .. } => TestCaseStatus::success(),
        verdict => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_type(match verdict {
                Verdict::Breached { .. } => "breached",
                _ => "too-few-samples",
            });
            s.set_message(detail(j));
            s
        }
    };
    let mut case = TestCase::new(j.objective.text.as_str(), status);
    case.set_classname(match (&j.stage, &j.label) {
        (Some(stage), _) => format!("{label}/stage {stage}"),
        (None, Some(part)) => format!("{label}/{part}"),
        (None, None) => label.to_string(),
    });
    case.set_system_out(detail(j));
    case
}

/// The report's section: one table for every gated result, breaches and unjudged in red.
pub(crate) fn html_section(page: &mut String, runs: &[Gated]) {
    if runs.iter().all(|r| r.judgements.is_empty()) {
        return;
    }
    page.push_str("<section id=\"gate\">\n<h2>Service-level objectives</h2>\n<table>\n<thead><tr><th>run</th>");
    for h in HEADERS {
        let _ = write!(page, "<th>{h}</th>");
    }
    page.push_str("<th>why</th></tr></thead>\n<tbody>\n");
    for run in runs {
        for j in run.judgements {
            html_row(page, run.label, j);
        }
    }
    page.push_str("</tbody>\n</table>\n");
    let outcomes: Vec<String> = runs
        .iter()
        .filter(|r| !r.judgements.is_empty())
        .map(|r| format!("{}: {}", escape(r.label), escape(&outcome(r.judgements))))
        .collect();
    let _ = writeln!(
        page,
        "<p>{}. Each value has its 95% confidence interval; a verdict is significant when the whole interval lies on one side of the limit. An objective the sample cannot judge fails the gate (docs/gates.md).</p>\n</section>",
        outcomes.join("; ")
    );
}

fn html_row(page: &mut String, label: &str, j: &Judgement) {
    let class = if j.verdict.passes() { "ok" } else { "bad" };
    let _ = write!(page, "<tr class=\"{class}\"><td>{}</td>", escape(label));
    for cell in cells(j) {
        let _ = write!(page, "<td>{}</td>", escape(&cell));
    }
    let why = match &j.verdict {
        Verdict::TooFew { reason } => escape(reason),
        _ => String::new(),
    };
    let _ = writeln!(page, "<td class=\"note\">{why}</td></tr>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use sojourn_core::gate::{Estimate, Objective, Unit};

    fn judgement(text: &str, stage: Option<&str>, verdict: Verdict) -> Judgement {
        Judgement {
            objective: text.parse::<Objective>().unwrap(),
            stage: stage.map(Into::into),
            label: None,
            estimate: Some(Estimate {
                unit: Unit::Nanos,
                value: 250e6,
                lower_bound: false,
                lo: 240e6,
                hi: None,
                hi_reached: Some(260e6),
                exact: false,
            }),
            verdict,
            between_runs: None,
        }
    }

    fn sample() -> Vec<Judgement> {
        vec![
            judgement("p99<200ms", None, Verdict::Breached { significant: true }),
            judgement(
                "hold:p50<1s",
                Some("hold"),
                Verdict::Met { significant: false },
            ),
            judgement(
                "p99.9<1s",
                None,
                Verdict::TooFew {
                    reason: "500 requests; p99.9 needs about 10000".into(),
                },
            ),
        ]
    }

    #[test]
    fn the_table_has_a_row_per_objective_the_reasons_and_the_outcome() {
        let text = table(&sample());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("objective") && lines[0].contains("95% CI"));
        assert!(lines[1].contains("p99<200ms") && lines[1].contains("whole run"));
        assert!(lines[1].contains("250.00 ms") && lines[1].contains("[240.00 ms, ≥ 260.00 ms]"));
        assert!(lines[1].contains("BREACHED") && lines[1].ends_with("significant"));
        assert!(lines[2].contains("hold") && lines[2].ends_with("not significant"));
        assert!(lines[4].contains("p99.9<1s not judged: 500 requests"));
        assert_eq!(
            lines[5],
            "gate: FAIL (1 breached, 1 too few samples to judge)"
        );
        let met = [judgement(
            "p50<1s",
            None,
            Verdict::Met { significant: true },
        )];
        assert!(table(&met).ends_with("gate: PASS (1 objective met)\n"));
    }

    #[test]
    fn junit_fails_the_breached_and_the_unjudged() {
        let judgements = sample();
        let xml = junit(&[Gated {
            label: "open",
            judgements: &judgements,
        }])
        .unwrap();
        let suite =
            "<testsuite name=\"open\" tests=\"3\" skipped=\"0\" errors=\"0\" failures=\"2\">";
        assert!(xml.contains(suite), "{xml}");
        assert!(
            xml.contains("name=\"p99&lt;200ms\" classname=\"open\""),
            "{xml}"
        );
        assert!(xml.contains("classname=\"open/stage hold\""), "{xml}");
        assert!(xml.contains("type=\"too-few-samples\""), "{xml}");
        assert_eq!(xml.matches("<failure").count(), 2, "{xml}");
        assert!(
            xml.contains(
                "<testsuites name=\"sojourn gate\" tests=\"3\" failures=\"2\" errors=\"0\">"
            ),
            "{xml}"
        );
    }
}
