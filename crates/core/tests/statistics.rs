//! Monte-Carlo checks of the statistics: do the intervals cover as often as they claim, do the
//! tests reject as often as they should? Every check uses fixed seeds, so a run is
//! reproducible, and repetition counts large enough that a wrong formula shows.
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rand::SeedableRng;
use rand_distr::{Binomial, Distribution, Exp, Exp1, LogNormal};
use rand_pcg::Pcg64Mcg;
use sojourn_core::confidence::{
    percentile_interval, quantile_difference, quantile_ranks, RankInterval, LEVEL,
};
use sojourn_core::conformance::{poisson_fit, GapRecord};
use sojourn_core::record::new_histogram;
use sojourn_core::schedule::{Arrival, End, Schedule};
use sojourn_core::units::Rate;

/// Repetitions per coverage estimate. At 95% coverage the estimate's standard error is
/// √(0.95·0.05/1000) ≈ 0.007.
const REPETITIONS: usize = 1000;

const SIZES: [u64; 4] = [30, 200, 1000, 13_500];
const QUANTILES: [f64; 3] = [0.5, 0.9, 0.99];

/// Φ⁻¹(q) for the quantiles above, for the lognormal's true quantiles.
fn normal_quantile(q: f64) -> f64 {
    match q {
        0.5 => 0.0,
        0.9 => 1.281_551_565_544_600_4,
        0.99 => 2.326_347_874_040_840_8,
        _ => unreachable!("only the tested quantiles"),
    }
}

/// A latency distribution with a known quantile function, in nanoseconds.
#[derive(Clone, Copy, Debug)]
enum Law {
    /// Exponential, mean 1 ms.
    Exponential,
    /// Lognormal, median 1 ms, σ = 1 (a long right tail).
    Lognormal,
}

impl Law {
    fn sampler(self) -> Box<dyn Fn(&mut Pcg64Mcg) -> f64> {
        match self {
            Law::Exponential => {
                let d = Exp::new(1e-6).unwrap();
                Box::new(move |rng| d.sample(rng))
            }
            Law::Lognormal => {
                let d = LogNormal::new(1e6f64.ln(), 1.0).unwrap();
                Box::new(move |rng| d.sample(rng))
            }
        }
    }

    fn quantile(self, q: f64) -> f64 {
        match self {
            Law::Exponential => -1e6 * (1.0 - q).ln(),
            Law::Lognormal => (1e6f64.ln() + normal_quantile(q)).exp(),
        }
    }
}

/// How often the intervals covered the true quantile, for one (n, q).
struct Tally {
    n: u64,
    q: f64,
    ranks: RankInterval,
    by_rank: usize,
    by_histogram: usize,
}

/// Draws `REPETITIONS` samples of each size from `law` and counts how often
/// [x_(lo), x_(hi)] (ranks from `quantile_ranks`) and the `percentile_interval` of the sample's
/// HdrHistogram contain the true quantile.
fn coverage(law: Law, seed: u64) -> Vec<Tally> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let draw = law.sampler();
    let mut out = Vec::new();
    let none = new_histogram();
    for n in SIZES {
        // Skip quantiles with less than one sample expected beyond them.
        let quantiles: Vec<f64> = QUANTILES
            .into_iter()
            .filter(|q| n as f64 * (1.0 - q) >= 1.0)
            .collect();
        let mut tallies: Vec<Tally> = quantiles
            .iter()
            .map(|&q| Tally {
                n,
                q,
                ranks: quantile_ranks(n, q, LEVEL).unwrap(),
                by_rank: 0,
                by_histogram: 0,
            })
            .collect();
        let mut sample = vec![0.0f64; n as usize];
        for _ in 0..REPETITIONS {
            let mut h = new_histogram();
            for x in sample.iter_mut() {
                *x = draw(&mut rng);
                h.record(*x as u64).unwrap();
            }
            for t in tallies.iter_mut() {
                let truth = law.quantile(t.q);
                // x_(lo) ≤ ξ exactly when at least lo values are ≤ ξ, and x_(hi) ≥ ξ exactly
                // when fewer than hi are < ξ: counting is the same as sorting, in O(n).
                let at_or_below = sample.iter().filter(|&&x| x <= truth).count() as u64;
                let below = sample.iter().filter(|&&x| x < truth).count() as u64;
                if at_or_below >= t.ranks.lo && below < t.ranks.hi {
                    t.by_rank += 1;
                }
                // The histogram holds whole nanoseconds and the interval's ends are widened to
                // their buckets, so it must contain ⌊ξ⌋ whenever the exact interval holds ξ.
                let ci = percentile_interval(&h, &none, t.q * 100.0, LEVEL).unwrap();
                let truth = truth.floor() as u64;
                if ci.lo <= truth && (ci.hi_open || truth <= ci.hi) {
                    t.by_histogram += 1;
                }
            }
        }
        out.extend(tallies);
    }
    out
}

