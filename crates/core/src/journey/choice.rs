//! The pure choices of a journey run: which journey journey *i* runs, which data row it takes,
//! what `${random.int(A,B)}` gives it and how long each of its steps thinks. Each is a function
//! of the journey's index and the run's seed only, never of a counter or a clock: the shards of
//! a distributed run and the simulator each compute them for their own journeys and agree.
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp1};
use rand_pcg::Pcg64Mcg;

/// Each choice mixes its own constant into the seed, so the journey picked, the row taken and
/// the think times of one journey are unrelated draws even under the same seed.
const JOURNEY_DOMAIN: u64 = 0x6A6F_7572_6E65_7931;
const ROW_DOMAIN: u64 = 0x726F_7773_5F5F_5F31;
const RANDOM_DOMAIN: u64 = 0x7261_6E64_696E_7431;
const THINK_DOMAIN: u64 = 0x7468_696E_6B5F_5F31;

/// The golden-ratio increment of splitmix64: consecutive inputs land far apart before mixing.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64's finaliser: a bijection on u64 whose outputs look independent even for
/// neighbouring inputs (journey 7 and journey 8).
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One 64-bit key from a domain, the seed and the coordinates of a draw, order-sensitive:
/// (journey 1, step 2) and (journey 2, step 1) give different keys.
fn key(domain: u64, seed: u64, coordinates: &[u64]) -> u64 {
    coordinates
        .iter()
        .fold(mix(seed ^ domain), |z, &c| mix(z.wrapping_add(GAMMA) ^ c))
}

/// A number in `0..total` from a key, without modulo bias beyond 2⁻⁶⁴ per value.
fn below(key: u64, total: u64) -> u64 {
    ((u128::from(key) * u128::from(total)) >> 64) as u64
}

/// Which of the journeys journey `index` runs: journey `k` with probability
/// `weight_k / total`. `cumulative[k]` is the sum of the weights of journeys `0..=k`.
pub(super) fn pick_weighted(cumulative: &[u64], index: u64, seed: u64) -> usize {
    let total = *cumulative.last().expect("at least one journey");
    let unit = below(key(JOURNEY_DOMAIN, seed, &[index]), total);
    cumulative.partition_point(|&c| c <= unit)
}

/// A row drawn uniformly from `rows` for journey `index` (`order = "random"`).
pub(super) fn random_row(rows: usize, index: u64, seed: u64) -> usize {
    below(key(ROW_DOMAIN, seed, &[index]), rows as u64) as usize
}

/// `${random.int(low,high)}` (both ends included) for journey `index`. `slot` tells the
/// occurrences of `${random.int…}` in one file apart, so two of them in one journey draw two
/// values.
pub(super) fn random_int(low: i64, high: i64, slot: u64, index: u64, seed: u64) -> i64 {
    let span = (i128::from(high) - i128::from(low) + 1) as u128;
    let z = u128::from(key(RANDOM_DOMAIN, seed, &[index, slot]));
    (i128::from(low) + ((z * span) >> 64) as i128) as i64
}

/// How long a user pauses after a step's answer, before sending the next step (or the same
/// step's next repeat).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Think {
    /// No pause: the next step is due when this one's answer arrives.
    #[default]
    None,
    /// Always this long (`think = "500ms"`).
    Fixed(Duration),
    /// Uniform between the two, both included (`think = "1s..3s"`).
    Uniform(Duration, Duration),
    /// Exponential with this mean (`think = "exp(2s)"`): a user who leaves at a constant rate,
    /// as Poisson arrivals do; most pauses are short, a few long.
    Exponential(Duration),
}

