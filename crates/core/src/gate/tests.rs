use std::time::Duration;

use super::*;
use crate::check::assess_open;
use crate::outcome::{FailureClass, Outcome};
use crate::record::{Recorder, Stamps};
use crate::result::{Mode, RunConfig, RunFacts};

const MS: u64 = 1_000_000;

fn slo(p: f64, limit_ms: u64) -> Slo {
    Slo {
        percentile: p,
        limit: Duration::from_millis(limit_ms),
    }
}

#[test]
fn objective_parsing_table() {
    use Measure::*;
    let good: &[(&str, Option<StageRef>, Measure)] = &[
        ("p99<200ms", None, Percentile(slo(99.0, 200))),
        ("p99.9<1s", None, Percentile(slo(99.9, 1000))),
        (" p99 < 200ms ", None, Percentile(slo(99.0, 200))),
        ("errors<0.1%", None, Errors { below: 0.001 }),
        ("ERRORS<5%", None, Errors { below: 0.05 }),
        ("rate>=99%", None, Rate { at_least: 0.99 }),
        ("rate>=100%", None, Rate { at_least: 1.0 }),
        (
            "3:p99<200ms",
            Some(StageRef::Number(3)),
            Percentile(slo(99.0, 200)),
        ),
        (
            "hold:errors<0.1%",
            Some(StageRef::Name("hold".into())),
            Errors { below: 0.001 },
        ),
        (
            "warm-up:rate>=95%",
            Some(StageRef::Name("warm-up".into())),
            Rate { at_least: 0.95 },
        ),
    ];
    for (text, stage, measure) in good {
        let o: Objective = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(&o.stage, stage, "{text}");
        match (o.measure, measure) {
            (Errors { below: a }, Errors { below: b })
            | (Rate { at_least: a }, Rate { at_least: b }) => {
                assert!((a - b).abs() < 1e-12, "{text}: {a} vs {b}")
            }
            (a, b) => assert_eq!(a, *b, "{text}"),
        }
        assert!(!o.text.contains(' '), "{text}: compact name {:?}", o.text);
    }
    type Kind = fn(&ObjectiveError) -> bool;
    let shape: Kind = |e| matches!(e, ObjectiveError::Shape(_));
    let percentile: Kind = |e| matches!(e, ObjectiveError::Percentile(_));
    let errors: Kind = |e| matches!(e, ObjectiveError::ErrorShare(_));
    let rate: Kind = |e| matches!(e, ObjectiveError::RateShare(_));
    let stage: Kind = |e| matches!(e, ObjectiveError::Stage(_));
    let step: Kind = |e| matches!(e, ObjectiveError::Step(_));
    let bad: &[(&str, Kind)] = &[
        ("", shape),
        ("latency<1s", shape),
        ("99<200ms", shape),
        ("3:", shape),
        ("a:b:p99<1s", shape),
        ("p99", percentile),
        ("p99>200ms", percentile),
        ("p0<1s", percentile),
        ("p99<0ms", percentile),
        ("p99<200", percentile),
        ("errors<0.1", errors),
        ("errors>0.1%", errors),
        ("errors<0%", errors),
        ("errors<101%", errors),
        ("errors<abc%", errors),
        ("rate>99%", rate),
        ("rate>=0%", rate),
        ("rate>=150%", rate),
        ("0:p99<1s", stage),
        (":p99<1s", stage),
        ("step:p99<1s", step),
        ("step::p99<1s", step),
        ("step:login:", shape),
        ("journey:shop:p99", percentile),
    ];
    for (text, kind) in bad {
        let e = text.parse::<Objective>().expect_err(text);
        assert!(kind(&e), "{text}: wrong kind {e:?}");
        let message = e.to_string();
        assert!(
            message.contains("like") || message.contains("e.g."),
            "{text}: no example in {message:?}"
        );
    }
}

