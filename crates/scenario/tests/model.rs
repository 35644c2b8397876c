//! The decisions: service times, the gate, statuses and resets, as pure functions.
use std::time::Duration;

use sojourn_scenario::{
    Admission, Cap, Fault, Law, Override, Parts, Percent, Scenario, Slowdown, Window, WindowKind,
};

const MS: Duration = Duration::from_millis(1);
const S: Duration = Duration::from_secs(1);

fn builtin(name: &str, sets: &[&str]) -> Scenario {
    let o: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
    Scenario::builtin(name, &o).unwrap()
}

fn with_faults(law: Law, faults: Vec<Fault>) -> Scenario {
    Scenario::new(Parts {
        faults,
        ..Parts::new("t", law)
    })
    .unwrap()
}

fn pct(p: f64) -> Percent {
    Percent::new(p).unwrap()
}

#[test]
fn hiccup_gate_holds_requests_until_the_stall_ends() {
    let s = builtin("hiccup", &[]);
    // (reaches the gate at, leaves at)
    let rows = [
        (29_999 * MS, 29_999 * MS), // just before: open
        (30 * S, 31 * S),           // the instant it closes
        (30_200 * MS, 31 * S),      // 200 ms into the stall
        (30_999 * MS, 31 * S),      // last moment
        (31 * S, 31 * S),           // open again exactly at the end
        (40 * S, 40 * S),           // long after
    ];
    for (reach, leave) in rows {
        assert_eq!(s.gate_open_at(reach), leave, "reach {reach:?}");
    }
    // A request that arrives 200 ms into the stall leaves when it ends; one that starts 5 ms
    // before the stall reaches the gate inside it.
    assert_eq!(s.departure(0, 30_200 * MS), 31 * S);
    assert_eq!(s.departure(0, 29_995 * MS), 31 * S);
    assert_eq!(s.departure(0, 29_989 * MS), 29_999 * MS);
}

#[test]
fn gc_pauses_close_the_gate_periodically() {
    let s = builtin("gc-pauses", &[]);
    let rows = [
        (4_999 * MS, 4_999 * MS),
        (5 * S, 5_200 * MS),
        (15_100 * MS, 15_200 * MS),
        (15_200 * MS, 15_200 * MS),
        (55_150 * MS, 55_200 * MS),
    ];
    for (reach, leave) in rows {
        assert_eq!(s.gate_open_at(reach), leave, "reach {reach:?}");
    }
    // DESIGN §6: six pauses in a 60 s run (p99 ≈ 110 ms at 1000 req/s needs six, not five).
    let windows = s.windows(60 * S);
    assert_eq!(windows.len(), 6);
    assert_eq!(
        windows[0],
        Window {
            kind: WindowKind::Pause,
            start: 5 * S,
            end: 5_200 * MS
        }
    );
    assert_eq!(windows[5].start, 55 * S);
}

#[test]
fn abutting_and_overlapping_closures_chain() {
    let stall = |at, duration| Fault::Stall { at, duration };
    let s = with_faults(
        Law::Fixed(MS),
        vec![
            stall(S, S),
            stall(2 * S, S),         // abuts the first
            stall(2_500 * MS, S),    // overlaps the second
            stall(10 * S, 100 * MS), // separate
        ],
    );
    assert_eq!(s.gate_open_at(1_500 * MS), 3_500 * MS);
    assert_eq!(s.gate_open_at(3_500 * MS), 3_500 * MS);
    assert_eq!(s.gate_open_at(10 * S), 10_100 * MS);
}

#[test]
fn ramp_moves_the_baseline_linearly_then_stays() {
    let s = builtin("ramp", &[]);
    let rows = [
        (Duration::ZERO, 10 * MS),
        (20 * S, 10 * MS),
        (35 * S, 55 * MS), // halfway
        (50 * S, 100 * MS),
        (90 * S, 100 * MS),
    ];
    for (at, want) in rows {
        assert_eq!(s.service_time(0, at), want, "at {at:?}");
    }
}

#[test]
fn every_nth_matches_seed_000() {
    // 450 req/s × 30 s = 13,500 requests, every 500th (counting from 1) takes 200 ms: 27 pauses.
    let s = builtin("every-nth", &[]);
    let slow: Vec<u64> = (0..13_500)
        .filter(|&i| s.service_time(i, S) == 200 * MS)
        .collect();
    assert_eq!(slow.len(), 27);
    assert_eq!(slow[0], 499, "the 500th request, counting from 1");
    assert!(slow.windows(2).all(|w| w[1] - w[0] == 500));
    assert!((0..13_500).all(|i| slow.contains(&i) || s.service_time(i, S) == MS));
}

#[test]
fn seeded_choices_repeat_and_the_seed_changes_them() {
    let picks = |s: &Scenario| -> Vec<u64> {
        (0..2000)
            .filter(|&i| s.service_time(i, S) > 100 * MS)
            .collect()
    };
    let a = builtin("bimodal", &[]);
    let b = builtin("bimodal", &[]);
    let c = builtin("bimodal", &["bimodal.seed=2"]);
    assert_eq!(picks(&a), picks(&b));
    assert_ne!(picks(&a), picks(&c));
    let n = picks(&a).len();
    assert!((60..140).contains(&n), "5% of 2000, got {n}");
}