fn check_coverage(law: Law, seed: u64) {
    let reps = REPETITIONS as f64;
    for t in coverage(law, seed) {
        let (by_rank, by_histogram) = (t.by_rank as f64 / reps, t.by_histogram as f64 / reps);
        eprintln!(
            "{law:?} n={:>6} q={:<4} ranks [{}, {}] claims {:.4}; covered {by_rank:.3} by rank, \
             {by_histogram:.3} by histogram",
            t.n, t.q, t.ranks.lo, t.ranks.hi, t.ranks.coverage
        );
        let what = format!("{law:?} n={} q={}", t.n, t.q);
        let claimed = t.ranks.coverage;
        let se = (claimed * (1.0 - claimed) / reps).sqrt();
        // Ranks are whole numbers, so with few samples beyond a percentile the coverage jumps:
        // p99 of 200 can have 98.4% (5 beyond x_(195)) or 94.7% (x_(196)), nothing between.
        // Where the claim itself is that high, allow chance above 98.5% too.
        let ceiling = 0.985f64.max(claimed + 4.0 * se);
        for (how, got) in [("rank", by_rank), ("histogram", by_histogram)] {
            assert!(
                (0.93..=ceiling).contains(&got),
                "{what}: coverage by {how} {got}"
            );
        }
        // Sharper: the simulated coverage agrees with the one claimed, to 4 standard errors.
        assert!(
            (by_rank - claimed).abs() <= 4.0 * se,
            "{what}: claimed {claimed:.4}, simulated {by_rank:.4}"
        );
        assert!(by_histogram >= by_rank, "{what}: widened ends cover more");
    }
}

#[test]
fn percentile_intervals_cover_exponential_latencies() {
    check_coverage(Law::Exponential, 1);
}

#[test]
fn percentile_intervals_cover_lognormal_latencies() {
    check_coverage(Law::Lognormal, 2);
}

#[test]
fn rank_intervals_cover_in_large_runs() {
    // For a continuous distribution, [x_(lo), x_(hi)] holds the true q-quantile exactly when
    // the count B of samples below it has lo ≤ B < hi, and B ~ Binomial(n, q). The tests
    // above check that with real samples; here B is drawn directly, so runs of millions
    // (where the normal approximation takes over) cost nothing.
    let mut rng = Pcg64Mcg::seed_from_u64(3);
    let reps = 4000;
    for n in [13_500u64, 50_000, 1_000_000, 20_000_000] {
        for q in [0.5, 0.9, 0.99, 0.999, 0.9999] {
            if n as f64 * (1.0 - q) < 1.0 {
                continue;
            }
            let r = quantile_ranks(n, q, LEVEL).unwrap();
            let count = Binomial::new(n, q).unwrap();
            let covered = (0..reps)
                .filter(|_| {
                    let b = count.sample(&mut rng);
                    r.lo <= b && b < r.hi
                })
                .count() as f64
                / reps as f64;
            eprintln!(
                "n={n:>8} q={q:<6} ranks [{}, {}] claims {:.4}; covered {covered:.4}",
                r.lo, r.hi, r.coverage
            );
            assert!((0.93..=0.985).contains(&covered), "n={n} q={q}: {covered}");
            let se = (r.coverage * (1.0 - r.coverage) / reps as f64).sqrt();
            assert!(
                (covered - r.coverage).abs() <= 4.0 * se,
                "n={n} q={q}: claimed {}, covered {covered}",
                r.coverage
            );
        }
    }
}

fn exponential_histogram(n: usize, mean_ns: f64, rng: &mut Pcg64Mcg) -> Histogram<u64> {
    let d = Exp::new(1.0 / mean_ns).unwrap();
    let mut h = new_histogram();
    for _ in 0..n {
        h.record(d.sample(rng) as u64).unwrap();
    }
    h
}