#[test]
fn steps_and_journeys_are_named_before_the_measure() {
    let label = |text: &str| {
        let o = text.parse::<Objective>().unwrap();
        assert_eq!(o.stage, None, "{text}");
        (o.label, o.measure)
    };
    let p99 = |ms| Measure::Percentile(slo(99.0, ms));
    let step = |name: &str| Some(LabelRef::Step(name.into()));
    assert_eq!(
        label("step:checkout:p99<300ms"),
        (step("checkout"), p99(300))
    );
    assert_eq!(
        label("step:shop/login:p99<300ms"),
        (step("shop/login"), p99(300))
    );
    // A name runs to the last ':', so it may hold one; a measure never does.
    assert_eq!(label("step:a:b:p99<1s"), (step("a:b"), p99(1000)));
    assert_eq!(
        label("journey:p99<2s"),
        (Some(LabelRef::Journey(None)), p99(2000))
    );
    assert_eq!(
        label("journey::p99<2s"),
        (Some(LabelRef::Journey(None)), p99(2000))
    );
    assert_eq!(
        label("journey:shop:errors<1%").0,
        Some(LabelRef::Journey(Some("shop".into())))
    );
    assert_eq!("p99<1s".parse::<Objective>().unwrap().label, None);
    assert_eq!("hold:p99<1s".parse::<Objective>().unwrap().label, None);
}

#[test]
fn a_sweep_step_takes_whole_run_percentiles_only() {
    let step = |text: &str| text.parse::<Objective>().unwrap().step_slo();
    assert_eq!(step("p99<200ms"), Some(slo(99.0, 200)));
    assert_eq!(step("3:p99<200ms"), None);
    assert_eq!(step("errors<1%"), None);
    assert_eq!(step("rate>=99%"), None);
    assert_eq!(step("step:login:p99<200ms"), None);
    assert_eq!(step("journey:p99<200ms"), None);
}

/// 1 ms, 2 ms, …, 1,000 ms: p50 is 500 ms with a 95% interval of ranks [470, 532].
fn spread() -> Histogram<u64> {
    let mut h = new_histogram();
    for i in 1..=1000u64 {
        h.record(i * MS).unwrap();
    }
    h
}

fn met(significant: bool) -> Verdict {
    Verdict::Met { significant }
}

fn breached(significant: bool) -> Verdict {
    Verdict::Breached { significant }
}

/// Asserts a verdict's kind and significance; for too-few, that the reason says `says`.
fn assert_verdict(got: &Verdict, want: &Verdict, says: &str, why: &str) {
    match (got, want) {
        (Verdict::TooFew { reason }, Verdict::TooFew { .. }) => {
            assert!(reason.contains(says), "{why}: {reason:?} lacks {says:?}")
        }
        _ => assert_eq!(got, want, "{why}"),
    }
}

fn unjudged() -> Verdict {
    too_few("")
}

#[test]
fn percentile_verdicts() {
    let h = spread();
    let none = new_histogram();
    let mut censored_run = new_histogram();
    for i in 1..=990u64 {
        censored_run.record(i * MS).unwrap();
    }
    let mut censored = new_histogram();
    censored.record_n(995 * MS, 10).unwrap();
    censored_run.add(&censored).unwrap();
    type Case<'a> = (
        &'a str,
        Slo,
        &'a Histogram<u64>,
        &'a Histogram<u64>,
        Verdict,
        &'a str,
    );
    let cases: &[Case] = &[
        (
            "interval [470, 532] ms all below 600",
            slo(50.0, 600),
            &h,
            &none,
            met(true),
            "",
        ),
        (
            "500 below 510, interval reaches 532",
            slo(50.0, 510),
            &h,
            &none,
            met(false),
            "",
        ),
        (
            "500 above 480, interval starts at 470",
            slo(50.0, 480),
            &h,
            &none,
            breached(false),
            "",
        ),
        (
            "interval [470, 532] all above 400",
            slo(50.0, 400),
            &h,
            &none,
            breached(true),
            "",
        ),
        (
            "p99.9 of 1,000: one beyond, no upper end",
            slo(99.9, 2000),
            &h,
            &none,
            unjudged(),
            "p99.9 needs about 10000",
        ),
        (
            "p99.9 of 1,000 already above the limit is a breach",
            slo(99.9, 900),
            &h,
            &none,
            breached(true),
            "",
        ),
        (
            "the maximum has no upper end",
            slo(100.0, 2000),
            &h,
            &none,
            unjudged(),
            "p99.9",
        ),
        (
            "ten unanswered could be beyond p99",
            slo(99.0, 2000),
            &censored_run,
            &censored,
            unjudged(),
            "10 of 1000 requests went unanswered",
        ),
        (
            "no requests",
            slo(50.0, 100),
            &none,
            &none,
            unjudged(),
            "no requests",
        ),
    ];
    for (why, slo, h, censored, want, says) in cases {
        let (estimate, verdict) = judge_percentile(*slo, h, censored);
        assert_verdict(&verdict, want, says, why);
        if let Some(e) = estimate {
            assert!(
                e.lo <= e.value && e.hi.is_none_or(|hi| e.value <= hi),
                "{why}: {e:?}"
            );
        }
    }
    let (e, _) = judge_percentile(slo(50.0, 600), &h, &none);
    let e = e.unwrap();
    assert!(h.equivalent(e.value as u64, 500 * MS), "{e:?}");
    assert!(h.equivalent(e.lo as u64, 470 * MS) && h.equivalent(e.hi.unwrap() as u64, 532 * MS));
}

