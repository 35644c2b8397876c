//! A percentile's interval that holds when requests are not independent: CDF-indicator batch
//! means over the run's own intervals, and "too few independent stretches" where the run holds
//! too few to support one.
//!
//! The order-statistics interval ([`crate::confidence`]) assumes independent requests. Under
//! queueing one stall slows hundreds of neighbours, and that interval is far too narrow (in an
//! M/M/1 queue at ρ = 0.9 it covers the true p99 in about 5% of 60 s runs). Here the run's
//! timeline does the work instead:
//!
//! 1. Take the estimate x̂ of the q-quantile from the whole run.
//! 2. In each of the run's intervals, count the requests at or below x̂.
//! 3. Count the *stretches*, the independent episodes that put requests beyond x̂: requests
//!    inside one move together, so their number, not the requests', says how much independent
//!    evidence the percentile rests on. Two estimates, the larger taken: the maximal runs of
//!    consecutive intervals in which more than 1 − q of the requests lie beyond x̂ (long
//!    episodes), and the clusters of the blocks estimator of the extremal index with the
//!    intervals as blocks (short episodes, several to an interval; Smith and Weissman 1994).
//! 4. With fewer than [`MIN_STRETCHES`], give no interval: the run says so.
//! 5. Otherwise group the intervals into B = stretches ÷ 2 consecutive batches (5 to 20), take
//!    each batch's fraction at or below x̂, and a Student t interval on their mean: F(x̂) ∈ q ± h.
//! 6. Read the interval back from the whole run's sorted values at q − h and q + h, and never
//!    narrower than the order-statistics interval, which stays as the floor it is.
//!
//! References: the indicator (CDF) batch-means interval for steady-state quantiles, Seila 1982
//! ("A batching approach to quantile estimation in regenerative simulations") and Alexopoulos,
//! Goldsman, Mokashi, Tien and Wilson 2019 ("Sequest", Operations Research 67(4)); batch means
//! and its need for batches longer than the correlation, Law and Kelton, *Simulation Modeling
//! and Analysis*, §9.5.3; clusters of exceedances as the independent units of a tail, Leadbetter,
//! Lindgren and Rootzén 1983 (the extremal index). How often it covers, measured with the
//! simulator, is in `docs/statistics.md` and `crates/sim/tests/coverage.rs`.
use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::confidence::{percentile_interval, value_at_rank, LEVEL};

/// Below this many independent stretches a run gives no interval for a percentile.
pub const MIN_STRETCHES: u64 = 10;
/// The fewest and most batches the interval is built from.
pub const MIN_BATCHES: u64 = 5;
pub const MAX_BATCHES: u64 = 20;
/// Batches per stretch: two stretches to a batch, so a batch's share beyond x̂ is rarely one
/// episode alone (a batch holding a single stall is as lumpy as the stall).
const STRETCHES_PER_BATCH: u64 = 2;

/// The interval of one percentile from the run's batches, or why there is none.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BatchCi {
    /// The interval's ends in ns; absent when the run holds too few independent stretches.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub lo: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub hi: Option<u64>,
    /// The upper end is not bounded by the data (as in [`crate::evidence::Ci`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hi_open: bool,
    /// Independent stretches of the run that put requests beyond the percentile (0 when the
    /// order statistics pin the percentile to one histogram bucket).
    pub stretches: u64,
    /// Batches the interval was built from (0 when there is none).
    pub batches: u64,
}

impl BatchCi {
    /// The interval, when the run supports one.
    pub fn ci(&self) -> Option<crate::evidence::Ci> {
        Some(crate::evidence::Ci {
            lo: self.lo?,
            hi: self.hi?,
            hi_open: self.hi_open,
        })
    }

    /// `[191.00 ms, 197.90 ms]`, or `[too few independent stretches: 3]`.
    pub fn text(&self) -> String {
        match self.ci() {
            Some(ci) => ci.text(),
            None => format!("[too few independent stretches: {}]", self.stretches),
        }
    }
}

