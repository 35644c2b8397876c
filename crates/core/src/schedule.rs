//! When each request is due. Schedules are pure: the intended time of request `i` is a function
//! of the schedule's parameters and `i` (or of a seeded random stream), never of a clock. The
//! engine and the simulator read the same schedules.
//!
//! A run with several senders gives each one a *slice*: every `workers`-th request of a
//! deterministic schedule, or, for Poisson arrivals, an independent Poisson stream at
//! `rate / workers` (the superposition of independent Poisson processes is a Poisson process of
//! the summed rate, so the slices together are exactly the requested process).
use std::time::Duration;

use rand::SeedableRng;
use rand_distr::{Distribution, Exp};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

use crate::shard::Shard;
use crate::stages::Stages;
use crate::units::Rate;

/// One scheduled request: its index in the whole run and when it is due, as an offset from the
/// start of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    pub index: u64,
    pub at: Duration,
}

/// How arrivals are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Arrival {
    /// Evenly spaced at the rate.
    Constant,
    /// Exponential gaps at the rate, from a seeded generator.
    Poisson { seed: u64 },
    /// Evenly spaced, with the rate rising (or falling) linearly from the run's rate to `to`
    /// over the run's duration.
    Ramp { to: Rate },
}

impl Arrival {
    pub fn name(&self) -> &'static str {
        match self {
            Arrival::Constant => "constant",
            Arrival::Poisson { .. } => "poisson",
            Arrival::Ramp { .. } => "ramp",
        }
    }
}

/// When the schedule stops issuing requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// Requests due strictly before this offset.
    After(Duration),
    /// This many requests in all.
    Count(u64),
}

/// A whole schedule: arrival law, rate, and where it ends.
///
/// With `stages`, the rate follows them instead of being constant: `rate` is then their mean
/// and `end` their total duration, and arrivals are evenly spaced or Poisson along them.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub arrival: Arrival,
    pub rate: Rate,
    pub end: End,
    pub stages: Option<Stages>,
}

/// Why a schedule cannot be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    /// A ramp needs a duration to ramp over: give `--duration`, not `--requests`.
    #[error("a ramp needs a duration to ramp over, not a request count")]
    RampNeedsDuration,
    /// Stages set the rate themselves: a ramp is one stage (`30s@100..1000`).
    #[error(
        "stages set the rate over time themselves; write a ramp as a stage, e.g. 30s@100..1000"
    )]
    RampWithStages,
}

impl Schedule {
    pub fn new(arrival: Arrival, rate: Rate, end: End) -> Result<Schedule, ScheduleError> {
        if matches!(arrival, Arrival::Ramp { .. }) && matches!(end, End::Count(_)) {
            return Err(ScheduleError::RampNeedsDuration);
        }
        Ok(Schedule {
            arrival,
            rate,
            end,
            stages: None,
        })
    }

    /// Arrivals (evenly spaced or Poisson) along `stages`: a shaped run.
    pub fn staged(arrival: Arrival, stages: Stages) -> Result<Schedule, ScheduleError> {
        if matches!(arrival, Arrival::Ramp { .. }) {
            return Err(ScheduleError::RampWithStages);
        }
        Ok(Schedule {
            arrival,
            rate: Rate::per_second(stages.mean_rate()).expect("stages send something"),
            end: End::After(stages.total()),
            stages: Some(stages),
        })
    }

    /// The highest rate the schedule reaches.
    pub fn peak_rate(&self) -> f64 {
        match (&self.stages, self.arrival) {
            (Some(stages), _) => stages.peak(),
            (None, Arrival::Ramp { to }) => self.rate.get().max(to.get()),
            (None, _) => self.rate.get(),
        }
    }

    /// The rate the schedule asks for at `t`.
    pub fn rate_at(&self, t: Duration) -> f64 {
        match (&self.stages, self.arrival, self.end) {
            (Some(stages), _, _) => stages.rate_at(t),
            (None, Arrival::Ramp { to }, End::After(over)) => {
                let share = (t.as_secs_f64() / over.as_secs_f64().max(1e-9)).min(1.0);
                self.rate.get() + (to.get() - self.rate.get()) * share
            }
            (None, _, _) => self.rate.get(),
        }
    }

