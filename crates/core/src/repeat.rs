//! Repetitions (`--repeat N`): N independent runs of one load, each with seeds of its own, and
//! for every percentile an interval from the spread between the runs.
//!
//! Whatever the dependence inside a run (a stall slowing hundreds of neighbours), the runs
//! themselves are independent by construction: the replication method (Law & Kelton,
//! *Simulation Modeling and Analysis*, 5th ed., §9.4.1). The interval reads each percentile
//! through the runs pooled: the pooled estimate x̂, each run's fraction of requests at or below
//! x̂, Student's t on the mean of those N fractions, and the pooled values at the ranks it gives
//! (the CDF-indicator batch means of [`crate::batches`] with each run one batch; Seila 1982).
//! Never narrower than the pooled runs' order-statistics interval.
//!
//! Why not Student's t on the N per-run estimates of the percentile: a short run's p99 of a
//! queue is biased low (most runs miss the rare long excursion), so that interval is centred on
//! the wrong value. In the coverage study (`crates/sim/tests/coverage.rs`, M/M/1 at ρ = 0.9, ten
//! 60 s runs) it covered the true p99 in 55% of 400 groups; the pooled interval in 365 (91%).
use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::record::{bound_at, new_histogram};
use crate::result::{percentile_key, Counts, HistogramSummary, RateSummary, PERCENTILES};

/// The confidence of the between-run intervals.
pub const LEVEL: f64 = 0.95;

/// Every repetition of a repeated run, and the between-run intervals over them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repetitions {
    /// Repetitions asked for; `runs` holds fewer when the run was interrupted.
    pub asked: u32,
    /// The pause between two repetitions, ns (0 in virtual time).
    pub pause_ns: u64,
    /// Each repetition's own summary, in the order they ran.
    pub runs: Vec<Repetition>,
    /// The between-run interval of every percentile; absent with fewer than two complete
    /// repetitions, which give no spread to measure.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub between: Option<BetweenRuns>,
}

/// One repetition as the document keeps it: everything but its timeline, which lives in the
/// merged document's timeline, and its statistics, which the merged document recomputes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repetition {
    /// From 1.
    pub index: u32,
    /// The arrival seed (Poisson arrivals, random target order); absent when nothing is random.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub seed: Option<u64>,
    /// The simulated scenario's seed (`sim`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub scenario_seed: Option<u64>,
    pub counts: Counts,
    pub rate: RateSummary,
    pub elapsed_ns: u64,
    /// Stopped early (Ctrl-C): kept, but left out of the between-run intervals, since a
    /// shorter run's estimate is a draw of another statistic.
    #[serde(default)]
    pub interrupted: bool,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub started_unix_ns: Option<u64>,
    pub response: HistogramSummary,
    pub service: HistogramSummary,
    pub send_lag: HistogramSummary,
    /// The lower bounds inside `response` (censored requests, timeouts): what tells, at any
    /// percentile, whether this repetition's estimate is only a lower bound.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub censored: Option<HistogramSummary>,
}

/// The between-run intervals, percentile by percentile, for each histogram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BetweenRuns {
    pub level: f64,
    /// The complete repetitions the intervals rest on.
    pub runs: u32,
    pub response: BTreeMap<String, BetweenRun>,
    pub service: BTreeMap<String, BetweenRun>,
    pub send_lag: BTreeMap<String, BetweenRun>,
}

/// The between-run interval of one percentile, ns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BetweenRun {
    /// The percentile of the runs pooled: what the interval is for.
    pub estimate: f64,
    pub lo: f64,
    pub hi: f64,
    /// Some repetition's estimate is only a lower bound (censored requests could raise it), so
    /// the interval is too.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub lower_bound: bool,
}

impl BetweenRun {
    /// `[lo, hi]` as the interval text of every other interval.
    pub fn text(&self) -> String {
        let (lo, hi) = (self.lo.max(0.0) as u64, self.hi.max(0.0) as u64);
        let bound = if self.lower_bound { "≥ " } else { "" };
        format!(
            "{bound}{} [{}, {}]",
            crate::format_ns(self.estimate.max(0.0) as u64),
            crate::format_ns(lo),
            crate::format_ns(hi)
        )
    }
}

/// Student's t-interval on a mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TInterval {
    pub mean: f64,
    /// The sample standard deviation (n − 1).
    pub stdev: f64,
    pub lo: f64,
    pub hi: f64,
}

