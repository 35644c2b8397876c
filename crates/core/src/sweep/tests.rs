use super::*;
use crate::check::assess_open;
use crate::outcome::Outcome;
use crate::record::{Recorder, Stamps};
use crate::result::{Mode, RunConfig, RunFacts};

fn rate(r: f64) -> Rate {
    Rate::per_second(r).unwrap()
}

/// A single FIFO worker with a fixed service time fed by constant arrivals for `length`, with
/// requests still queued at `drain_end` censored: a queue the tests can reason about exactly.
fn fifo_step(offered: f64, service: Duration, length: Duration, drain_end: Duration) -> RunResult {
    fifo_step_with(offered, service, length, drain_end, false)
}

/// The same, where a request that found the worker busy waited for the one connection
/// (`pooled`) rather than in the server's own queue.
fn fifo_step_with(
    offered: f64,
    service: Duration,
    length: Duration,
    drain_end: Duration,
    pooled: bool,
) -> RunResult {
    let mut r = Recorder::new(Duration::from_millis(500));
    let gap = Duration::from_secs_f64(1.0 / offered);
    let (mut free, mut scheduled) = (Duration::ZERO, 0u64);
    let mut due = Duration::ZERO;
    while due < length {
        scheduled += 1;
        let start = free.max(due);
        let done = start + service;
        let stamps = Stamps {
            sent: start,
            waited_for_connection: pooled && start > due,
            ..Stamps::on_time(due)
        };
        if done <= drain_end {
            r.record(&stamps, done, Outcome::Ok);
            free = done;
        } else {
            r.record_in_flight(&stamps, drain_end);
        }
        due += gap;
    }
    let m = Recorder::merge_all([r]);
    let facts = RunFacts {
        label: "step".into(),
        mode: Mode::Open,
        config: RunConfig {
            rate: Some(offered),
            interval_ns: 500_000_000,
            connections: 1,
            ..Default::default()
        },
        scheduled,
        elapsed: drain_end,
        interrupted: false,
        checks: assess_open(&m, 1),
        backfill_interval: None,
    };
    RunResult::build(&m, facts)
}

const LENGTH: Duration = Duration::from_secs(10);

fn judge(offered: f64, drain: Duration, slos: &[Slo]) -> Step {
    let result = fifo_step(offered, Duration::from_millis(25), LENGTH, LENGTH + drain);
    let rules = StepRules::new(Duration::from_secs(2), LENGTH);
    evaluate(&result, rate(offered), &rules, slos).unwrap()
}

#[test]
fn below_capacity_is_ok_and_exact() {
    // 25 ms per request is 40/s of capacity; 20/s offered never queues.
    let step = judge(20.0, Duration::from_secs(5), &[]);
    assert_eq!(step.status, Status::Ok, "{:?}", step.reasons);
    assert!((step.achieved - 20.0).abs() < 0.5, "{}", step.achieved);
    // Every response is exactly the service time (within the histogram's precision).
    assert!(step.response_p99_ns.abs_diff(25_000_000) < 50_000);
    assert_eq!(step.mean_send_lag_ns, 0.0);
    // The settle (2 s of 10) is left out of the percentiles but not out of the counts.
    assert_eq!(step.scheduled, 200);
    assert!(
        (155..=165).contains(&step.settled_requests),
        "{}",
        step.settled_requests
    );
}

#[test]
fn over_capacity_is_saturated_for_every_reason() {
    // 60/s offered against 40/s: the queue grows by 20 a second; a 1 s drain cannot clear it.
    let step = judge(60.0, Duration::from_secs(1), &[]);
    assert_eq!(step.status, Status::Saturated);
    let kinds: Vec<&str> = step
        .reasons
        .iter()
        .map(|r| match r {
            Reason::BelowTarget { achieved } => {
                assert!((achieved - 40.0).abs() < 1.0, "{achieved}");
                "below"
            }
            Reason::StillRising { rise_ns, .. } => {
                assert!(*rise_ns > 1e9, "{rise_ns}");
                "rising"
            }
            Reason::Censored { count } => {
                assert!(*count > 100, "{count}");
                "censored"
            }
            Reason::GeneratorLate { .. } | Reason::GeneratorSlowToFree { .. } => "generator",
            Reason::PoolFull { .. } => "pool",
        })
        .collect();
    assert_eq!(kinds, ["below", "rising", "censored"]);
    // The queue wait shows up in the send lag.
    assert!(step.mean_send_lag_ns > 1e9);
}