impl Think {
    /// Reads `500ms`, `1s..3s` or `exp(2s)`; the error says what was wrong and what is
    /// accepted.
    pub fn parse(text: &str) -> Result<Think, String> {
        let accepted = "write a duration (\"500ms\"), a uniform range (\"1s..3s\") or an \
                        exponential mean (\"exp(2s)\")";
        let duration = |t: &str| {
            humantime::parse_duration(t.trim()).map_err(|e| {
                format!(
                    "think {text:?}: {:?} is not a duration ({e}); {accepted}",
                    t.trim()
                )
            })
        };
        let text = text.trim();
        if let Some(mean) = text.strip_prefix("exp(").and_then(|t| t.strip_suffix(')')) {
            let mean = duration(mean)?;
            if mean.is_zero() {
                return Err(format!(
                    "think {text:?}: the mean is 0; give a positive mean, or \
                    think = \"0s\" for no pause"
                ));
            }
            return Ok(Think::Exponential(mean));
        }
        if let Some((low, high)) = text.split_once("..") {
            let (low, high) = (duration(low)?, duration(high)?);
            if low > high {
                return Err(format!(
                    "think {text:?}: the range runs backwards; write the shorter time first"
                ));
            }
            return Ok(Think::Uniform(low, high));
        }
        let fixed = duration(text)?;
        Ok(if fixed.is_zero() {
            Think::None
        } else {
            Think::Fixed(fixed)
        })
    }

    /// The pause after repeat `repeat` of step `step` of journey `journey_index`. Pure: the
    /// same arguments give the same pause in every shard and in the simulator.
    pub fn draw(&self, journey_index: u64, step: usize, repeat: u32, seed: u64) -> Duration {
        let rng = || {
            let coordinates = [journey_index, step as u64, u64::from(repeat)];
            Pcg64Mcg::seed_from_u64(key(THINK_DOMAIN, seed, &coordinates))
        };
        match *self {
            Think::None => Duration::ZERO,
            Think::Fixed(d) => d,
            Think::Uniform(low, high) => {
                let nanos = rng().random_range(low.as_nanos()..=high.as_nanos());
                Duration::from_nanos(nanos as u64)
            }
            Think::Exponential(mean) => {
                let units: f64 = Exp1.sample(&mut rng());
                Duration::from_secs_f64(units * mean.as_secs_f64())
            }
        }
    }

