//! The simulator's client and server rules, one behaviour per test, through the public API.
use std::time::Duration;

use sojourn_core::{Arrival, End, FailureClass, Rate, RunResult, Schedule};
use sojourn_scenario::{builtins, Override, Scenario};
use sojourn_sim::{run, simulate, Client, Plan, MIN_EXCHANGE};

const MS: u64 = 1_000_000;

fn builtin(name: &str, sets: &[&str]) -> Scenario {
    let o: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
    Scenario::builtin(name, &o).unwrap()
}

fn constant(rate: f64, end: End) -> Schedule {
    Schedule::new(Arrival::Constant, Rate::per_second(rate).unwrap(), end).unwrap()
}

fn secs(s: u64) -> End {
    End::After(Duration::from_secs(s))
}

fn open(schedule: Schedule, connections: usize) -> Plan {
    Plan::new(Client::Open {
        schedule,
        connections,
        threads: 1,
    })
}

fn closed(end: End, connections: usize) -> Plan {
    Plan::new(Client::Closed {
        end,
        connections,
        threads: 1,
    })
}

/// Equal to histogram precision (3 significant digits).
fn near(value: u64, want: u64) -> bool {
    value.abs_diff(want) <= want / 1000
}

fn at(r: &RunResult, p: f64) -> u64 {
    r.histograms.response.percentiles.get(p).unwrap()
}

#[test]
fn an_open_loop_measures_from_due_and_a_full_pool_shows_as_send_lag() {
    let s = builtin("healthy", &[]);
    // 10 ms requests due every 5 ms on one connection: each waits for the one before it.
    let (r, _) = run(&s, &open(constant(200.0, secs(1)), 1), "open");
    assert_eq!(r.counts.scheduled, 200);
    assert_eq!(r.counts.completed, 200);
    assert_eq!(r.counts.waited_for_connection, 199);
    let service = &r.histograms.service;
    assert!(
        near(service.min, 10 * MS) && near(service.max, 10 * MS),
        "the server took 10 ms each"
    );
    // Request i is due at 5i ms and answered at 10(i+1) ms: the last waited ~1 s in all.
    assert!(
        r.histograms.response.max >= 1_000 * MS,
        "{}",
        r.histograms.response.max
    );
    assert!(r.histograms.send_lag.max >= 990 * MS);
    // Two connections keep up exactly: nobody waits.
    let (r2, _) = run(&s, &open(constant(200.0, secs(1)), 2), "open");
    assert_eq!(r2.counts.waited_for_connection, 0);
    assert!(r2.histograms.response.max < 10_010_000);
}

#[test]
fn an_answer_at_the_instant_the_next_is_due_frees_its_connection_first() {
    let s = builtin("healthy", &[]);
    let (r, _) = run(&s, &open(constant(100.0, secs(1)), 1), "open");
    assert_eq!(r.counts.waited_for_connection, 0, "10 ms apart, 10 ms each");
    assert_eq!(r.histograms.send_lag.max, 0);
}

#[test]
fn every_built_in_and_every_client_accounts_for_every_request() {
    let short = Duration::from_millis(1500);
    for b in builtins() {
        // Faults early enough to fall inside a 10 s run.
        let sets: &[&str] = match b.name {
            "hiccup" => &["hiccup.at=3s"],
            "ramp" => &["ramp.start=2s", "ramp.end=6s"],
            "gc-pauses" => &["gc-pauses.every=2s", "gc-pauses.first=1s"],
            "saturation" => &["saturation.cap=5", "saturation.queue=20"],
            _ => &[],
        };
        let s = builtin(b.name, sets);
        let clients = [
            Client::Open {
                schedule: constant(700.0, secs(10)),
                connections: 300,
                threads: 2,
            },
            Client::Closed {
                end: secs(10),
                connections: 7,
                threads: 2,
            },
            Client::Closed {
                end: End::Count(2_001),
                connections: 7,
                threads: 2,
            },
            Client::Tracking {
                schedule: constant(40.0, secs(10)),
            },
        ];
        for client in clients {
            let plan = Plan {
                timeout: short,
                ..Plan::new(client.clone())
            };
            let (r, sim) = run(&s, &plan, "x");
            let c = &r.counts;
            assert_eq!(c.unaccounted(), 0, "{} {client:?}: {c:?}", b.name);
            assert_eq!(r.histograms.response.count, c.scheduled, "{}", b.name);
            assert!(
                sim.server.arrivals >= c.scheduled - c.never_sent,
                "{}",
                b.name
            );
            if let Client::Closed {
                end: End::Count(n), ..
            } = client
            {
                assert_eq!(
                    c.scheduled, n,
                    "{}: the count is shared out exactly",
                    b.name
                );
            }
        }
    }
}