/// Student's t-interval at `level` for the mean of `estimates`: mean ± t(1 − α/2, n − 1)·s/√n.
/// `None` with fewer than two estimates (no spread to measure) or any that is not finite.
pub fn t_interval(estimates: &[f64], level: f64) -> Option<TInterval> {
    let n = estimates.len();
    if n < 2 || estimates.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let nf = n as f64;
    let mean = estimates.iter().sum::<f64>() / nf;
    let var = estimates.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (nf - 1.0);
    let stdev = var.sqrt();
    let half = t_quantile(1.0 - (1.0 - level) / 2.0, nf - 1.0) * stdev / nf.sqrt();
    Some(TInterval {
        mean,
        stdev,
        lo: mean - half,
        hi: mean + half,
    })
}

/// The between-run interval of percentile `p` (0 < p < 100) read through the runs pooled:
/// each run's fraction at or below the pooled estimate, Student's t on their mean at `level`,
/// and the pooled values at those ranks. The CDF-indicator batch means of
/// [`crate::batches`], with each run a batch: independent by construction. `(lo, estimate,
/// hi)` in ns, never narrower than the pooled runs' order-statistics interval (the floor, as
/// for one run; `censored` holds the pooled runs' lower bounds); `None` with fewer than two runs
/// holding requests.
pub fn pooled_interval(
    runs: &[Histogram<u64>],
    censored: &Histogram<u64>,
    p: f64,
    level: f64,
) -> Option<(u64, u64, u64)> {
    let mut pooled = new_histogram();
    for h in runs {
        pooled.add(h).ok()?;
    }
    let q = p / 100.0;
    let estimate = pooled.value_at_quantile(q);
    let fractions: Vec<f64> = runs
        .iter()
        .filter(|h| !h.is_empty())
        .map(|h| h.count_between(0, estimate) as f64 / h.len() as f64)
        .collect();
    let t = t_interval(&fractions, level)?;
    let half = (t.hi - t.lo) / 2.0;
    // Centred on the estimate's own rank, as for one run (see `crate::batches`).
    let centre = q;
    let n = pooled.len() as f64;
    let rank = |f: f64| (f * n).clamp(1.0, n);
    let lo = crate::confidence::value_at_rank(&pooled, rank(centre - half).floor() as u64);
    let hi = crate::confidence::value_at_rank(&pooled, rank(centre + half).ceil() as u64);
    let floor = crate::confidence::percentile_interval(&pooled, censored, p, level)?;
    Some((
        pooled.lowest_equivalent(lo).min(floor.lo),
        estimate,
        hi.max(floor.hi),
    ))
}

/// The `q` quantile of Student's t with `df` degrees of freedom.
pub fn t_quantile(q: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df)
        .expect("a t distribution with positive degrees of freedom")
        .inverse_cdf(q)
}

/// Which of a repetition's histograms.
pub type Pick = fn(&Repetition) -> &HistogramSummary;

impl Repetitions {
    /// The document's section for `runs`, with the between-run interval of every percentile
    /// of every histogram.
    pub fn of(runs: Vec<Repetition>, asked: u32, pause_ns: u64) -> Repetitions {
        let complete = runs.iter().filter(|r| !r.interrupted).count() as u32;
        let table = |pick: Pick, censored: bool| -> BTreeMap<String, BetweenRun> {
            PERCENTILES
                .iter()
                .filter_map(|&p| Some((percentile_key(p), between(&runs, pick, censored, p)?)))
                .collect()
        };
        let between = (complete >= 2).then(|| BetweenRuns {
            level: LEVEL,
            runs: complete,
            response: table(|r| &r.response, true),
            service: table(|r| &r.service, false),
            send_lag: table(|r| &r.send_lag, false),
        });
        Repetitions {
            asked,
            pause_ns,
            runs,
            between,
        }
    }

    /// The between-run interval of the response time at any percentile `p`, read off each
    /// complete repetition's histogram; `None` with fewer than two, or histograms that do not
    /// decode (a damaged file).
    pub fn response_at(&self, p: f64) -> Option<BetweenRun> {
        between(&self.runs, |r| &r.response, true, p)
    }

