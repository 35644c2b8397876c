//! How far to trust a percentile: confidence intervals, sample-size warnings, and whether two
//! runs really differ.
//!
//! A percentile read from a sample is itself a random number: run the same test again and p99
//! moves. How much it moves depends on how many samples lie beyond it, not on the total: p99.99
//! of 13,500 requests rests on about one request.
//!
//! The intervals here assume nothing about the shape of the latency distribution (it is never
//! normal). They rest on one fact: the number of samples below the true q-quantile is Binomial(n,
//! q) whatever the distribution, so the probability that the r-th smallest sample lies below
//! the true quantile is a binomial tail. An interval between two order statistics therefore
//! covers the true quantile with a probability that depends only on n, q and the two ranks.
use hdrhistogram::Histogram;
use rand::SeedableRng;
use rand_distr::{Beta, Distribution};
use rand_pcg::Pcg64Mcg;

/// The confidence level the reports use.
pub const LEVEL: f64 = 0.95;

/// Up to this many samples the binomial is always tabulated exactly.
const EXACT_MAX_N: u64 = 1000;

/// Above `EXACT_MAX_N` the binomial is still tabulated while its variance n·q·(1 − q) is at most
/// this (a standard deviation of 100 ranks, so a table of about 2,500 entries). Past it the
/// binomial is so close to symmetric (skewness below 0.01) that the normal approximation moves
/// a 2.5% tail by less than 0.05 percentage points; below it a far tail (p99.99 of 13,500 has
/// 1.35 samples expected beyond it) is so skewed that the normal curve would be badly wrong.
const EXACT_MAX_VARIANCE: f64 = 10_000.0;

/// An interval between two order statistics of a sample of `n`: [x_(lo), x_(hi)], ranks 1-based.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankInterval {
    pub lo: u64,
    /// `n + 1` means the upper end is beyond the data: the sample cannot bound it from above.
    pub hi: u64,
    /// The probability that the interval covers the true quantile (for a continuous
    /// distribution). At least the requested level whenever the sample is large enough.
    pub coverage: f64,
}

/// The ranks of a distribution-free confidence interval for the `q`-quantile (0 < q ≤ 1) of a
/// sample of `n`, at confidence `level`. `None` for an empty sample or arguments out of range.
///
/// The ends are chosen so that the probability of missing below and of missing above are about
/// equal (each near (1 − level)/2), then pulled in one rank at a time while the coverage stays
/// at least `level`, so the interval is no wider than it has to be. When even the lowest
/// sample is too often above the true quantile (few samples, a low quantile), the lower end
/// stays at rank 1 and the coverage falls short; when the upper end would need a rank above
/// `n`, it is open (`hi = n + 1`).
///
/// The binomial tails are exact (tabulated in logarithms) up to 1,000 samples, and beyond that
/// wherever the binomial is still narrow and skewed (far percentiles); for wide ones, the normal
/// approximation with continuity correction, which is then as good and costs nothing.
pub fn quantile_ranks(n: u64, q: f64, level: f64) -> Option<RankInterval> {
    rank_interval(n, q, level).map(|(ranks, _)| ranks)
}

/// [`quantile_ranks`] and the probability that the lower end misses (lies above the quantile).
fn rank_interval(n: u64, q: f64, level: f64) -> Option<(RankInterval, f64)> {
    if n == 0 || !(q > 0.0 && q <= 1.0) || !(level > 0.0 && level < 1.0) {
        return None;
    }
    if q >= 1.0 {
        // The maximum of the distribution: every sample is at or below it. The largest sample
        // is a lower bound, nothing above it is known.
        let ranks = RankInterval {
            lo: n,
            hi: n + 1,
            coverage: 1.0,
        };
        return Some((ranks, 0.0));
    }
    let b = Binomial::new(n, q);
    // x_(r) lies above the quantile when fewer than r samples fall below it.
    let miss_below = |lo: u64| b.at_most(lo - 1);
    // x_(r) lies below the quantile when at least r samples do.
    let miss_above = |hi: u64| b.at_least(hi);
    let coverage = |lo: u64, hi: u64| 1.0 - miss_below(lo) - miss_above(hi);
    let half = (1.0 - level) / 2.0;

    // Equal tails first: the highest lower rank and the lowest upper rank that each miss with
    // probability at most half of 1 − level.
    let mut lo = last_where(1, n, |r| miss_below(r) <= half).unwrap_or(1);
    let mut hi = first_where(1, n + 1, |s| miss_above(s) <= half);
    // The lower end may be stuck at rank 1 with more than its share of misses: move the upper
    // end out to make up for it, as far as the data allow.
    while coverage(lo, hi) < level && hi <= n {
        hi += 1;
    }
    // Pull the ends in while the coverage allows, each time the end that leaves the two misses
    // more even.
    loop {
        let raise = lo + 1 < hi && coverage(lo + 1, hi) >= level;
        let lower = hi > lo + 1 && coverage(lo, hi - 1) >= level;
        let uneven = |lo: u64, hi: u64| miss_below(lo).max(miss_above(hi));
        match (raise, lower) {
            (true, true) if uneven(lo + 1, hi) <= uneven(lo, hi - 1) => lo += 1,
            (true, false) => lo += 1,
            (_, true) => hi -= 1,
            (false, false) => break,
        }
    }
    let ranks = RankInterval {
        lo,
        hi,
        coverage: coverage(lo, hi),
    };
    Some((ranks, miss_below(lo)))
}