#[test]
fn same_inputs_same_result_and_the_seed_matters() {
    let s = builtin("bimodal", &[]);
    let poisson = |seed| {
        let schedule = Schedule::new(
            Arrival::Poisson { seed },
            Rate::per_second(30.0).unwrap(),
            secs(20),
        )
        .unwrap();
        serde_json::to_string(&run(&s, &open(schedule, 64), "p").0).unwrap()
    };
    assert_eq!(poisson(3), poisson(3));
    assert_ne!(poisson(3), poisson(4));
}

#[test]
fn poisson_lanes_are_the_engine_slices() {
    let s = builtin("healthy", &[]);
    let schedule = Schedule::new(
        Arrival::Poisson { seed: 9 },
        Rate::per_second(500.0).unwrap(),
        secs(4),
    )
    .unwrap();
    let plan = Plan::new(Client::Open {
        schedule: schedule.clone(),
        connections: 100,
        threads: 3,
    });
    let sim = simulate(&s, &plan);
    let want: usize = (0..3).map(|w| schedule.slice(w, 3).count()).sum();
    assert_eq!(sim.scheduled, want as u64);
    assert_ne!(
        want,
        schedule.iter().count(),
        "three independent streams, not one"
    );
}

#[test]
fn after_the_schedule_the_open_loop_drains_one_timeout_then_censors() {
    // A 10 s stall from 0.5 s; 100 req/s for 1 s on one connection; 3 s timeout.
    let s = builtin("hiccup", &["hiccup.at=500ms", "hiccup.duration=10s"]);
    let plan = Plan {
        timeout: Duration::from_secs(3),
        ..open(constant(100.0, secs(1)), 1)
    };
    let (r, sim) = run(&s, &plan, "open");
    let c = &r.counts;
    // Due 0–480 ms: answered. Due 490 ms: reaches the gate at 500 ms, times out at 3.49 s.
    // Due 500 ms: sent at 3.49 s, held, still out when the drain ends at 1 s + 3 s.
    // The other 49 never got the connection.
    assert_eq!(c.completed, 49);
    assert_eq!(c.failed.get(FailureClass::Timeout), 1);
    assert_eq!(c.censored, 1);
    assert_eq!(c.never_sent, 49);
    assert_eq!(sim.elapsed, Duration::from_secs(4));
    let max = r.histograms.response.at(100.0).unwrap();
    assert!(
        max.lower_bound,
        "the worst is only known to be at least 3.5 s"
    );
    assert!(r.histograms.response.at(50.0).unwrap().lower_bound);
    assert_eq!(r.histograms.censored.as_ref().unwrap().count, 51);
}

#[test]
fn a_closed_loop_stops_at_its_duration_and_its_intended_time_is_its_send() {
    let s = builtin("hiccup", &["hiccup.at=2s"]);
    let (r, sim) = run(&s, &closed(secs(5), 10), "closed");
    assert_eq!(r.histograms.send_lag.max, 0);
    // Only the response carries the batch-means intervals.
    let response = sojourn_core::result::HistogramSummary {
        batch_ci: None,
        ..r.histograms.response.clone()
    };
    assert_eq!(response, r.histograms.service, "response = service");
    // 10 connections × 5 s / 10 ms, less the second each one spent at the gate.
    assert_eq!(r.counts.scheduled, 4_000);
    assert_eq!(
        sim.impact.stalls[0].delayed, 10,
        "one held request per connection"
    );
    // The last requests start just before 5 s and end 10 ms later.
    assert_eq!(sim.elapsed, Duration::from_millis(5_000));
    assert!(r.histograms.backfilled.is_some());
}

#[test]
fn a_bounded_queue_answers_503_at_once_and_the_cap_sets_the_throughput() {
    let s = builtin("saturation", &["saturation.cap=5", "saturation.queue=10"]);
    let (r, sim) = run(&s, &open(constant(1000.0, secs(5)), 4096), "open");
    // 5 in service × 10 ms: 500 answered per second; the rest find the queue full.
    let ok = r.counts.completed;
    let rejected = r.counts.failed.get(FailureClass::Http5xx);
    assert!((2_490..=2_515).contains(&ok), "{ok}");
    assert_eq!(rejected, sim.server.rejected);
    assert_eq!(ok + rejected, 5_000);
    assert_eq!(sim.server.peak_queue, 10);
    let fastest = r.histograms.response.min;
    assert!(fastest <= MIN_EXCHANGE.as_nanos() as u64 + 10, "{fastest}");
}

