//! How closely a real run must agree with the model: the rule `validation.rs` explains in full,
//! shared with the sharded runs of `distributed.rs`.
use sojourn_core::result::HistogramSummary;

pub const ABSOLUTE_MS: f64 = 2.0;
pub const RELATIVE: f64 = 0.03;
/// The server's own lateness p99, before requests held together and the machine's hiccups.
pub const SERVER_LATE_MS: f64 = 0.5;
/// What each request held at the gate and released with the others adds to that ceiling.
pub const PER_HELD_MS: f64 = 0.06;
/// The generator's dispatch lag p99, before the held requests and the machine's hiccups.
pub const DISPATCH_MS: f64 = 2.0;
/// What each held request adds to that ceiling: the generator reads the released answers at
/// once, and requests due meanwhile wait for it.
pub const DISPATCH_PER_HELD_MS: f64 = 0.01;
pub const PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

/// Percentiles p50 to p99.9 of a real run against the model's, each within 2 ms plus 3% of the
/// model's value of it, and `machine` (ms) more for percentiles in the tail, above the body of
/// the distribution, or the machine's own hiccup p99 `floor` (ms) more in the body (no sleeping
/// generator sends closer to its due times than the machine wakes it; the floor is the control
/// meter's, an idle process of its own, never the generator's own meter thread); `thin` leaves out
/// percentiles the sample cannot support. Prints a row per percentile and returns what
/// disagrees, in words.
pub fn agreement(
    what: &str,
    real: &HistogramSummary,
    sim: &HistogramSummary,
    machine: f64,
    floor: f64,
    thin: &dyn Fn(f64) -> bool,
) -> Vec<String> {
    let at = |h: &HistogramSummary, p: f64| h.percentiles.get(p).unwrap_or(0) as f64 / 1e6;
    let mut failures = Vec::new();
    for p in PERCENTILES.into_iter().filter(|&p| !thin(p)) {
        let (r, m) = (at(real, p), at(sim, p));
        let tail = m > at(sim, 50.0) + ABSOLUTE_MS;
        let allowed = ABSOLUTE_MS + RELATIVE * m + if tail { machine } else { floor };
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