#[test]
fn wilson_matches_the_textbook() {
    // 10 of 100: Wilson's 95% interval is [5.52%, 17.44%] (Newcombe 1998, table I).
    let (lo, hi) = wilson(10, 100).unwrap();
    assert!(
        (lo - 0.0552).abs() < 5e-4 && (hi - 0.1744).abs() < 5e-4,
        "{lo} {hi}"
    );
    let (lo, hi) = wilson(0, 1000).unwrap();
    assert_eq!(lo, 0.0);
    assert!((hi - Z * Z / (1000.0 + Z * Z)).abs() < 1e-12);
    assert_eq!(wilson(0, 0), None);
    // The rule of three's neighbour: 3,838 answers are the fewest that can show < 0.1%.
    assert_eq!(answers_needed(0.001), 3838);
    assert!(wilson(0, 3838).unwrap().1 < 0.001 && wilson(0, 3837).unwrap().1 >= 0.001);
}

#[test]
fn error_rate_verdicts() {
    let cases: &[(&str, f64, u64, u64, Verdict, &str)] = &[
        (
            "none of 100,000: upper end 0.004%",
            0.001,
            0,
            100_000,
            met(true),
            "",
        ),
        ("0.08%, upper end 0.16%", 0.001, 8, 10_000, met(false), ""),
        (
            "0.12%, lower end 0.07%",
            0.001,
            12,
            10_000,
            breached(false),
            "",
        ),
        (
            "0.5%, lower end 0.38%",
            0.001,
            50,
            10_000,
            breached(true),
            "",
        ),
        (
            "1% of 100 is a breach however few",
            0.005,
            1,
            100,
            breached(false),
            "",
        ),
        (
            "none of 1,000 cannot show < 0.1%",
            0.001,
            0,
            1_000,
            unjudged(),
            "at least 3838 answers",
        ),
        (
            "no answers",
            0.01,
            0,
            0,
            unjudged(),
            "no requests were answered",
        ),
    ];
    for (why, below, failed, answered, want, says) in cases {
        let (_, verdict) = judge_errors(*below, *failed, *answered);
        assert_verdict(&verdict, want, says, why);
    }
}

#[test]
fn rate_verdicts() {
    use Arrivals::*;
    let cases: &[(&str, f64, u64, f64, Arrivals, Verdict)] = &[
        (
            "99.5% of a fixed schedule",
            0.99,
            9_950,
            10_000.0,
            Exact,
            met(true),
        ),
        (
            "98% of a fixed schedule",
            0.99,
            9_800,
            10_000.0,
            Exact,
            breached(true),
        ),
        (
            "all of 10,000 Poisson, lower end 98.1%",
            0.95,
            10_000,
            10_000.0,
            Poisson,
            met(true),
        ),
        (
            "99.5% Poisson, lower end 97.6%",
            0.99,
            9_950,
            10_000.0,
            Poisson,
            met(false),
        ),
        (
            "98.5% Poisson, upper end 100.5%",
            0.99,
            9_850,
            10_000.0,
            Poisson,
            breached(false),
        ),
        (
            "90% Poisson, upper end 91.8%",
            0.99,
            9_000,
            10_000.0,
            Poisson,
            breached(true),
        ),
        ("nothing expected", 0.99, 0, 0.0, Exact, unjudged()),
    ];
    for (why, at_least, answered, expected, arrivals, want) in cases {
        let (estimate, verdict) = judge_rate(*at_least, *answered, *expected, *arrivals);
        assert_verdict(&verdict, want, "expected no requests", why);
        if let (Some(e), Exact) = (estimate, arrivals) {
            assert!(
                e.exact && e.lo == e.value && e.hi == Some(e.value),
                "{why}: {e:?}"
            );
        }
    }
}

