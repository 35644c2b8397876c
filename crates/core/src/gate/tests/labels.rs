//! Objectives on the steps and journeys of a journey run: each judged on its own histogram,
//! counts and timeline, as a stage is.
use std::time::Duration;

use super::*;
use crate::check::assess_open;
use crate::outcome::{FailureClass, Outcome};
use crate::record::{LabelRecord, Recorder, Stamps};
use crate::result::{Mode, RunConfig, RunFacts, TargetResult};

/// 100 per second for 60 s on 1 s intervals: each value from `took(i)` (µs, i from 0), due
/// at i × 10 ms; `fails(i)` fails it as a check.
fn label(took: impl Fn(u64) -> u64, fails: impl Fn(u64) -> bool) -> LabelRecord {
    let mut l = LabelRecord::with_timeline(Duration::from_secs(1));
    for i in 0..6_000u64 {
        let due = Duration::from_millis(i * 10);
        let outcome = match fails(i) {
            true => Outcome::Failed(FailureClass::Check),
            false => Outcome::Ok,
        };
        l.record(
            &Stamps::on_time(due),
            due + Duration::from_micros(took(i)),
            outcome,
        );
    }
    l
}

/// 5–15 ms, spread evenly and independently of time (a multiplicative hash of the index), so
/// p99 spans many histogram buckets and its interval must come from the batches.
fn calm(i: u64) -> u64 {
    5_000 + (i.wrapping_mul(2_654_435_761) >> 7) % 10_000
}

/// 10 ms, but one 2 s stall at 30 s: what fell due in it waits for its end.
fn stalled(i: u64) -> u64 {
    let due = i * 10;
    match due {
        30_000..=32_000 => (32_000 - due + 10) * 1_000,
        _ => 10_000,
    }
}

/// A journey run: steps shop/login (calm), shop/list (one stall) and look/list (calm), and
/// the journeys shop (calm, 1 in 100 failing) and look (calm).
fn journey_run() -> RunResult {
    let mut whole = Recorder::new(Duration::from_secs(1));
    whole.record(
        &Stamps::on_time(Duration::ZERO),
        Duration::from_millis(1),
        Outcome::Ok,
    );
    let m = Recorder::merge_all([whole]);
    let facts = RunFacts {
        label: "journeys".into(),
        mode: Mode::Open,
        config: RunConfig {
            rate: Some(100.0),
            arrival: Some("constant".into()),
            connections: 10,
            interval_ns: 1_000 * MS,
            ..Default::default()
        },
        scheduled: 1,
        elapsed: Duration::from_secs(61),
        interrupted: false,
        checks: assess_open(&m, 10),
        backfill_interval: None,
    };
    let mut r = RunResult::build(&m, facts);
    let never = |_| false;
    r.steps = vec![
        TargetResult::of("shop/login", 0.5, &label(calm, never)),
        TargetResult::of("shop/list", 0.5, &label(stalled, never)),
        TargetResult::of("look/list", 0.5, &label(calm, never)),
    ];
    r.journeys = vec![
        TargetResult::of("shop", 0.5, &label(calm, |i| i % 100 == 7)),
        TargetResult::of("look", 0.5, &label(calm, never)),
    ];
    r
}

fn one(r: &RunResult, text: &str) -> Judgement {
    let mut got = judge_texts(r, &[text]).unwrap_or_else(|e| panic!("{text}: {e}"));
    got.pop().unwrap()
}

#[test]
fn a_calm_step_is_judged_on_its_own_timeline_and_named_in_full() {
    let r = journey_run();
    let j = one(&r, "step:login:p99<50ms");
    assert_eq!(j.label.as_deref(), Some("step shop/login"));
    assert_eq!(j.stage, None);
    assert_eq!(j.verdict, met(true), "{j:?}");
    let e = j.estimate.unwrap();
    assert!((14 * MS..16 * MS).contains(&(e.value as u64)), "{e:?}");
    assert!(e.hi.unwrap() < 20e6, "{e:?}");
    assert_eq!(one(&r, "step:shop/login:p99<10ms").verdict, breached(true));
}

/// The order statistics on the stalled step's 6,000 requests call p99 < 100 ms a significant
/// breach; its own timeline holds one stall, too few stretches to judge.
#[test]
fn one_stall_in_a_step_is_too_few_stretches_there_and_nowhere_else() {
    let r = journey_run();
    let step = &r.steps[1];
    let h = step.response.histogram().unwrap();
    let (_, old) = judge_percentile(slo(99.0, 100), &h, &empty());
    assert_eq!(old, breached(true));
    let j = one(&r, "step:shop/list:p99<100ms");
    let Verdict::TooFew { reason } = &j.verdict else {
        panic!("{j:?}");
    };
    assert!(
        reason.contains("too few independent stretches: 1"),
        "{reason}"
    );
    assert!(j.estimate.unwrap().value > 1e9, "{j:?}");
    // The calm step beside it is judged, so the stall is the stalled step's alone.
    assert_eq!(one(&r, "step:look/list:p99<100ms").verdict, met(true));
}

#[test]
fn journeys_are_judged_together_or_one_by_one() {
    let r = journey_run();
    let all = one(&r, "journey:errors<5%");
    assert_eq!(all.label.as_deref(), Some("journeys"));
    // 60 of 12,000 journeys failed.
    assert_eq!(all.estimate.unwrap().value, 60.0 / 12_000.0);
    let shop = one(&r, "journey:shop:errors<0.5%");
    assert_eq!(shop.label.as_deref(), Some("journey shop"));
    assert_eq!(shop.estimate.unwrap().value, 0.01);
    assert_eq!(shop.verdict, breached(true));
    let rate = one(&r, "journey:rate>=99%");
    assert_eq!(rate.estimate.unwrap().value, 1.0);
    assert!(rate.verdict.passes());
    assert_eq!(one(&r, "journey:p99<50ms").verdict, met(true));
}

#[test]
fn steps_and_journeys_that_cannot_be_judged_are_errors_that_say_why() {
    let r = journey_run();
    let err = |text: &str| judge_texts(&r, &[text]).unwrap_err().to_string();
    let ambiguous = err("step:list:p99<1s");
    assert!(ambiguous.contains("shop/list, look/list"), "{ambiguous}");
    assert!(ambiguous.contains("step:shop/list:"), "{ambiguous}");
    let unknown = err("step:pay:p99<1s");
    assert!(
        unknown.contains("shop/login, shop/list, look/list"),
        "{unknown}"
    );
    assert!(err("journey:pay:p99<1s").contains("journeys are shop, look"));
    assert!(err("step:login:rate>=99%").contains("journey:rate>=99%"));
    let plain = staged(0);
    let none = judge_texts(&plain, &["journey:p99<1s"])
        .unwrap_err()
        .to_string();
    assert!(none.contains("no journey file"), "{none}");
}

/// A result written before steps kept timelines carries none: its percentiles are not judged,
/// rather than judged on order statistics that ignore dependence.
#[test]
fn a_step_without_a_timeline_is_not_judged() {
    let mut r = journey_run();
    r.steps[0].intervals.clear();
    let j = one(&r, "step:login:p99<50ms");
    assert!(matches!(j.verdict, Verdict::TooFew { .. }), "{j:?}");
}