/// The batch-means intervals of one histogram's percentiles, keyed as `percentiles` is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchSet {
    pub level: f64,
    /// The run's intervals the batches were built from (after any warm-up trim).
    pub intervals: u64,
    pub percentiles: BTreeMap<String, BatchCi>,
}

/// [`batch_interval`] for each of `percentiles` (those below 100), at [`LEVEL`]; `None` for an
/// empty run.
pub fn batch_set(
    whole: &Histogram<u64>,
    censored: &Histogram<u64>,
    intervals: &[Histogram<u64>],
    percentiles: &[f64],
    key: impl Fn(f64) -> String,
) -> Option<BatchSet> {
    let set: BTreeMap<String, BatchCi> = percentiles
        .iter()
        .filter_map(|&p| {
            Some((
                key(p),
                batch_interval(whole, censored, intervals, p, LEVEL)?,
            ))
        })
        .collect();
    (!set.is_empty()).then_some(BatchSet {
        level: LEVEL,
        intervals: intervals.len() as u64,
        percentiles: set,
    })
}

/// The batch-means interval at `level` for percentile `p` (0 < p < 100) of `whole`, whose
/// requests finished in `intervals` (in time order; a request in flight at the end is in
/// `whole` and `censored` but in no interval). `None` for an empty run or `p` out of range.
pub fn batch_interval(
    whole: &Histogram<u64>,
    censored: &Histogram<u64>,
    intervals: &[Histogram<u64>],
    p: f64,
    level: f64,
) -> Option<BatchCi> {
    let floor = percentile_interval(whole, censored, p, level)?;
    if p >= 100.0 {
        return None;
    }
    // The order statistics pin the percentile to one histogram bucket (a server that answers
    // in one fixed time): every batch agrees, and nothing wider is needed.
    if !floor.hi_open && whole.equivalent(floor.lo, floor.hi) {
        return Some(BatchCi {
            lo: Some(floor.lo),
            hi: Some(floor.hi),
            hi_open: false,
            stretches: 0,
            batches: 0,
        });
    }
    let q = p / 100.0;
    let estimate = whole.value_at_quantile(q);
    let shares: Vec<Share> = intervals.iter().map(|h| Share::of(h, estimate)).collect();
    let stretches = stretches(&shares, q).max(clusters(&shares));
    let too_few = BatchCi {
        lo: None,
        hi: None,
        hi_open: false,
        stretches,
        batches: 0,
    };
    if stretches < MIN_STRETCHES {
        return Some(too_few);
    }
    let wanted = (stretches / STRETCHES_PER_BATCH).clamp(MIN_BATCHES, MAX_BATCHES);
    let fractions = batch_fractions(&shares, wanted as usize);
    let Some(half) = half_width(&fractions, level) else {
        return Some(too_few);
    };
    let n = whole.len();
    let lo_rank = ((q - half) * n as f64).floor().max(1.0) as u64;
    let hi_rank = ((q + half) * n as f64).ceil() as u64;
    let lo = whole
        .lowest_equivalent(value_at_rank(whole, lo_rank))
        .min(floor.lo);
    let hi_open = floor.hi_open || hi_rank > n;
    let hi = match hi_open {
        true => whole.max(),
        false => value_at_rank(whole, hi_rank).max(floor.hi),
    };
    Some(BatchCi {
        lo: Some(lo),
        hi: Some(hi),
        hi_open,
        stretches,
        batches: fractions.len() as u64,
    })
}

/// One interval's requests: how many finished, and how many at or below the estimate.
#[derive(Debug, Clone, Copy, Default)]
struct Share {
    count: u64,
    at_or_below: u64,
}

impl Share {
    fn of(h: &Histogram<u64>, estimate: u64) -> Share {
        Share {
            count: h.len(),
            // Values equivalent to the estimate (its histogram bucket) count as at or below it,
            // as they do when the estimate is read.
            at_or_below: h.count_between(0, estimate),
        }
    }