#[test]
fn errors_are_counted_by_class_and_resets_on_reused_connections_are_retried() {
    let toml = r#"
        [law]
        kind = "fixed"
        value = "10ms"
        [[faults]]
        kind = "errors"
        percent = 10
        status = 500
        [[faults]]
        kind = "reset"
        percent = 5
    "#;
    let s = Scenario::from_toml_str(toml, "flaky").unwrap();
    let (r, sim) = run(&s, &open(constant(1000.0, secs(10)), 2048), "open");
    let n = r.counts.scheduled as f64;
    let http_5xx = r.counts.failed.get(FailureClass::Http5xx) as f64;
    assert!((0.08..0.12).contains(&(http_5xx / n)), "{http_5xx}");
    // Most connections had served before, so most resets were retried as new requests...
    let retries = (sim.server.arrivals - r.counts.scheduled) as f64;
    assert!((0.03..0.06).contains(&(retries / n)), "{retries}");
    // ...and only a reset on a fresh connection (or of a retry) is an I/O failure.
    let io = r.counts.failed.get(FailureClass::Io) as f64;
    assert!(io > 0.0 && io / n < 0.015, "{io}");
    assert_eq!(r.counts.unaccounted(), 0);
}

#[test]
fn the_tracking_client_sends_one_at_a_time_and_stops_at_its_deadline() {
    // 50 slots a second against a one-worker server good for ~35: it falls behind.
    let s = builtin("bimodal", &[]);
    let plan = Plan::new(Client::Tracking {
        schedule: constant(50.0, secs(10)),
    });
    let (r, sim) = run(&s, &plan, "tracking");
    let c = &r.counts;
    assert_eq!(c.scheduled, 500);
    assert!(c.never_sent > 100, "{c:?}");
    assert_eq!(c.censored, 0, "it waits for the one it sent");
    assert_eq!(c.unaccounted(), 0);
    assert_eq!(
        sim.server.peak_queue, 0,
        "one at a time: the server never queues"
    );
    // Latency (from the send) is the server's; sojourn (from the slot) grows with the backlog.
    assert!(near(
        r.histograms.service.percentiles.get(50.0).unwrap(),
        20 * MS
    ));
    assert!(at(&r, 50.0) > 1_000 * MS);
    assert!(r.checks.notes[0].contains("schedule-tracking"));
    assert!(sim.elapsed >= Duration::from_secs(10) && sim.elapsed < Duration::from_millis(10_200));
}

#[test]
fn a_round_trip_is_added_to_every_exchange_and_delays_the_server_clock() {
    let s = builtin("hiccup", &["hiccup.at=1s"]);
    let plan = Plan {
        rtt: Duration::from_millis(2),
        ..open(constant(100.0, secs(3)), 64)
    };
    let (r, sim) = run(&s, &plan, "open");
    let p50 = at(&r, 50.0);
    assert!((12 * MS..12_010_000).contains(&p50), "10 ms + 2 ms: {p50}");
    // The first request reaches the server 1 ms into the run: its clock, and the stall, start
    // 1 ms late on the run's clock.
    assert_eq!(sim.impact.stalls[0].start, Duration::from_millis(1_001));
}

#[test]
fn a_zero_time_server_still_moves_time_forward() {
    let s = builtin("healthy", &["healthy.baseline=0ms"]);
    let sim = simulate(&s, &closed(End::After(Duration::from_millis(50)), 2));
    assert_eq!(sim.scheduled, 2 * 50_000 / MIN_EXCHANGE.as_micros() as u64);
}

#[test]
fn ramp_arrivals_follow_the_shared_schedule() {
    let s = builtin("healthy", &[]);
    let schedule = Schedule::new(
        Arrival::Ramp {
            to: Rate::per_second(300.0).unwrap(),
        },
        Rate::per_second(100.0).unwrap(),
        secs(10),
    )
    .unwrap();
    let sim = simulate(&s, &open(schedule.clone(), 64));
    assert_eq!(Some(sim.scheduled), schedule.planned_count());
}

#[test]
fn results_carry_the_scenario_the_mode_and_a_simulated_note() {
    let s = builtin("gc-pauses", &[]);
    let (r, _) = run(&s, &open(constant(100.0, secs(2)), 8), "open");
    assert_eq!(r.mode, sojourn_core::Mode::Open);
    assert_eq!(r.config.target.as_deref(), Some("sim:gc-pauses"));
    assert_eq!(r.config.connections, 8);
    let back: Scenario = serde_json::from_value(r.scenario.clone().unwrap()).unwrap();
    assert_eq!(back, s, "the result names the exact scenario");
    assert!(r.checks.notes.iter().any(|n| n.contains("virtual time")));
    assert_eq!(
        r.intervals.len(),
        3,
        "the last answer, due at 1.99 s, lands in second 2"
    );
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../schema/result.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for r in [
        r,
        run(&s, &closed(secs(2), 3), "closed").0,
        run(
            &s,
            &Plan::new(Client::Tracking {
                schedule: constant(10.0, secs(2)),
            }),
            "tracking",
        )
        .0,
    ] {
        let doc = serde_json::to_value(&r).unwrap();
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{:?}: {errors:?}", r.mode);
    }
}