    /// The mean pause.
    pub fn mean(&self) -> Duration {
        match *self {
            Think::None => Duration::ZERO,
            Think::Fixed(d) | Think::Exponential(d) => d,
            Think::Uniform(low, high) => (low + high) / 2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: u64 = 42;

    fn secs(d: Duration) -> f64 {
        d.as_secs_f64()
    }

    #[test]
    fn think_reads_each_form() {
        let ms = Duration::from_millis;
        assert_eq!(Think::parse("500ms"), Ok(Think::Fixed(ms(500))));
        assert_eq!(Think::parse("0s"), Ok(Think::None));
        assert_eq!(
            Think::parse("1s..3s"),
            Ok(Think::Uniform(ms(1000), ms(3000)))
        );
        assert_eq!(Think::parse(" exp(2s) "), Ok(Think::Exponential(ms(2000))));
        for bad in ["fast", "3s..1s", "exp(0s)", "exp(2)", "1s..", "500"] {
            let e = Think::parse(bad).expect_err(bad);
            assert!(e.contains(&format!("{bad:?}")), "{bad}: {e}");
        }
    }

    #[test]
    fn exponential_draws_have_their_mean() {
        let think = Think::Exponential(Duration::from_secs(2));
        let n = 10_000;
        let sum: f64 = (0..n).map(|i| secs(think.draw(i, 1, 0, SEED))).sum();
        // The mean of 10,000 exponential draws has a standard error of 2 s / 100 = 0.02 s;
        // ±0.1 s is five of them.
        let mean = sum / n as f64;
        assert!((mean - 2.0).abs() < 0.1, "mean {mean}");
    }

    #[test]
    fn uniform_draws_stay_inside_and_fill_the_range() {
        let (low, high) = (Duration::from_secs(1), Duration::from_secs(3));
        let think = Think::Uniform(low, high);
        let draws: Vec<Duration> = (0..10_000).map(|i| think.draw(i, 0, 2, SEED)).collect();
        assert!(draws.iter().all(|d| (low..=high).contains(d)));
        let mean = draws.iter().map(|&d| secs(d)).sum::<f64>() / draws.len() as f64;
        // Standard error 2 s / √12 / 100 ≈ 0.006 s.
        assert!((mean - 2.0).abs() < 0.03, "mean {mean}");
        let below = draws
            .iter()
            .filter(|&&d| d < Duration::from_millis(1100))
            .count();
        assert!(
            (300..700).contains(&below),
            "{below} draws in the lowest 5%"
        );
    }

    #[test]
    fn think_is_pure_and_every_coordinate_counts() {
        let think = Think::Exponential(Duration::from_secs(1));
        let base = think.draw(7, 1, 0, SEED);
        assert_eq!(think.draw(7, 1, 0, SEED), base, "same inputs, same pause");
        for (what, other) in [
            ("journey", think.draw(8, 1, 0, SEED)),
            ("step", think.draw(7, 2, 0, SEED)),
            ("repeat", think.draw(7, 1, 1, SEED)),
            ("seed", think.draw(7, 1, 0, SEED + 1)),
        ] {
            assert_ne!(other, base, "another {what}, another pause");
        }
        // Swapped coordinates are another draw, not the same one.
        assert_ne!(think.draw(1, 2, 0, SEED), think.draw(2, 1, 0, SEED));
    }

    #[test]
    fn weights_share_the_journeys() {
        // Weights 1, 3 and 6 of 10: shares 10%, 30%, 60%.
        let cumulative = [1, 4, 10];
        let n = 20_000;
        let mut count = [0u32; 3];
        for i in 0..n {
            count[pick_weighted(&cumulative, i, SEED)] += 1;
        }
        // Binomial standard errors at n = 20,000: 42, 65 and 69 journeys; the bounds are
        // about five of them.
        for (k, expected) in [(0, 2000), (1, 6000), (2, 12_000)] {
            let got = i64::from(count[k]);
            assert!((got - expected).abs() < 350, "journey {k}: {got} of {n}");
        }
    }

    #[test]
    fn picks_and_rows_are_pure_per_seed() {
        let cumulative = [5, 10];
        let a: Vec<usize> = (0..200)
            .map(|i| pick_weighted(&cumulative, i, SEED))
            .collect();
        let b: Vec<usize> = (0..200)
            .map(|i| pick_weighted(&cumulative, i, SEED))
            .collect();
        let c: Vec<usize> = (0..200)
            .map(|i| pick_weighted(&cumulative, i, SEED + 1))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c, "another seed, other picks");
        let rows: Vec<usize> = (0..1000).map(|i| random_row(10, i, SEED)).collect();
        assert!(rows.iter().all(|&r| r < 10));
        assert_eq!(
            rows,
            (0..1000)
                .map(|i| random_row(10, i, SEED))
                .collect::<Vec<_>>()
        );
        for r in 0..10 {
            let taken = rows.iter().filter(|&&x| x == r).count();
            assert!(
                (50..150).contains(&taken),
                "row {r} taken {taken} times of 1000"
            );
        }
    }

    #[test]
    fn random_int_stays_inside_and_reaches_both_ends() {
        let draws: Vec<i64> = (0..2000).map(|i| random_int(1, 6, 0, i, SEED)).collect();
        assert!(draws.iter().all(|v| (1..=6).contains(v)));
        assert!(draws.contains(&1) && draws.contains(&6));
        assert_eq!(random_int(5, 5, 0, 9, SEED), 5);
        let extreme = random_int(i64::MIN, i64::MAX, 0, 3, SEED);
        assert_eq!(extreme, random_int(i64::MIN, i64::MAX, 0, 3, SEED));
    }

    #[test]
    fn random_int_depends_on_journey_slot_and_seed() {
        let base: Vec<i64> = (0..50)
            .map(|i| random_int(0, 1_000_000, 0, i, SEED))
            .collect();
        let again: Vec<i64> = (0..50)
            .map(|i| random_int(0, 1_000_000, 0, i, SEED))
            .collect();
        assert_eq!(base, again, "same inputs, same values");
        let distinct: std::collections::HashSet<i64> = base.iter().copied().collect();
        assert!(
            distinct.len() > 45,
            "journeys draw different values: {base:?}"
        );
        assert_ne!(
            random_int(0, 1_000_000, 1, 0, SEED),
            base[0],
            "another slot"
        );
        assert_ne!(
            random_int(0, 1_000_000, 0, 0, SEED + 1),
            base[0],
            "another seed"
        );
    }
}