    /// The requests of sender `worker` out of `workers`, in due order.
    pub fn slice(&self, worker: usize, workers: usize) -> Slice {
        let workers = workers.max(1);
        let law = match (&self.stages, self.arrival) {
            (Some(stages), Arrival::Poisson { seed }) => Law::Poisson(PoissonStream::along(
                stages.clone(),
                workers,
                slice_seed(seed, worker),
            )),
            (Some(stages), _) => Law::Spaced(Spacing::Staged(stages.clone())),
            (None, arrival) => self.single_rate_law(arrival, worker, workers),
        };
        Slice {
            law,
            next: worker as u64,
            stride: workers as u64,
            worker: worker as u64,
            end: self.end,
            taken: 0,
            workers: workers as u64,
        }
    }

    fn single_rate_law(&self, arrival: Arrival, worker: usize, workers: usize) -> Law {
        match arrival {
            Arrival::Constant => Law::Spaced(Spacing::Constant(self.rate)),
            Arrival::Ramp { to } => {
                let End::After(over) = self.end else {
                    unreachable!("Schedule::new rejects a ramp without a duration")
                };
                Law::Spaced(Spacing::Ramp(Ramp::new(self.rate, to, over)))
            }
            Arrival::Poisson { seed } => Law::Poisson(PoissonStream::new(
                self.rate.split(workers),
                slice_seed(seed, worker),
            )),
        }
    }

    /// The whole schedule as one sender sees it.
    pub fn iter(&self) -> Slice {
        self.slice(0, 1)
    }

    /// Λ(t): the expected number of arrivals of the whole schedule (all senders) by `t`:
    /// rate·t for constant and Poisson arrivals, the ramp's integral r₀·t + (r₁ − r₀)·t²/(2T)
    /// for a ramp. Independent of the end: it keeps counting past it.
    ///
    /// Time rescaling runs on it: between two sends at t and t′ a sender's schedule expected
    /// Λ(t′) − Λ(t) arrivals (divided by the number of senders for one sender's share), which
    /// turns any of these schedules into one of rate 1.
    pub fn expected_by(&self, t: Duration) -> f64 {
        if let Some(stages) = &self.stages {
            return stages.expected_by(t);
        }
        let secs = t.as_secs_f64();
        match (self.arrival, self.end) {
            (Arrival::Ramp { to }, End::After(over)) => {
                let ramp = Ramp::new(self.rate, to, over);
                // A ramp down keeps falling past its end; once its rate would reach zero it
                // has nothing more to issue.
                let secs = if ramp.slope < 0.0 {
                    secs.min(ramp.from / -ramp.slope)
                } else {
                    secs
                };
                ramp.from * secs + ramp.slope * secs * secs / 2.0
            }
            _ => self.rate.get() * secs,
        }
    }

    /// How many requests the schedule will issue, when that is known without running it.
    pub fn planned_count(&self) -> Option<u64> {
        match (self.end, self.arrival) {
            (End::Count(n), _) => Some(n),
            (End::After(_), Arrival::Poisson { .. }) => None,
            (End::After(limit), _) => Some(self.spacing().count_before(limit)),
        }
    }

    /// How many requests shard `shard` runs with `threads` worker threads: its exact share of
    /// the global schedule. Closed-form where the schedule's count is known; for Poisson
    /// arrivals bounded by a duration, the shard's seeded streams are drawn and counted.
    pub fn due_count(&self, shard: Shard, threads: usize) -> u64 {
        let (k, n) = (u64::from(shard.index), u64::from(shard.count));
        match self.planned_count() {
            // Indices below the total that are ≡ K (mod N): the union of the shard's slices.
            Some(total) => total / n + u64::from(k < total % n),
            None => (0..threads)
                .map(|t| {
                    let (w, ws) = shard.slot(t, threads);
                    self.slice(w, ws).count() as u64
                })
                .sum(),
        }
    }

