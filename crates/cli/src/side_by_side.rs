//! The seeds' side-by-side table and the one-line verdict, for `demo` and `compare`.
use std::fmt::Write as _;

use sojourn_core::result::PERCENTILES;
use sojourn_core::RunResult;
use sojourn_report::text::cell;

/// Rows count, p50 … max; one column per run; the ratio of the second column over the first.
pub fn table(columns: &[(&str, &RunResult)]) -> String {
    let mut out = String::new();
    let _ = write!(out, "{:<8}", "metric");
    for (name, _) in columns {
        let _ = write!(out, "{name:>16}");
    }
    let _ = writeln!(out, "{:>10}", "ratio");
    let _ = write!(out, "{:<8}", "count");
    for (_, r) in columns {
        let _ = write!(out, "{:>16}", r.histograms.response.count);
    }
    let _ = writeln!(out);
    for p in PERCENTILES {
        let name = if p >= 100.0 {
            "max".to_string()
        } else {
            format!("p{p}")
        };
        let _ = write!(out, "{name:<8}");
        for (_, r) in columns {
            let _ = write!(out, "{:>16}", cell(&r.histograms.response, p));
        }
        if let [(_, a), (_, b), ..] = columns {
            let _ = write!(
                out,
                "{:>10}",
                ratio_at(a, b, p).map_or("-".into(), |x| format!("{x:.1}x"))
            );
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "response time from when each request was due; ratio = {} / {}, computed from raw data before rounding", columns.get(1).map_or("", |c| c.0), columns.first().map_or("", |c| c.0));
    out
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
