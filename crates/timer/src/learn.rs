//! How late the kernel's wake-ups come, learned as they happen.
use std::time::Duration;

/// The quantile of wake-up lateness the sleeper arms for. At 0.9, nine wake-ups in ten come
/// before the deadline (and spin the rest), one in ten comes late by its excess.
const QUANTILE: f64 = 0.9;
/// How far one observation moves the estimate, in nanoseconds. Small enough that a single
/// hiccup of milliseconds moves it by only 1.8 µs; large enough to settle within a few hundred
/// wake-ups.
const STEP_NS: f64 = 2_000.0;

/// A running estimate of a quantile of wake-up lateness, in constant memory.
///
/// Each observation nudges the estimate up by `STEP·q` if it was above, or down by
/// `STEP·(1 − q)` if it was below: the estimate settles where a share q of observations fall
/// below it (the Robbins–Monro quantile recursion). It is bounded by `ceiling`, because nothing
/// is gained by learning a lateness the sleeper may not spin for.
#[derive(Debug, Clone, Copy)]
pub struct Lateness {
    estimate_ns: f64,
    ceiling_ns: f64,
}

impl Lateness {
    /// A new estimate, starting at half the ceiling.
    pub fn new(ceiling: Duration) -> Lateness {
        let ceiling_ns = ceiling.as_nanos() as f64;
        Lateness {
            estimate_ns: ceiling_ns / 2.0,
            ceiling_ns,
        }
    }

    /// One wake-up came `late` after the time it was armed for.
    pub fn observe(&mut self, late: Duration) {
        let late = late.as_nanos() as f64;
        let step = if late > self.estimate_ns {
            STEP_NS * QUANTILE
        } else {
            -STEP_NS * (1.0 - QUANTILE)
        };
        self.estimate_ns = (self.estimate_ns + step).clamp(0.0, self.ceiling_ns);
    }

    pub fn estimate(&self) -> Duration {
        Duration::from_nanos(self.estimate_ns as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(v: u64) -> Duration {
        Duration::from_micros(v)
    }

    #[test]
    fn settles_near_the_ninetieth_percentile() {
        // Lateness uniform over 10..=29 µs: the 90th percentile is 28 µs.
        let mut l = Lateness::new(us(200));
        for i in 0..20_000u64 {
            l.observe(us(10 + (i * 7) % 20));
        }
        let got = l.estimate().as_micros() as i64;
        assert!((26..=30).contains(&got), "estimate {got} µs");
    }

    #[test]
    fn a_rare_hiccup_barely_moves_it_and_the_ceiling_holds() {
        let mut l = Lateness::new(us(50));
        for _ in 0..5_000 {
            l.observe(us(20));
        }
        let before = l.estimate();
        l.observe(Duration::from_millis(5));
        assert!(l.estimate() - before <= us(2), "one 5 ms hiccup");
        for _ in 0..5_000 {
            l.observe(Duration::from_millis(1));
        }
        assert_eq!(l.estimate(), us(50), "never past the ceiling");
        let mut never = Lateness::new(Duration::ZERO);
        never.observe(us(100));
        assert_eq!(never.estimate(), Duration::ZERO);
    }
}