#[test]
fn slow_fraction_takes_or_adds_and_two_faults_pick_independently() {
    let s = with_faults(
        Law::Fixed(10 * MS),
        vec![
            Fault::SlowFraction {
                percent: pct(10.0),
                slow: Slowdown::Adds(5 * MS),
                seed: None,
            },
            Fault::SlowFraction {
                percent: pct(10.0),
                slow: Slowdown::Takes(100 * MS),
                seed: None,
            },
        ],
    );
    let times: Vec<Duration> = (0..5000).map(|i| s.service_time(i, S)).collect();
    let added = times.iter().filter(|&&d| d == 15 * MS).count();
    let taken = times.iter().filter(|&&d| d == 100 * MS).count();
    assert!((400..600).contains(&added), "{added}");
    assert!((400..600).contains(&taken), "{taken}");
    // Same seed, different positions: not the same requests. Later faults win (list order).
    assert!(times
        .iter()
        .all(|&d| [10 * MS, 15 * MS, 100 * MS].contains(&d)));
}

#[test]
fn errors_and_resets_are_seeded_per_request() {
    let faults = |seed| {
        vec![
            Fault::Errors {
                percent: pct(20.0),
                status: 503,
                seed,
            },
            Fault::Reset {
                percent: pct(10.0),
                seed,
            },
        ]
    };
    let s = with_faults(Law::Fixed(MS), faults(Some(7)));
    let again = with_faults(Law::Fixed(MS), faults(Some(7)));
    let other = with_faults(Law::Fixed(MS), faults(Some(8)));
    let outcome = |s: &Scenario| -> Vec<(u16, bool)> {
        (0..1000).map(|i| (s.status(i), s.resets(i))).collect()
    };
    assert_eq!(outcome(&s), outcome(&again));
    assert_ne!(outcome(&s), outcome(&other));
    let errors = (0..10_000).filter(|&i| s.status(i) == 503).count();
    let resets = (0..10_000).filter(|&i| s.resets(i)).count();
    assert!((1_800..2_200).contains(&errors), "{errors}");
    assert!((850..1_150).contains(&resets), "{resets}");
    assert!((0..10_000).all(|i| [200, 503].contains(&s.status(i))));
}

#[test]
fn workers_and_cap_share_one_admission_limit() {
    let cap = |limit, queue| Fault::Cap(Cap { limit, queue });
    let admission = |workers, faults| {
        Scenario::new(Parts {
            workers,
            faults,
            ..Parts::new("t", Law::Fixed(MS))
        })
        .unwrap()
        .admission()
    };
    assert_eq!(admission(None, vec![]), None);
    assert_eq!(
        admission(Some(1), vec![]),
        Some(Admission {
            limit: 1,
            queue: None
        })
    );
    assert_eq!(
        admission(None, vec![cap(5, Some(3))]),
        Some(Admission {
            limit: 5,
            queue: Some(3)
        })
    );
    // The tighter limit wins; the bound comes from the cap.
    assert_eq!(
        admission(Some(2), vec![cap(5, Some(3))]),
        Some(Admission {
            limit: 2,
            queue: Some(3)
        })
    );
    assert_eq!(
        admission(Some(9), vec![cap(5, None)]),
        Some(Admission {
            limit: 5,
            queue: None
        })
    );
}

#[test]
fn windows_for_reports_are_sorted_and_bounded() {
    let s = with_faults(
        Law::Fixed(MS),
        vec![
            Fault::Ramp {
                start: 20 * S,
                end: 50 * S,
                scale: 2.0,
            },
            Fault::Stall {
                at: 5 * S,
                duration: S,
            },
            Fault::Stall {
                at: 100 * S,
                duration: S,
            },
        ],
    );
    let w = s.windows(60 * S);
    assert_eq!(
        w.iter().map(|w| (w.kind, w.start)).collect::<Vec<_>>(),
        vec![(WindowKind::Stall, 5 * S), (WindowKind::Ramp, 20 * S)]
    );
    let json = serde_json::to_string(&w[0]).unwrap();
    assert_eq!(
        json,
        r#"{"kind":"stall","start_ns":5000000000,"end_ns":6000000000}"#
    );
}

#[test]
fn healthy_baseline_ignores_faults() {
    let s = builtin("every-nth", &[]);
    assert_eq!(s.baseline(499), MS);
    assert_eq!(s.service_time(499, S), 200 * MS);
}

#[test]
fn delaying_a_scenario_moves_its_clocked_faults_and_nothing_else() {
    let s = Duration::from_secs;
    let ms = Duration::from_millis;
    let hiccup = Scenario::builtin("hiccup", &["hiccup.at=2s".parse().unwrap()]).unwrap();
    let later = hiccup.delayed(s(10));
    assert_eq!(hiccup.gate_open_at(ms(2_500)), s(3), "the original stall");
    assert_eq!(
        later.gate_open_at(ms(2_500)),
        ms(2_500),
        "open at 2.5 s now"
    );
    assert_eq!(
        later.gate_open_at(ms(12_500)),
        s(13),
        "closed from 12 s to 13 s"
    );
    // The ramp's window moves with it: 45 s into the delayed run is 35 s into the original.
    let ramp = Scenario::builtin("ramp", &[]).unwrap();
    assert_eq!(
        ramp.delayed(s(10)).service_time(0, s(45)),
        ramp.service_time(0, s(35))
    );
    assert_ne!(ramp.service_time(0, s(45)), ramp.service_time(0, s(35)));
    // gc-pauses' first pause moves; every-nth counts requests, not time.
    let gc = Scenario::builtin("gc-pauses", &[]).unwrap();
    assert_eq!(
        gc.delayed(s(10)).gate_open_at(s(20)),
        gc.gate_open_at(s(10)) + s(10)
    );
    let nth = Scenario::builtin("every-nth", &[]).unwrap();
    assert_eq!(nth.delayed(s(10)), nth);
}
