//! Did the sends follow the intended arrival process?
//!
//! An open-loop generator promises an arrival process: evenly spaced, or Poisson. A generator
//! that sends late in clumps (a timer that fires every 10 ms and releases everything due, a
//! thread that stalls and catches up) keeps the mean rate but not the process, and the queueing
//! it provokes at the server is not what was asked for. This module checks the actual send
//! times against the schedule.
//!
//! The schedule's cumulative intensity Λ(t) (see [`crate::schedule::Schedule::expected_by`])
//! rescales time so that any of the schedules becomes one of rate 1 (the time-rescaling
//! theorem): between consecutive sends of one sender, the rescaled gap g = Λ(t′) − Λ(t) is
//! exactly 1 for a constant schedule, and for a Poisson schedule the gaps are independent
//! Exp(1). Through u = 1 − e^(−g) (the probability integral transform), Exp(1) gaps become
//! uniform on [0, 1), and the Kolmogorov–Smirnov distance of the u's from uniform says how far
//! the sends were from Poisson.
use hdrhistogram::Histogram;

use serde::{Deserialize, Serialize};

use crate::record::new_histogram;
use crate::result::{decode_base64, encode_base64};

/// Bins of the transformed gaps u = 1 − e^(−g) on [0, 1).
const BINS: usize = 1000;

/// Gaps are kept in the histogram in millionths of the scheduled mean gap.
const GAP_UNIT: f64 = 1e-6;

/// Gaps longer than this many scheduled gaps are recorded at it in the histogram.
const MAX_GAP: f64 = 1e6;

/// Fewer gaps than this give no verdict.
const MIN_GAPS: u64 = 50;

/// The significance a deviation must reach (p below it) to count.
const SIGNIFICANCE: f64 = 0.001;

/// The size a deviation must reach (KS distance above it) to count: two percentage points of
/// the gap distribution's CDF.
const TOLERANCE: f64 = 0.02;

/// The rescaled gaps between one sender's consecutive sends, in fixed memory.
///
/// Streaming and mergeable: each worker thread keeps its own and they are merged at the end.
/// It holds the transformed gaps u = 1 − e^(−g) counted in 1,000 equal bins (enough for the
/// fit test) and a histogram of g itself to 3 significant digits (for the profile of where the
/// gaps deviate, e.g. too many near zero).
#[derive(Debug, Clone)]
pub struct GapRecord {
    bins: Vec<u64>,
    gaps: Histogram<u64>,
}

impl Default for GapRecord {
    fn default() -> Self {
        GapRecord::new()
    }
}

/// A gap record as a result document carries it, so shards' records merge losslessly: the
/// 1,000 bins of the transformed gaps and the gaps' histogram (µs of scheduled spacing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GapRecordDoc {
    pub bins: Vec<u64>,
    pub gaps_hdr: String,
}

impl GapRecord {
    pub fn to_doc(&self) -> GapRecordDoc {
        GapRecordDoc {
            bins: self.bins.clone(),
            gaps_hdr: encode_base64(&self.gaps),
        }
    }

    /// The record a document carries; why not, if it is damaged.
    pub fn from_doc(doc: &GapRecordDoc) -> Result<GapRecord, String> {
        if doc.bins.len() != BINS {
            return Err(format!(
                "a gap record has {BINS} bins, this one {}",
                doc.bins.len()
            ));
        }
        Ok(GapRecord {
            bins: doc.bins.clone(),
            gaps: decode_base64(&doc.gaps_hdr).map_err(|e| e.to_string())?,
        })
    }

    pub fn new() -> Self {
        GapRecord {
            bins: vec![0; BINS],
            gaps: new_histogram(),
        }
    }

    /// Records one rescaled gap: Λ(t′) − Λ(t) between two consecutive sends of one sender,
    /// divided by the number of senders (each has that share of the rate). So 1 is the
    /// scheduled mean gap, whatever the rate. A negative gap (sends out of order) counts as 0;
    /// NaN is ignored.
    pub fn record(&mut self, g: f64) {
        if g.is_nan() {
            return;
        }
        let g = g.max(0.0);
        // −expm1(−g) is 1 − e^(−g) without cancellation for small gaps.
        let u = -(-g).exp_m1();
        let bin = ((u * BINS as f64) as usize).min(BINS - 1);
        self.bins[bin] += 1;
        // A gap of a million scheduled gaps or more is a stall, not a gap: it is kept at that
        // ceiling, so the histogram (and its memory) stays bounded.
        let units = (g.min(MAX_GAP) / GAP_UNIT).round() as u64;
        self.gaps
            .record(units)
            .expect("an auto-resizing histogram takes values up to 2⁶²");
    }