#[test]
fn slo_checks_use_the_settled_percentiles() {
    let slos: Vec<Slo> = ["p99<30ms", "p50<20ms"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    let step = judge(20.0, Duration::from_secs(5), &slos);
    // 25 ms responses: under 30 ms, over 20 ms.
    assert_eq!(
        step.slos.iter().map(|c| c.met).collect::<Vec<_>>(),
        [true, false]
    );
    assert!(!step.passes());
    let easy = judge(20.0, Duration::from_secs(5), &slos[..1]);
    assert!(easy.passes());
}

#[test]
fn slo_parsing() {
    let ms = Duration::from_millis;
    let cases: [(&str, Option<(f64, Duration)>); 9] = [
        ("p99<200ms", Some((99.0, ms(200)))),
        ("p99.9 < 1.5s", Some((99.9, ms(1500)))),
        ("P50<500us", Some((50.0, Duration::from_micros(500)))),
        ("p100<2s", Some((100.0, ms(2000)))),
        // No unit: ambiguous, refused.
        ("p99<200", None),
        // Not a percentile.
        ("p0<1s", None),
        ("p101<1s", None),
        // Wrong comparison or no `p`.
        ("p99>200ms", None),
        ("99<200ms", None),
    ];
    for (text, want) in cases {
        let got = text.parse::<Slo>().ok().map(|s| (s.percentile, s.limit));
        assert_eq!(got, want, "{text}");
    }
    assert!(matches!("p99<0ms".parse::<Slo>(), Err(SloError::Limit(_))));
    assert_eq!(
        "p99<200ms".parse::<Slo>().unwrap().to_string(),
        "p99<200.00 ms"
    );
}

#[test]
fn linear_rates_include_both_ends() {
    let got: Vec<f64> = linear_rates(rate(100.0), rate(2000.0), 10)
        .iter()
        .map(|r| r.get())
        .collect();
    assert_eq!(got.len(), 10);
    assert_eq!((got[0], got[9]), (100.0, 2000.0));
    assert!((got[1] - 311.111).abs() < 0.01);
    assert_eq!(linear_rates(rate(5.0), rate(9.0), 1).len(), 1);
    assert!(linear_rates(rate(5.0), rate(9.0), 0).is_empty());
}

#[test]
fn brackets() {
    let cases: [(&[(f64, bool)], Bracket); 4] = [
        // The knee between 30 and 40.
        (
            &[(20.0, true), (30.0, true), (40.0, false), (50.0, false)],
            Bracket {
                passing: Some(30.0),
                failing: Some(40.0),
            },
        ),
        // A pass above a failure (noise) does not move the bracket past the first failure.
        (
            &[(20.0, true), (40.0, false), (50.0, true)],
            Bracket {
                passing: Some(20.0),
                failing: Some(40.0),
            },
        ),
        // Every rate passed: no cliff within the sweep.
        (
            &[(5.0, true), (10.0, true)],
            Bracket {
                passing: Some(10.0),
                failing: None,
            },
        ),
        // Even the lowest failed.
        (
            &[(5.0, false)],
            Bracket {
                passing: None,
                failing: Some(5.0),
            },
        ),
    ];
    for (outcomes, want) in cases {
        assert_eq!(bracket(outcomes), want, "{outcomes:?}");
    }
}

/// A search against a target whose cliff is at `cliff` req/s.
fn search(from: f64, to: f64, cliff: f64, max_probes: usize) -> SearchOutcome {
    let s = Search {
        from: rate(from),
        to: rate(to),
        resolution: 1.0,
        max_probes,
    };
    s.run(|r| {
        Ok::<Probe, ()>(if r.get() <= cliff {
            Probe::Pass
        } else {
            Probe::Fail
        })
    })
    .unwrap()
}

#[test]
fn search_brackets_then_bisects() {
    let out = search(5.0, 1000.0, 34.5, 30);
    let rates: Vec<f64> = out.probes.iter().map(|p| p.0).collect();
    // Doubling 5, 10, 20, 40 (fails: stop climbing), then bisecting 20..40.
    assert_eq!(&rates[..4], [5.0, 10.0, 20.0, 40.0]);
    assert_eq!(&rates[4..], [30.0, 35.0, 32.5, 33.75, 34.375]);
    let b = out.bracket;
    assert_eq!((b.passing, b.failing), (Some(34.375), Some(35.0)));
    assert!(!out.budget_exhausted);
}

#[test]
fn search_stops_at_once_when_the_lowest_rate_fails() {
    let out = search(50.0, 1000.0, 34.5, 30);
    assert_eq!(out.probes, [(50.0, Probe::Fail)]);
    assert_eq!(
        out.bracket,
        Bracket {
            passing: None,
            failing: Some(50.0)
        }
    );
}

#[test]
fn search_never_exceeds_its_bounds() {
    // Every rate passes: it climbs to `to` and stops there.
    let out = search(100.0, 500.0, 1e9, 30);
    let rates: Vec<f64> = out.probes.iter().map(|p| p.0).collect();
    assert_eq!(rates, [100.0, 200.0, 400.0, 500.0]);
    assert!(!out.budget_exhausted);
    // A tiny budget ends the search and says so.
    let out = search(5.0, 1000.0, 34.5, 5);
    assert_eq!(out.probes.len(), 5);
    assert!(out.budget_exhausted);
}

#[test]
fn search_narrows_a_client_side_limit_and_brackets_no_cliff() {
    // Passes up to 50, then the generator cannot keep up: no cliff, whatever lies above, and
    // the generator's limit narrowed down to the resolution instead.
    let s = Search {
        from: rate(10.0),
        to: rate(1000.0),
        resolution: 1.0,
        max_probes: 30,
    };
    let out = s
        .run(|r| {
            Ok::<Probe, ()>(if r.get() <= 50.0 {
                Probe::Pass
            } else {
                Probe::Inconclusive
            })
        })
        .unwrap();
    let rates: Vec<f64> = out.probes.iter().map(|p| p.0).collect();
    assert_eq!(
        &rates[..4],
        [10.0, 20.0, 40.0, 80.0],
        "nothing above the first limit"
    );
    assert!(rates.iter().all(|&r| r <= 80.0), "{rates:?}");
    assert_eq!(
        out.stopped_at,
        Some(50.625),
        "narrowed from 40..80: {rates:?}"
    );
    assert_eq!(
        out.bracket,
        Bracket {
            passing: Some(50.0),
            failing: None
        },
        "nothing failed: there is no cliff to name"
    );
    assert!(!out.budget_exhausted);
    // A real cliff below the limit is still the target's, found while bisecting.
    let out = s
        .run(|r| {
            Ok::<Probe, ()>(match r.get() {
                x if x <= 45.0 => Probe::Pass,
                x if x < 70.0 => Probe::Fail,
                _ => Probe::Inconclusive,
            })
        })
        .unwrap();
    assert_eq!(out.stopped_at, None, "{:?}", out.probes);
    assert_eq!(out.bracket.passing, Some(45.0));
}

/// The same overloaded step, told three ways by what the generator knows of itself.
#[test]
fn who_held_the_step_back() {
    let rules = StepRules::new(Duration::from_secs(2), LENGTH);
    let overloaded = |pooled| {
        fifo_step_with(
            60.0,
            Duration::from_millis(25),
            LENGTH,
            LENGTH + Duration::from_secs(1),
            pooled,
        )
    };
    // The queue was the server's: the target is saturated.
    let step = evaluate(&overloaded(false), rate(60.0), &rules, &[]).unwrap();
    assert_eq!((step.status, &step.advice), (Status::Saturated, &None));
    // The queue was in front of the one connection: the pool held it. At 25 ms a request,
    // 60/s needs 1.5 connections; one carries 40/s.
    let step = evaluate(&overloaded(true), rate(60.0), &rules, &[]).unwrap();
    assert_eq!(step.status, Status::PoolBound, "{:?}", step.reasons);
    let advice = step.advice.as_deref().unwrap();
    assert!(
        advice.contains("1 connection carries at most 40 req/s")
            && advice.contains("raise --connections to at least 2"),
        "{advice}"
    );
    assert!(step
        .reasons
        .iter()
        .any(|r| matches!(r, Reason::PoolFull { connections: 1, needed, .. } if (needed - 1.5).abs() < 0.01)));
    assert_eq!(step.probe(), Probe::Inconclusive);
    // The generator sent late: nothing here is the target's, whatever it did.
    let lag = |p99_ms: u64| {
        let mut h = crate::record::new_histogram();
        h.record_n(100_000, 980).unwrap();
        h.record_n(p99_ms * 1_000_000, 20).unwrap();
        crate::result::HistogramSummary::of(&h, &crate::record::new_histogram())
    };
    let mut late = overloaded(true);
    late.histograms.dispatch_lag = Some(lag(900));
    late.checks.busiest_worker = Some(0.97);
    let step = evaluate(&late, rate(60.0), &rules, &[]).unwrap();
    assert_eq!(step.status, Status::GeneratorBound);
    assert!(step.advice.as_deref().unwrap().contains("--threads"));
    assert!(step.reasons.iter().any(|r| {
        let r = r.to_string();
        r.contains("sent late: dispatch lag p99 900") && r.contains("worker on CPU 97%")
    }));
    assert_eq!(
        step.busiest_worker,
        Some(0.97),
        "the headroom beside the verdict"
    );
    // Below capacity, a late generator is still the story: the step is not the target's OK.
    let mut calm = fifo_step(
        20.0,
        Duration::from_millis(25),
        LENGTH,
        LENGTH + Duration::from_secs(5),
    );
    calm.histograms.dispatch_lag = Some(lag(30));
    let step = evaluate(&calm, rate(20.0), &rules, &[]).unwrap();
    assert_eq!(step.status, Status::GeneratorBound, "{:?}", step.reasons);
    assert!(step.reasons[0].to_string().contains("no control meter"));
    // Unless the control meter (an idle process that only sleeps) was as late: then the late
    // sends were the machine's, more threads would not help, and the target is judged.
    calm.histograms.control_hiccup = Some(lag(20));
    let step = evaluate(&calm, rate(20.0), &rules, &[]).unwrap();
    assert_eq!(step.status, Status::Ok, "{:?}", step.reasons);
    // However busy the worker was: a generator that kept to the machine's floor is OK.
    calm.checks.busiest_worker = Some(0.95);
    let step = evaluate(&calm, rate(20.0), &rules, &[]).unwrap();
    assert_eq!(step.status, Status::Ok, "{:?}", step.reasons);
    // This process's own meter, as late as the generator's sends, excuses nothing: it shares
    // the generator's cores, and the control process was not late.
    calm.histograms.hiccup = Some(lag(30));
    calm.histograms.control_hiccup = Some(lag(0));
    let step = evaluate(&calm, rate(20.0), &rules, &[]).unwrap();
    assert_eq!(step.status, Status::GeneratorBound, "{:?}", step.reasons);
    // Twice the machine's own lateness is the generator's again.
    calm.histograms.control_hiccup = Some(lag(15));
    let step = evaluate(&calm, rate(20.0), &rules, &[]).unwrap();
    assert_eq!(step.status, Status::GeneratorBound);
    // Requests that waited for the one connection while the worker was busy reading answers
    // waited for the generator: sent late, by the generator.
    let mut slow = overloaded(true);
    slow.checks.busiest_worker = Some(0.8);
    let step = evaluate(&slow, rate(60.0), &rules, &[]).unwrap();
    assert_eq!(step.status, Status::GeneratorBound, "{:?}", step.reasons);
    assert!(
        step.reasons
            .iter()
            .any(|r| matches!(r, Reason::GeneratorSlowToFree { busy, .. } if *busy == 0.8)),
        "{:?}",
        step.reasons
    );
    // The same waits beside an idle worker are the pool's.
    slow.checks.busiest_worker = Some(0.3);
    let step = evaluate(&slow, rate(60.0), &rules, &[]).unwrap();
    assert_eq!(step.status, Status::PoolBound, "{:?}", step.reasons);
    // A busy generator on time, with no meters at all: OK, its headroom said beside it.
    let mut busy = fifo_step(
        20.0,
        Duration::from_millis(25),
        LENGTH,
        LENGTH + Duration::from_secs(5),
    );
    busy.checks.busiest_worker = Some(0.95);
    let step = evaluate(&busy, rate(20.0), &rules, &[]).unwrap();
    assert_eq!((step.status, step.busiest_worker), (Status::Ok, Some(0.95)));
    // And without it the same step is plainly OK.
    let step = evaluate(
        &fifo_step(
            20.0,
            Duration::from_millis(25),
            LENGTH,
            LENGTH + Duration::from_secs(5),
        ),
        rate(20.0),
        &rules,
        &[],
    )
    .unwrap();
    assert_eq!((step.status, step.probe()), (Status::Ok, Probe::Pass));
}
