//! Terminal tables: the run summary. (The seeds' side-by-side comparison is in [`crate::compare`].)
use std::fmt::Write as _;

use sojourn_core::result::{HistogramSummary, RunResult, PERCENTILES};
use sojourn_core::{format_ns, GeneratorVerdict, Mode};

/// Column headers for [`PERCENTILES`].
fn header(label_width: usize) -> String {
    let mut s = format!("{:label_width$}", "");
    for p in PERCENTILES {
        let name = if p >= 100.0 {
            "max".to_string()
        } else {
            format!("p{p}")
        };
        let _ = write!(s, "{name:>12}");
    }
    s
}

/// A percentile value, prefixed with `≥` when it is only a lower bound.
pub fn cell(h: &HistogramSummary, p: f64) -> String {
    match h.at(p) {
        Some(b) if b.lower_bound => format!("≥{}", format_ns(b.value)),
        Some(b) => format_ns(b.value),
        None => "-".into(),
    }
}

fn row(name: &str, h: &HistogramSummary, label_width: usize) -> String {
    let mut s = format!("{name:label_width$}");
    for p in PERCENTILES {
        let _ = write!(s, "{:>12}", cell(h, p));
    }
    s
}

/// One line describing how the load was generated.
pub fn describe(r: &RunResult) -> String {
    let c = &r.config;
    let bound = match (c.duration_ns, c.requests) {
        (Some(ns), _) => format!("for {}", format_ns(ns)),
        (_, Some(n)) => format!("for {n} requests"),
        _ => String::new(),
    };
    match r.mode {
        Mode::Open | Mode::Tracking => {
            let arrival = c.arrival.as_deref().unwrap_or("constant");
            let rate = c.rate.map(|r| format!("{r} req/s")).unwrap_or_default();
            let ramp = c
                .ramp_to
                .map(|t| format!(" → {t} req/s"))
                .unwrap_or_default();
            format!(
                "{}, {arrival} {rate}{ramp} {bound}, up to {} connections",
                r.mode.label(),
                c.connections
            )
        }
        Mode::Closed => format!(
            "CLOSED LOOP, {} connections each send → wait → record, {bound}",
            c.connections
        ),
    }
}

fn counts(r: &RunResult) -> String {
    let c = &r.counts;
    let mut failed: Vec<String> = c
        .failed
        .iter()
        .filter(|&(_, n)| n > 0)
        .map(|(k, n)| format!("{} {n}", k.name()))
        .collect();
    if failed.is_empty() {
        failed.push("none".into());
    }
    format!(
        "requests  scheduled {}  completed {}  failed {} ({})  censored {}  never sent {}",
        c.scheduled,
        c.completed,
        c.failed.total(),
        failed.join(", "),
        c.censored,
        c.never_sent
    )
}

fn rates(r: &RunResult) -> String {
    let target = r
        .rate
        .target
        .map_or("none (closed loop)".to_string(), |t| format!("{t:.1}/s"));
    format!(
        "rate      target {target}  achieved {:.1}/s  sent {:.1}/s",
        r.rate.achieved, r.rate.sent
    )
}

/// The full terminal summary of one run.
pub fn summary(r: &RunResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} — {}", r.label, describe(r));
    if let Some(t) = &r.config.target {
        let _ = writeln!(out, "target    {t}");
    }
    if r.interrupted {
        let _ = writeln!(
            out,
            "INTERRUPTED: stopped early; everything gathered until then is below"
        );
    }
    let _ = writeln!(out, "{}", counts(r));
    let _ = writeln!(out, "{}", rates(r));
    let _ = writeln!(out);
    let w = 22;
    let _ = writeln!(out, "{}", header(w));
    let h = &r.histograms;
    let _ = writeln!(out, "{}", row("response (from due)", &h.response, w));
    let _ = writeln!(out, "{}", row("service (from send)", &h.service, w));
    if r.mode != Mode::Closed {
        let _ = writeln!(out, "{}", row("send lag", &h.send_lag, w));
    }
    if let Some(b) = &h.backfilled {
        let _ = writeln!(out, "{}", row("back-filled estimate*", b, w));
        let _ = writeln!(out, "* closed loop + HdrHistogram expected-interval correction: invented samples, not measurements");
    }
    if !h.response.lower_bounds.is_empty() {
        let _ = writeln!(out, "≥ marks lower bounds: requests still unanswered at the end (or timed out) could only raise them");
    }
    let _ = writeln!(out);
    let verdict = match r.checks.generator {
        GeneratorVerdict::Ok => "generator ok: requests went out on schedule".to_string(),
        GeneratorVerdict::Behind => "generator BEHIND (see below)".to_string(),
        GeneratorVerdict::NotApplicable if r.mode == Mode::Tracking => {
            "generator check: not applicable: the schedule-tracking client sends late by design (see send lag)".to_string()
        }
        GeneratorVerdict::NotApplicable => {
            "generator check: not applicable to a closed loop".to_string()
        }
    };
    let _ = writeln!(out, "{verdict}");
    for note in &r.checks.notes {
        let _ = writeln!(out, "- {note}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sojourn_core::record::{Recorder, Stamps};
    use sojourn_core::{check, FailureClass, Outcome, RunConfig, RunFacts};
    use std::time::Duration;

    fn result(censor: bool) -> RunResult {
        let mut r = Recorder::new(Duration::from_secs(1));
        for i in 0..1000u64 {
            let at = Duration::from_millis(i);
            let outcome = if i == 7 {
                Outcome::Failed(FailureClass::Http5xx)
            } else {
                Outcome::Ok
            };
            r.record(
                &Stamps::on_time(at),
                at + Duration::from_millis(10),
                outcome,
            );
        }
        if censor {
            r.record_in_flight(
                &Stamps::on_time(Duration::from_millis(999)),
                Duration::from_secs(5),
            );
        }
        let m = Recorder::merge_all([r]);
        let config = RunConfig {
            rate: Some(1000.0),
            arrival: Some("constant".into()),
            duration_ns: Some(1_000_000_000),
            connections: 64,
            interval_ns: 1_000_000_000,
            target: Some("http://127.0.0.1:1/api".into()),
            ..Default::default()
        };
        let facts = RunFacts {
            label: "open".into(),
            mode: Mode::Open,
            config,
            scheduled: m.tally.accounted(),
            elapsed: Duration::from_secs(1),
            interrupted: false,
            checks: check::assess_open(&m, 64),
            backfill_interval: None,
        };
        RunResult::build(&m, facts)
    }

    #[test]
    fn summary_shows_counts_rates_and_the_tail() {
        let text = summary(&result(false));
        assert!(
            text.contains("open loop, constant 1000 req/s for 1.000 s, up to 64 connections"),
            "{text}"
        );
        assert!(
            text.contains(
                "scheduled 1000  completed 999  failed 1 (http_5xx 1)  censored 0  never sent 0"
            ),
            "{text}"
        );
        for col in ["p50", "p90", "p99", "p99.9", "p99.99", "max"] {
            assert!(text.contains(col), "column {col}");
        }
        assert!(text.contains("10.00 ms"), "{text}");
        assert!(!text.contains('≥'), "nothing censored, nothing marked");
    }

    #[test]
    fn censored_percentiles_print_as_lower_bounds() {
        let text = summary(&result(true));
        let response = text.lines().find(|l| l.starts_with("response")).unwrap();
        assert!(
            response.trim_end().ends_with("≥4.001 s"),
            "max is a lower bound: {response}"
        );
        assert!(!response.contains("≥10"), "p50 is exact: {response}");
        assert!(text.contains("≥ marks lower bounds"));
    }
}