/// The largest `x` in `from..=to` where `ok` holds, for an `ok` that holds up to some point and
/// not after.
fn last_where(from: u64, to: u64, ok: impl Fn(u64) -> bool) -> Option<u64> {
    if !ok(from) {
        return None;
    }
    let (mut good, mut bad) = (from, to + 1);
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if ok(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Some(good)
}

/// The smallest `x` in `from..=to` where `ok` holds, for an `ok` that fails up to some point and
/// holds after; `to` when it holds nowhere before.
fn first_where(from: u64, to: u64, ok: impl Fn(u64) -> bool) -> u64 {
    let (mut bad, mut good) = (from, to);
    if ok(from) {
        return from;
    }
    while good - bad > 1 {
        let mid = bad + (good - bad) / 2;
        if ok(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    good
}

/// The tails of Binomial(n, q), 0 < q < 1.
enum Binomial {
    /// Tabulated for k in `start..start + below.len()`; beyond the table the probability is
    /// below 1e-30. `below[i]` = P(B ≤ start + i), `above[i]` = P(B ≥ start + i), each summed
    /// from its own end so that small tails keep their precision.
    Exact {
        start: u64,
        below: Vec<f64>,
        above: Vec<f64>,
    },
    /// The normal curve with the continuity correction (B is an integer: P(B ≤ k) is read at
    /// k + ½).
    Normal { n: u64, mean: f64, sd: f64 },
}

impl Binomial {
    fn new(n: u64, q: f64) -> Binomial {
        let variance = n as f64 * q * (1.0 - q);
        if n > EXACT_MAX_N && variance > EXACT_MAX_VARIANCE {
            Binomial::normal(n, q)
        } else {
            Binomial::exact(n, q)
        }
    }

    fn normal(n: u64, q: f64) -> Binomial {
        let nf = n as f64;
        Binomial::Normal {
            n,
            mean: nf * q,
            sd: (nf * q * (1.0 - q)).sqrt(),
        }
    }

    fn exact(n: u64, q: f64) -> Binomial {
        let nf = n as f64;
        let mean = nf * q;
        let sd = (nf * q * (1.0 - q)).sqrt();
        // Beyond 12 standard deviations and 40 ranks from the mean, a Chernoff bound puts the
        // mass below 1e-30, even for the skewed binomials of far tails.
        let reach = 12.0 * sd + 40.0;
        let start = (mean - reach).floor().max(0.0) as u64;
        let end = ((mean + reach).ceil() as u64).min(n);
        // Walk out from the mode with the ratio P(k + 1) / P(k) = (n − k)/(k + 1) · q/(1 − q),
        // in logarithms so that nothing underflows; normalise at the end.
        let odds = q.ln() - (-q).ln_1p();
        let mode = (((nf + 1.0) * q).floor() as u64).clamp(start, end);
        let len = (end - start + 1) as usize;
        let mut log_p = vec![0.0f64; len];
        for k in mode..end {
            let i = (k - start) as usize;
            log_p[i + 1] = log_p[i] + ((n - k) as f64 / (k + 1) as f64).ln() + odds;
        }
        for k in (start + 1..=mode).rev() {
            let i = (k - start) as usize;
            log_p[i - 1] = log_p[i] - ((n - k + 1) as f64 / k as f64).ln() - odds;
        }
        let top = log_p.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let p: Vec<f64> = log_p.iter().map(|l| (l - top).exp()).collect();
        let total: f64 = p.iter().sum();
        let mut below = Vec::with_capacity(len);
        let mut sum = 0.0;
        for x in &p {
            sum += x / total;
            below.push(sum.min(1.0));
        }
        let mut above = vec![0.0; len];
        let mut sum = 0.0;
        for (i, x) in p.iter().enumerate().rev() {
            sum += x / total;
            above[i] = sum.min(1.0);
        }
        Binomial::Exact {
            start,
            below,
            above,
        }
    }

    /// P(B ≤ k).
    fn at_most(&self, k: u64) -> f64 {
        match self {
            Binomial::Exact { start, below, .. } => {
                if k < *start {
                    0.0
                } else {
                    below.get((k - start) as usize).copied().unwrap_or(1.0)
                }
            }
            Binomial::Normal { n, mean, sd } => {
                if k >= *n {
                    1.0
                } else {
                    normal_cdf((k as f64 + 0.5 - mean) / sd)
                }
            }
        }
    }

    /// P(B ≥ k).
    fn at_least(&self, k: u64) -> f64 {
        match self {
            Binomial::Exact { start, above, .. } => {
                if k <= *start {
                    1.0
                } else {
                    above.get((k - start) as usize).copied().unwrap_or(0.0)
                }
            }
            Binomial::Normal { n, mean, sd } => {
                if k == 0 {
                    1.0
                } else if k > *n {
                    0.0
                } else {
                    normal_cdf((mean - k as f64 + 0.5) / sd)
                }
            }
        }
    }
}

/// The standard normal CDF, Φ(x) = erfc(−x/√2)/2, with erfc from Abramowitz & Stegun 7.1.26
/// (absolute error below 1.5e-7: ample for comparing tails with a few percent).
fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-z * z).exp();
    if x >= 0.0 {
        1.0 - erfc / 2.0
    } else {
        erfc / 2.0
    }
}

/// A confidence interval for a percentile, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ValueInterval {
    pub lo: u64,
    /// When `hi_open`, the interval has no upper end the data can vouch for: `hi` is then the
    /// largest value recorded, and the truth may lie anywhere above it.
    pub hi: u64,
    pub hi_open: bool,
    /// The coverage the interval achieves: at least the requested level whenever the sample
    /// allows it (an open upper end counts as unbounded).
    pub level: f64,
}

