//! Warm-up and steady state: which part of a run's timeline to believe.
//!
//! The first seconds of a run are often unlike the rest: connections are opened, caches and
//! JIT compilers warm up, a queue fills to its working level. Percentiles over the whole run
//! mix that transient in. The timeline (one median per interval) shows it, and two tests read
//! it: MSER finds where the transient ends, and the trend test of [`crate::stats`] says whether
//! what is left still rises (a queue running away never reaches a steady state at all).
use crate::stats::{Trend, TrendTest};

/// Shorter series have no truncation: MSER needs a few points on each side of a cut.
const MIN_POINTS: usize = 6;

/// A cut counts as a warm-up only if the cut intervals' mean sits at least this many standard
/// errors from the rest's…
const WARMUP_MIN_Z: f64 = 3.0;

/// …and at least this share of the rest's level away: a start 3% slower than the rest is real
/// but not worth discarding data for.
const WARMUP_MIN_SHIFT: f64 = 0.1;

/// The number of leading points to discard by the marginal standard error rule (MSER, White
/// 1997): the truncation d that minimises Σ_{i≥d} (x_i − x̄_d)² / (n − d)², where x̄_d is the
/// mean of the points kept. That is the squared standard error of the mean of what is kept,
/// up to a factor: cutting a transient shrinks the spread faster than it shrinks the count,
/// cutting steady data does not. Only d ≤ n/2 is searched (the rule misbehaves near the end,
/// where few points are left). 0 for a series shorter than 6 points or one with a NaN or an
/// infinity.
///
/// On pure noise the rule still cuts a point or two when the first ones happen to be extreme;
/// [`assess`] does not count such a cut as a warm-up.
pub fn mser_truncation(series: &[f64]) -> usize {
    let n = series.len();
    if n < MIN_POINTS || series.iter().any(|x| !x.is_finite()) {
        return 0;
    }
    // Walk from the end, adding one point at a time to the kept part (Welford's update, so that
    // large latencies in nanoseconds do not cancel); each step is the truncation one earlier.
    let (mut mean, mut squares) = (0.0f64, 0.0f64);
    let mut best = (f64::INFINITY, 0usize);
    for (kept, (d, &x)) in series.iter().enumerate().rev().enumerate() {
        let kept = (kept + 1) as f64;
        let delta = x - mean;
        mean += delta / kept;
        squares += delta * (x - mean);
        if d <= n / 2 {
            let statistic = squares / (kept * kept);
            // `<=`: on a tie, the smaller cut wins (d decreases along the walk).
            if statistic <= best.0 {
                best = (statistic, d);
            }
        }
    }
    best.1
}

/// What the timeline says about warm-up and steady state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SteadyState {
    /// Leading intervals that belong to a warm-up (0 when none was found).
    pub warmup_intervals: usize,
    /// The trend test ([`TrendTest::default`]) on the intervals after the warm-up; `None` when
    /// too few are left to test.
    pub trend: Option<Trend>,
    /// No warm-up was found and the rest is not rising: the whole run can be taken as one.
    pub steady: bool,
}

/// Assesses a series of per-interval medians (any unit).
///
/// A warm-up is MSER's cut when the cut intervals clearly differ from the rest: their mean is
/// at least 3 standard errors and at least 10% of the rest's mean away from it. Slower first
/// intervals (cold caches) and faster ones (an empty queue filling up) both count. On a series
/// that rises throughout, MSER cuts as much as it may (half) and the trend test then finds the
/// rest still rising: not steady either way.
pub fn assess(series: &[f64]) -> SteadyState {
    let cut = mser_truncation(series);
    // A warm-up is where the run *starts*: the first point itself must stand apart. Otherwise
    // MSER's cut is a stall or a slowdown in the middle of the run, which is exactly what the
    // percentiles must keep.
    let starts_apart = cut > 0 && departs(&series[..1], &series[cut..]);
    let warmup_intervals = if starts_apart && departs(&series[..cut], &series[cut..]) {
        cut
    } else {
        0
    };
    let trend = TrendTest::default().test(&series[warmup_intervals..]);
    SteadyState {
        warmup_intervals,
        trend,
        steady: warmup_intervals == 0 && !trend.is_some_and(|t| t.rising),
    }
}

