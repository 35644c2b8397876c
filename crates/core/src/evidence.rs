//! What a run's numbers can support, in the result document: an interval for every percentile,
//! a warning where too few samples lie beyond one, whether the sends followed the intended
//! arrival process, and whether the run reached a steady state.
//!
//! The maths lives in [`crate::confidence`], [`crate::conformance`] and [`crate::steady`]; this
//! module turns it into the serialisable verdicts every command prints and stores.
use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::confidence::{percentile_interval, sample_warning, LEVEL};
use crate::conformance::{poisson_fit, GapRecord};
use crate::record::IntervalRecord;
use crate::units::{format_ns, nanos};

/// A distribution-free confidence interval for one percentile (order statistics).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ci {
    pub lo: u64,
    pub hi: u64,
    /// The upper end is not bounded by the data: the interval's upper rank falls beyond the
    /// samples, or on censored values that could be arbitrarily large.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hi_open: bool,
}

impl Ci {
    /// The interval as every output prints it, each end in its own unit: `[639.0 µs, 1.38 ms]`,
    /// or `[639.0 µs, ≥ 1.38 ms]` when the upper end is open (the data reach that far, and
    /// cannot say how much further the end lies).
    pub fn text(&self) -> String {
        interval_text(&format_ns(self.lo), &format_ns(self.hi), self.hi_open)
    }
}

/// `[lo, hi]`, or `[lo, ≥ hi]` for an upper end the data cannot close: the one way an interval
/// is written, in the terminal, on the page and in the gate's table.
pub fn interval_text(lo: &str, hi: &str, hi_open: bool) -> String {
    let bound = if hi_open { "≥ " } else { "" };
    format!("[{lo}, {bound}{hi}]")
}

/// The intervals of one histogram's percentiles, keyed as `percentiles` is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CiSet {
    pub level: f64,
    pub percentiles: BTreeMap<String, Ci>,
}

/// Too few samples lie beyond a percentile for it to mean much.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thin {
    /// How many samples lie beyond it: n × (1 − p).
    pub beyond: f64,
    /// A run size that would put at least ten beyond it.
    pub needed: u64,
}

impl Thin {
    /// The samples beyond the percentile, whole: the requests ranked above it.
    pub fn samples_beyond(&self) -> u64 {
        crate::confidence::whole_beyond(self.beyond)
    }
}

/// Intervals and sample-size warnings for `percentiles` of `h`.
pub fn intervals_of(
    h: &Histogram<u64>,
    censored: &Histogram<u64>,
    percentiles: &[f64],
    key: impl Fn(f64) -> String,
) -> (Option<CiSet>, BTreeMap<String, Thin>) {
    let mut cis = BTreeMap::new();
    let mut thin = BTreeMap::new();
    for &p in percentiles {
        if let Some(v) = percentile_interval(h, censored, p, LEVEL) {
            let ci = Ci {
                lo: v.lo,
                hi: v.hi,
                hi_open: v.hi_open,
            };
            cis.insert(key(p), ci);
        }
        if let Some(w) = sample_warning(h.len(), p) {
            let t = Thin {
                beyond: w.beyond,
                needed: w.needed,
            };
            thin.insert(key(p), t);
        }
    }
    let set = (!cis.is_empty()).then_some(CiSet {
        level: LEVEL,
        percentiles: cis,
    });
    (set, thin)
}

/// The run-level checks of issue "numbers you can defend".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Statistics {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub conformance: Option<Conformance>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub steady_state: Option<SteadyStateSummary>,
    /// Present when a warm-up was trimmed from the summary histograms.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub warmup: Option<WarmupTrim>,
    /// Whether the run's samples support its statistics (rate, arrival law, independence,
    /// stationarity); absent in documents older than `sojourn.result/4`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub validity: Option<crate::validity::Validity>,
}

/// Did the requests leave when the intended arrival process says they should?
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conformance {
    /// `poisson`, or `constant` (also a ramp: its spacing is deterministic).
    pub process: String,
    /// Gaps between consecutive sends of one sender that were tested.
    pub gaps: u64,
    /// Rescaled gaps (1 = the schedule's mean spacing at that moment): 1st, 50th, 99th
    /// percentile. Exactly 1 for a perfect constant-rate sender; Exp(1) for Poisson.
    pub gap_quantiles: [f64; 3],
    /// Poisson: the Kolmogorov–Smirnov distance of the rescaled gaps from Exp(1).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ks_distance: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub p_value: Option<f64>,
    /// Constant rate: the 99th percentile of send lag (sent − due).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub send_lag_p99_ns: Option<u64>,
    /// The deviation allowed before the sends count as not following the schedule: a CDF
    /// distance for Poisson, a send lag in ns for constant rate.
    pub tolerance: f64,
    pub conforms: bool,
    /// The gaps tested, whole, so shards' tests merge into one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub record: Option<crate::conformance::GapRecordDoc>,
}

