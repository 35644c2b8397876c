//! Tests on a series in time order: are neighbours independent, and is the level stable?
//!
//! The validity verdict ([`crate::validity`]) reads the run's per-interval percentiles with
//! these. Spearman's rank correlation between a series and itself k steps later asks whether
//! neighbours move together (Lancet, USENIX ATC '19, thins its samples by the first lag at
//! which they do not); KPSS asks whether the series wanders away from one level.
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Fewer pairs than this give no Spearman test: the t approximation and the test's power both
/// need a handful of points.
pub const MIN_PAIRS: usize = 10;

/// Spearman's rank correlation of paired samples and its two-sided test of ρ = 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spearman {
    pub pairs: usize,
    pub rho: f64,
    /// Two-sided, from t = ρ·√((m − 2)/(1 − ρ²)) on m − 2 degrees of freedom (the
    /// approximation scipy's `spearmanr` uses; close to exact from about ten pairs).
    pub p_value: f64,
}

/// Spearman's ρ of `x` against `y` (the Pearson correlation of their ranks, ties given their
/// mean rank). `None` when the slices differ in length, hold fewer than [`MIN_PAIRS`] pairs,
/// or one of them does not vary (no ranking, no correlation).
pub fn spearman(x: &[f64], y: &[f64]) -> Option<Spearman> {
    let m = x.len();
    if m != y.len() || m < MIN_PAIRS {
        return None;
    }
    let rho = pearson(&ranks(x), &ranks(y))?.clamp(-1.0, 1.0);
    let df = (m - 2) as f64;
    let p_value = if rho.abs() >= 1.0 {
        0.0
    } else {
        let t = rho * (df / (1.0 - rho * rho)).sqrt();
        let law = StudentsT::new(0.0, 1.0, df).expect("m ≥ 10 gives a positive df");
        (2.0 * law.sf(t.abs())).min(1.0)
    };
    Some(Spearman {
        pairs: m,
        rho,
        p_value,
    })
}

/// Spearman's ρ of `series` against itself `lag` steps later.
pub fn spearman_lag(series: &[f64], lag: usize) -> Option<Spearman> {
    if lag == 0 || lag >= series.len() {
        return None;
    }
    spearman(&series[..series.len() - lag], &series[lag..])
}

/// The lags tried for thinning: 1, 2, 4, … up to 1,000 (512), as Lancet does.
pub const THINNING_LAGS: [usize; 10] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

/// The first lag of [`THINNING_LAGS`] whose Spearman test is not significant at `alpha`, with
/// its test: keeping every k-th point of the series would leave points that look independent.
/// `None` when every lag with at least [`MIN_PAIRS`] pairs is significant.
pub fn thinning_lag(series: &[f64], alpha: f64) -> Option<(usize, Spearman)> {
    THINNING_LAGS
        .iter()
        .filter_map(|&k| spearman_lag(series, k).map(|s| (k, s)))
        .find(|(_, s)| s.p_value >= alpha)
}

/// Ranks from 1, ties sharing the mean of the ranks they span.
fn ranks(xs: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..xs.len()).collect();
    order.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    let mut out = vec![0.0; xs.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && xs[order[end]] == xs[order[start]] {
            end += 1;
        }
        // Positions start..end hold ranks start+1..=end; their mean is (start + 1 + end) / 2.
        let rank = (start + 1 + end) as f64 / 2.0;
        order[start..end].iter().for_each(|&i| out[i] = rank);
        start = end;
    }
    out
}

/// The Pearson correlation; `None` when either side has no spread.
fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// Fewer points than this give no KPSS test.
pub const MIN_KPSS_POINTS: usize = 10;

/// Critical values of the KPSS level-stationarity statistic η_μ, Kwiatkowski, Phillips,
/// Schmidt & Shin 1992 (J. Econometrics 54), table 1: 10%, 5%, 1%.
pub const KPSS_CRITICAL: [(f64, f64); 3] = [(0.10, 0.347), (0.05, 0.463), (0.01, 0.739)];

