//! The validity verdict: can the run's own samples support the statistics it prints?
//!
//! After Lancet (Kogias et al., USENIX ATC '19), a measurement is accepted only when four tests
//! pass: the achieved rate is the one asked for, the sends followed the arrival law, the latency
//! samples are independent (or become so when thinned), and the latencies are stationary. The
//! run keeps no per-request series, so the last two read the finest series it does keep: the
//! per-interval percentiles of the timeline. The statistics live in [`crate::conformance`] and
//! [`crate::serial`]; this module runs them on a result document and says what each means.
use serde::{Deserialize, Serialize};

use crate::conformance::{anderson_darling, GapRecord};
use crate::result::{IntervalSummary, Mode, RunResult};
use crate::serial::{
    kpss, largest_shift, spearman_lag, thinning_lag, KPSS_CRITICAL, MIN_KPSS_POINTS, MIN_PAIRS,
};

/// Every test of the verdict is taken at 1%: five tests at 1% leave a valid run about a 5%
/// chance of being called not valid, where 5% each would leave about 23%.
pub const ALPHA: f64 = 0.01;

/// The achieved rate may be this share away from the target (Lancet's 10%).
pub const RATE_TOLERANCE: f64 = 0.1;

/// A² per gap above which a significant deviation from Poisson is large enough to matter: the
/// A²/n of a sender whose every gap is 5% too long, the size the KS check's 2-point tolerance
/// also stands for. With millions of gaps, a timer's microsecond ticks are significant and
/// harmless (A²/n ≈ 5·10⁻⁵ at 1% of a gap); this keeps the test on deviations the server feels.
pub const AD_TOLERANCE_PER_GAP: f64 = 0.001;

/// A significant drift counts only when the level moved by at least this share of its mean
/// (the share [`crate::steady`] asks of a warm-up): a busy machine moves a 10 ms median by a
/// few per cent over a minute, which forty intervals show plainly and no reader minds.
pub const DRIFT_TOLERANCE: f64 = 0.1;

/// The verdict on one run: every test, and whether none failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    /// No test failed (a test that does not apply neither passes nor fails).
    pub valid: bool,
    pub tests: Vec<ValidityTest>,
}

/// One test of the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidityTest {
    pub name: TestName,
    /// The test and the series it read, in words: `Anderson–Darling of the rescaled gaps`.
    pub method: String,
    pub outcome: TestOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistic: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// The statistic's limit at [`ALPHA`] (or the tolerance, for the rate and send lag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical_value: Option<f64>,
    /// The size of the deviation, where a failure needs one besides significance: A² per gap
    /// for the arrival law, the largest shift of the level as a share of its mean for
    /// stationarity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<f64>,
    /// Independence: the first lag (1, 2, 4, …) at which neighbours look independent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinning_lag: Option<u64>,
    /// What a failure means, or why the test does not apply.
    pub note: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestName {
    Rate,
    ArrivalLaw,
    Independence,
    StationarityP50,
    StationarityP99,
}