    /// The complete repetitions' estimates of percentile `p` of the picked histogram, as
    /// their summaries carry them (one of [`PERCENTILES`]), and whether any is a lower bound.
    pub fn estimates(&self, pick: Pick, p: f64) -> Option<(Vec<f64>, bool)> {
        estimates(&self.runs, pick, p)
    }
}

fn estimates(runs: &[Repetition], pick: Pick, p: f64) -> Option<(Vec<f64>, bool)> {
    let mut out = Vec::new();
    let mut lower_bound = false;
    for r in runs.iter().filter(|r| !r.interrupted) {
        let b = pick(r).at(p)?;
        lower_bound |= b.lower_bound;
        out.push(b.value as f64);
    }
    Some((out, lower_bound))
}

/// The between-run interval of percentile `p` (below 100) of the picked histogram over the
/// complete repetitions, with the response's censored requests when `censored` (only the
/// response carries them); `None` with fewer than two, or histograms that do not decode.
fn between(runs: &[Repetition], pick: Pick, censored: bool, p: f64) -> Option<BetweenRun> {
    if p >= 100.0 {
        return None; // no sample bounds the maximum from above
    }
    let mut histograms = Vec::new();
    let mut pooled_censored = new_histogram();
    let mut lower_bound = false;
    for r in runs.iter().filter(|r| !r.interrupted) {
        let h = pick(r).histogram().ok()?;
        let c = match (&r.censored, censored) {
            (Some(c), true) => c.histogram().ok()?,
            _ => new_histogram(),
        };
        lower_bound |= bound_at(&h, &c, p).lower_bound;
        pooled_censored.add(&c).ok()?;
        histograms.push(h);
    }
    let (lo, estimate, hi) = pooled_interval(&histograms, &pooled_censored, p, LEVEL)?;
    Some(BetweenRun {
        estimate: estimate as f64,
        lo: lo as f64,
        hi: hi as f64,
        lower_bound,
    })
}

/// The seed of repetition `k` (from 0): the given seed for the first, then a SplitMix64 step
/// of it and `k` for the rest, so neighbouring seeds give unrelated streams and the same first
/// seed always gives the same repetitions. Kept below 2^63, the largest seed a flag or a
/// scenario file takes, so every repetition can be rerun alone with its own seed.
pub fn repetition_seed(first: u64, k: u32) -> u64 {
    if k == 0 {
        return first;
    }
    let mut z = first.wrapping_add(u64::from(k).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) >> 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Estimates 1..=10: mean 5.5, s = √(82.5/9) = 3.0277, t(0.975, 9) = 2.2622 (every t
    /// table, e.g. NIST/SEMATECH e-Handbook §1.3.6.7.2), half-width 2.2622·3.0277/√10 = 2.1659.
    #[test]
    fn the_t_interval_of_one_to_ten_is_the_textbook_one() {
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        let i = t_interval(&xs, 0.95).unwrap();
        assert!((i.mean - 5.5).abs() < 1e-12);
        assert!((i.stdev - 3.027_650_4).abs() < 1e-6, "{}", i.stdev);
        let half = (i.hi - i.lo) / 2.0;
        assert!((half - 2.165_903).abs() < 1e-4, "half-width {half}");
        assert!((i.mean - (i.lo + i.hi) / 2.0).abs() < 1e-12);
    }

    /// Table values of t(0.975, df): 12.706 (1), 2.776 (4), 2.262 (9), 2.045 (29).
    #[test]
    fn t_quantiles_match_the_table() {
        for (df, t) in [(1.0, 12.706), (4.0, 2.776), (9.0, 2.262), (29.0, 2.045)] {
            assert!((t_quantile(0.975, df) - t).abs() < 1e-3, "df {df}");
        }
    }

    #[test]
    fn one_estimate_gives_no_interval() {
        assert_eq!(t_interval(&[3.0], 0.95), None);
        assert_eq!(t_interval(&[], 0.95), None);
        assert_eq!(t_interval(&[1.0, f64::NAN], 0.95), None);
    }

    #[test]
    fn the_first_seed_is_the_given_one_and_the_rest_differ() {
        assert_eq!(repetition_seed(7, 0), 7);
        let seeds: std::collections::BTreeSet<u64> =
            (0..100).map(|k| repetition_seed(7, k)).collect();
        assert_eq!(seeds.len(), 100);
        assert!(seeds.iter().all(|&s| s <= i64::MAX as u64));
        assert_eq!(repetition_seed(7, 3), repetition_seed(7, 3));
    }
}