/// The confidence interval at `level` for percentile `p` (0 < p ≤ 100) of the values in `h`.
/// `None` when `h` is empty or `p` is out of range.
///
/// `censored` holds the lower bounds of right-censored values (in flight at the end, timed
/// out), which are also inside `h` (see [`crate::record::bound_at`]). They cannot make the lower
/// end too high: a censored value is at least what was recorded. They can hide the upper end:
/// if moving every censored value to +∞ would change the value at the upper rank (or push that
/// rank past the uncensored values), the upper end is open.
///
/// Each end is widened to its whole histogram bucket (the lowest value the lower end's bucket
/// could hold, the highest of the upper end's), so the interval contains the order statistics
/// themselves, not just values equivalent to them.
pub fn percentile_interval(
    h: &Histogram<u64>,
    censored: &Histogram<u64>,
    p: f64,
    level: f64,
) -> Option<ValueInterval> {
    if !(p > 0.0 && p <= 100.0) {
        return None;
    }
    let n = h.len();
    let (ranks, miss_below) = rank_interval(n, p / 100.0, level)?;
    let lo = h.lowest_equivalent(value_at_rank(h, ranks.lo));
    let k = censored.len().min(n);
    let hi_open = ranks.hi > n
        || (k > 0
            && (ranks.hi > n - k || {
                let mut uncensored = h.clone();
                // Censored values are in `h`; should a stray one not be, leave `h` as it is.
                let _ = uncensored.subtract(censored);
                !h.equivalent(
                    value_at_rank(h, ranks.hi),
                    value_at_rank(&uncensored, ranks.hi),
                )
            }));
    Some(if hi_open {
        ValueInterval {
            lo,
            hi: h.max(),
            hi_open,
            level: 1.0 - miss_below,
        }
    } else {
        ValueInterval {
            lo,
            hi: value_at_rank(h, ranks.hi),
            hi_open,
            level: ranks.coverage,
        }
    })
}

/// The `rank`-th smallest value in `h` (1-based), as the highest value equivalent to it: the
/// same value `h.value_at_quantile(rank / n)` gives. Rank 0 reads as 1; a rank beyond the data
/// gives the maximum (0 for an empty histogram).
pub fn value_at_rank(h: &Histogram<u64>, rank: u64) -> u64 {
    let n = h.len();
    if rank > n {
        return h.max();
    }
    // `value_at_quantile(q)` reads rank ⌈q·n⌉. Asking for the middle of the rank's step,
    // (rank − ½)/n, lands on `rank` however q·n rounds.
    h.value_at_quantile((rank.max(1) as f64 - 0.5) / n as f64)
}

/// A histogram's non-empty buckets as a cumulative table, for many rank look-ups in
/// O(log buckets) each (a single look-up is cheaper through [`value_at_rank`]).
struct Ranked {
    /// Samples at or below each bucket.
    cumulative: Vec<u64>,
    /// Each bucket's highest equivalent value.
    value: Vec<u64>,
    max: u64,
}

impl Ranked {
    fn new(h: &Histogram<u64>) -> Ranked {
        let mut cumulative = Vec::new();
        let mut value = Vec::new();
        let mut seen = 0u64;
        for v in h.iter_recorded() {
            seen += v.count_at_value();
            cumulative.push(seen);
            value.push(v.value_iterated_to());
        }
        Ranked {
            cumulative,
            value,
            max: h.max(),
        }
    }

