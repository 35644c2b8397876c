//! Units as types: a request rate is not a bare `f64`, a time on the run's clock is not a bare
//! integer.
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Requests per second. Always finite and strictly positive.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Rate(f64);

/// Why a number is not a usable rate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RateError {
    /// Rates must be above zero: give a positive number of requests per second, e.g. `1000`.
    #[error("must be a positive number of requests per second, got {0}")]
    NotPositive(f64),
    /// NaN or infinity: give a finite number of requests per second.
    #[error("must be a finite number of requests per second")]
    NotFinite,
}

impl Rate {
    pub fn per_second(value: f64) -> Result<Rate, RateError> {
        if !value.is_finite() {
            Err(RateError::NotFinite)
        } else if value <= 0.0 {
            Err(RateError::NotPositive(value))
        } else {
            Ok(Rate(value))
        }
    }

    pub fn get(self) -> f64 {
        self.0
    }

    /// The mean gap between requests at this rate.
    pub fn interval(self) -> Duration {
        Duration::from_secs_f64(1.0 / self.0)
    }

    /// This rate split evenly over `parts` independent senders.
    pub fn split(self, parts: usize) -> Rate {
        Rate(self.0 / parts.max(1) as f64)
    }
}

impl TryFrom<f64> for Rate {
    type Error = RateError;
    fn try_from(value: f64) -> Result<Self, Self::Error> {
        Rate::per_second(value)
    }
}

impl From<Rate> for f64 {
    fn from(rate: Rate) -> f64 {
        rate.0
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} req/s", self.0)
    }
}

/// Nanoseconds in a `Duration`, saturating at `u64::MAX` (584 years).
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Formats nanoseconds the way the seeds print latencies: µs below a millisecond, ms below a
/// second, seconds above.
pub fn format_ns(ns: u64) -> String {
    let unit = unit_for(ns);
    format!("{} {}", unit.number(ns), unit.name)
}

/// The unit [`format_ns`] prints `ns` in: its size in ns, its name and its decimals. Other
/// values can be printed in the same unit (an interval beside its percentile).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeUnit {
    pub scale: f64,
    pub name: &'static str,
    pub decimals: usize,
}

impl TimeUnit {
    /// `ns` in this unit, without the unit's name.
    pub fn number(self, ns: u64) -> String {
        format!("{:.*}", self.decimals, ns as f64 / self.scale)
    }
}

pub fn unit_for(ns: u64) -> TimeUnit {
    let (scale, name, decimals) = match ns {
        0..=999 => (1.0, "ns", 0),
        1_000..=999_999 => (1e3, "µs", 1),
        1_000_000..=999_999_999 => (1e6, "ms", 2),
        _ => (1e9, "s", 3),
    };
    TimeUnit {
        scale,
        name,
        decimals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_rejects_what_cannot_be_scheduled() {
        assert_eq!(Rate::per_second(0.0), Err(RateError::NotPositive(0.0)));
        assert_eq!(Rate::per_second(-5.0), Err(RateError::NotPositive(-5.0)));
        assert_eq!(Rate::per_second(f64::NAN), Err(RateError::NotFinite));
        assert_eq!(Rate::per_second(f64::INFINITY), Err(RateError::NotFinite));
        assert_eq!(Rate::per_second(450.0).unwrap().get(), 450.0);
    }

    #[test]
    fn rate_interval_and_split() {
        let r = Rate::per_second(1000.0).unwrap();
        assert_eq!(r.interval(), Duration::from_millis(1));
        assert_eq!(r.split(4).get(), 250.0);
        assert_eq!(r.split(0).get(), 1000.0, "zero parts is treated as one");
    }

    #[test]
    fn latencies_print_in_readable_units() {
        assert_eq!(format_ns(850), "850 ns");
        assert_eq!(format_ns(19_500), "19.5 µs");
        assert_eq!(format_ns(194_640_000), "194.64 ms");
        assert_eq!(format_ns(1_007_000_000), "1.007 s");
        assert_eq!(format_ns(12_300_000_000), "12.300 s");
    }
}