    /// Adds another sender's gaps.
    pub fn merge(&mut self, other: &GapRecord) {
        for (a, b) in self.bins.iter_mut().zip(&other.bins) {
            *a += b;
        }
        self.gaps
            .add(&other.gaps)
            .expect("auto-resizing histograms of equal precision always add");
    }

    pub fn len(&self) -> u64 {
        self.bins.iter().sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The q-quantile (0 ≤ q ≤ 1) of the rescaled gaps, in units of the scheduled mean gap, to
    /// 3 significant digits; 0 when empty. For a Poisson schedule it should be −ln(1 − q)
    /// (the median ln 2 ≈ 0.69); for a constant one, 1.
    pub fn gap_quantile(&self, q: f64) -> f64 {
        if self.gaps.is_empty() {
            return 0.0;
        }
        self.gaps.value_at_quantile(q.clamp(0.0, 1.0)) as f64 * GAP_UNIT
    }
}

/// How well the sends fit a Poisson process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoissonFit {
    /// Gaps tested.
    pub n: u64,
    /// The Kolmogorov–Smirnov distance between the transformed gaps and uniform: the largest
    /// gap, over all x, between the share of gaps below x and the share Poisson sends would
    /// have there.
    pub d: f64,
    /// The probability that Poisson sends would show a distance at least `d`.
    pub p_value: f64,
    /// The distance a deviation must exceed to count.
    pub tolerance: f64,
    /// Whether the sends pass as Poisson.
    pub conforms: bool,
}

/// Tests the recorded gaps against the Poisson process the schedule asked for. `None` with
/// fewer than 50 gaps: too few to tell.
///
/// The sends deviate only when the deviation is both significant (p < 0.001) and large enough
/// to matter (d > 0.02, two percentage points of the gap distribution). Either alone is not
/// enough. With millions of gaps, the microsecond jitter of any real timer is "significant"
/// (the test sees it), yet it changes nothing about the load the server sees; with a few
/// hundred gaps, a large distance can be chance.
///
/// The distance is measured at the edges of the 1,000 bins, so it can fall short of the exact
/// one by at most one bin width: 0.001, far below the tolerance. The p-value is Kolmogorov's
/// limiting distribution with Stephens' correction for finite samples, P(D > d) ≈
/// Q((√n + 0.12 + 0.11/√n)·d); the parameters of the null hypothesis come from the schedule,
/// not from the data, so no further correction is needed.
pub fn poisson_fit(rec: &GapRecord) -> Option<PoissonFit> {
    let n = rec.len();
    if n < MIN_GAPS {
        return None;
    }
    let mut below = 0u64;
    let mut d = 0.0f64;
    for (i, &count) in rec.bins.iter().enumerate() {
        below += count;
        let edge = (i + 1) as f64 / BINS as f64;
        d = d.max((below as f64 / n as f64 - edge).abs());
    }
    let root = (n as f64).sqrt();
    let p_value = kolmogorov_survival((root + 0.12 + 0.11 / root) * d);
    Some(PoissonFit {
        n,
        d,
        p_value,
        tolerance: TOLERANCE,
        conforms: !(p_value < SIGNIFICANCE && d > TOLERANCE),
    })
}

/// The Anderson–Darling test of the rescaled gaps against Exp(1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AndersonDarling {
    /// Gaps tested.
    pub n: u64,
    /// A², the tail-weighted squared distance of the gaps' CDF from the law's.
    pub a2: f64,
    /// The probability that Poisson sends would show an A² at least this large.
    pub p_value: f64,
}

/// Critical values of A² for a fully specified law (case 0), Stephens 1974 and D'Agostino &
/// Stephens 1986, table 4.2: 10%, 5%, 1%.
pub const AD_CRITICAL: [(f64, f64); 3] = [(0.10, 1.933), (0.05, 2.492), (0.01, 3.857)];