    /// As [`value_at_rank`].
    fn at(&self, rank: u64) -> u64 {
        let i = self.cumulative.partition_point(|&c| c < rank.max(1));
        self.value.get(i).copied().unwrap_or(self.max)
    }
}

/// Below this many samples beyond a percentile, it rests on too few to report without a
/// warning.
pub const MIN_BEYOND: f64 = 10.0;

/// A percentile that rests on too few samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleWarning {
    /// How many samples are expected beyond the percentile: n·(1 − p/100).
    pub beyond: f64,
    /// A round number of samples (1, 2 or 5 × 10^k) that would put at least [`MIN_BEYOND`]
    /// beyond it.
    pub needed: u64,
}

impl SampleWarning {
    /// The samples beyond the percentile, whole: the requests ranked above it.
    pub fn samples_beyond(&self) -> u64 {
        whole_beyond(self.beyond)
    }
}

/// n·(1 − p/100) as a whole count of samples: n − ⌈n·p/100⌉, the samples ranked above
/// percentile p. (A hair of slack, so that 600 × 0.01 computed as 5.999… still reads 6.)
pub fn whole_beyond(beyond: f64) -> u64 {
    (beyond + 1e-6).floor().max(0.0) as u64
}

/// A warning when fewer than [`MIN_BEYOND`] of `n` samples lie beyond percentile `p` (in
/// percent). The maximum (p = 100) is what it is and never warns.
///
/// Why ten: the upper end of a percentile's confidence interval sits a few samples further out,
/// so with fewer than ten beyond, it is the largest handful of requests (or beyond all of them)
/// that decides the number.
pub fn sample_warning(n: u64, p: f64) -> Option<SampleWarning> {
    if !p.is_finite() || p >= 100.0 {
        return None;
    }
    let tail = ((100.0 - p) / 100.0).min(1.0);
    let beyond = n as f64 * tail;
    // Judged on the whole count, as it is printed: 10,000 × (1 − 0.999) computes as 9.99…, and
    // "10 samples above — not meaningful; run ≥ 10k requests" on a run of 10k contradicts itself.
    if whole_beyond(beyond) as f64 >= MIN_BEYOND {
        return None;
    }
    // The smallest round count at or above MIN_BEYOND / tail, with a hair of slack so that
    // rounding in 1 − p/100 does not turn 100,000 into 200,000.
    let want = MIN_BEYOND / tail * (1.0 - 1e-9);
    let mut scale = 1u64;
    let needed = loop {
        if let Some(&round) = [scale, 2 * scale, 5 * scale]
            .iter()
            .find(|&&v| v as f64 >= want)
        {
            break round;
        }
        match scale.checked_mul(10) {
            Some(next) if next <= u64::MAX / 5 => scale = next,
            _ => break u64::MAX,
        }
    };
    Some(SampleWarning { beyond, needed })
}

/// The difference between two runs at one percentile, with a bootstrap confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Difference {
    /// The percentile in run A, ns.
    pub a: u64,
    /// The percentile in run B, ns.
    pub b: u64,
    /// b − a, ns: positive when B is slower.
    pub delta: i64,
    pub lo: i64,
    pub hi: i64,
    pub level: f64,
    /// The interval excludes zero: the runs differ at this percentile by more than chance.
    pub significant: bool,
}