/// Three stages of 1,000 req/s for 1 s each, intervals of 500 ms: `warm` answers in 1 ms, stage
/// 2 in 300 ms (a stall), `hold` in 1 ms with every tenth failing (5xx). `unfinished` requests
/// due at the very end are still in flight when the run ends at 3.1 s.
fn staged(unfinished: u64) -> RunResult {
    let mut r = Recorder::new(Duration::from_millis(500));
    for i in 0..3000u64 {
        let due = Duration::from_millis(i);
        let (took, outcome) = match i {
            1000..2000 => (300, Outcome::Ok),
            2000.. if i % 10 == 0 => (1, Outcome::Failed(FailureClass::Http5xx)),
            _ => (1, Outcome::Ok),
        };
        r.record(
            &Stamps::on_time(due),
            due + Duration::from_millis(took),
            outcome,
        );
    }
    for _ in 0..unfinished {
        r.record_in_flight(
            &Stamps::on_time(Duration::from_millis(2999)),
            Duration::from_millis(3100),
        );
    }
    let m = Recorder::merge_all([r]);
    let stage = |name: Option<&str>, start_s: u64| StageConfig {
        name: name.map(Into::into),
        start_ns: start_s * 1_000 * MS,
        duration_ns: 1_000 * MS,
        from: 1000.0,
        to: 1000.0,
    };
    let facts = RunFacts {
        label: "staged".into(),
        mode: Mode::Open,
        config: RunConfig {
            rate: Some(1000.0),
            arrival: Some("constant".into()),
            connections: 100,
            interval_ns: 500 * MS,
            stages: Some(vec![
                stage(Some("warm"), 0),
                stage(None, 1),
                stage(Some("hold"), 2),
            ]),
            ..Default::default()
        },
        scheduled: 3000 + unfinished,
        elapsed: Duration::from_millis(3100),
        interrupted: false,
        checks: assess_open(&m, 100),
        backfill_interval: None,
    };
    RunResult::build(&m, facts)
}

fn judge_texts(r: &RunResult, texts: &[&str]) -> Result<Vec<Judgement>, GateError> {
    let objectives: Vec<Objective> = texts.iter().map(|t| t.parse().unwrap()).collect();
    evaluate(r, &objectives)
}

#[test]
fn stages_are_picked_by_number_and_by_name() {
    let r = staged(0);
    let got = judge_texts(
        &r,
        &[
            "warm:p50<100ms",
            "1:p50<100ms",
            "2:p50<100ms",
            "hold:p50<100ms",
            "p50<100ms",
        ],
    )
    .unwrap();
    let stages: Vec<Option<&str>> = got.iter().map(|j| j.stage.as_deref()).collect();
    assert_eq!(
        stages,
        [Some("warm"), Some("warm"), Some("2"), Some("hold"), None]
    );
    let passed: Vec<bool> = got.iter().map(|j| j.verdict.passes()).collect();
    // Only stage 2 stalled; the whole run is two thirds fast.
    assert_eq!(passed, [true, true, false, true, true]);
    let stalled = got[2].estimate.unwrap();
    assert!(
        (300 * MS..310 * MS).contains(&(stalled.value as u64)),
        "{stalled:?}"
    );
}

#[test]
fn per_stage_counts_come_from_the_stage_intervals() {
    let r = staged(0);
    let got = judge_texts(
        &r,
        &[
            "warm:errors<1%",
            "hold:errors<1%",
            "errors<1%",
            "2:rate>=99%",
            "warm:rate>=99%",
        ],
    )
    .unwrap();
    // `hold` has 100 failures of 1,000 plus the 300 stalled answers that finished in it.
    let hold = got[1].estimate.unwrap();
    assert!((hold.value - 100.0 / 1300.0).abs() < 1e-9, "{hold:?}");
    assert_eq!(got[1].verdict, breached(true));
    assert_eq!(got[0].verdict, met(true), "no failures while warm");
    let whole = got[2].estimate.unwrap();
    assert!((whole.value - 100.0 / 3000.0).abs() < 1e-9, "{whole:?}");
    // Stage 2's intervals hold the 700 answers due in its first 0.7 s and the one warm
    // straggler finishing at 1.000 s: 701 of the 1,000 expected, an exact count.
    let stalled = got[3].estimate.unwrap();
    assert!(
        stalled.exact && (stalled.value - 0.701).abs() < 1e-9,
        "{stalled:?}"
    );
    assert_eq!(got[3].verdict, breached(true));
    assert_eq!(got[4].verdict, met(true), "999 of 1,000");
}