#[test]
fn same_distribution_differs_by_chance_about_five_percent_of_the_time() {
    // Two runs of the same system: the 95% interval of their p99 difference should exclude
    // zero in about 5% of trials. Too often would cry wolf; never would mean an interval too
    // wide to detect anything.
    let trials = 200;
    let mut rng = Pcg64Mcg::seed_from_u64(4);
    let mut significant = 0;
    for seed in 0..trials {
        let a = exponential_histogram(10_000, 1e6, &mut rng);
        let b = exponential_histogram(10_000, 1e6, &mut rng);
        let d = quantile_difference(&a, &b, 99.0, LEVEL, 1_000, seed).unwrap();
        significant += usize::from(d.significant);
    }
    let rate = significant as f64 / trials as f64;
    eprintln!("same distribution: significant in {significant} of {trials} ({rate:.3})");
    assert!((0.01..=0.10).contains(&rate), "false alarm rate {rate}");
}

#[test]
fn a_ten_percent_slower_tail_is_detected() {
    // B is A's distribution stretched by 10%: p99 of Exp(1 ms) is 4.6 ms, so B's is 0.46 ms
    // higher. With 100,000 samples each, the sample p99s have a spread of about 1%.
    let mut rng = Pcg64Mcg::seed_from_u64(5);
    let shift = 0.1 * 1e6 * 100f64.ln();
    for seed in 0..5 {
        let a = exponential_histogram(100_000, 1e6, &mut rng);
        let b = exponential_histogram(100_000, 1.1e6, &mut rng);
        let d = quantile_difference(&a, &b, 99.0, LEVEL, 2_000, seed).unwrap();
        eprintln!("10% shift: {d:?}");
        assert!(d.significant && d.lo > 0, "seed {seed}: {d:?}");
        assert!(
            (d.delta as f64 / shift - 1.0).abs() < 0.4,
            "seed {seed}: delta {} vs {shift}",
            d.delta
        );
        assert!(d.lo < d.delta && d.delta < d.hi, "seed {seed}: {d:?}");
    }
}

#[test]
fn bootstrap_of_million_sample_runs_finds_a_two_percent_shift() {
    // Two histograms of a million samples each, built by counts at the exponential's
    // quantiles (recording a million values one by one would dominate the test).
    let build = |mean: f64| {
        let mut h = new_histogram();
        // Fine enough that values near p99.9 lie ~10 µs apart, well inside the interval.
        for i in 0..100_000 {
            let u = (i as f64 + 0.5) / 100_000.0;
            h.record_n((-mean * (-u).ln_1p()) as u64, 10).unwrap();
        }
        h
    };
    let (a, b) = (build(1e6), build(1.02e6));
    assert_eq!(a.len(), 1_000_000);
    let start = Instant::now();
    let d = quantile_difference(&a, &b, 99.9, LEVEL, 2_000, 1).unwrap();
    // How long it took is printed, not asserted (docs/benchmarks.md has release figures).
    eprintln!(
        "2,000 draws on 2 × 1M samples: {:?}: {d:?}",
        start.elapsed()
    );
    // p99.9 of an exponential is mean · ln 1000: B's is 2% of that later.
    let shift = 0.02 * 1e6 * 1000f64.ln();
    assert!(d.significant && d.lo > 0, "{d:?}");
    assert!(
        (d.delta as f64 / shift - 1.0).abs() < 0.1,
        "delta {} vs {shift}",
        d.delta
    );
    assert!(
        (d.lo as f64) < shift && shift < d.hi as f64,
        "the interval holds the true shift: {d:?}"
    );
    // And about as wide as order statistics say it should be: a quantile's standard error is
    // √(p(1 − p)/n) / f(x_p), with f(x_p) = (1 − p)/mean for the exponential; the difference
    // of two independent runs has √2 times that, and a 95% interval spans ±1.96 of it.
    let se = (0.999f64 * 0.001 / 1e6).sqrt() / (0.001 / 1e6);
    let width = 2.0 * 1.96 * 2f64.sqrt() * se;
    let got = (d.hi - d.lo) as f64;
    assert!(
        (0.5 * width..1.5 * width).contains(&got),
        "width {got} ns against {width:.0} ns from theory: {d:?}"
    );
}

