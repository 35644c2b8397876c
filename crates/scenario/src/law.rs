//! Service-time laws: how long a request takes before any fault touches it.
use std::fmt;
use std::time::Duration;

use rand_distr::{Distribution, Exp, LogNormal};

use crate::seed::{self, LAW};

/// The longest service time any law produces. Heavy-tailed laws (lognormal with a large sigma)
/// can draw absurd values; a server that holds a request for days helps nobody, and the cap keeps
/// every `Duration` conversion finite.
pub const MAX_SERVICE: Duration = Duration::from_secs(3600);

/// A share of requests, from 0 to 100 percent.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Percent(f64);

impl Percent {
    /// `None` unless `p` is a finite number from 0 to 100.
    pub fn new(p: f64) -> Option<Percent> {
        (p.is_finite() && (0.0..=100.0).contains(&p)).then_some(Percent(p))
    }

    pub fn get(self) -> f64 {
        self.0
    }

    /// Whether request `index` falls in this share, on the given seed and stream. Each request
    /// is an independent Bernoulli draw, so the realised share varies around `p` like a real
    /// fault would.
    pub(crate) fn picks(self, seed: u64, stream: seed::Stream, index: u64) -> bool {
        seed::unit(seed, stream, index) * 100.0 < self.0
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0)
    }
}

/// The distribution of baseline service times.
#[derive(Clone, Debug, PartialEq)]
pub enum Law {
    /// Every request takes exactly this long.
    Fixed(Duration),
    /// Uniform between `min` and `max`, inclusive.
    Uniform { min: Duration, max: Duration },
    /// Exponential with this mean (memoryless service, as in M/M/1).
    Exponential { mean: Duration },
    /// Lognormal with this median and shape `sigma` (the standard deviation of the log).
    Lognormal { median: Duration, sigma: f64 },
    /// `slow_percent` of requests (seeded) take `slow`, the rest take `fast`.
    Bimodal {
        fast: Duration,
        slow: Duration,
        slow_percent: Percent,
    },
}

impl Law {
    /// The baseline service time of request `index`: a pure function of the seed and index.
    pub fn sample(&self, seed: u64, index: u64) -> Duration {
        let d = match *self {
            Law::Fixed(d) => d,
            Law::Uniform { min, max } => {
                let span = (max - min).as_secs_f64();
                min + Duration::from_secs_f64(span * seed::unit(seed, LAW, index))
            }
            Law::Exponential { mean } => {
                let exp = Exp::new(1.0).expect("rate 1 is valid");
                secs(mean.as_secs_f64() * exp.sample(&mut seed::rng(seed, LAW, index)))
            }
            Law::Lognormal { median, sigma } => {
                let ln = LogNormal::new(median.as_secs_f64().ln(), sigma)
                    .expect("validated: median > 0 and sigma finite, >= 0");
                secs(ln.sample(&mut seed::rng(seed, LAW, index)))
            }
            Law::Bimodal {
                fast,
                slow,
                slow_percent,
            } => {
                if slow_percent.picks(seed, LAW, index) {
                    slow
                } else {
                    fast
                }
            }
        };
        d.min(MAX_SERVICE)
    }

    /// The law's mean, before the [`MAX_SERVICE`] cap: one worker's capacity is `1 / mean`.
    pub fn mean(&self) -> Duration {
        match *self {
            Law::Fixed(d) => d,
            Law::Uniform { min, max } => (min + max) / 2,
            Law::Exponential { mean } => mean,
            Law::Lognormal { median, sigma } => {
                secs(median.as_secs_f64() * (sigma * sigma / 2.0).exp())
            }
            Law::Bimodal {
                fast,
                slow,
                slow_percent,
            } => {
                let p = slow_percent.get() / 100.0;
                secs(fast.as_secs_f64() * (1.0 - p) + slow.as_secs_f64() * p)
            }
        }
    }
}

/// `d × factor`, rounded to the nanosecond and capped at [`MAX_SERVICE`].
pub(crate) fn scale(d: Duration, factor: f64) -> Duration {
    let ns = (d.as_nanos() as f64 * factor).round();
    if ns.is_nan() || ns <= 0.0 {
        Duration::ZERO
    } else if ns >= MAX_SERVICE.as_nanos() as f64 {
        MAX_SERVICE
    } else {
        Duration::from_nanos(ns as u64)
    }
}

/// Seconds to a `Duration`, saturating at [`MAX_SERVICE`] so a wild draw cannot panic.
pub(crate) fn secs(s: f64) -> Duration {
    if s.is_nan() || s <= 0.0 {
        Duration::ZERO
    } else if s >= MAX_SERVICE.as_secs_f64() {
        MAX_SERVICE
    } else {
        Duration::from_secs_f64(s)
    }
}

impl fmt::Display for Law {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::parse::human as h;
        match *self {
            Law::Fixed(d) => write!(f, "fixed {}", h(d)),
            Law::Uniform { min, max } => write!(f, "uniform {}..{}", h(min), h(max)),
            Law::Exponential { mean } => write!(f, "exponential, mean {}", h(mean)),
            Law::Lognormal { median, sigma } => {
                write!(f, "lognormal, median {}, sigma {sigma}", h(median))
            }
            Law::Bimodal {
                fast,
                slow,
                slow_percent,
            } => write!(f, "{} with {slow_percent} at {}", h(fast), h(slow)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn mean_of(law: &Law, n: u64) -> f64 {
        (0..n).map(|i| law.sample(9, i).as_secs_f64()).sum::<f64>() / n as f64
    }

    #[test]
    fn fixed_is_fixed() {
        assert_eq!(Law::Fixed(10 * MS).sample(1, 123), 10 * MS);
    }

    #[test]
    fn uniform_stays_in_range_and_centres() {
        let law = Law::Uniform {
            min: 5 * MS,
            max: 15 * MS,
        };
        assert!((0..10_000).all(|i| (5 * MS..=15 * MS).contains(&law.sample(1, i))));
        assert!((mean_of(&law, 20_000) - 0.010).abs() < 0.0002);
    }

    #[test]
    fn exponential_and_lognormal_means_match_their_formula() {
        let exp = Law::Exponential { mean: 10 * MS };
        assert!((mean_of(&exp, 50_000) - 0.010).abs() < 0.0003);
        let ln = Law::Lognormal {
            median: 10 * MS,
            sigma: 0.5,
        };
        let want = ln.mean().as_secs_f64();
        assert!((mean_of(&ln, 50_000) - want).abs() < want * 0.02);
    }

    #[test]
    fn bimodal_matches_seed_004_capacity() {
        // Seed 004: 20 ms, 5% at 200 ms. One worker's capacity is 1 / mean ≈ 34.5 req/s.
        let law = Law::Bimodal {
            fast: 20 * MS,
            slow: 200 * MS,
            slow_percent: Percent::new(5.0).unwrap(),
        };
        assert_eq!(law.mean(), 29 * MS);
        let slow = (0..100_000)
            .filter(|&i| law.sample(1, i) == 200 * MS)
            .count();
        assert!((4_600..5_400).contains(&slow), "{slow}");
    }

    #[test]
    fn wild_draws_are_capped() {
        let law = Law::Lognormal {
            median: Duration::from_secs(1000),
            sigma: 5.0,
        };
        assert!((0..1000).all(|i| law.sample(1, i) <= MAX_SERVICE));
    }
}