/// The KPSS test of level stationarity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kpss {
    pub points: usize,
    /// η_μ = Σ Sₜ² / (n² σ̂²), Sₜ the partial sums of the deviations from the mean.
    pub statistic: f64,
    /// The Bartlett window's bandwidth ℓ used for the long-run variance σ̂².
    pub bandwidth: usize,
}

/// The bandwidth of Schwert's rule, ℓ = ⌊4 (n/100)^¼⌋: 2 for 30 points, 3 for 60, 4 for 100.
pub fn kpss_bandwidth(n: usize) -> usize {
    (4.0 * (n as f64 / 100.0).powf(0.25)).floor() as usize
}

/// KPSS (level) of `series`; `None` below [`MIN_KPSS_POINTS`] points or with a non-finite one.
///
/// The null is that the series is stationary around one level: large η means it drifts (a
/// random walk, a ramp, a shift). The long-run variance is the Newey–West estimate with a
/// Bartlett kernel, σ̂² = γ₀ + 2 Σ_{s=1..ℓ} (1 − s/(ℓ + 1)) γₛ, so that neighbours that move
/// together (as queueing makes them) do not by themselves look like drift. A series that does
/// not vary at all has η = 0: nothing drifts.
pub fn kpss(series: &[f64]) -> Option<Kpss> {
    let n = series.len();
    if n < MIN_KPSS_POINTS || series.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mean = series.iter().sum::<f64>() / n as f64;
    let e: Vec<f64> = series.iter().map(|x| x - mean).collect();
    let bandwidth = kpss_bandwidth(n);
    let lrv = long_run_variance(&e, bandwidth);
    let mut partial = 0.0;
    let mut sum_squares = 0.0;
    for x in &e {
        partial += x;
        sum_squares += partial * partial;
    }
    let statistic = if lrv > 0.0 {
        sum_squares / ((n * n) as f64 * lrv)
    } else {
        0.0
    };
    Some(Kpss {
        points: n,
        statistic,
        bandwidth,
    })
}

/// γ₀ + 2 Σ_{s=1..ℓ} (1 − s/(ℓ + 1)) γₛ with γₛ = (1/n) Σ eₜ eₜ₋ₛ (Bartlett weights keep it
/// non-negative).
fn long_run_variance(e: &[f64], bandwidth: usize) -> f64 {
    let n = e.len() as f64;
    let gamma = |s: usize| e[s..].iter().zip(e).map(|(a, b)| a * b).sum::<f64>() / n;
    let weighted: f64 = (1..=bandwidth.min(e.len() - 1))
        .map(|s| (1.0 - s as f64 / (bandwidth + 1) as f64) * gamma(s))
        .sum();
    gamma(0) + 2.0 * weighted
}

