//! The seeds' side-by-side table and the one-line verdict, for `demo` and `compare`.
use sojourn_core::{Mode, RunResult};
use sojourn_report::compare::{self, Column, Ratio};
use sojourn_report::html::ReportRun;
use sojourn_report::samples::Sample;

/// Two loops are "at the same rate" when their achieved rates differ by at most this share.
pub const SAME_RATE: f64 = 0.05;

/// The closed loop's columns: an unpaced loop's response times; a paced loop's times from the
/// send (what hey -q and bombardier -r report) and from the slot (wrk2's view).
pub fn closed_columns(closed: &RunResult) -> Vec<Column<'_>> {
    match closed.mode {
        Mode::Paced => vec![
            Column::from_send(PACED_FROM_SEND, closed),
            Column::of("paced, from slot", closed),
        ],
        _ => vec![Column::of("closed loop", closed)],
    }
}

/// The label of a paced closed loop's from-send column.
pub const PACED_FROM_SEND: &str = "paced, from send";

/// The seeds' table: one column per run, and the ratio of the `numerator` column over the
/// first column.
pub fn table(columns: &[Column], numerator: &str) -> String {
    let ratio = columns.first().map(|first| Ratio {
        numerator,
        denominator: first.label,
    });
    compare::table(columns, ratio)
}

/// A run's achieved rate: answered requests per second over its measured span.
fn achieved(r: &RunResult) -> f64 {
    r.rate.achieved
}

/// When the two loops did not carry the same load, a sentence saying so, to print before any
/// ratio: a closed loop that sent ten times as much (or half as much) is another experiment.
pub fn rate_mismatch(closed: &RunResult, open: &RunResult) -> Option<String> {
    let (c, o) = (achieved(closed), achieved(open));
    let apart = (c - o).abs() / o.max(c).max(f64::MIN_POSITIVE);
    (apart > SAME_RATE).then(|| {
        format!(
            "NOT THE SAME RATE: the {} achieved {c:.1} req/s and the open loop {o:.1} req/s ({:.0}% apart), \
             so the ratios below compare different loads, not two views of one",
            closed.mode.label(),
            100.0 * apart
        )
    })
}

/// The open loop's response time at `p` over what the closed column shows.
pub fn ratio_at(closed: &Column, open: &RunResult, p: f64) -> Option<f64> {
    let x = closed.histogram().percentiles.get(p)? as f64;
    let y = open.histograms.response.percentiles.get(p)? as f64;
    (x > 0.0).then(|| y / x)
}

/// "closed-loop p99 understates open-loop p99 by 31x", or that they agree; first, if they did
/// not run at the same rate, that they did not.
pub fn verdict(closed: &RunResult, open: &RunResult) -> String {
    let column = closed_columns(closed)[0];
    let who = match closed.mode {
        Mode::Paced => "the paced closed loop's p99 from the send",
        _ => "closed-loop p99",
    };
    let line = match ratio_at(&column, open, 99.0) {
        Some(r) if r >= 1.5 => format!("verdict: {who} understates open-loop p99 by {r:.0}x"),
        Some(r) if r <= 1.0 / 1.5 => format!("verdict: {who} is {:.1}x above open-loop p99 (unusual: check the connection counts and the run lengths)", 1.0 / r),
        Some(r) => format!("verdict: {who} and open-loop p99 agree (ratio {r:.2}x)"),
        None => "verdict: not enough answers to compare p99".into(),
    };
    match rate_mismatch(closed, open) {
        Some(warning) => format!("verdict: {warning}.\n{line}"),
        None => line,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(mode: Mode, achieved: f64, response_p99_ms: u64, service_p99_ms: u64) -> RunResult {
        let m = sojourn_core::Recorder::merge_all([sojourn_core::Recorder::new(
            std::time::Duration::from_secs(1),
        )]);
        let facts = sojourn_core::RunFacts {
            label: "x".into(),
            mode,
            config: Default::default(),
            scheduled: 0,
            elapsed: std::time::Duration::from_secs(1),
            interrupted: false,
            checks: sojourn_core::check::assess_closed(),
            backfill_interval: None,
        };
        let mut r = RunResult::build(&m, facts);
        r.rate.achieved = achieved;
        r.histograms.response = summary(response_p99_ms);
        r.histograms.service = summary(service_p99_ms);
        r
    }

    fn summary(p99_ms: u64) -> sojourn_core::result::HistogramSummary {
        let mut h = sojourn_core::record::new_histogram();
        h.record_n(1_000_000, 980).unwrap();
        h.record_n(p99_ms * 1_000_000, 20).unwrap();
        sojourn_core::result::HistogramSummary::of(&h, &sojourn_core::record::new_histogram())
    }

    #[test]
    fn a_paced_loop_is_judged_by_what_it_reports_from_the_send() {
        let open = run(Mode::Open, 1000.0, 900, 2);
        // From the slot it saw the stall as the open loop did; from the send it hid it.
        let paced = run(Mode::Paced, 990.0, 900, 2);
        assert_eq!(
            verdict(&paced, &open),
            "verdict: the paced closed loop's p99 from the send understates open-loop p99 by 450x"
        );
        let cols = closed_columns(&paced);
        assert_eq!(cols.len(), 2);
        assert_eq!(cols[0].clock, sojourn_report::compare::Clock::FromSend);
        let text = table(
            &[cols[0], cols[1], Column::of("open loop", &open)],
            "open loop",
        );
        assert!(text.contains("open loop/paced, from send"), "{text}");
    }

    #[test]
    fn loops_at_different_rates_say_so_before_any_ratio() {
        let open = run(Mode::Open, 2000.0, 2, 1);
        let closed = run(Mode::Closed, 112_000.0, 2, 2);
        let v = verdict(&closed, &open);
        assert!(
            v.starts_with("verdict: NOT THE SAME RATE: the closed loop achieved 112000.0 req/s and the open loop 2000.0 req/s (98% apart)"),
            "{v}"
        );
        assert!(v.ends_with("agree (ratio 1.00x)"), "{v}");
        // Within 5% is the same rate.
        let closed = run(Mode::Closed, 1960.0, 2, 2);
        assert!(rate_mismatch(&closed, &open).is_none());
        let closed = run(Mode::Closed, 1880.0, 2, 2);
        assert!(rate_mismatch(&closed, &open).is_some());
    }
}