/// Whether `head` sits clearly away from `rest` (both non-empty, `rest` at least 2 points).
fn departs(head: &[f64], rest: &[f64]) -> bool {
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let (head_mean, rest_mean) = (mean(head), mean(rest));
    let variance =
        rest.iter().map(|x| (x - rest_mean).powi(2)).sum::<f64>() / (rest.len() - 1) as f64;
    let shift = (head_mean - rest_mean).abs();
    let standard_error = (variance / head.len() as f64).sqrt();
    shift >= WARMUP_MIN_Z * standard_error && shift >= WARMUP_MIN_SHIFT * rest_mean.abs()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::tests::noise;

    /// MSER by its definition, for every d, the slow way.
    fn mser_by_definition(series: &[f64]) -> usize {
        let n = series.len();
        let statistic = |d: usize| {
            let kept = &series[d..];
            let mean = kept.iter().sum::<f64>() / kept.len() as f64;
            let ss: f64 = kept.iter().map(|x| (x - mean).powi(2)).sum();
            ss / (kept.len() * kept.len()) as f64
        };
        (0..=n / 2)
            .min_by(|&a, &b| statistic(a).total_cmp(&statistic(b)))
            .unwrap()
    }

    #[test]
    fn mser_by_hand() {
        // One slow first point. d = 0: Σ(x − x̄)² = 31.54 over 8² (0.49); d = 1: 0.04 over 7²
        // (0.00082); d = 2: 0.04 / 6² (0.0011); d = 3: 0.028 / 5² (0.0011); d = 4: 0.02 / 4²
        // (0.00125).
        let series = [7.0, 1.0, 1.1, 0.9, 1.0, 1.0, 1.1, 0.9];
        assert_eq!(mser_truncation(&series), 1);
        // Drop the last two and d = 3 wins: 0.0067 / 3² = 0.00074 beats d = 1's 0.02 / 5².
        assert_eq!(mser_truncation(&series[..6]), 3);
        assert_eq!(mser_truncation(&[9.0, 1.0, 1.0, 1.0, 1.0]), 0, "too short");
        assert_eq!(mser_truncation(&[1.0; 10]), 0, "flat: nothing to cut");
        let mut with_nan = [1.0; 10];
        with_nan[3] = f64::NAN;
        assert_eq!(mser_truncation(&with_nan), 0);
    }

    #[test]
    fn streaming_mser_agrees_with_the_definition() {
        for seed in 0..40 {
            let len = 6 + (seed as usize * 7) % 90;
            // Noise around a latency in nanoseconds, with a start of varying length and height.
            let start = (seed as usize * 3) % (len / 2 + 1);
            let series: Vec<f64> = noise(seed, len, 2e5)
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    let level = if i < start { 3e6 } else { 1e6 };
                    level + e
                })
                .collect();
            assert_eq!(
                mser_truncation(&series),
                mser_by_definition(&series),
                "seed {seed}"
            );
        }
    }

    #[test]
    fn a_slow_start_is_a_warm_up() {
        // Ten intervals at five times the level, then 50 flat and noisy.
        let series: Vec<f64> = noise(3, 60, 10.0)
            .iter()
            .enumerate()
            .map(|(i, e)| if i < 10 { 500.0 } else { 100.0 } + e)
            .collect();
        // MSER may take a noisy point or two past the step with it.
        let s = assess(&series);
        assert!((10..=13).contains(&s.warmup_intervals), "{s:?}");
        assert!(!s.steady);
        assert!(!s.trend.unwrap().rising, "flat after the warm-up");
    }

    #[test]
    fn a_decaying_start_is_cut_where_it_reaches_the_noise() {
        // From 5× down to the level with a time constant of 2 intervals: the excess falls under
        // the noise (±10) after about 7 intervals and under 1% after 10.
        let series: Vec<f64> = noise(5, 60, 10.0)
            .iter()
            .enumerate()
            .map(|(i, e)| 100.0 * (1.0 + 4.0 * (-(i as f64) / 2.0).exp()) + e)
            .collect();
        let s = assess(&series);
        assert!((5..=12).contains(&s.warmup_intervals), "{s:?}");
        assert!(!s.steady);
    }

    #[test]
    fn a_fast_start_is_a_warm_up_too() {
        // An empty queue filling up: the first intervals are faster than the rest.
        let series: Vec<f64> = noise(8, 40, 5.0)
            .iter()
            .enumerate()
            .map(|(i, e)| if i < 6 { 20.0 } else { 100.0 } + e)
            .collect();
        let s = assess(&series);
        assert!((6..=9).contains(&s.warmup_intervals), "{s:?}");
    }

    #[test]
    fn flat_noise_is_steady() {
        // MSER may cut a point or two from noise; none of it is a warm-up.
        let mut cut_something = 0;
        for seed in 0..50 {
            let series: Vec<f64> = noise(seed, 60, 20.0).iter().map(|e| 100.0 + e).collect();
            let raw = mser_truncation(&series);
            assert!(raw <= 6, "seed {seed}: MSER cut {raw} from noise");
            cut_something += usize::from(raw > 0);
            let s = assess(&series);
            assert_eq!(s.warmup_intervals, 0, "seed {seed}: {s:?}");
            assert!(s.steady, "seed {seed}: {s:?}");
        }
        assert!(cut_something > 0, "the noise rule has something to do");
    }

    #[test]
    fn a_rising_series_is_not_steady() {
        // A queue growing by 20 per interval.
        let series: Vec<f64> = noise(11, 40, 10.0)
            .iter()
            .enumerate()
            .map(|(i, e)| 30.0 + 20.0 * i as f64 + e)
            .collect();
        let s = assess(&series);
        let trend = s.trend.expect("enough points left to test");
        assert!(trend.rising, "{s:?}");
        assert!(!s.steady);
    }

    #[test]
    fn short_series() {
        let s = assess(&[5.0, 1.0, 1.0]);
        assert_eq!(s.warmup_intervals, 0);
        assert!(s.steady);
        assert_eq!(assess(&[]).trend, None);
    }

    #[test]
    fn a_stall_in_the_middle_is_not_a_warm_up() {
        // Twenty steady points with a three-point stall at 5–7: MSER may cut after it, but
        // the run did not start there, so nothing is trimmed.
        let mut series: Vec<f64> = noise(11, 20, 0.5).iter().map(|e| 10.0 + e).collect();
        for x in &mut series[5..8] {
            *x = 400.0;
        }
        let s = assess(&series);
        assert_eq!(s.warmup_intervals, 0, "{s:?}");
        // The same stall at the very start is a warm-up.
        let mut start: Vec<f64> = noise(11, 20, 0.5).iter().map(|e| 10.0 + e).collect();
        for x in &mut start[..3] {
            *x = 400.0;
        }
        let found = assess(&start).warmup_intervals;
        assert!(
            (3..=10).contains(&found),
            "at least the stall, at most half: {found}"
        );
    }
}