    /// More than 1 − q of its requests lie beyond the estimate.
    fn beyond_share(&self, q: f64) -> bool {
        self.count > 0 && (self.count - self.at_or_below) as f64 > (1.0 - q) * self.count as f64
    }
}

/// Maximal runs of consecutive intervals with more than their share beyond the estimate.
fn stretches(shares: &[Share], q: f64) -> u64 {
    let mut count = 0;
    let mut inside = false;
    for s in shares {
        let high = s.beyond_share(q);
        if high && !inside {
            count += 1;
        }
        inside = high;
    }
    count
}

/// The independent clusters of requests beyond the estimate, by the blocks estimator of the
/// extremal index (Smith and Weissman 1994) with the intervals as blocks: θ = ln(1 − K/b) ÷
/// (n/b · ln(1 − N/n)) for K of b intervals holding any of the N of n requests beyond, and
/// θ·N clusters. 0 where it cannot tell (every interval holds some beyond).
fn clusters(shares: &[Share]) -> u64 {
    let used: Vec<&Share> = shares.iter().filter(|s| s.count > 0).collect();
    let b = used.len() as f64;
    let n: u64 = used.iter().map(|s| s.count).sum();
    let beyond: u64 = used.iter().map(|s| s.count - s.at_or_below).sum();
    let k = used.iter().filter(|s| s.count > s.at_or_below).count() as f64;
    if beyond == 0 || k >= b || beyond >= n {
        return 0;
    }
    let theta = (1.0 - k / b).ln() / (n as f64 / b * (1.0 - beyond as f64 / n as f64).ln());
    (theta.clamp(0.0, 1.0) * beyond as f64).round() as u64
}

/// Each batch's fraction at or below the estimate: `batches` runs of consecutive intervals of
/// equal length, the spare intervals left out at the start (where any warm-up lies). Batches
/// without requests are left out.
fn batch_fractions(shares: &[Share], batches: usize) -> Vec<f64> {
    let batches = batches.min(shares.len());
    if batches == 0 {
        return Vec::new();
    }
    let length = shares.len() / batches;
    let spare = shares.len() - length * batches;
    shares[spare..]
        .chunks(length)
        .map(|c| {
            c.iter().fold(Share::default(), |a, s| Share {
                count: a.count + s.count,
                at_or_below: a.at_or_below + s.at_or_below,
            })
        })
        .filter(|s| s.count > 0)
        .map(|s| s.at_or_below as f64 / s.count as f64)
        .collect()
}