    /// The deterministic law of a constant, ramped or staged schedule with even spacing.
    fn spacing(&self) -> Spacing {
        match (&self.stages, self.arrival, self.end) {
            (Some(stages), _, _) => Spacing::Staged(stages.clone()),
            (None, Arrival::Ramp { to }, End::After(over)) => {
                Spacing::Ramp(Ramp::new(self.rate, to, over))
            }
            _ => Spacing::Constant(self.rate),
        }
    }
}

/// A deterministic spacing law: request `i` is due at `at(i)`.
#[derive(Debug, Clone)]
enum Spacing {
    Constant(Rate),
    Ramp(Ramp),
    /// Request `i` is due when Λ reaches `i`; never, once the plan has ended idle.
    Staged(Stages),
}

impl Spacing {
    /// How many requests are due strictly before `limit`: the first index due at or after it,
    /// found by bisection (due times never decrease), so a month-long plan costs microseconds.
    fn count_before(&self, limit: Duration) -> u64 {
        let mut hi = 1u64;
        while self.at(hi) < limit {
            hi = hi.saturating_mul(2);
        }
        let mut lo = 0u64;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.at(mid) < limit {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    fn at(&self, i: u64) -> Duration {
        match self {
            Spacing::Constant(rate) => constant_at(*rate, i),
            Spacing::Ramp(ramp) => ramp.at(i),
            Spacing::Staged(stages) => stages.time_at(i as f64).unwrap_or(Duration::MAX),
        }
    }
}

/// Request `i` of an evenly spaced schedule is due at `i / rate`.
pub fn constant_at(rate: Rate, i: u64) -> Duration {
    Duration::from_nanos((i as f64 * 1e9 / rate.get()).round() as u64)
}

/// A rate moving linearly from `from` to `to` over `over`; after `over` it issues nothing.
///
/// The number of requests due by time t is Λ(t) = r₀·t + (r₁ − r₀)·t² / (2T); request `i` is due
/// when Λ(t) = i. Solved in the cancellation-free form t = 2i / (r₀ + √(r₀² + 2(r₁ − r₀)i / T)).
#[derive(Debug, Clone, Copy)]
pub struct Ramp {
    from: f64,
    slope: f64,
}

impl Ramp {
    pub fn new(from: Rate, to: Rate, over: Duration) -> Ramp {
        let secs = over.as_secs_f64().max(f64::MIN_POSITIVE);
        Ramp {
            from: from.get(),
            slope: (to.get() - from.get()) / secs,
        }
    }

    pub fn at(&self, i: u64) -> Duration {
        let i = i as f64;
        let disc = (self.from * self.from + 2.0 * self.slope * i).max(0.0);
        Duration::from_secs_f64(2.0 * i / (self.from + disc.sqrt()))
    }
}

/// Exponential gaps. Without stages the stream runs in seconds at its rate; along stages it
/// runs in units of Λ (expected arrivals), at 1/`workers` per unit for one sender's share, and
/// each arrival is mapped back to time through Λ⁻¹.
#[derive(Debug, Clone)]
struct PoissonStream {
    gaps: Exp<f64>,
    rng: Pcg64Mcg,
    now: f64,
    along: Option<Stages>,
}

impl PoissonStream {
    fn new(rate: Rate, seed: u64) -> PoissonStream {
        PoissonStream {
            gaps: Exp::new(rate.get()).expect("a Rate is positive and finite"),
            rng: Pcg64Mcg::seed_from_u64(seed),
            now: 0.0,
            along: None,
        }
    }

    fn along(stages: Stages, workers: usize, seed: u64) -> PoissonStream {
        PoissonStream {
            gaps: Exp::new(1.0 / workers.max(1) as f64).expect("positive and finite"),
            rng: Pcg64Mcg::seed_from_u64(seed),
            now: 0.0,
            along: Some(stages),
        }
    }

    /// The first arrival is at 0, like the constant schedule's; then exponential gaps.
    fn next_at(&mut self) -> Duration {
        let at = match &self.along {
            None => Duration::from_secs_f64(self.now),
            Some(stages) => stages.time_at(self.now).unwrap_or(Duration::MAX),
        };
        self.now += self.gaps.sample(&mut self.rng);
        at
    }
}

/// Each sender's Poisson stream needs its own seed; mixing keeps neighbouring seeds unrelated.
fn slice_seed(seed: u64, worker: usize) -> u64 {
    let mut z = seed ^ (worker as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[derive(Debug, Clone)]
enum Law {
    Spaced(Spacing),
    Poisson(PoissonStream),
}

/// One sender's share of a schedule, in due order.
#[derive(Debug, Clone)]
pub struct Slice {
    law: Law,
    next: u64,
    stride: u64,
    worker: u64,
    workers: u64,
    end: End,
    taken: u64,
}

impl Slice {
    /// How many requests of an `End::Count(total)` run this slice owns.
    fn share_of(&self, total: u64) -> u64 {
        total / self.workers + u64::from(self.worker < total % self.workers)
    }
}

impl Iterator for Slice {
    type Item = Due;

    fn next(&mut self) -> Option<Due> {
        let index = self.next;
        let at = match &mut self.law {
            Law::Spaced(spacing) => spacing.at(index),
            Law::Poisson(stream) => stream.next_at(),
        };
        let within = match self.end {
            End::After(limit) => at < limit,
            End::Count(total) => match self.law {
                Law::Spaced(_) => index < total,
                Law::Poisson(_) => self.taken < self.share_of(total),
            },
        };
        if !within {
            return None;
        }
        self.next += self.stride;
        self.taken += 1;
        Some(Due { index, at })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(r: f64) -> Rate {
        Rate::per_second(r).unwrap()
    }
    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }
    fn us(v: u64) -> Duration {
        Duration::from_micros(v)
    }

    #[test]
    fn constant_schedule_table() {
        let table: &[(f64, u64, Duration, &str)] = &[
            (1000.0, 0, ms(0), "the first request is due at the start"),
            (1000.0, 1, ms(1), "1000/s is one every millisecond"),
            (1000.0, 999, ms(999), "the last request of the first second"),
            (
                450.0,
                450,
                ms(1000),
                "seed 000's rate: request 450 opens second two",
            ),
            (
                450.0,
                1,
                Duration::from_nanos(2_222_222),
                "1/450 s rounds to the nanosecond",
            ),
            (
                3.0,
                2,
                Duration::from_nanos(666_666_667),
                "2/3 s rounds up, not down",
            ),
            (50_000.0, 7, us(140), "high rates keep microsecond spacing"),
        ];
        for &(r, i, want, why) in table {
            assert_eq!(constant_at(rate(r), i), want, "{why}");
        }
    }

    #[test]
    fn duration_bound_counts_requests_strictly_before_the_end() {
        let s = Schedule::new(
            Arrival::Constant,
            rate(450.0),
            End::After(Duration::from_secs(30)),
        )
        .unwrap();
        // Seed 000: 450 req/s × 30 s = 13,500 requests.
        assert_eq!(s.planned_count(), Some(13_500));
        assert_eq!(
            s.iter().last().unwrap().at,
            constant_at(rate(450.0), 13_499)
        );
    }

    #[test]
    fn count_bound_stops_at_the_count() {
        let s = Schedule::new(Arrival::Constant, rate(10.0), End::Count(5)).unwrap();
        let all: Vec<_> = s.iter().map(|d| d.index).collect();
        assert_eq!(all, vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn slices_partition_the_schedule_exactly() {
        let s = Schedule::new(Arrival::Constant, rate(1000.0), End::Count(10)).unwrap();
        let mut merged: Vec<Due> = (0..3).flat_map(|w| s.slice(w, 3)).collect();
        merged.sort_by_key(|d| d.index);
        assert_eq!(
            merged,
            s.iter().collect::<Vec<_>>(),
            "three slices rebuild the whole"
        );
        assert_eq!(s.slice(0, 3).count(), 4, "worker 0 owns indices 0,3,6,9");
        assert_eq!(s.slice(2, 3).count(), 3, "worker 2 owns indices 2,5,8");
    }

    #[test]
    fn ramp_table() {
        // 100 → 300 req/s over 10 s: Λ(t) = 100t + 10t².
        let r = Ramp::new(rate(100.0), rate(300.0), Duration::from_secs(10));
        let first_100 = (-100.0 + 14_000f64.sqrt()) / 20.0;
        let table: &[(u64, f64, &str)] = &[
            (0, 0.0, "starts at zero"),
            (100, first_100, "Λ(t) = 100 solves 10t² + 100t − 100 = 0"),
            (
                750,
                5.0,
                "Λ(5) = 500 + 250: half the time, well under half the requests",
            ),
            (
                2000,
                10.0,
                "Λ(10) = 1000 + 1000: the last request lands on the end",
            ),
        ];
        for &(i, want_secs, why) in table {
            let got = r.at(i).as_secs_f64();
            assert!((got - want_secs).abs() < 1e-6, "{why}: {got}");
        }
    }

    #[test]
    fn ramp_down_and_flat_ramp_agree_with_constant() {
        let flat = Ramp::new(rate(200.0), rate(200.0), Duration::from_secs(5));
        for i in [0u64, 1, 17, 999] {
            let a = flat.at(i).as_nanos() as i128;
            let b = constant_at(rate(200.0), i).as_nanos() as i128;
            assert!(
                (a - b).abs() <= 1,
                "a flat ramp is a constant schedule (i={i})"
            );
        }
        // 300 → 100 over 10 s issues the same 2,000 requests as 100 → 300, back to front.
        let s = Schedule::new(
            Arrival::Ramp { to: rate(100.0) },
            rate(300.0),
            End::After(Duration::from_secs(10)),
        )
        .unwrap();
        let n = s.planned_count().unwrap();
        assert!(
            (1999..=2001).contains(&n),
            "ramp down issues ≈2000, got {n}"
        );
    }

    #[test]
    fn expected_by_inverts_the_deterministic_schedules() {
        // Request i is due when Λ reaches i, so Λ at each due time gives back its index (to
        // the nanosecond the due times are rounded to).
        let schedules = [
            Schedule::new(Arrival::Constant, rate(450.0), End::After(ms(2_000))).unwrap(),
            Schedule::new(
                Arrival::Ramp { to: rate(300.0) },
                rate(100.0),
                End::After(Duration::from_secs(10)),
            )
            .unwrap(),
            Schedule::new(
                Arrival::Ramp { to: rate(50.0) },
                rate(400.0),
                End::After(Duration::from_secs(4)),
            )
            .unwrap(),
        ];
        for s in schedules {
            let mut count = 0u64;
            for due in s.iter() {
                let lambda = s.expected_by(due.at);
                assert!(
                    (lambda - due.index as f64).abs() < 1e-3,
                    "{:?}: request {} at {:?} has Λ = {lambda}",
                    s.arrival,
                    due.index,
                    due.at
                );
                count += 1;
            }
            // All requests are due strictly before the end, so Λ(end) is within one of them.
            let End::After(end) = s.end else {
                unreachable!()
            };
            let at_end = s.expected_by(end);
            assert!(
                (at_end - count as f64).abs() <= 1.0,
                "{:?}: Λ(end) = {at_end}, issued {count}",
                s.arrival
            );
        }
        let ramp = Schedule::new(
            Arrival::Ramp { to: rate(300.0) },
            rate(100.0),
            End::After(Duration::from_secs(10)),
        )
        .unwrap();
        assert_eq!(ramp.expected_by(ms(5_000)), 750.0, "Λ(5) = 500 + 250");
        assert_eq!(ramp.expected_by(Duration::ZERO), 0.0);
        // Ramp down 400 → 50 over 4 s reaches zero at 4·400/350 s; past that Λ stays put.
        let down = Schedule::new(
            Arrival::Ramp { to: rate(50.0) },
            rate(400.0),
            End::After(Duration::from_secs(4)),
        )
        .unwrap();
        let stop = 400.0 * 4.0 / 350.0;
        let peak = 400.0 * stop / 2.0;
        assert!((down.expected_by(Duration::from_secs(60)) - peak).abs() < 1e-9);
    }

    #[test]
    fn expected_by_counts_poisson_arrivals_on_average() {
        let s = Schedule::new(
            Arrival::Poisson { seed: 3 },
            rate(1000.0),
            End::After(Duration::from_secs(20)),
        )
        .unwrap();
        assert_eq!(s.expected_by(Duration::from_secs(20)), 20_000.0);
        // The count is Poisson(20,000): within ±5 sd (±710).
        let n = s.iter().count() as f64;
        assert!((n - s.expected_by(Duration::from_secs(20))).abs() < 710.0);
        // Rescaled, the gaps of each sender's share have mean 1.
        let workers = 4;
        let times: Vec<f64> = s
            .slice(1, workers)
            .map(|d| s.expected_by(d.at) / workers as f64)
            .collect();
        let mean_gap = (times[times.len() - 1] - times[0]) / (times.len() - 1) as f64;
        assert!(
            (mean_gap - 1.0).abs() < 0.05,
            "rescaled mean gap {mean_gap}"
        );
    }

    #[test]
    fn ramp_requires_a_duration() {
        assert_eq!(
            Schedule::new(Arrival::Ramp { to: rate(5.0) }, rate(1.0), End::Count(3)),
            Err(ScheduleError::RampNeedsDuration)
        );
    }

    #[test]
    fn poisson_is_seeded_and_has_the_right_rate() {
        let s = Schedule::new(
            Arrival::Poisson { seed: 7 },
            rate(1000.0),
            End::After(Duration::from_secs(20)),
        )
        .unwrap();
        let a: Vec<_> = s.iter().take(50).collect();
        let b: Vec<_> = s.iter().take(50).collect();
        assert_eq!(a, b, "same seed, same arrivals");
        let other = Schedule {
            arrival: Arrival::Poisson { seed: 8 },
            ..s.clone()
        };
        assert_ne!(
            a,
            other.iter().take(50).collect::<Vec<_>>(),
            "another seed, other arrivals"
        );
        // 20,000 expected; a Poisson count has sd √20000 ≈ 141, so ±5 sd is ±710.
        let n = s.iter().count() as i64;
        assert!((n - 20_000).abs() < 710, "count {n}");
        // Gaps are exponential: their coefficient of variation is 1 (a constant schedule's is 0).
        let times: Vec<f64> = s.iter().map(|d| d.at.as_secs_f64()).collect();
        let gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        let cv = var.sqrt() / mean;
        assert!((cv - 1.0).abs() < 0.05, "coefficient of variation {cv}");
    }

    #[test]
    fn poisson_slices_sum_to_the_rate_and_the_count() {
        let s = Schedule::new(Arrival::Poisson { seed: 1 }, rate(900.0), End::Count(1000)).unwrap();
        let counts: Vec<usize> = (0..3).map(|w| s.slice(w, 3).count()).collect();
        assert_eq!(counts, vec![334, 333, 333]);
        let s = Schedule {
            end: End::After(Duration::from_secs(10)),
            ..s
        };
        let total: usize = (0..3).map(|w| s.slice(w, 3).count()).sum();
        assert!(
            (total as i64 - 9000).abs() < 480,
            "three slices at 300/s give ≈9000, got {total}"
        );
    }

    fn staged(arrival: Arrival, text: &str) -> Schedule {
        Schedule::staged(arrival, Stages::parse(text).unwrap()).unwrap()
    }

    #[test]
    fn staged_constant_falls_where_lambda_reaches_each_index() {
        // Λ: 0→100 over 2 s holds 100, a 1 s pause holds 0, a 1 s hold at 50 holds 50.
        let s = staged(Arrival::Constant, "2s@0..100,1s@0,1s@50");
        assert_eq!(s.end, End::After(Duration::from_secs(4)));
        assert_eq!(s.rate.get(), 150.0 / 4.0, "the rate recorded is the mean");
        assert_eq!(s.peak_rate(), 100.0);
        let all: Vec<Due> = s.iter().collect();
        // Indices 0..=99 on the ramp (Λ(t) = 25t², so i is due at √(i/25)); index 100 lands on
        // the ramp's end, the pause's start; then 50/s from 3 s: 101..149 before the end.
        assert_eq!(all.len(), 150);
        for (i, due) in all.iter().enumerate().take(101) {
            let want = (i as f64 / 25.0).sqrt();
            assert!((due.at.as_secs_f64() - want).abs() < 1e-6, "request {i}");
        }
        assert!(
            all.iter()
                .all(|d| !(2.0 + 1e-9..3.0).contains(&d.at.as_secs_f64())),
            "the pause is empty"
        );
        assert!((all[101].at.as_secs_f64() - 3.02).abs() < 1e-9);
        assert_eq!(s.planned_count(), Some(150));
        assert_eq!(s.rate_at(Duration::from_secs(1)), 50.0);
    }

    #[test]
    fn staged_slices_partition_the_schedule() {
        let s = staged(Arrival::Constant, "1s@10..500,2s@500,1s@500..0");
        let mut merged: Vec<Due> = (0..3).flat_map(|w| s.slice(w, 3)).collect();
        merged.sort_by_key(|d| d.index);
        assert_eq!(merged, s.iter().collect::<Vec<_>>());
        assert_eq!(
            merged.len() as f64,
            s.expected_by(Duration::from_secs(4)).ceil()
        );
    }

    #[test]
    fn staged_poisson_follows_the_stages() {
        // 20 s at 200/s, 20 s at 2,000/s: 4,000 then 40,000 expected.
        let s = staged(Arrival::Poisson { seed: 11 }, "20s@200,20s@2000");
        let per_stage = |w: usize, n: usize| {
            s.slice(w, n).fold([0i64; 2], |mut c, d| {
                c[usize::from(d.at >= Duration::from_secs(20))] += 1;
                c
            })
        };
        for workers in [1usize, 3] {
            let mut counts = [0i64; 2];
            for w in 0..workers {
                let c = per_stage(w, workers);
                counts[0] += c[0];
                counts[1] += c[1];
            }
            // Poisson counts: ±5 sd.
            assert!(
                (counts[0] - 4_000).abs() < 5 * 64,
                "{workers} senders, stage 1: {counts:?}"
            );
            assert!(
                (counts[1] - 40_000).abs() < 5 * 200,
                "{workers} senders, stage 2: {counts:?}"
            );
        }
        // Rescaled by Λ, one sender's gaps are exponential with mean `workers`: mean 1 and
        // coefficient of variation 1 after dividing by it, in both stages alike.
        let workers = 2;
        let units: Vec<f64> = s
            .slice(1, workers)
            .map(|d| s.expected_by(d.at) / workers as f64)
            .collect();
        let gaps: Vec<f64> = units.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
        assert!((mean - 1.0).abs() < 0.03, "rescaled mean gap {mean}");
        assert!(
            (sd / mean - 1.0).abs() < 0.05,
            "rescaled coefficient of variation {}",
            sd / mean
        );
        let again: Vec<Due> = s.slice(1, workers).take(100).collect();
        assert_eq!(
            again,
            s.slice(1, workers).take(100).collect::<Vec<_>>(),
            "seeded"
        );
    }

    /// The conformance test the engine runs on real sends, run on the schedule itself: Poisson
    /// along stages passes as Poisson through Λ; evenly spaced arrivals along them do not.
    #[test]
    fn staged_poisson_passes_the_conformance_test_through_lambda() {
        use crate::conformance::{poisson_fit, GapRecord};
        let fit = |arrival: Arrival| {
            let s = staged(arrival, "5s@0..3000,5s@3000,5s@3000..100,5s@0,5s@100..2000");
            let workers = 2;
            let mut rec = GapRecord::new();
            let mut last = None;
            for due in s.slice(1, workers) {
                let u = s.expected_by(due.at) / workers as f64;
                if let Some(prev) = last {
                    rec.record(u - prev);
                }
                last = Some(u);
            }
            poisson_fit(&rec).unwrap()
        };
        let poisson = fit(Arrival::Poisson { seed: 5 });
        assert!(poisson.conforms && poisson.d < 0.01, "{poisson:?}");
        let even = fit(Arrival::Constant);
        assert!(!even.conforms, "evenly spaced is not Poisson: {even:?}");
    }

    #[test]
    fn staged_rejects_a_ramp() {
        let stages = Stages::parse("1s@5").unwrap();
        assert_eq!(
            Schedule::staged(Arrival::Ramp { to: rate(5.0) }, stages),
            Err(ScheduleError::RampWithStages)
        );
    }
}