impl TestName {
    pub fn label(self) -> &'static str {
        match self {
            TestName::Rate => "rate",
            TestName::ArrivalLaw => "arrival law",
            TestName::Independence => "independence",
            TestName::StationarityP50 => "stationary p50",
            TestName::StationarityP99 => "stationary p99",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestOutcome {
    Pass,
    Fail,
    NotApplicable,
}

impl ValidityTest {
    fn new(name: TestName, method: &str, outcome: TestOutcome, note: String) -> ValidityTest {
        ValidityTest {
            name,
            method: method.into(),
            outcome,
            statistic: None,
            p_value: None,
            critical_value: None,
            effect: None,
            thinning_lag: None,
            note,
        }
    }

    fn not_applicable(name: TestName, method: &str, why: &str) -> ValidityTest {
        ValidityTest::new(name, method, TestOutcome::NotApplicable, why.into())
    }

    fn judged(name: TestName, method: &str, pass: bool, failure: &str) -> ValidityTest {
        let (outcome, note) = match pass {
            true => (TestOutcome::Pass, String::new()),
            false => (TestOutcome::Fail, failure.to_string()),
        };
        ValidityTest::new(name, method, outcome, note)
    }
}

/// The verdict on `result`, from its rate, its sends' gap record and its timeline.
pub fn validity_of(result: &RunResult) -> Validity {
    let series = settled_series(result);
    let tests = vec![
        rate_test(result),
        arrival_test(result),
        independence_test(&series.p50),
        stationarity_test(TestName::StationarityP50, "p50", &series.p50),
        stationarity_test(TestName::StationarityP99, "p99", &series.p99),
    ];
    Validity {
        valid: tests.iter().all(|t| t.outcome != TestOutcome::Fail),
        tests,
    }
}

fn rate_test(r: &RunResult) -> ValidityTest {
    const METHOD: &str = "achieved ÷ target − 1";
    if r.mode == Mode::Closed {
        return ValidityTest::not_applicable(TestName::Rate, METHOD, "closed loop: no target rate");
    }
    let Some(target) = target_rate(r) else {
        return ValidityTest::not_applicable(TestName::Rate, METHOD, "no target rate");
    };
    let deviation = r.rate.achieved / target - 1.0;
    let mut t = ValidityTest::judged(
        TestName::Rate,
        METHOD,
        deviation.abs() <= RATE_TOLERANCE,
        "the load offered was not the load asked for: the percentiles describe another rate",
    );
    t.statistic = Some(deviation);
    t.critical_value = Some(RATE_TOLERANCE);
    t
}

/// The schedule's mean rate: what it scheduled over its duration (a ramp's or a shaped run's
/// mean too), or the configured rate when the run was bounded by a count.
fn target_rate(r: &RunResult) -> Option<f64> {
    let scheduled = scheduled(r);
    match r.config.duration_ns {
        Some(d) if d > 0 && scheduled > 0 && r.config.rate.is_some() => {
            Some(scheduled as f64 / (d as f64 / 1e9))
        }
        _ => r.rate.target.filter(|t| *t > 0.0),
    }
}

/// What the schedule scheduled: requests, or in a journey run journeys, which its rates count
/// (its `counts` count steps, several per journey).
fn scheduled(r: &RunResult) -> u64 {
    match r.config.journeys {
        Some(_) => r.journeys.iter().map(|j| j.counts.total()).sum(),
        None => r.counts.scheduled,
    }
}

fn arrival_test(r: &RunResult) -> ValidityTest {
    const NAME: TestName = TestName::ArrivalLaw;
    if r.mode != Mode::Open {
        return ValidityTest::not_applicable(NAME, "-", "no open-loop schedule to fit");
    }
    let Some(c) = &r.statistics.conformance else {
        let why = "no send gaps to fit (a simulation records none; a run needs 50)";
        return ValidityTest::not_applicable(NAME, "-", why);
    };
    if c.process != "poisson" {
        return send_lag_test(c);
    }
    const METHOD: &str = "Anderson–Darling, rescaled gaps vs Exp(1)";
    let fit = c
        .record
        .as_ref()
        .and_then(|doc| GapRecord::from_doc(doc).ok())
        .and_then(|rec| anderson_darling(&rec));
    let Some(fit) = fit else {
        return ValidityTest::not_applicable(NAME, METHOD, "too few sends to fit (under 50 gaps)");
    };
    let large = fit.a2 / fit.n as f64 > AD_TOLERANCE_PER_GAP;
    let mut t = ValidityTest::judged(
        NAME,
        METHOD,
        !(fit.p_value < ALPHA && large),
        "the sends were not Poisson: the server saw another arrival process",
    );
    if fit.p_value < ALPHA && !large {
        t.note = "a deviation the test sees, too small to change the load (A² per gap under 0.001)"
            .into();
    }
    t.statistic = Some(fit.a2);
    t.effect = Some(fit.a2 / fit.n as f64);
    t.p_value = Some(fit.p_value);
    t.critical_value = Some(crate::conformance::AD_CRITICAL[2].1);
    t
}

/// A constant schedule has no law to fit: its check stays the send lag's p99 against one slot.
fn send_lag_test(c: &crate::evidence::Conformance) -> ValidityTest {
    let lag = c.send_lag_p99_ns.unwrap_or(0) as f64;
    let mut t = ValidityTest::judged(
        TestName::ArrivalLaw,
        "send lag p99 (ns) vs one slot, constant schedule",
        c.conforms,
        "requests left more than a slot late: the server did not see the intended spacing",
    );
    t.statistic = Some(lag);
    t.critical_value = Some(c.tolerance);
    t
}

fn independence_test(p50: &[f64]) -> ValidityTest {
    const NAME: TestName = TestName::Independence;
    const METHOD: &str = "Spearman lag 1, per-interval p50";
    let Some(lag1) = spearman_lag(p50, 1) else {
        let why = match p50.len() > MIN_PAIRS {
            true => "the per-interval p50 does not vary: nothing to correlate".to_string(),
            false => format!("fewer than {} settled intervals", MIN_PAIRS + 1),
        };
        return ValidityTest::not_applicable(NAME, METHOD, &why);
    };
    let thinned = thinning_lag(p50, ALPHA);
    let mut t = match (lag1.p_value >= ALPHA, thinned) {
        (true, _) => ValidityTest::judged(NAME, METHOD, true, ""),
        (false, Some((k, _))) => {
            let note = format!(
                "neighbouring intervals move together; intervals {k} apart look independent"
            );
            ValidityTest::new(NAME, METHOD, TestOutcome::Pass, note)
        }
        (false, None) => ValidityTest::judged(
            NAME,
            METHOD,
            false,
            "the timeline moves together at every lag: the run holds few independent stretches",
        ),
    };
    t.statistic = Some(lag1.rho);
    t.p_value = Some(lag1.p_value);
    t.thinning_lag = thinned.map(|(k, _)| k as u64);
    t
}

fn stationarity_test(name: TestName, which: &str, series: &[f64]) -> ValidityTest {
    let method = format!("KPSS (level), per-interval {which}");
    let Some(k) = kpss(series) else {
        let why = format!("fewer than {MIN_KPSS_POINTS} settled intervals");
        return ValidityTest::not_applicable(name, &method, &why);
    };
    let critical = KPSS_CRITICAL[2].1;
    let mean = series.iter().sum::<f64>() / series.len() as f64;
    let shift = if mean > 0.0 {
        largest_shift(series) / mean
    } else {
        0.0
    };
    let drifts = k.statistic > critical && shift > DRIFT_TOLERANCE;
    let failure = format!("the {which} drifted during the run: no one figure describes it");
    let mut t = ValidityTest::judged(name, &method, !drifts, &failure);
    if k.statistic > critical && !drifts {
        t.note = format!(
            "a drift the test sees, but of {:.0}% of the level: under {:.0}%",
            100.0 * shift,
            100.0 * DRIFT_TOLERANCE
        );
    }
    t.statistic = Some(k.statistic);
    t.critical_value = Some(critical);
    t.effect = Some(shift);
    t
}

/// The per-interval percentiles the serial tests read: intervals with answers, after any
/// warm-up, and before the schedule's end (an interval after it holds only the drain's
/// stragglers).
struct Series {
    p50: Vec<f64>,
    p99: Vec<f64>,
}

fn settled_series(r: &RunResult) -> Series {
    let from = warmup_end(r);
    let until = r.config.duration_ns.unwrap_or(u64::MAX);
    let kept: Vec<&IntervalSummary> = r
        .intervals
        .iter()
        .filter(|i| i.answered() > 0 && i.start_ns >= from && i.start_ns < until)
        .collect();
    Series {
        p50: kept.iter().map(|i| i.p50 as f64).collect(),
        p99: kept.iter().map(|i| i.p99 as f64).collect(),
    }
}

/// Where the settled part of the run starts: after a trimmed warm-up (the percentiles leave it
/// out, so the tests do too), and after the warm-up MSER found unless the rest still rises. On
/// a series that rises throughout, MSER cuts as much as it may and what it cuts is no warm-up
/// but the first half of the drift, which stationarity must see.
fn warmup_end(r: &RunResult) -> u64 {
    let found = r
        .statistics
        .steady_state
        .filter(|s| !s.rising)
        .map_or(0, |s| s.warmup_ns);
    let trimmed = r.statistics.warmup.map_or(0, |w| w.until_ns);
    found.max(trimmed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{conformance_of, SteadyStateSummary};
    use crate::result::tests::sample_result;
    use rand::SeedableRng;
    use rand_distr::{Distribution, Exp1, StandardNormal};
    use rand_pcg::Pcg64Mcg;
    use std::time::Duration;

    /// A 1-second timeline with these p50s, p99 at 4× each.
    fn with_timeline(mut r: RunResult, p50s: &[f64]) -> RunResult {
        let template = r.intervals[0].clone();
        r.intervals = p50s
            .iter()
            .enumerate()
            .map(|(i, &p50)| IntervalSummary {
                start_ns: i as u64 * 1_000_000_000,
                p50: p50 as u64,
                p99: 4 * p50 as u64,
                ..template.clone()
            })
            .collect();
        r.config.duration_ns = Some(p50s.len() as u64 * 1_000_000_000);
        r.counts.scheduled = 1_000 * p50s.len() as u64;
        r.rate.achieved = 1_000.0;
        r
    }

    fn noise(seed: u64, n: usize, level: f64, spread: f64) -> Vec<f64> {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let e: f64 = StandardNormal.sample(&mut rng);
                level + spread * e
            })
            .collect()
    }

    fn test(v: &Validity, name: TestName) -> &ValidityTest {
        v.tests.iter().find(|t| t.name == name).unwrap()
    }

    #[test]
    fn the_rate_is_judged_against_what_was_scheduled() {
        let mut r = sample_result();
        // 3,001 scheduled over 3 s: a target of 1,000.33/s.
        r.rate.achieved = 905.0;
        let t = rate_test(&r);
        assert_eq!(t.outcome, TestOutcome::Pass, "{t:?}");
        r.rate.achieved = 895.0;
        let t = rate_test(&r);
        assert_eq!(t.outcome, TestOutcome::Fail, "{t:?}");
        assert!((t.statistic.unwrap() + 0.1053).abs() < 1e-3, "{t:?}");
        r.rate.achieved = 1_110.0;
        assert_eq!(
            rate_test(&r).outcome,
            TestOutcome::Fail,
            "too fast fails too"
        );
        r.mode = Mode::Closed;
        assert_eq!(rate_test(&r).outcome, TestOutcome::NotApplicable);
    }

    #[test]
    fn a_journey_runs_rate_is_judged_in_journeys_against_the_journeys_scheduled() {
        let mut r = sample_result();
        // 3,001 journeys due over 3 s, each of 3 steps: the target is 1,000.33 journeys/s.
        r.config.journeys = Some(crate::JourneysConfig {
            file: "shop.toml".into(),
            count: 1,
            steps: 3,
            max_journeys: 1_000,
            seed: 1,
        });
        let mut journey = crate::TargetResult::of("shop", 1.0, &crate::LabelRecord::new());
        journey.counts = crate::LabelCounts {
            completed: 3_000,
            censored: 1,
            ..Default::default()
        };
        r.journeys = vec![journey];
        r.counts.scheduled = 3 * 3_001;
        r.rate.achieved = 1_000.0;
        assert_eq!(
            rate_test(&r).outcome,
            TestOutcome::Pass,
            "{:?}",
            rate_test(&r)
        );
        r.rate.achieved = 895.0;
        assert_eq!(rate_test(&r).outcome, TestOutcome::Fail);
    }

    fn poisson_result(gap: impl Fn(f64) -> f64) -> RunResult {
        let mut rng = Pcg64Mcg::seed_from_u64(21);
        let mut rec = GapRecord::new();
        for _ in 0..5_000 {
            let g: f64 = Exp1.sample(&mut rng);
            rec.record(gap(g));
        }
        let mut r = sample_result();
        r.statistics.conformance = conformance_of("poisson", &rec, Duration::from_millis(1), 0);
        r
    }

    #[test]
    fn the_arrival_law_is_fitted_by_anderson_darling() {
        let good = arrival_test(&poisson_result(|g| g));
        assert_eq!(good.outcome, TestOutcome::Pass, "{good:?}");
        assert!(good.p_value.unwrap() > ALPHA, "{good:?}");
        // A sender that paces at the mean instead of drawing gaps: every gap 1.
        let paced = arrival_test(&poisson_result(|_| 1.0));
        assert_eq!(paced.outcome, TestOutcome::Fail, "{paced:?}");
        assert!(paced.statistic.unwrap() > 100.0, "{paced:?}");
        // A constant schedule keeps its send-lag check: p99 against one slot (1 ms here).
        let mut rec = GapRecord::new();
        (0..100).for_each(|_| rec.record(1.0));
        let mut r = sample_result();
        let lane = Duration::from_millis(1);
        r.statistics.conformance = conformance_of("constant", &rec, lane, 900_000);
        let on_time = arrival_test(&r);
        assert!(on_time.method.starts_with("send lag"), "{on_time:?}");
        assert_eq!(on_time.outcome, TestOutcome::Pass, "{on_time:?}");
        r.statistics.conformance = conformance_of("constant", &rec, lane, 1_100_000);
        assert_eq!(arrival_test(&r).outcome, TestOutcome::Fail);
        let mut closed = sample_result();
        closed.mode = Mode::Closed;
        assert_eq!(arrival_test(&closed).outcome, TestOutcome::NotApplicable);
    }

    #[test]
    fn a_flat_noisy_timeline_is_valid() {
        let r = with_timeline(sample_result(), &noise(3, 40, 1e7, 2e5));
        let v = validity_of(&r);
        assert!(v.valid, "{v:#?}");
        for name in [
            TestName::Independence,
            TestName::StationarityP50,
            TestName::StationarityP99,
        ] {
            assert_eq!(test(&v, name).outcome, TestOutcome::Pass, "{v:#?}");
        }
        assert_eq!(test(&v, TestName::Independence).thinning_lag, Some(1));
    }

    #[test]
    fn a_rising_timeline_is_neither_stationary_nor_independent() {
        // A queue that grows: the median climbs 1% of its level a second, under noise.
        let series: Vec<f64> = noise(4, 40, 1e7, 2e5)
            .iter()
            .enumerate()
            .map(|(i, x)| x + 1e5 * i as f64)
            .collect();
        let v = validity_of(&with_timeline(sample_result(), &series));
        assert!(!v.valid);
        let p99 = test(&v, TestName::StationarityP99);
        assert_eq!(p99.outcome, TestOutcome::Fail, "{p99:?}");
        assert!(p99.statistic.unwrap() > KPSS_CRITICAL[2].1);
        assert_eq!(p99.critical_value, Some(0.739));
        assert_eq!(
            test(&v, TestName::StationarityP50).outcome,
            TestOutcome::Fail
        );
        assert_eq!(test(&v, TestName::Independence).outcome, TestOutcome::Fail);
    }

    #[test]
    fn the_warm_up_is_left_out_of_the_serial_tests() {
        // Sixteen slow seconds, then 40 flat ones: with the warm-up the series shifts (KPSS
        // rejects); MSER's cut, carried in the steady-state summary, removes it.
        let mut series = vec![5e7; 16];
        series.extend(noise(5, 40, 1e7, 2e5));
        let mut r = with_timeline(sample_result(), &series);
        r.statistics.steady_state = None;
        let whole = validity_of(&r);
        assert_eq!(
            test(&whole, TestName::StationarityP50).outcome,
            TestOutcome::Fail
        );
        r.statistics.steady_state = Some(SteadyStateSummary {
            intervals: 56,
            warmup_intervals: 16,
            warmup_ns: 16_000_000_000,
            trend_z: None,
            rise_ns: None,
            rising: false,
            steady: false,
        });
        let settled = validity_of(&r);
        assert_eq!(
            test(&settled, TestName::StationarityP50).outcome,
            TestOutcome::Pass,
            "{settled:#?}"
        );
        // If the rest still rose, MSER's cut was half a drift, not a warm-up: it is not taken.
        if let Some(s) = r.statistics.steady_state.as_mut() {
            s.rising = true;
        }
        let drifting = validity_of(&r);
        assert_eq!(
            test(&drifting, TestName::StationarityP50).outcome,
            TestOutcome::Fail
        );
        // A warm-up the user trimmed stays out whatever the trend says: the percentiles
        // printed leave it out too.
        r.statistics.warmup = Some(crate::evidence::WarmupTrim {
            method: crate::evidence::WarmupMethod::Fixed,
            until_ns: 16_000_000_000,
            requests: 16_000,
        });
        let trimmed = validity_of(&r);
        assert_eq!(
            test(&trimmed, TestName::StationarityP50).outcome,
            TestOutcome::Pass
        );
    }

    #[test]
    fn a_flat_timeline_has_nothing_to_correlate() {
        // A simulation's fixed service time: every interval's median is the same.
        let v = validity_of(&with_timeline(sample_result(), &[1e7; 30]));
        let t = test(&v, TestName::Independence);
        assert_eq!(t.outcome, TestOutcome::NotApplicable, "{t:?}");
        assert!(t.note.contains("does not vary"), "{t:?}");
        let p50 = test(&v, TestName::StationarityP50);
        assert_eq!((p50.outcome, p50.statistic), (TestOutcome::Pass, Some(0.0)));
    }

    #[test]
    fn short_runs_say_what_they_cannot_judge() {
        let v = validity_of(&with_timeline(sample_result(), &[1e7, 1.1e7, 0.9e7]));
        for name in [TestName::Independence, TestName::StationarityP50] {
            let t = test(&v, name);
            assert_eq!(t.outcome, TestOutcome::NotApplicable, "{t:?}");
            assert!(t.note.contains("settled intervals"), "{t:?}");
        }
        assert!(v.valid, "not applicable is not a failure");
    }

    /// A perfect Poisson sender seen through a clock that ticks every `tick` mean gaps.
    fn ticking(tick: f64) -> RunResult {
        let mut rec = GapRecord::new();
        let n = 1_000_000;
        for i in 0..n {
            let g = -(-((i as f64 + 0.5) / n as f64)).ln_1p();
            rec.record((g / tick).round() * tick);
        }
        let mut r = sample_result();
        r.statistics.conformance = conformance_of("poisson", &rec, Duration::from_millis(1), 0);
        r
    }

    #[test]
    fn a_deviation_must_matter_as_well_as_be_significant() {
        // Ticks of 1% of a gap over a million gaps: A² is far past 3.857, but A² per gap is
        // 5·10⁻⁵. Ticks of 10% of a gap change the load: 8.6·10⁻³ per gap.
        let fine = arrival_test(&ticking(0.01));
        assert!(fine.p_value.unwrap() < ALPHA, "{fine:?}");
        assert_eq!(fine.outcome, TestOutcome::Pass, "{fine:?}");
        assert!(fine.note.contains("too small"), "{fine:?}");
        let coarse = arrival_test(&ticking(0.1));
        assert_eq!(coarse.outcome, TestOutcome::Fail, "{coarse:?}");
        assert!(coarse.effect.unwrap() > AD_TOLERANCE_PER_GAP, "{coarse:?}");
        // A median that creeps up 2% over 200 intervals under 0.2% noise: KPSS sees it, and
        // it passes; the same creep of 30% fails.
        let creep = |total: f64| {
            let series: Vec<f64> = noise(6, 200, 1e7, 2e4)
                .iter()
                .enumerate()
                .map(|(i, x)| x + total * 1e7 * i as f64 / 200.0)
                .collect();
            validity_of(&with_timeline(sample_result(), &series))
        };
        let small = creep(0.02);
        let p50 = test(&small, TestName::StationarityP50);
        assert!(p50.statistic.unwrap() > KPSS_CRITICAL[2].1, "{p50:?}");
        assert_eq!(p50.outcome, TestOutcome::Pass, "{p50:?}");
        let large = creep(0.3);
        let p50 = test(&large, TestName::StationarityP50);
        assert_eq!(p50.outcome, TestOutcome::Fail, "{p50:?}");
    }
}