/// The half-width of the Student t interval at `level` on the mean of `fractions`; `None` with
/// fewer than [`MIN_BATCHES`].
fn half_width(fractions: &[f64], level: f64) -> Option<f64> {
    let b = fractions.len();
    if (b as u64) < MIN_BATCHES {
        return None;
    }
    let mean = fractions.iter().sum::<f64>() / b as f64;
    let var = fractions.iter().map(|f| (f - mean).powi(2)).sum::<f64>() / (b - 1) as f64;
    let t = crate::repeat::t_quantile(0.5 + level / 2.0, (b - 1) as f64);
    Some(t * (var / b as f64).sqrt())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::record::new_histogram;

    fn hist(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
        let mut h = new_histogram();
        for v in values {
            h.record(v).unwrap();
        }
        h
    }

    /// The Student t quantiles of the published table (e.g. Abramowitz and Stegun, table 26.10):
    /// t(0.975; 4) = 2.776, t(0.975; 9) = 2.262, t(0.975; 19) = 2.093.
    #[test]
    fn half_width_uses_the_t_table() {
        let five = [0.1, 0.2, 0.3, 0.4, 0.5];
        let s = (0.025f64 / 5.0).sqrt(); // sample variance 0.025
        assert!((half_width(&five, 0.95).unwrap() - 2.776 * s).abs() < 1e-3);
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = (9.1667f64 / 10.0).sqrt();
        assert!((half_width(&ten, 0.95).unwrap() - 2.262 * s).abs() < 1e-3);
        assert_eq!(
            half_width(&five[..4], 0.95),
            None,
            "four batches are too few"
        );
    }

    #[test]
    fn stretches_count_runs_of_intervals_beyond_their_share() {
        let s = |count, at_or_below| Share { count, at_or_below };
        // q = 0.9: more than 10% beyond is "high".
        let shares = [
            s(10, 10),
            s(10, 8),
            s(10, 5),
            s(10, 10),
            s(0, 0),
            s(10, 8),
            s(10, 9),
        ];
        assert_eq!(stretches(&shares, 0.9), 2, "two runs: intervals 1-2 and 5");
    }

    #[test]
    fn batches_leave_the_spare_intervals_out_at_the_start() {
        let s = |count, at_or_below| Share { count, at_or_below };
        let shares = [s(100, 0), s(10, 5), s(10, 10), s(10, 0), s(10, 10)];
        assert_eq!(batch_fractions(&shares, 2), vec![0.75, 0.5]);
    }

    /// Independent requests alternating between two intervals' worth of values: plenty of
    /// stretches, and an interval near the order-statistics one.
    #[test]
    fn independent_requests_give_an_interval_at_least_as_wide_as_the_floor() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            1_000 + rng % 1_000_000
        };
        let intervals: Vec<Histogram<u64>> =
            (0..60).map(|_| hist((0..500).map(|_| next()))).collect();
        let mut whole = new_histogram();
        for h in &intervals {
            whole.add(h).unwrap();
        }
        let none = new_histogram();
        for p in [50.0, 90.0, 99.0] {
            let b = batch_interval(&whole, &none, &intervals, p, 0.95).unwrap();
            let floor = percentile_interval(&whole, &none, p, 0.95).unwrap();
            assert!(b.stretches >= MIN_STRETCHES, "p{p}: {b:?}");
            let ci = b.ci().unwrap_or_else(|| panic!("p{p}: {b:?}"));
            assert!(
                ci.lo <= floor.lo && ci.hi >= floor.hi,
                "p{p}: {ci:?} vs {floor:?}"
            );
            // The truth (uniform on 1,000..1,001,000) is inside, and the interval is not wild.
            let truth = 1_000.0 + p / 100.0 * 1e6;
            assert!(
                (ci.lo as f64) <= truth && truth <= ci.hi as f64,
                "p{p}: {ci:?}"
            );
            assert!(((ci.hi - ci.lo) as f64) < 0.1e6, "p{p}: {ci:?}");
        }
    }

    /// One stall in a long run: every slow request in three consecutive intervals. p99 rests
    /// on that one episode, however many requests it holds: the run count sees one stretch,
    /// the clusters estimate three (one per interval it fills), both short of ten.
    #[test]
    fn one_stall_is_too_few_stretches() {
        let (whole, intervals) = one_stall();
        let none = new_histogram();
        let b = batch_interval(&whole, &none, &intervals, 99.0, 0.95).unwrap();
        assert_eq!((b.stretches, b.ci()), (3, None), "{b:?}");
        assert_eq!(b.text(), "[too few independent stretches: 3]");
        // The order-statistics interval would have given a narrow one.
        let floor = percentile_interval(&whole, &none, 99.0, 0.95).unwrap();
        assert!(
            !floor.hi_open && floor.hi < floor.lo + floor.lo / 20,
            "{floor:?}"
        );
    }

    /// 60 intervals of 100 requests at 1.0-1.1 ms, but for three in a row at 500-698 ms.
    pub(crate) fn one_stall() -> (Histogram<u64>, Vec<Histogram<u64>>) {
        let intervals: Vec<Histogram<u64>> = (0..60)
            .map(|i| match i {
                30..=32 => hist((0..100).map(|k| 500_000_000 + k * 2_000_000)),
                _ => hist((0..100).map(|k| 1_000_000 + k * 1_000)),
            })
            .collect();
        let mut whole = new_histogram();
        for h in &intervals {
            whole.add(h).unwrap();
        }
        (whole, intervals)
    }
}