#[test]
fn requests_unanswered_at_the_end_count_in_the_last_stage() {
    // `hold` answered 1,000 in 1 ms and 300 stalled ones in 300 ms: p75 is fast. 100 more in
    // flight at the end (at least 101 ms each) push p75 onto them.
    let r = staged(100);
    let got = judge_texts(&r, &["hold:p75<50ms", "warm:p75<50ms"]).unwrap();
    assert!(!got[0].verdict.passes(), "{:?}", got[0]);
    assert_eq!(got[1].verdict, met(true), "warm had none of them");
}

#[test]
fn a_stage_the_run_never_reached_cannot_be_judged() {
    let mut r = staged(0);
    r.interrupted = true;
    r.elapsed_ns = 1_500 * MS;
    r.intervals.retain(|v| v.start_ns < r.elapsed_ns);
    let got = judge_texts(&r, &["hold:p50<1s", "hold:rate>=50%", "2:rate>=50%"]).unwrap();
    for j in &got[..2] {
        assert_verdict(
            &j.verdict,
            &unjudged(),
            "before stage hold began",
            &j.objective.text,
        );
    }
    // Stage 2 ran for half its second: 500 expected; its one interval holds the 200 answers
    // due before 1.2 s (300 ms each) and the warm straggler.
    let half = got[2].estimate.unwrap();
    assert!((half.value - 201.0 / 500.0).abs() < 1e-9, "{half:?}");
}

#[test]
fn unknown_stages_are_errors_that_list_the_stages() {
    let r = staged(0);
    for text in ["4:p99<1s", "nope:p99<1s"] {
        let e = judge_texts(&r, &[text]).unwrap_err();
        assert!(matches!(e, GateError::UnknownStage { .. }), "{e:?}");
        assert!(e.to_string().contains("1 (warm), 2, 3 (hold)"), "{e}");
    }
    let plain = crate::result::tests::sample_result();
    let e = judge_texts(&plain, &["1:p99<1s"]).unwrap_err();
    assert!(matches!(e, GateError::NoStages { .. }), "{e:?}");
    assert!(e.to_string().contains("drop the \"1:\" prefix"), "{e}");
}

#[test]
fn whole_run_rate_and_closed_loops() {
    let mut r = crate::result::tests::sample_result();
    let got = judge_texts(&r, &["rate>=99%"]).unwrap();
    // 3,000 of 3,001 answered; one in flight at the end.
    let e = got[0].estimate.unwrap();
    assert!(
        e.exact && (e.value - 3000.0 / 3001.0).abs() < 1e-12,
        "{e:?}"
    );
    r.config.rate = None;
    let got = judge_texts(&r, &["rate>=99%"]).unwrap();
    assert_verdict(&got[0].verdict, &unjudged(), "no schedule", "closed loop");
}

#[test]
fn shares_print_with_enough_digits() {
    for (share, text) in [
        (0.0, "0%"),
        (0.001, "0.100%"),
        (0.000_123, "0.0123%"),
        (0.9995, "99.95%"),
        (1.0, "100.00%"),
        (0.5, "50.00%"),
    ] {
        assert_eq!(format_share(share), text);
    }
}

/// One stall in a minute: the order statistics call p99 < 100 ms a significant breach and
/// p99 < 900 ms significantly met, since thousands of requests make their interval narrow; the
/// batch means see one episode beyond p99, too few to judge either.
#[test]
fn one_stall_is_significant_to_the_order_statistics_and_too_few_stretches_to_the_batches() {
    let (whole, intervals) = crate::batches::tests::one_stall();
    let none = empty();
    let (_, old) = judge_percentile(slo(99.0, 100), &whole, &none);
    assert_eq!(old, breached(true));
    let (_, old) = judge_percentile(slo(99.0, 900), &whole, &none);
    assert_eq!(old, met(true));
    for limit in [100, 900] {
        let (e, new) = judge_percentile_over(slo(99.0, limit), &whole, &none, &intervals);
        let Verdict::TooFew { reason } = &new else {
            panic!("p99<{limit}ms: {new:?}");
        };
        assert!(
            reason.starts_with("too few independent stretches: 3 put requests beyond p99"),
            "{reason}"
        );
        assert!(e.is_some(), "the measured value is still shown");
    }
}

mod labels;
