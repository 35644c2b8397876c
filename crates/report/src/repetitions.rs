//! A repeated run (`--repeat N`) in the terminal summary and the HTML report: one line per
//! repetition, then the between-run interval of each percentile.
use std::fmt::Write as _;

use sojourn_core::repeat::{BetweenRun, Repetition, Repetitions};
use sojourn_core::result::{percentile_key, HistogramSummary, PERCENTILES};
use sojourn_core::{format_ns, RunResult};

use crate::compare::thousands;
use crate::escape::escape;

/// The percentiles each repetition's line shows.
const SHOWN: [f64; 3] = [50.0, 99.0, 99.9];

/// The terminal's lines for a repeated run; empty for a single run.
pub fn text(r: &RunResult) -> String {
    let Some(reps) = &r.repetitions else {
        return String::new();
    };
    let mut out = String::new();
    let _ = writeln!(out, "{}", heading(reps));
    let _ = writeln!(
        out,
        "  {:>3}  {:>10}  {:>10}  {:>7}  {:>8}  {:>10}  {:>10}  {:>10}  {:>10}  seeds",
        "#", "scheduled", "completed", "failed", "censored", "never sent", "p50", "p99", "p99.9"
    );
    for run in &reps.runs {
        let _ = writeln!(out, "{}", run_line(run));
    }
    out.push_str(&between_text(reps));
    out
}

fn heading(reps: &Repetitions) -> String {
    let pause = match reps.pause_ns {
        0 => String::new(),
        ns => format!(", {} apart", format_ns(ns)),
    };
    format!(
        "repetitions: {} of {} asked{pause} (response time; the summary above is all of them merged)",
        reps.runs.len(),
        reps.asked
    )
}

fn run_line(run: &Repetition) -> String {
    let c = &run.counts;
    let seeds = seeds(run);
    let cut = if run.interrupted {
        "  INTERRUPTED: left out of the intervals"
    } else {
        ""
    };
    format!(
        "  {:>3}  {:>10}  {:>10}  {:>7}  {:>8}  {:>10}  {:>10}  {:>10}  {:>10}  {seeds}{cut}",
        run.index,
        thousands(c.scheduled),
        thousands(c.completed),
        thousands(c.failed.total()),
        thousands(c.censored),
        thousands(c.never_sent),
        value(&run.response, SHOWN[0]),
        value(&run.response, SHOWN[1]),
        value(&run.response, SHOWN[2]),
    )
}

/// `arrival 3, scenario 1`; `-` when nothing was seeded.
fn seeds(run: &Repetition) -> String {
    let parts: Vec<String> = [("arrival", run.seed), ("scenario", run.scenario_seed)]
        .iter()
        .filter_map(|(name, seed)| seed.map(|s| format!("{name} {s}")))
        .collect();
    if parts.is_empty() {
        return "-".into();
    }
    parts.join(", ")
}

/// `12.40 ms`, `≥ 1.02 s` for a lower bound, `-` when absent.
fn value(h: &HistogramSummary, p: f64) -> String {
    match h.at(p) {
        Some(b) if b.lower_bound => format!("≥ {}", format_ns(b.value)),
        Some(b) => format_ns(b.value),
        None => "-".into(),
    }
}

fn between_text(reps: &Repetitions) -> String {
    let mut out = String::new();
    let Some(b) = &reps.between else {
        let _ = writeln!(out, "between runs: no interval: fewer than two complete repetitions, so no spread between runs to measure");
        return out;
    };
    let _ = writeln!(
        out,
        "between runs, {:.0}% ({} repetitions pooled; Student's t on each run's fraction at or below the pooled estimate, see docs/statistics.md):",
        b.level * 100.0,
        b.runs
    );
    let _ = writeln!(
        out,
        "  {:<7}  {:<38}  {:<38}  {:<38}",
        "", "response", "service", "send lag"
    );
    for p in PERCENTILES {
        let key = percentile_key(p);
        let cell = |t: &std::collections::BTreeMap<String, BetweenRun>| {
            t.get(&key).map_or("-".to_string(), BetweenRun::text)
        };
        let _ = writeln!(
            out,
            "  {:<7}  {:<38}  {:<38}  {:<38}",
            format!("p{key}"),
            cell(&b.response),
            cell(&b.service),
            cell(&b.send_lag)
        );
    }
    out
}

/// The HTML report's repetitions table; empty for a single run.
pub fn html(r: &RunResult) -> String {
    let Some(reps) = &r.repetitions else {
        return String::new();
    };
    let mut page = String::new();
    let _ = write!(
        page,
        "<h3>{}</h3><table class=\"repetitions\"><tr><th>#</th><th>seeds</th><th>scheduled</th>\
         <th>completed</th><th>failed</th><th>censored</th><th>never sent</th><th>p50</th>\
         <th>p99</th><th>p99.9</th></tr>",
        escape(&heading(reps))
    );
    for run in &reps.runs {
        let c = &run.counts;
        let cells = [
            run.index.to_string(),
            seeds(run),
            thousands(c.scheduled),
            thousands(c.completed),
            thousands(c.failed.total()),
            thousands(c.censored),
            thousands(c.never_sent),
            value(&run.response, 50.0),
            value(&run.response, 99.0),
            value(&run.response, 99.9),
        ];
        page.push_str("<tr>");
        for cell in cells {
            let _ = write!(page, "<td>{}</td>", escape(&cell));
        }
        page.push_str("</tr>");
    }
    page.push_str("</table>");
    page.push_str(&between_html(reps));
    page
}

fn between_html(reps: &Repetitions) -> String {
    let Some(b) = &reps.between else {
        return "<p>No between-run interval: fewer than two complete repetitions.</p>".into();
    };
    let mut page = format!(
        "<p>Between runs, {:.0}% ({} repetitions pooled; Student's t on each run's fraction at or below the pooled estimate).</p>\
         <table class=\"between\"><tr><th></th><th>response</th><th>service</th><th>send lag</th></tr>",
        b.level * 100.0,
        b.runs
    );
    for p in PERCENTILES {
        let key = percentile_key(p);
        let cell = |t: &std::collections::BTreeMap<String, BetweenRun>| {
            t.get(&key).map_or("-".to_string(), BetweenRun::text)
        };
        let _ = write!(
            page,
            "<tr><td>p{key}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&cell(&b.response)),
            escape(&cell(&b.service)),
            escape(&cell(&b.send_lag))
        );
    }
    page.push_str("</table>");
    page
}
