//! Statistics over a run's timeline: pure functions of series of numbers.
//!
//! The trend test answers "is this series still rising?" without assuming a distribution:
//! Mann–Kendall counts how many later points exceed earlier ones (robust to the heavy tails of
//! latency), and the Theil–Sen slope (the median of pairwise slopes) says how fast it rises. A
//! saturated queue rises steadily; a loaded but stable one wanders without a direction.

/// The Mann–Kendall statistic of a series and its normal approximation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannKendall {
    /// Σ sign(x_j − x_i) over all pairs i < j: positive when later values tend to be larger.
    pub s: i64,
    /// `s` standardised (with continuity correction and the variance corrected for ties).
    pub z: f64,
}

/// Mann–Kendall over `series`, or `None` with fewer than 3 points (no test is possible).
pub fn mann_kendall(series: &[f64]) -> Option<MannKendall> {
    let n = series.len();
    if n < 3 {
        return None;
    }
    let mut s = 0i64;
    for (i, a) in series.iter().enumerate() {
        for b in &series[i + 1..] {
            s += match b.partial_cmp(a) {
                Some(std::cmp::Ordering::Greater) => 1,
                Some(std::cmp::Ordering::Less) => -1,
                _ => 0,
            };
        }
    }
    let variance = variance_of_s(series);
    let z = if variance <= 0.0 || s == 0 {
        0.0
    } else {
        // Continuity correction: S moves in steps of 2.
        (s - s.signum()) as f64 / variance.sqrt()
    };
    Some(MannKendall { s, z })
}

/// Var(S) = [n(n−1)(2n+5) − Σ t(t−1)(2t+5)] / 18, the sum over groups of t tied values.
fn variance_of_s(series: &[f64]) -> f64 {
    let term = |t: f64| t * (t - 1.0) * (2.0 * t + 5.0);
    let mut sorted = series.to_vec();
    sorted.sort_by(f64::total_cmp);
    let ties: f64 = sorted
        .chunk_by(|a, b| a == b)
        .map(|g| term(g.len() as f64))
        .sum();
    (term(series.len() as f64) - ties) / 18.0
}

/// The Theil–Sen slope: the median of (x_j − x_i) / (j − i) over all pairs, per step of the
/// series. `None` with fewer than 2 points.
pub fn theil_sen_slope(series: &[f64]) -> Option<f64> {
    let mut slopes = Vec::new();
    for (i, a) in series.iter().enumerate() {
        for (k, b) in series[i + 1..].iter().enumerate() {
            slopes.push((b - a) / (k + 1) as f64);
        }
    }
    median(&mut slopes)
}

/// The median (mean of the middle two for an even count); `None` for an empty slice.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    // An odd count has one middle value (`& 1`, not `is_multiple_of`: rust-version is 1.85).
    Some(if values.len() & 1 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

/// When a series counts as still rising.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrendTest {
    /// The Mann–Kendall z a rise must reach. 2.33 is one-sided p < 0.01.
    pub min_z: f64,
    /// The rise across the whole series (Theil–Sen slope × span) must also reach this share of
    /// the series' median: a significant but tiny drift is not a queue running away.
    pub min_relative_rise: f64,
}

impl Default for TrendTest {
    fn default() -> Self {
        TrendTest {
            min_z: 2.33,
            min_relative_rise: 0.5,
        }
    }
}

/// What the trend test found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trend {
    pub z: f64,
    /// Theil–Sen slope × (points − 1): the fitted rise from the first point to the last.
    pub rise: f64,
    pub rising: bool,
}

impl TrendTest {
    /// Tests `series` (at least 3 points); `None` when there are too few to say.
    pub fn test(&self, series: &[f64]) -> Option<Trend> {
        let mk = mann_kendall(series)?;
        let rise = theil_sen_slope(series)? * (series.len() - 1) as f64;
        let level = median(&mut series.to_vec())?.abs();
        let rising = mk.z >= self.min_z && rise > 0.0 && rise >= self.min_relative_rise * level;
        Some(Trend {
            z: mk.z,
            rise,
            rising,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A deterministic noise source in [−amplitude, amplitude) (a linear congruential
    /// generator): the tests must not depend on a random crate's stream.
    pub(crate) fn noise(seed: u64, n: usize, amplitude: f64) -> Vec<f64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((x >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 2.0 * amplitude
            })
            .collect()
    }

    #[test]
    fn mann_kendall_by_hand() {
        // Strictly rising, 4 points: all 6 pairs agree; Var = 4·3·13/18 = 26/3.
        let mk = mann_kendall(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(mk.s, 6);
        assert!((mk.z - 5.0 / (26.0f64 / 3.0).sqrt()).abs() < 1e-12);
        // Strictly falling mirrors it.
        assert_eq!(mann_kendall(&[4.0, 3.0, 2.0, 1.0]).unwrap().s, -6);
        // All tied: no pair has a direction and the variance vanishes.
        let flat = mann_kendall(&[5.0; 6]).unwrap();
        assert_eq!((flat.s, flat.z), (0, 0.0));
        // Too short to test.
        assert_eq!(mann_kendall(&[1.0, 2.0]), None);
    }

    #[test]
    fn ties_shrink_the_variance() {
        // [1, 1, 2]: pairs (1,1)=0, (1,2)=+1, (1,2)=+1 → S = 2; Var = (3·2·11 − 2·1·9)/18.
        let mk = mann_kendall(&[1.0, 1.0, 2.0]).unwrap();
        assert_eq!(mk.s, 2);
        assert!((mk.z - 1.0 / (48.0f64 / 18.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn theil_sen_ignores_an_outlier() {
        // A line of slope 2 with one wild point: least squares would tilt, the median does not.
        let mut line: Vec<f64> = (0..11).map(|i| 2.0 * i as f64).collect();
        line[5] = 1000.0;
        assert_eq!(theil_sen_slope(&line), Some(2.0));
        assert_eq!(theil_sen_slope(&[3.0]), None);
    }

    #[test]
    fn trend_verdicts() {
        let test = TrendTest::default();
        let flat_noisy: Vec<f64> = noise(7, 20, 10.0).iter().map(|e| 30.0 + e).collect();
        let rising: Vec<f64> = noise(11, 20, 10.0)
            .iter()
            .enumerate()
            .map(|(i, e)| 30.0 + 20.0 * i as f64 + e)
            .collect();
        let heavy_tailed: Vec<f64> = (0..20)
            .map(|i| if i % 7 == 3 { 200.0 } else { 20.0 })
            .collect();
        let tiny_drift: Vec<f64> = (0..20).map(|i| 100.0 + 0.5 * i as f64).collect();
        let cases: [(&str, &[f64], bool); 5] = [
            // Latency at a stable load: noise around a level, no direction.
            ("flat noisy", &flat_noisy, false),
            // A queue growing by ~20 ms per interval: what saturation looks like.
            ("rising", &rising, true),
            // Periodic slow intervals (bimodal service) are spikes, not a trend.
            ("heavy tailed", &heavy_tailed, false),
            // Monotone, so significant, but +10% over the run: not a runaway queue.
            ("tiny drift", &tiny_drift, false),
            // Too short to call: never flagged.
            ("two points", &[1.0, 100.0], false),
        ];
        for (name, series, want) in cases {
            let got = test.test(series).is_some_and(|t| t.rising);
            assert_eq!(got, want, "{name}: {:?}", test.test(series));
        }
    }
}