/// The smallest send-lag tolerance for a constant-rate schedule: below a millisecond, OS
/// scheduling noise dominates, and the response time already includes every nanosecond of it.
pub const MIN_CONSTANT_TOLERANCE: Duration = Duration::from_millis(1);

/// Tests the sends of an open-loop run. `lane_interval` is one sender's mean spacing at the
/// nominal rate (threads ÷ rate); `send_lag_p99` comes from the run's send-lag histogram.
pub fn conformance_of(
    arrival: &str,
    gaps: &GapRecord,
    lane_interval: Duration,
    send_lag_p99: u64,
) -> Option<Conformance> {
    if gaps.is_empty() {
        return None;
    }
    let gap_quantiles = [0.01, 0.5, 0.99].map(|q| gaps.gap_quantile(q));
    if arrival == "poisson" {
        let fit = poisson_fit(gaps)?;
        return Some(Conformance {
            process: "poisson".into(),
            gaps: fit.n,
            gap_quantiles,
            ks_distance: Some(fit.d),
            p_value: Some(fit.p_value),
            send_lag_p99_ns: None,
            tolerance: fit.tolerance,
            conforms: fit.conforms,
            record: Some(gaps.to_doc()),
        });
    }
    // A request sent more than one slot late has slipped past the next one's due time: the
    // server no longer sees the intended spacing.
    let tolerance = nanos(lane_interval.max(MIN_CONSTANT_TOLERANCE));
    Some(Conformance {
        process: "constant".into(),
        gaps: gaps.len(),
        gap_quantiles,
        ks_distance: None,
        p_value: None,
        send_lag_p99_ns: Some(send_lag_p99),
        tolerance: tolerance as f64,
        conforms: send_lag_p99 <= tolerance,
        record: Some(gaps.to_doc()),
    })
}

/// Did the per-interval medians settle, and do they still rise?
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SteadyStateSummary {
    /// Intervals with answers that the series was built from.
    pub intervals: usize,
    /// The warm-up found by MSER: how many leading intervals with answers differ from the rest.
    pub warmup_intervals: usize,
    pub warmup_ns: u64,
    /// Mann–Kendall z of the medians after the warm-up; Theil–Sen rise over them (ns).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub trend_z: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rise_ns: Option<f64>,
    pub rising: bool,
    pub steady: bool,
}

/// The median of each interval's response times with the interval's start, in time order.
/// Intervals with no answers are left out: they have no median.
pub fn interval_medians(intervals: &[IntervalRecord], width: Duration) -> Vec<(Duration, f64)> {
    intervals
        .iter()
        .map(|r| (r, r.response_histogram()))
        .filter(|(_, h)| !h.is_empty())
        .map(|(r, h)| (width * r.index as u32, h.value_at_quantile(0.5) as f64))
        .collect()
}

/// At most this many points go into the steady-state tests.
pub const MAX_STEADY_POINTS: usize = 500;

/// MSER's warm-up and the trend after it, on `medians` from [`interval_medians`].
pub fn steady_state_of(medians: &[(Duration, f64)]) -> Option<SteadyStateSummary> {
    if medians.len() < 3 {
        return None;
    }
    // The trend test is quadratic in points: a long run's medians are averaged in chunks so
    // that at most MAX_STEADY_POINTS remain (an 8-hour run at 1 s intervals: chunks of 58).
    let chunk = medians.len().div_ceil(MAX_STEADY_POINTS);
    let series: Vec<f64> = medians
        .chunks(chunk)
        .map(|c| c.iter().map(|(_, m)| m).sum::<f64>() / c.len() as f64)
        .collect();
    let s = crate::steady::assess(&series);
    // The warm-up ends where the first kept interval starts.
    let warmup = match s.warmup_intervals * chunk {
        0 => Duration::ZERO,
        k => medians[k.min(medians.len() - 1)].0,
    };
    Some(SteadyStateSummary {
        intervals: medians.len(),
        warmup_intervals: (s.warmup_intervals * chunk).min(medians.len()),
        warmup_ns: nanos(warmup),
        trend_z: s.trend.map(|t| t.z),
        rise_ns: s.trend.map(|t| t.rise),
        rising: s.trend.is_some_and(|t| t.rising),
        steady: s.steady,
    })
}

/// What a warm-up trim left out of the summary histograms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WarmupTrim {
    /// `auto` (found by MSER) or `fixed` (asked for with --warmup D).
    pub method: WarmupMethod,
    /// The cut, from the start of the run, rounded up to a whole interval.
    pub until_ns: u64,
    /// Requests that finished before the cut: in the counts and the timeline, not the summary.
    pub requests: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarmupMethod {
    Auto,
    Fixed,
}