/// Anderson–Darling of the recorded gaps against the Poisson process the schedule asked for;
/// `None` with fewer than 50 gaps. The law is fully specified (rate 1 after rescaling, its
/// parameter comes from the schedule, not from the data), so case 0's distribution applies.
///
/// Where KS looks at the largest CDF gap, A² = n ∫ (Fₙ(u) − u)² / (u(1 − u)) du weighs every
/// u, and the tails most: too few very short or very long gaps (a timer with a floor, a sender
/// that never waits long) move it well before they move the KS distance.
///
/// The gaps are held binned, so A² is computed from the integral form with Fₙ known exactly at
/// the 1,001 bin edges and taken as linear inside each bin (the gaps of a bin spread evenly
/// across it). That loses only the wiggle of Fₙ within each bin: under the null its expected
/// share of A² is about (h/6)·∫du/(u(1 − u)) over the inner bins plus h/2 in each end bin,
/// h = 0.001, so about 0.003 whatever n is, against a 5% critical value of 2.492: the binned
/// statistic runs a hair low (conservative). Placing each bin's gaps at its midpoint instead
/// would add a step of up to a bin's share inside every bin, which grows with n and would
/// reject good senders on long runs.
pub fn anderson_darling(rec: &GapRecord) -> Option<AndersonDarling> {
    let n = rec.len();
    if n < MIN_GAPS {
        return None;
    }
    let h = 1.0 / BINS as f64;
    let mut below = 0u64;
    let mut a2 = 0.0;
    for (i, &count) in rec.bins.iter().enumerate() {
        let p = below as f64 / n as f64;
        below += count;
        let q = below as f64 / n as f64;
        a2 += bin_integral(i as f64 * h, (i + 1) as f64 * h, p, q);
    }
    let a2 = n as f64 * a2;
    Some(AndersonDarling {
        n,
        a2,
        p_value: 1.0 - anderson_darling_cdf(a2),
    })
}

/// ∫ₐᵇ D(u)² / (u(1 − u)) du for D linear from D(a) = p − a to D(b) = q − b, in closed form.
/// With D(u) = α + βu and 1/(u(1 − u)) = 1/u + 1/(1 − u):
/// D²/u = α²/u + 2αβ + β²u, and with v = 1 − u, γ = D(1), D = γ − βv: D²/v = γ²/v − 2γβ + β²v.
/// At u = 0 and u = 1 the empirical CDF meets the law's (0 and 1), α or γ is 0 there, and its
/// logarithm is left out instead of multiplied by zero.
fn bin_integral(a: f64, b: f64, p: f64, q: f64) -> f64 {
    let beta = (q - p) / (b - a) - 1.0;
    let alpha = (p - a) - beta * a;
    let gamma = (q - b) + beta * (1.0 - b);
    let width = b - a;
    let near_zero = if a > 0.0 {
        alpha * alpha * (b / a).ln()
    } else {
        0.0
    };
    let near_one = if b < 1.0 {
        gamma * gamma * ((1.0 - a) / (1.0 - b)).ln()
    } else {
        0.0
    };
    let plain = 2.0 * alpha * beta * width + beta * beta * (b * b - a * a) / 2.0;
    let mirrored =
        -2.0 * gamma * beta * width + beta * beta * ((1.0 - a).powi(2) - (1.0 - b).powi(2)) / 2.0;
    near_zero + near_one + plain + mirrored
}

/// P(A² ≤ z) in the limit of many samples, case 0: Marsaglia & Marsaglia 2004 (J. Stat.
/// Software 9(2)), `adinf`, with an error under 2·10⁻⁶. Their finite-n correction is left out:
/// it is under 10⁻³ for n ≥ 50, and fewer gaps give no verdict.
pub fn anderson_darling_cdf(z: f64) -> f64 {
    if z <= 0.0 {
        return 0.0;
    }
    if z < 2.0 {
        let poly = 2.00012
            + (0.247105 - (0.0649821 - (0.0347962 - (0.011672 - 0.00168691 * z) * z) * z) * z) * z;
        return (-1.2337141 / z).exp() / z.sqrt() * poly;
    }
    let poly =
        1.0776 - (2.30695 - (0.43424 - (0.082433 - (0.008056 - 0.0003146 * z) * z) * z) * z) * z;
    (-poly.exp()).exp()
}