/// The difference of percentile `p` (0 < p ≤ 100) between `b` and `a`, with a percentile
/// bootstrap interval at `level` from `draws` replicates, reproducible from `seed`. `None` when
/// either histogram is empty, `draws` is 0 or an argument is out of range.
///
/// Resampling n values per replicate would cost O(n) each; it is not needed. A bootstrap
/// sample is F̂⁻¹(U₁), …, F̂⁻¹(Uₙ) for n uniforms, and F̂⁻¹ is monotone, so its k-th smallest
/// value is F̂⁻¹(U₍ₖ₎), and the k-th smallest of n uniforms has the Beta(k, n − k + 1)
/// distribution. One Beta draw per side gives a replicate exactly, and F̂⁻¹ is a look-up in the
/// histogram: 2,000 replicates of million-sample runs take milliseconds.
pub fn quantile_difference(
    a: &Histogram<u64>,
    b: &Histogram<u64>,
    p: f64,
    level: f64,
    draws: usize,
    seed: u64,
) -> Option<Difference> {
    if draws == 0 || !(p > 0.0 && p <= 100.0) || !(level > 0.0 && level < 1.0) {
        return None;
    }
    let q = p / 100.0;
    let (side_a, side_b) = (Side::new(a, q)?, Side::new(b, q)?);
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut deltas: Vec<i64> = (0..draws)
        .map(|_| {
            let x = side_a.draw(&mut rng);
            signed(side_b.draw(&mut rng)) - signed(x)
        })
        .collect();
    deltas.sort_unstable();
    let tail = (1.0 - level) / 2.0;
    let last = draws - 1;
    let lo = deltas[((tail * draws as f64).floor() as usize).min(last)];
    let hi = deltas[(((1.0 - tail) * draws as f64).ceil() as usize)
        .saturating_sub(1)
        .min(last)];
    let (va, vb) = (side_a.estimate(), side_b.estimate());
    Some(Difference {
        a: va,
        b: vb,
        delta: signed(vb) - signed(va),
        lo,
        hi,
        level,
        significant: lo > 0 || hi < 0,
    })
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// One run's side of the bootstrap: its histogram as a rank table and the Beta law of the
/// uniform order statistic at the percentile's rank.
struct Side {
    table: Ranked,
    n: u64,
    rank: u64,
    order: Beta<f64>,
}

impl Side {
    fn new(h: &Histogram<u64>, q: f64) -> Option<Side> {
        let n = h.len();
        if n == 0 {
            return None;
        }
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let order = Beta::new(rank as f64, (n - rank + 1) as f64).ok()?;
        Some(Side {
            table: Ranked::new(h),
            n,
            rank,
            order,
        })
    }

    /// The percentile of the sample itself.
    fn estimate(&self) -> u64 {
        self.table.at(self.rank)
    }

    /// The percentile of one bootstrap resample: F̂⁻¹(u) is the ⌈u·n⌉-th smallest value.
    fn draw(&self, rng: &mut Pcg64Mcg) -> u64 {
        let u = self.order.sample(rng);
        self.table.at((u * self.n as f64).ceil() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::new_histogram;

    /// P(B ≤ k) by direct summation of n!/(k!(n−k)!) qᵏ(1−q)ⁿ⁻ᵏ, for small n.
    fn binomial_cdf_by_hand(n: u64, q: f64, k: u64) -> f64 {
        let mut choose = 1.0f64;
        let mut sum = 0.0;
        for j in 0..=k.min(n) {
            if j > 0 {
                choose = choose * (n - j + 1) as f64 / j as f64;
            }
            sum += choose * q.powi(j as i32) * (1.0 - q).powi((n - j) as i32);
        }
        sum
    }

    #[test]
    fn exact_binomial_tails_match_direct_summation() {
        for &(n, q) in &[(1u64, 0.5), (10, 0.3), (30, 0.9), (60, 0.99), (200, 0.5)] {
            let b = Binomial::new(n, q);
            assert!(matches!(b, Binomial::Exact { .. }));
            for k in 0..=n {
                let cdf = binomial_cdf_by_hand(n, q, k);
                assert!((b.at_most(k) - cdf).abs() < 1e-12, "n={n} q={q} k={k}");
                let at_least = match k {
                    0 => 1.0,
                    _ => 1.0 - binomial_cdf_by_hand(n, q, k - 1),
                };
                assert!(
                    (b.at_least(k) - at_least).abs() < 1e-12,
                    "n={n} q={q} k={k}"
                );
            }
            assert_eq!(b.at_least(n + 1), 0.0);
        }
        // A far tail of a large run stays exact: p99.99 of 13,500 has 1.35 expected beyond,
        // and P(B = n) = 0.9999^13500 = e^(13500·ln 0.9999).
        let far = Binomial::new(13_500, 0.9999);
        assert!(matches!(far, Binomial::Exact { .. }));
        let all_below = (13_500.0 * (-0.0001f64).ln_1p()).exp();
        assert!((far.at_least(13_500) - all_below).abs() < 1e-12);
    }

    #[test]
    fn normal_approximation_agrees_with_the_table_where_they_meet() {
        // Where the switch happens (variance 10,000: n = 40,000 at q = ½, and n = 1,010,101 at
        // q = 0.99, where the binomial is skewed), the continuity-corrected normal curve and the
        // exact table agree closely, most closely in the 2.5% tails that set the interval.
        // Without the continuity correction the symmetric case would be off by 2.7e-4 at z = 2.
        for (n, q, tolerance) in [(40_000u64, 0.5, 1e-5), (1_010_101, 0.99, 1e-3)] {
            let (normal, exact) = (Binomial::normal(n, q), Binomial::exact(n, q));
            let (mean, sd) = (n as f64 * q, (n as f64 * q * (1.0 - q)).sqrt());
            for z in [-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0] {
                let k = (mean + z * sd) as u64;
                let pairs = [
                    (normal.at_most(k), exact.at_most(k)),
                    (normal.at_least(k), exact.at_least(k)),
                ];
                for (a, b) in pairs {
                    assert!((a - b).abs() < tolerance, "n={n} q={q} k={k}: {a} vs {b}");
                    if b < 0.05 {
                        assert!((a / b - 1.0).abs() < 0.05, "n={n} q={q} k={k}: {a} vs {b}");
                    }
                }
            }
        }
        assert!((normal_cdf(1.959_964) - 0.975).abs() < 2e-7);
        assert!((normal_cdf(-1.0) - 0.158_655_25).abs() < 2e-7);
        assert!((normal_cdf(0.0) - 0.5).abs() < 2e-7);
    }

    #[test]
    fn median_of_ten_by_hand() {
        // Bin(10, ½): P(B ≤ 1) = 11/1024 ≈ 0.0107, P(B ≤ 2) = 56/1024 ≈ 0.0547. So [x_(2),
        // x_(9)] misses below with P(B ≤ 1) and above with P(B ≥ 9) = 11/1024: coverage
        // 1002/1024 ≈ 0.979; pulling either end in would cost 45/1024 and drop below 95%.
        let r = quantile_ranks(10, 0.5, 0.95).unwrap();
        assert_eq!((r.lo, r.hi), (2, 9));
        assert!((r.coverage - 1002.0 / 1024.0).abs() < 1e-12);
    }

    #[test]
    fn rank_interval_table() {
        struct Case {
            n: u64,
            q: f64,
            lo: std::ops::RangeInclusive<u64>,
            hi: std::ops::RangeInclusive<u64>,
            why: &'static str,
        }
        let cases = [
            Case {
                n: 1000,
                q: 0.5,
                lo: 470..=470,
                hi: 532..=532,
                why: "median of 1000: misses P(B ≤ 469) + P(B ≥ 532) = 0.0268 + 0.0231 \
                      = 0.04998; one rank in on either side would pass 0.05",
            },
            Case {
                n: 100_000,
                q: 0.99,
                lo: 98_937..=98_939,
                hi: 99_062..=99_064,
                why: "normal branch: 99,000 ± 1.96·√990 ≈ ±62 ranks",
            },
            Case {
                n: 30,
                q: 0.99,
                lo: 29..=29,
                hi: 31..=31,
                why: "p99 of 30: two or more of 30 lie above p99 with P = 1 − 0.99³⁰ − \
                      30·0.01·0.99²⁹ = 3.6%, so the second largest is a 96% lower bound",
            },
            Case {
                n: 300,
                q: 0.99,
                lo: 294..=294,
                hi: 301..=301,
                why: "3 expected beyond: P(B = 300) = 0.049, so only +∞ covers above; \
                      7 or more of 300 above p99 has P = 0.033, 6 or more 0.083",
            },
        ];
        for c in cases {
            let r = quantile_ranks(c.n, c.q, LEVEL).unwrap();
            assert!(c.lo.contains(&r.lo), "{}: lo {}", c.why, r.lo);
            assert!(c.hi.contains(&r.hi), "{}: hi {}", c.why, r.hi);
        }
        assert_eq!(quantile_ranks(0, 0.5, LEVEL), None);
        assert_eq!(quantile_ranks(10, 0.0, LEVEL), None);
        assert_eq!(quantile_ranks(10, 1.5, LEVEL), None);
        let max = quantile_ranks(10, 1.0, LEVEL).unwrap();
        assert_eq!((max.lo, max.hi), (10, 11), "the maximum: at least x_(10)");
    }

    #[test]
    fn coverage_is_the_binomial_probability_and_reaches_the_level() {
        // The reported coverage must be P(lo ≤ B < hi) computed independently, and at least the
        // level except where rank 1 itself misses too often.
        for n in [5u64, 12, 30, 77, 200, 999] {
            for q in [0.05, 0.25, 0.5, 0.9, 0.99] {
                let r = quantile_ranks(n, q, LEVEL).unwrap();
                let below = binomial_cdf_by_hand(n, q, r.lo - 1);
                let above = if r.hi > n {
                    0.0
                } else {
                    1.0 - binomial_cdf_by_hand(n, q, r.hi - 1)
                };
                let want = 1.0 - below - above;
                assert!((r.coverage - want).abs() < 1e-9, "n={n} q={q}: {r:?}");
                let rank_one_misses = (1.0 - q).powi(n as i32);
                if rank_one_misses <= 1.0 - LEVEL {
                    assert!(r.coverage >= LEVEL, "n={n} q={q}: {r:?}");
                } else {
                    assert_eq!((r.lo, r.hi), (1, n + 1), "n={n} q={q}");
                }
                // And it is no wider than needed: moving either end in by one rank would fall
                // short of the level.
                if r.coverage >= LEVEL && r.lo + 1 < r.hi {
                    let raised = 1.0 - binomial_cdf_by_hand(n, q, r.lo) - above;
                    let lowered = binomial_cdf_by_hand(n, q, r.hi - 2) - below;
                    assert!(raised < LEVEL, "n={n} q={q}: {r:?} could start higher");
                    assert!(lowered < LEVEL, "n={n} q={q}: {r:?} could end lower");
                }
            }
        }
    }

    fn histogram_of(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
        let mut h = new_histogram();
        for v in values {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn value_at_rank_agrees_with_value_at_quantile() {
        // Values spread over several bucket sizes, with repeats.
        let values: Vec<u64> = (0..5_000u64)
            .map(|i| (i * i * 7919) % 3_000_000 + i % 13)
            .collect();
        let h = histogram_of(values.iter().copied());
        let n = h.len();
        let table = Ranked::new(&h);
        let mut sorted = values.clone();
        sorted.sort_unstable();
        for rank in 1..=n {
            // By definition: the rank-th smallest value, as its bucket's highest equivalent.
            let want = h.highest_equivalent(sorted[rank as usize - 1]);
            assert_eq!(value_at_rank(&h, rank), want, "rank {rank}");
            assert_eq!(table.at(rank), want, "rank {rank} from the table");
        }
        for rank in [1u64, 2, 17, 999, 2_500, 4_999, 5_000] {
            let q = rank as f64 / n as f64;
            assert_eq!(
                value_at_rank(&h, rank),
                h.value_at_quantile(q),
                "rank {rank}"
            );
        }
        assert_eq!(value_at_rank(&h, 0), value_at_rank(&h, 1));
        assert_eq!(value_at_rank(&h, n + 5), h.max());
        assert_eq!(value_at_rank(&new_histogram(), 3), 0);
    }

    #[test]
    fn percentile_interval_brackets_the_percentile() {
        // 1 ms, 2 ms, …, 1,000 ms: the true p50 of this sample's population is near 500 ms.
        let h = histogram_of((1..=1000u64).map(|i| i * 1_000_000));
        let none = new_histogram();
        let ci = percentile_interval(&h, &none, 50.0, LEVEL).unwrap();
        let r = quantile_ranks(1000, 0.5, LEVEL).unwrap();
        assert!(!ci.hi_open);
        assert!(h.equivalent(ci.lo, r.lo * 1_000_000), "{ci:?}");
        assert!(
            ci.lo <= r.lo * 1_000_000,
            "the lower end takes its bucket's bottom"
        );
        assert!(h.equivalent(ci.hi, r.hi * 1_000_000), "{ci:?}");
        assert_eq!(ci.level, r.coverage);
        // p99.9 of 1,000 has one sample beyond: no upper end.
        let far = percentile_interval(&h, &none, 99.9, LEVEL).unwrap();
        assert!(far.hi_open);
        assert_eq!(far.hi, h.max());
        assert_eq!(percentile_interval(&none, &none, 50.0, LEVEL), None);
        assert_eq!(percentile_interval(&h, &none, 0.0, LEVEL), None);
        assert_eq!(percentile_interval(&h, &none, 100.5, LEVEL), None);
    }

    #[test]
    fn censoring_opens_the_upper_end_only_where_it_can_reach() {
        // 990 answered in 1..=990 ms, and 10 requests still in flight at the end whose lower
        // bounds (995 ms) sit above every answer.
        let mut h = histogram_of((1..=990u64).map(|i| i * 1_000_000));
        let censored = histogram_of(std::iter::repeat_n(995_000_000, 10));
        h.add(&censored).unwrap();
        let median = percentile_interval(&h, &censored, 50.0, LEVEL).unwrap();
        assert!(
            !median.hi_open,
            "the median's ranks are far below the censored"
        );
        let p99 = percentile_interval(&h, &censored, 99.0, LEVEL).unwrap();
        assert!(
            p99.hi_open,
            "p99's upper rank lands on the censored: {p99:?}"
        );
        let uncensored = percentile_interval(&h, &new_histogram(), 99.0, LEVEL).unwrap();
        assert!(
            !uncensored.hi_open,
            "the same data without censoring is bounded"
        );
        // Censored values that are small (requests due just before the end) can still move
        // a mid percentile: 400 of them at 1 ms among 600 answers at 100..700 ms.
        let mut h = histogram_of((1..=600u64).map(|i| (100 + i) * 1_000_000));
        let early = histogram_of(std::iter::repeat_n(1_000_000, 400));
        h.add(&early).unwrap();
        // The median of 1,000 has upper rank 532, which is the 132nd answer (232 ms) as
        // recorded, but the 532nd of the 600 answers (632 ms) if the 400 are really slow.
        let p50 = percentile_interval(&h, &early, 50.0, LEVEL).unwrap();
        assert!(p50.hi_open, "{p50:?}");
        assert_eq!(p50.hi, h.max());
        assert!(
            h.equivalent(p50.lo, 170_000_000),
            "lower end, rank 470: {p50:?}"
        );
        let miss_below = binomial_cdf_by_hand(1000, 0.5, 469);
        assert!(
            (p50.level - (1.0 - miss_below)).abs() < 1e-12,
            "an open end never misses"
        );
    }

    #[test]
    fn sample_warning_table() {
        // (n, p, samples beyond, round count needed; 0 for no warning, why).
        let cases: &[(u64, f64, f64, u64, &str)] = &[
            (13_500, 99.99, 1.35, 100_000, "seed 000: p99.99 of 13,500"),
            (
                500,
                99.0,
                5.0,
                1_000,
                "p99 of 500: five beyond, 1,000 needed",
            ),
            (300, 99.5, 1.5, 2_000, "10 / 0.005 = 2,000 exactly"),
            (900, 99.0, 9.0, 1_000, "just short of ten"),
            (100, 99.9, 0.1, 10_000, "10 / 0.001 = 10,000"),
            (5, 50.0, 2.5, 20, "a tiny run, even at the median"),
            (40, 75.0, 10.0, 0, "exactly ten beyond"),
            (13_500, 99.9, 13.5, 0, "13.5 beyond p99.9: enough"),
            (13_500, 100.0, 0.0, 0, "the maximum never warns"),
            (
                10_000,
                99.9,
                10.0,
                0,
                "ten beyond p99.9 of 10k, though 1 − 0.999 is 0.00099…",
            ),
            (1_000, 99.0, 10.0, 0, "ten beyond p99 of 1,000"),
            (100_000, 99.99, 10.0, 0, "ten beyond p99.99 of 100k"),
            (9_999, 99.9, 9.999, 10_000, "one short of 10k at p99.9"),
        ];
        for &(n, p, beyond, needed, why) in cases {
            match sample_warning(n, p) {
                Some(w) => {
                    assert!(needed > 0, "{why}: warned {w:?}");
                    assert!((w.beyond - beyond).abs() < 1e-6, "{why}: {w:?}");
                    assert_eq!(w.needed, needed, "{why}");
                }
                None => assert_eq!(needed, 0, "{why}: no warning"),
            }
        }
    }

    /// The samples beyond a percentile, whole, are the samples ranked above it: n − ⌈n·p⌉,
    /// computed here in integers.
    #[test]
    fn samples_beyond_are_counted_whole() {
        for n in 1..=3_000u64 {
            for hundredths in [5_000u64, 9_000, 9_900, 9_950, 9_990, 9_999] {
                let p = hundredths as f64 / 100.0;
                let Some(w) = sample_warning(n, p) else {
                    continue;
                };
                let ranked_above = n - (n * hundredths).div_ceil(10_000);
                assert_eq!(w.samples_beyond(), ranked_above, "n {n}, p{p}: {w:?}");
            }
        }
    }

    fn exponential_histogram(n: usize, mean_ns: f64, seed: u64) -> Histogram<u64> {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let exp = rand_distr::Exp::new(1.0 / mean_ns).unwrap();
        histogram_of((0..n).map(|_| exp.sample(&mut rng) as u64))
    }

    #[test]
    fn difference_of_identical_runs_is_zero_and_not_significant() {
        let a = exponential_histogram(20_000, 1e6, 1);
        let d = quantile_difference(&a, &a, 99.0, LEVEL, 2_000, 7).unwrap();
        assert_eq!((d.a, d.b, d.delta), (d.a, d.a, 0));
        assert!(d.lo < 0 && d.hi > 0, "{d:?}");
        assert!(!d.significant);
        assert_eq!(d.a, a.value_at_quantile(0.99));
        // Reproducible from the seed, different with another.
        assert_eq!(quantile_difference(&a, &a, 99.0, LEVEL, 2_000, 7), Some(d));
        assert_ne!(quantile_difference(&a, &a, 99.0, LEVEL, 2_000, 8), Some(d));
        assert_eq!(
            quantile_difference(&a, &new_histogram(), 99.0, LEVEL, 10, 7),
            None
        );
        assert_eq!(quantile_difference(&a, &a, 99.0, LEVEL, 0, 7), None);
    }

    #[test]
    fn bootstrap_spread_matches_the_quantile_standard_error() {
        // The sample q-quantile of n has standard deviation √(q(1−q)/n) / f(ξ). For the
        // exponential with mean μ the density at its q-quantile is f(ξ) = (1 − q)/μ; the
        // difference of two independent runs has √2 times one run's spread, and its 95%
        // interval spans about 2 × 1.96 of those.
        let (n, mean) = (40_000usize, 1e6);
        let a = exponential_histogram(n, mean, 11);
        let b = exponential_histogram(n, mean, 12);
        let d = quantile_difference(&a, &b, 90.0, LEVEL, 4_000, 3).unwrap();
        let sd_one = (0.9f64 * 0.1 / n as f64).sqrt() / (0.1 / mean);
        let want_width = 2.0 * 1.96 * sd_one * 2f64.sqrt();
        let width = (d.hi - d.lo) as f64;
        assert!(
            (width / want_width - 1.0).abs() < 0.15,
            "width {width} vs {want_width}"
        );
    }
}