/// Rescaled gaps of one sender's actual send times `sends` (seconds) under `schedule` shared
/// by `workers` senders.
fn rescaled(schedule: &Schedule, workers: usize, sends: &[f64]) -> GapRecord {
    let mut rec = GapRecord::new();
    let lambda = |t: f64| schedule.expected_by(Duration::from_secs_f64(t)) / workers as f64;
    for pair in sends.windows(2) {
        rec.record(lambda(pair[1]) - lambda(pair[0]));
    }
    rec
}

fn poisson_schedule(seed: u64) -> Schedule {
    Schedule::new(
        Arrival::Poisson { seed },
        Rate::per_second(4_000.0).unwrap(),
        End::After(Duration::from_secs(5)),
    )
    .unwrap()
}

#[test]
fn poisson_senders_conform_and_the_p_value_is_calibrated() {
    // 200 runs of a Poisson schedule split over 4 senders, each sender sending with up to
    // 20 µs of timer jitter (a twentieth of its 1 ms mean gap), tested through Λ.
    let mut rng = Pcg64Mcg::seed_from_u64(6);
    let jitter = rand_distr::Uniform::new(0.0, 20e-6).unwrap();
    let (runs, workers) = (200u64, 4);
    let (mut deviates, mut below_5_percent) = (0, 0);
    for seed in 0..runs {
        let s = poisson_schedule(seed);
        let sends: Vec<f64> = s
            .slice(seed as usize % workers, workers)
            .map(|d| d.at.as_secs_f64() + jitter.sample(&mut rng))
            .collect();
        let fit = poisson_fit(&rescaled(&s, workers, &sends)).unwrap();
        deviates += usize::from(!fit.conforms);
        below_5_percent += usize::from(fit.p_value < 0.05);
    }
    let alarm = below_5_percent as f64 / runs as f64;
    eprintln!("Poisson senders: {deviates} of {runs} deviate; p < 0.05 in {alarm:.3}");
    assert!(deviates <= 1, "{deviates} false rejections");
    // The p-value is uniform for Poisson sends: about 5% of runs fall below 0.05.
    assert!((0.01..=0.10).contains(&alarm), "{alarm}");
}

#[test]
fn a_timer_that_batches_sends_is_caught() {
    // The same Poisson schedule through a timer that wakes every 5 ms and sends everything
    // due: the mean rate is exact, but sends come in clumps of about 5 per sender.
    let (s, workers) = (poisson_schedule(1), 4);
    let tick = 5e-3;
    let sends: Vec<f64> = s
        .slice(0, workers)
        .map(|d| (d.at.as_secs_f64() / tick).ceil() * tick)
        .collect();
    let rec = rescaled(&s, workers, &sends);
    let fit = poisson_fit(&rec).unwrap();
    eprintln!("batching timer: {fit:?}");
    assert!(!fit.conforms, "{fit:?}");
    assert!(rec.gap_quantile(0.5) < 0.01, "most gaps are zero");
}

#[test]
fn bursty_and_constant_senders_are_rejected() {
    let mut rng = Pcg64Mcg::seed_from_u64(7);
    let mut rejected = [0usize; 3];
    let trials = 50;
    for _ in 0..trials {
        // Hyperexponential with mean 1: 90% of gaps Exp(mean 0.5), 10% Exp(mean 5.5).
        let mut hyper = GapRecord::new();
        // Bursts of 10 back-to-back at random (Poisson) burst times: the same mean rate.
        let mut bursts = GapRecord::new();
        // Evenly spaced sends with a little jitter, tested as Poisson.
        let mut constant = GapRecord::new();
        for i in 0..2_000 {
            let e: f64 = Exp1.sample(&mut rng);
            let mean = if i % 10 == 0 { 5.5 } else { 0.5 };
            hyper.record(e * mean);
            bursts.record(if i % 10 == 9 { 10.0 * e } else { 0.0 });
            constant.record(1.0 + 0.01 * (e - 1.0));
        }
        for (k, rec) in [hyper, bursts, constant].iter().enumerate() {
            rejected[k] += usize::from(!poisson_fit(rec).unwrap().conforms);
        }
    }
    eprintln!("rejected of {trials}: hyperexponential, bursts, constant = {rejected:?}");
    assert_eq!(rejected, [trials; 3]);
}
