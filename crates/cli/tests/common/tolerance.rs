//! How closely a real run must agree with the model: fixed ceilings per scenario, in
//! milliseconds, chosen from observed runs with a margin (docs/validation.md lists both), shared
//! by `validation.rs` and the sharded runs of `distributed.rs`.
//!
//! Nothing in a ceiling is computed from the run it judges: an allowance that grew with the
//! server's lateness or the machine's hiccups would let the very regression it should catch buy
//! its own excuse. A machine too noisy to judge is a separate verdict (`on_a_quiet_machine`),
//! never a wider allowance.
use std::path::Path;

use sojourn_core::result::HistogramSummary;

pub const PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

/// One scenario's ceilings, each a constant in milliseconds.
#[derive(Clone, Copy, Debug)]
pub struct Ceilings {
    /// |real − sim| at p50, the body of the distribution: loopback, HTTP parsing and timer
    /// wake-ups, well under a millisecond, so a server 1 ms late on every request is outside.
    pub body_ms: f64,
    /// |real − sim| from p90 up, where stalls' wedges and queues live: what a two-core machine
    /// adds when it releases a burst of held answers or drains a one-worker backlog.
    pub tail_ms: f64,
    /// The server's own lateness p99 (`departure − due` in its truth log).
    pub server_late_ms: f64,
    /// The generator's dispatch lag p99.
    pub dispatch_ms: f64,
}

/// Percentiles p50 to p99.9 of a real run against the model's: p50 within `body_ms`, the
/// others within `tail_ms`; `thin` leaves out percentiles the sample cannot support. Prints a
/// row per percentile and returns what disagrees, in words.
pub fn agreement(
    what: &str,
    real: &HistogramSummary,
    sim: &HistogramSummary,
    ceilings: &Ceilings,
    thin: &dyn Fn(f64) -> bool,
) -> Vec<String> {
    let at = |h: &HistogramSummary, p: f64| h.percentiles.get(p).unwrap_or(0) as f64 / 1e6;
    let mut failures = Vec::new();
    for p in PERCENTILES.into_iter().filter(|&p| !thin(p)) {
        let (r, m) = (at(real, p), at(sim, p));
        let allowed = if p <= 50.0 {
            ceilings.body_ms
        } else {
            ceilings.tail_ms
        };
        let ok = (r - m).abs() <= allowed;
        eprintln!(
            "| {what} | p{p} | {r:.2} | {m:.2} | {:+.2} | ±{allowed:.2} | {} |",
            r - m,
            if ok { "ok" } else { "OUT" }
        );
        if !ok {
            failures.push(format!(
                "{what} p{p}: real {r:.2} ms, sim {m:.2} ms, allowed ±{allowed:.2}"
            ));
        }
    }
    failures
}

/// The server's lateness and the generator's dispatch lag (p99, ms) against their ceilings:
/// what is over, in words.
pub fn lateness(what: &str, server_late: f64, dispatch: f64, ceilings: &Ceilings) -> Vec<String> {
    let mut over = Vec::new();
    if server_late > ceilings.server_late_ms {
        over.push(format!(
            "{what}: server lateness p99 {server_late:.3} ms over its ceiling {:.3} ms",
            ceilings.server_late_ms
        ));
    }
    if dispatch > ceilings.dispatch_ms {
        over.push(format!(
            "{what}: dispatch lag p99 {dispatch:.3} ms over its ceiling {:.3} ms",
            ceilings.dispatch_ms
        ));
    }
    over
}

/// The control hiccup meter's p99 (ms) from a result file: how late the machine woke an idle
/// process during the run. `None` when the run did not report one: the floor is then unknown,
/// which neither triggers a rerun nor excuses anything. The run's in-process meter is never
/// used in its place: a generator that burns its own CPU inflates that one.
pub fn control_floor_ms(json: &Path) -> Option<f64> {
    control_floor(json).p99
}

/// The control hiccup meter's p99 and longest oversleep (ms) from a result file, for
/// [`sojourn_testkit::control::on_a_quiet_machine_with_floor`]; each `None` as in
/// [`control_floor_ms`].
pub fn control_floor(json: &Path) -> sojourn_testkit::control::Floor {
    let doc: Option<serde_json::Value> = std::fs::read_to_string(json)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
    let ms = |p: &str| {
        let ns = doc.as_ref()?["histograms"]["control_hiccup"]["percentiles"][p].as_u64()?;
        Some(ns as f64 / 1e6)
    };
    sojourn_testkit::control::Floor {
        p99: ms("99"),
        max: ms("100"),
    }
}