/// Q(λ) = P(K > λ) for the Kolmogorov distribution. Two series for the same function: the
/// alternating one 2 Σ (−1)^(j−1) e^(−2j²λ²) converges fast for large λ, the theta-function
/// form 1 − (√(2π)/λ) Σ e^(−(2j−1)²π²/(8λ²)) for small λ.
fn kolmogorov_survival(lambda: f64) -> f64 {
    if lambda <= 0.0 {
        return 1.0;
    }
    let q = if lambda < 1.18 {
        let step = -std::f64::consts::PI.powi(2) / (8.0 * lambda * lambda);
        let sum: f64 = (1..=20)
            .map(|j: i32| ((2 * j - 1).pow(2) as f64 * step).exp())
            .sum();
        1.0 - (2.0 * std::f64::consts::PI).sqrt() / lambda * sum
    } else {
        let sum: f64 = (1..=100)
            .map(|j: i32| {
                let sign = if j % 2 == 1 { 1.0 } else { -1.0 };
                sign * (-2.0 * (j * j) as f64 * lambda * lambda).exp()
            })
            .sum();
        2.0 * sum
    };
    q.clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Distribution, Exp1};
    use rand_pcg::Pcg64Mcg;

    fn poisson_gaps(n: usize, seed: u64) -> GapRecord {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut rec = GapRecord::new();
        for _ in 0..n {
            let g: f64 = Exp1.sample(&mut rng);
            rec.record(g);
        }
        rec
    }

    #[test]
    fn kolmogorov_distribution_table() {
        // Classical critical values of the Kolmogorov distribution.
        let table = [
            (1.2238, 0.10),
            (1.3581, 0.05),
            (1.6276, 0.01),
            (1.9495, 0.001),
            (0.8276, 0.50),
        ];
        for (lambda, want) in table {
            let got = kolmogorov_survival(lambda);
            assert!(
                (got - want).abs() < 2e-4,
                "Q({lambda}) = {got}, want {want}"
            );
        }
        // The two series agree where they hand over.
        let step = 1e-9;
        let (a, b) = (
            kolmogorov_survival(1.18 - step),
            kolmogorov_survival(1.18 + step),
        );
        assert!((a - b).abs() < 1e-8, "{a} vs {b}");
        assert_eq!(kolmogorov_survival(0.0), 1.0);
        assert!(kolmogorov_survival(0.2) > 0.999_999);
        assert!(kolmogorov_survival(5.0) < 1e-20);
    }

    #[test]
    fn poisson_sends_conform() {
        let fit = poisson_fit(&poisson_gaps(20_000, 1)).unwrap();
        assert_eq!(fit.n, 20_000);
        assert!(fit.conforms, "{fit:?}");
        assert!(fit.d < 0.015, "{fit:?}");
        assert!(fit.p_value > SIGNIFICANCE, "{fit:?}");
    }

    #[test]
    fn constant_sends_are_not_poisson() {
        // Every gap exactly the mean: all u at 1 − 1/e ≈ 0.632, a distance of 0.632.
        let mut rec = GapRecord::new();
        for _ in 0..1_000 {
            rec.record(1.0);
        }
        let fit = poisson_fit(&rec).unwrap();
        assert!((fit.d - (1.0 - (-1.0f64).exp())).abs() < 0.002, "{fit:?}");
        assert!(!fit.conforms);
        assert!(fit.p_value < 1e-100);
        assert!((rec.gap_quantile(0.5) - 1.0).abs() < 1e-3);
    }

    #[test]
    fn bursts_of_ten_are_not_poisson() {
        // The mean rate is right, but sends go in bursts of ten back-to-back: nine gaps of 0
        // and one of 10.
        let mut rec = GapRecord::new();
        for i in 0..2_000 {
            rec.record(if i % 10 == 9 { 10.0 } else { 0.0 });
        }
        let fit = poisson_fit(&rec).unwrap();
        assert!(fit.d > 0.85, "{fit:?}");
        assert!(!fit.conforms);
    }

    /// Gaps at the exact quantiles of Exp(1), then rounded to a timer's resolution: what a
    /// perfect Poisson sender looks like through a clock that ticks every `tick` mean gaps.
    fn quantized_poisson(n: usize, tick: f64) -> GapRecord {
        let mut rec = GapRecord::new();
        for i in 0..n {
            let u = (i as f64 + 0.5) / n as f64;
            let g = -(-u).ln_1p();
            rec.record((g / tick).round() * tick);
        }
        rec
    }

    #[test]
    fn timer_jitter_is_significant_but_harmless() {
        // 1 µs ticks at a 100 µs mean gap, over a million gaps: the test notices (the CDF is
        // a staircase), but the distance is half a point of CDF. It conforms.
        let fine = poisson_fit(&quantized_poisson(1_000_000, 0.01)).unwrap();
        assert!(fine.p_value < SIGNIFICANCE, "{fine:?}");
        assert!(fine.d < TOLERANCE, "{fine:?}");
        assert!(fine.conforms);
        // 10 µs ticks on the same schedule: a staircase of 5 points. That deviates.
        let coarse = poisson_fit(&quantized_poisson(1_000_000, 0.1)).unwrap();
        assert!(coarse.d > TOLERANCE, "{coarse:?}");
        assert!(!coarse.conforms);
    }

    #[test]
    fn a_large_distance_on_few_gaps_is_not_significant() {
        // 60 gaps at the quantiles of a slightly slow process (mean 1.15): a distance of about
        // 0.05, above the tolerance, but well within chance for 60 gaps.
        let mut rec = GapRecord::new();
        for i in 0..60 {
            let u = (i as f64 + 0.5) / 60.0;
            rec.record(-1.15 * (-u).ln_1p());
        }
        let fit = poisson_fit(&rec).unwrap();
        assert!(fit.d > TOLERANCE && fit.p_value > 0.5, "{fit:?}");
        assert!(fit.conforms);
        // And too few gaps give no verdict at all.
        let mut few = GapRecord::new();
        (0..49).for_each(|_| few.record(1.0));
        assert_eq!(poisson_fit(&few), None);
    }

    #[test]
    fn merging_per_thread_records_equals_recording_in_one() {
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        let mut whole = GapRecord::new();
        let mut parts = [GapRecord::new(), GapRecord::new(), GapRecord::new()];
        for i in 0..3_000 {
            let g: f64 = Exp1.sample(&mut rng);
            whole.record(g);
            parts[i % 3].record(g);
        }
        let [mut a, b, c] = parts;
        a.merge(&b);
        a.merge(&c);
        assert_eq!(a.bins, whole.bins);
        assert_eq!(a.gaps, whole.gaps);
        assert_eq!(a.len(), 3_000);
        assert_eq!(poisson_fit(&a), poisson_fit(&whole));
    }

    #[test]
    fn gap_quantiles_follow_the_exponential() {
        let rec = poisson_gaps(100_000, 9);
        for q in [0.1, 0.5, 0.9, 0.99] {
            let want = -(1.0f64 - q).ln();
            let got = rec.gap_quantile(q);
            assert!((got / want - 1.0).abs() < 0.05, "q={q}: {got} vs {want}");
        }
        assert_eq!(GapRecord::new().gap_quantile(0.5), 0.0);
        assert!(GapRecord::new().is_empty());
    }

    #[test]
    fn odd_gaps_are_kept_in_range() {
        let mut rec = GapRecord::new();
        rec.record(-3.0);
        rec.record(f64::NAN);
        rec.record(f64::INFINITY);
        rec.record(1e30);
        assert_eq!(rec.len(), 3, "NaN is dropped, the rest counted");
        assert_eq!(rec.bins[0], 1, "a negative gap counts as zero");
        assert_eq!(rec.bins[BINS - 1], 2, "huge gaps land in the last bin");
        let longest = rec.gap_quantile(1.0);
        assert!(
            (longest / MAX_GAP - 1.0).abs() < 1e-3,
            "kept at the ceiling: {longest}"
        );
    }

    /// A² of a sample by its definition, from the sorted u's:
    /// −n − (1/n) Σ (2i − 1) [ln uᵢ + ln(1 − u₍ₙ₊₁₋ᵢ₎)].
    fn a2_exact(gaps: &[f64]) -> f64 {
        let mut u: Vec<f64> = gaps.iter().map(|g| -(-g).exp_m1()).collect();
        u.sort_by(f64::total_cmp);
        let n = u.len();
        let sum: f64 = (0..n)
            .map(|i| (2 * i + 1) as f64 * (u[i].ln() + (1.0 - u[n - 1 - i]).ln()))
            .sum();
        -(n as f64) - sum / n as f64
    }

    #[test]
    fn anderson_darling_table() {
        // Case 0's critical values (Stephens 1974; D'Agostino & Stephens 1986, table 4.2):
        // the limiting law must put 90%, 95% and 99% below them, and 2.5% above 3.070.
        for (alpha, critical) in AD_CRITICAL.iter().copied().chain([(0.025, 3.070)]) {
            let got = 1.0 - anderson_darling_cdf(critical);
            assert!(
                (got - alpha).abs() < 5e-4,
                "P(A² > {critical}) = {got}, want {alpha}"
            );
        }
        // The two pieces of Marsaglia's formula meet at 2.
        let (a, b) = (anderson_darling_cdf(2.0 - 1e-9), anderson_darling_cdf(2.0));
        assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        assert_eq!(anderson_darling_cdf(0.0), 0.0);
        assert!(anderson_darling_cdf(20.0) > 0.999_999);
    }

    #[test]
    fn binned_anderson_darling_agrees_with_the_definition() {
        // On Poisson gaps and on gaps 20% too long, the statistic from the 1,000 bins is the
        // exact one to within the binning's loss (about 0.003 on the null).
        for (seed, mean) in [(1, 1.0), (2, 1.0), (3, 1.2)] {
            let mut rng = Pcg64Mcg::seed_from_u64(seed);
            let gaps: Vec<f64> = (0..5_000)
                .map(|_| {
                    let g: f64 = Exp1.sample(&mut rng);
                    mean * g
                })
                .collect();
            let mut rec = GapRecord::new();
            gaps.iter().for_each(|&g| rec.record(g));
            let exact = a2_exact(&gaps);
            let binned = anderson_darling(&rec).unwrap();
            assert!(
                (binned.a2 - exact).abs() < 0.02 + 0.001 * exact,
                "seed {seed}: binned {} vs exact {exact}",
                binned.a2
            );
            assert_eq!(binned.n, 5_000);
        }
    }

    #[test]
    fn binning_costs_nothing_that_grows_with_the_run() {
        // A million Poisson gaps: what binning loses stays near 0.003, where gaps placed at
        // their bin's midpoint would add about 1.5 here (1.69 against 0.17 when tried) and
        // reject long runs.
        let mut rng = Pcg64Mcg::seed_from_u64(8);
        let gaps: Vec<f64> = (0..1_000_000)
            .map(|_| {
                let g: f64 = Exp1.sample(&mut rng);
                g
            })
            .collect();
        let mut rec = GapRecord::new();
        gaps.iter().for_each(|&g| rec.record(g));
        let (exact, binned) = (a2_exact(&gaps), anderson_darling(&rec).unwrap().a2);
        assert!(
            (binned - exact).abs() < 0.05,
            "binned {binned} vs exact {exact}"
        );
    }

    #[test]
    fn anderson_darling_of_one_point_in_closed_form() {
        // Every gap exactly 1: all u in the bin [a, b) = [0.632, 0.633). With Fₙ = 0 below a,
        // 1 above b and linear inside, A²/n = ∫₀ᵃ u/(1 − u) du + ∫_b¹ (1 − u)/u du + the bin's
        // own part, that is −a − ln(1 − a) + (−ln b − (1 − b)) + (at most a bin's width).
        let mut rec = GapRecord::new();
        (0..1_000).for_each(|_| rec.record(1.0));
        let (a, b) = (0.632f64, 0.633f64);
        let outside = -a - (1.0f64 - a).ln() - b.ln() - (1.0 - b);
        let got = anderson_darling(&rec).unwrap().a2 / 1_000.0;
        assert!(got > outside && got < outside + 0.001, "{got} vs {outside}");
    }

    #[test]
    fn binned_anderson_darling_rejects_at_its_level() {
        // Poisson sends: A² above the 5% value in about 5% of runs, and the p-values spread
        // evenly (a tenth below 0.1).
        let (mut over5, mut below10) = (0, 0);
        for seed in 0..600 {
            let fit = anderson_darling(&poisson_gaps(500, 100 + seed)).unwrap();
            over5 += usize::from(fit.a2 > AD_CRITICAL[1].1);
            below10 += usize::from(fit.p_value < 0.1);
        }
        assert!((15..=48).contains(&over5), "{over5} of 600 over 2.492");
        assert!(
            (36..=84).contains(&below10),
            "{below10} of 600 with p < 0.1"
        );
    }

    #[test]
    fn anderson_darling_rejects_a_sender_that_never_waits_long() {
        // Poisson sends whose gaps are cut at 3 mean gaps (a sender that never waits longer):
        // 5% of the gaps move, all from the far tail. A²/n is then about 0.00126, so 5,000
        // gaps give A² ≈ 6, past the 1% value; Poisson sends of the same seed pass.
        let cut = |limit: f64| {
            let mut rng = Pcg64Mcg::seed_from_u64(4);
            let mut rec = GapRecord::new();
            for _ in 0..5_000 {
                let g: f64 = Exp1.sample(&mut rng);
                rec.record(g.min(limit));
            }
            anderson_darling(&rec).unwrap()
        };
        let short = cut(3.0);
        assert!(
            short.a2 > AD_CRITICAL[2].1 && short.p_value < 0.01,
            "{short:?}"
        );
        let whole = cut(f64::INFINITY);
        assert!(whole.a2 < AD_CRITICAL[1].1, "{whole:?}");
    }
}