/// The largest difference between the mean before and the mean after a split of `series`,
/// over splits that leave at least a tenth of the points on each side: how far the level
/// moved, in the series' unit. KPSS says whether a series drifts; this says by how much (its
/// partial sums are the same quantity, Sₜ = t(n − t)/n · (before − after)). 0 below 2 points.
pub fn largest_shift(series: &[f64]) -> f64 {
    let n = series.len();
    if n < 2 {
        return 0.0;
    }
    let edge = (n / 10).max(1);
    let total: f64 = series.iter().sum();
    let mut before = 0.0;
    let mut largest = 0.0f64;
    for (t, x) in series.iter().enumerate().take(n - edge) {
        before += x;
        let t = t + 1;
        if t >= edge {
            let shift = before / t as f64 - (total - before) / (n - t) as f64;
            largest = largest.max(shift.abs());
        }
    }
    largest
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Distribution, StandardNormal};
    use rand_pcg::Pcg64Mcg;

    fn white(seed: u64, n: usize) -> Vec<f64> {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        (0..n).map(|_| StandardNormal.sample(&mut rng)).collect()
    }

    fn random_walk(seed: u64, n: usize) -> Vec<f64> {
        white(seed, n)
            .iter()
            .scan(0.0, |level, step| {
                *level += step;
                Some(*level)
            })
            .collect()
    }

    #[test]
    fn spearman_of_a_published_example() {
        // Wikipedia's "Spearman's rank correlation coefficient" example: IQ against hours of
        // TV a week, ten people. Σd² = 194, so ρ = 1 − 6·194/(10·99) = −29/165; scipy's
        // spearmanr gives p = 0.6272 (t on 8 degrees of freedom).
        let iq = [
            106.0, 100.0, 86.0, 101.0, 99.0, 103.0, 97.0, 113.0, 112.0, 110.0,
        ];
        let tv = [7.0, 27.0, 2.0, 50.0, 28.0, 29.0, 20.0, 12.0, 6.0, 17.0];
        let s = spearman(&iq, &tv).unwrap();
        assert!((s.rho - (-29.0 / 165.0)).abs() < 1e-12, "{s:?}");
        assert!((s.p_value - 0.6272).abs() < 1e-3, "{s:?}");
        assert_eq!(s.pairs, 10);
    }

    #[test]
    fn spearman_ranks_ties_by_their_mean() {
        // x ties at ranks 2 and 3, which both become 2.5; y is 1 … 10. Against the untied
        // ranks (every sum 82.5 about the mean 5.5), the tie changes positions 2 and 3 only:
        // Σ(rx − 5.5)² = 82.5 − (3.5² + 2.5²) + 2·3² = 82.0, and
        // Σ(rx − 5.5)(ry − 5.5) = 82.5 − (3.5² + 2.5²) + 3·3.5 + 3·2.5 = 82.0.
        let x = [1.0, 2.0, 2.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        let y = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        assert_eq!(ranks(&x)[1], 2.5);
        assert_eq!(ranks(&x)[2], 2.5);
        let want = 82.0 / (82.0f64 * 82.5).sqrt();
        let s = spearman(&x, &y).unwrap();
        assert!((s.rho - want).abs() < 1e-12, "{s:?} vs {want}");
    }

    #[test]
    fn spearman_needs_pairs_and_spread() {
        assert_eq!(spearman(&[1.0; 9], &[2.0; 9]), None, "too few pairs");
        let rising: Vec<f64> = (0..20).map(f64::from).collect();
        assert_eq!(spearman(&[3.0; 20], &rising), None, "no spread on one side");
        let s = spearman(&rising, &rising).unwrap();
        assert_eq!((s.rho, s.p_value), (1.0, 0.0));
        assert_eq!(spearman_lag(&rising, 0), None);
        assert_eq!(spearman_lag(&rising, 20), None);
    }

    #[test]
    fn spearman_rejects_at_its_level_on_independent_noise() {
        // Lag 1 of white noise: the test is significant at 5% in about 5% of series.
        let rejected = (0..1_000)
            .filter(|&seed| spearman_lag(&white(seed, 60), 1).unwrap().p_value < 0.05)
            .count();
        assert!((30..=75).contains(&rejected), "{rejected} of 1000");
    }

    #[test]
    fn a_correlated_series_thins_at_a_longer_lag() {
        // AR(1) with φ = 0.9: neighbours correlate at 0.9, k apart at 0.9^k (0.43 at 8, 0.19
        // at 16). 400 points: lag 1 is far from independent; some power of two passes.
        let noise = white(7, 400);
        let ar: Vec<f64> = noise
            .iter()
            .scan(0.0, |x, e| {
                *x = 0.9 * *x + e;
                Some(*x)
            })
            .collect();
        assert!(spearman_lag(&ar, 1).unwrap().p_value < 1e-20);
        let (lag, test) = thinning_lag(&ar, 0.01).expect("a lag passes");
        assert!((8..=64).contains(&lag), "lag {lag}: {test:?}");
        assert!(test.p_value >= 0.01);
        // White noise passes at lag 1 (seed chosen so that it does at 1%).
        assert_eq!(thinning_lag(&white(1, 200), 0.01).map(|t| t.0), Some(1));
        // A straight line never does: every lag correlates perfectly.
        let line: Vec<f64> = (0..100).map(f64::from).collect();
        assert_eq!(thinning_lag(&line, 0.01), None);
    }

    #[test]
    fn kpss_by_hand() {
        // 1, 2, …, 10: deviations −4.5 … 4.5, partial sums −4.5, −8, −10.5, −12, −12.5, −12,
        // −10.5, −8, −4.5, 0; Σ S² = 833.25. ℓ = ⌊4·0.1^¼⌋ = 2. γ₀ = 82.5/10 = 8.25;
        // γ₁ = Σ eₜeₜ₋₁ / 10 = 57.75/10; γ₂ = 34.0/10. σ̂² = 8.25 + 2(⅔·5.775 + ⅓·3.4) =
        // 18.2167; η = 833.25 / (100 · 18.2167) = 0.4574.
        let series: Vec<f64> = (1..=10).map(f64::from).collect();
        let k = kpss(&series).unwrap();
        assert_eq!(k.bandwidth, 2);
        let lrv = 8.25 + 2.0 * (2.0 / 3.0 * 5.775 + 1.0 / 3.0 * 3.4);
        assert!(
            (k.statistic - 833.25 / (100.0 * lrv)).abs() < 1e-12,
            "{k:?}"
        );
        assert!((k.statistic - 0.4574).abs() < 1e-4, "{k:?}");
        assert_eq!(kpss(&[1.0; 9]), None, "too few points");
        assert_eq!(
            kpss(&[4.0; 30]).unwrap().statistic,
            0.0,
            "flat: nothing drifts"
        );
    }

    #[test]
    fn the_largest_shift_is_the_step() {
        // 10 points at 1, then 10 at 3: the split at the step sees the whole step, 2.
        let mut step = vec![1.0; 10];
        step.extend([3.0; 10]);
        assert_eq!(largest_shift(&step), 2.0);
        // A line 0 … 19: every split sees the same, half its length (at the middle,
        // 14.5 − 4.5 = 10).
        let ramp: Vec<f64> = (0..20).map(f64::from).collect();
        assert_eq!(largest_shift(&ramp), 10.0);
        assert_eq!(largest_shift(&[5.0; 30]), 0.0);
        assert_eq!(largest_shift(&[5.0]), 0.0);
    }

    #[test]
    fn schwerts_bandwidth() {
        assert_eq!(kpss_bandwidth(10), 2);
        assert_eq!(kpss_bandwidth(30), 2);
        assert_eq!(kpss_bandwidth(60), 3);
        assert_eq!(kpss_bandwidth(100), 4);
        assert_eq!(kpss_bandwidth(500), 5);
    }

    #[test]
    fn kpss_passes_white_noise_at_its_level() {
        // Under the null the statistic exceeds the 5% value (0.463) in about 5% of series
        // (Kwiatkowski et al.'s table is asymptotic; at 200 points with ℓ = 4 it holds).
        let rejected = (0..1_000)
            .filter(|&seed| kpss(&white(seed, 200)).unwrap().statistic > KPSS_CRITICAL[1].1)
            .count();
        assert!((25..=75).contains(&rejected), "{rejected} of 1000");
    }

    #[test]
    fn kpss_rejects_a_random_walk_and_a_ramp() {
        // The test's power against a walk grows with n/ℓ: 200 steps (ℓ = 4) exceed the 5%
        // value in most series (96 of these 100); 60 steps (ℓ = 3) in fewer (69).
        let over = |n: usize, level: f64| {
            (0..100)
                .filter(|&seed| kpss(&random_walk(seed, n)).unwrap().statistic > level)
                .count()
        };
        let (long, short) = (over(200, KPSS_CRITICAL[1].1), over(60, KPSS_CRITICAL[1].1));
        assert!(long >= 85, "{long} of 100");
        assert!(short >= 55, "{short} of 100");
        // A ramp under noise: a queue that grows by a tenth of the noise per interval.
        let ramp: Vec<f64> = white(3, 40)
            .iter()
            .enumerate()
            .map(|(i, e)| 0.1 * i as f64 + e)
            .collect();
        let k = kpss(&ramp).unwrap();
        assert!(k.statistic > KPSS_CRITICAL[2].1, "{k:?}");
        // The same noise without the ramp passes.
        assert!(kpss(&white(3, 40)).unwrap().statistic < KPSS_CRITICAL[1].1);
    }
}
