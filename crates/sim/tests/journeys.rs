//! Journeys in virtual time: the engine's journey rules (`crates/engine/src/journey.rs`), checked
//! against small hand-written oracles where virtual time makes every figure exact.
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use sojourn_core::record::{new_histogram, Tally};
use sojourn_core::{Arrival, End, FailureClass, Rate, Schedule};
use sojourn_scenario::{Override, Scenario};
use sojourn_sim::{simulate, Client, JourneyModel, ModelStep, Plan, Simulation};

const MS: u64 = 1_000_000;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn builtin(name: &str, sets: &[&str]) -> Scenario {
    let o: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
    Scenario::builtin(name, &o).unwrap()
}

fn constant(rate: f64, end: End) -> Schedule {
    Schedule::new(Arrival::Constant, Rate::per_second(rate).unwrap(), end).unwrap()
}

fn poisson(rate: f64, end: End, seed: u64) -> Schedule {
    Schedule::new(
        Arrival::Poisson { seed },
        Rate::per_second(rate).unwrap(),
        end,
    )
    .unwrap()
}

fn journeys(schedule: Schedule, max_journeys: usize, model: Arc<dyn JourneyModel>) -> Plan {
    Plan::new(Client::Journeys {
        schedule,
        max_journeys,
        threads: 1,
        model,
    })
}

/// Log in, list, open: one journey of three steps (labels 0, 1, 2), `think` before the second
/// and the third.
#[derive(Debug)]
struct ThreeSteps {
    think: Duration,
    continue_on_error: bool,
}

impl ThreeSteps {
    fn model(think: Duration) -> Arc<dyn JourneyModel> {
        Arc::new(ThreeSteps {
            think,
            continue_on_error: false,
        })
    }
}

impl JourneyModel for ThreeSteps {
    fn labels(&self) -> (usize, usize) {
        (3, 1)
    }
    fn journey_of(&self, _index: u64) -> usize {
        0
    }
    fn steps(&self, _index: u64, out: &mut Vec<ModelStep>) {
        out.clear();
        out.extend((0..3).map(|label| ModelStep {
            label,
            think: if label == 0 {
                Duration::ZERO
            } else {
                self.think
            },
            continue_on_error: self.continue_on_error,
        }));
    }
}

/// Two journeys picked by a seeded draw from the index: a three-step one (labels 0, 1, 2) and
/// a two-step one (labels 3, 4) whose first step goes on when it fails. Think times are seeded
/// draws under 200 ms.
#[derive(Debug)]
struct Drawn {
    seed: u64,
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl JourneyModel for Drawn {
    fn labels(&self) -> (usize, usize) {
        (5, 2)
    }
    fn journey_of(&self, index: u64) -> usize {
        (mix(self.seed ^ index) % 2) as usize
    }
    fn steps(&self, index: u64, out: &mut Vec<ModelStep>) {
        out.clear();
        let labels: &[usize] = match self.journey_of(index) {
            0 => &[0, 1, 2],
            _ => &[3, 4],
        };
        for (k, &label) in labels.iter().enumerate() {
            let draw = mix(self.seed.wrapping_mul(31) ^ (index << 8) ^ k as u64);
            out.push(ModelStep {
                label,
                think: if k == 0 {
                    Duration::ZERO
                } else {
                    Duration::from_nanos(draw % (200 * MS))
                },
                continue_on_error: label == 3,
            });
        }
    }
}

/// A histogram's recorded buckets, (highest equivalent value, count).
fn buckets(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

/// The buckets the run's recorder would hold for these values (ns).
fn expected(values: impl IntoIterator<Item = u64>) -> Vec<(u64, u64)> {
    let mut h = new_histogram();
    for v in values {
        h.record(v).unwrap();
    }
    buckets(&h)
}

/// Journeys and steps each end one way only, and every label adds up to the run.
fn assert_accounted(sim: &Simulation, journeys_due: &[u64]) {
    let m = &sim.measurements;
    assert_eq!(
        m.tally.accounted(),
        sim.scheduled,
        "steps due = completed + failed + censored + never sent: {:?}",
        m.tally
    );
    let mut labels = Tally::default();
    for l in &m.labels {
        labels.merge(&l.tally);
    }
    assert_eq!(labels, m.tally, "the labels' tallies add up to the run's");
    for (k, due) in journeys_due.iter().enumerate() {
        assert_eq!(
            m.journeys[k].tally.accounted(),
            *due,
            "journey {k}: due = completed + failed + censored + never started: {:?}",
            m.journeys[k].tally
        );
    }
}

/// A stall, errors, resets, timeouts, too few places and a drain that ends mid-journey: every
/// journey and every step that fell due is counted once, in its label and its journey.
#[test]
fn every_journey_and_every_due_step_is_accounted_for() {
    let toml = r#"
        [law]
        kind = "fixed"
        value = "10ms"
        [[faults]]
        kind = "stall"
        at = "1s"
        duration = "1s"
        [[faults]]
        kind = "errors"
        percent = 10
        status = 500
        [[faults]]
        kind = "reset"
        percent = 5
    "#;
    let scenario = Scenario::from_toml_str(toml, "rough").unwrap();
    let model = Drawn { seed: 7 };
    let schedule = poisson(100.0, End::After(ms(2000)), 3);
    // Each lane draws its own share of a Poisson schedule, as the engine's threads do.
    let mut due = [0u64; 2];
    for d in (0..2).flat_map(|w| schedule.slice(w, 2)) {
        due[model.journey_of(d.index)] += 1;
    }
    let mut plan = Plan::new(Client::Journeys {
        schedule,
        max_journeys: 16,
        threads: 2,
        model: Arc::new(model),
    });
    plan.timeout = ms(300);
    let sim = simulate(&scenario, &plan);
    assert_accounted(&sim, &due);
    let m = &sim.measurements;
    let (a, b) = (m.journeys[0].tally, m.journeys[1].tally);
    assert!(a.completed > 0 && b.completed > 0, "{a:?} {b:?}");
    assert!(a.failed.get(FailureClass::Http5xx) > 0, "{a:?}");
    assert!(a.failed.get(FailureClass::Timeout) > 0, "{a:?}");
    assert!(a.censored + b.censored > 0, "{a:?} {b:?}");
    assert!(a.never_sent > 0 && b.never_sent > 0, "{a:?} {b:?}");
    // A never-started journey's first step was due with it and never sent; in virtual time every
    // other step is sent the moment it is due, so these are the only steps never sent.
    assert_eq!(m.labels[0].tally.never_sent, a.never_sent);
    assert_eq!(m.labels[3].tally.never_sent, b.never_sent);
    assert_eq!(m.tally.never_sent, a.never_sent + b.never_sent);
    // Step 3 goes on when it fails, so every step 4 follows a step 3 that answered; a three-step
    // journey ends at its first failed step, so its step 2 follows a completed step 1.
    let (s0, s1, s3, s4) = (
        m.labels[0].tally,
        m.labels[1].tally,
        m.labels[3].tally,
        m.labels[4].tally,
    );
    assert!(s1.accounted() <= s0.completed, "{s0:?} {s1:?}");
    assert!(s3.failed.total() > 0, "{s3:?}");
    assert!(
        s4.accounted() > s3.completed,
        "failed step 3s go on to step 4: {s3:?} {s4:?}"
    );
}

/// No stall, no queue, a fixed 10 ms service and a 2 ms round trip: a journey lasts its two
/// thinks and its three exchanges, exactly, and every step is answered 12 ms after its due time.
#[test]
fn a_journeys_time_is_its_thinks_plus_its_exchanges_exactly() {
    let scenario = builtin("healthy", &["healthy.baseline=10ms"]);
    let mut plan = journeys(
        constant(10.0, End::After(ms(1000))),
        64,
        ThreeSteps::model(ms(100)),
    );
    plan.rtt = ms(2);
    let sim = simulate(&scenario, &plan);
    assert_accounted(&sim, &[10]);
    let m = &sim.measurements;
    assert_eq!(m.journeys[0].tally.completed, 10);
    assert_eq!(sim.scheduled, 30);
    let journey = 2 * 100 * MS + 3 * 12 * MS;
    assert_eq!(
        buckets(&m.journeys[0].response),
        expected([journey; 10]),
        "thinks plus exchanges"
    );
    for (label, l) in m.labels.iter().enumerate() {
        assert_eq!(
            buckets(&l.response),
            expected([12 * MS; 10]),
            "step {label}"
        );
        assert_eq!(buckets(&l.send_lag), expected([0; 10]), "step {label}");
    }
    // The last journey, due at 900 ms, ends the run.
    assert_eq!(sim.elapsed, Duration::from_nanos(900 * MS + journey));
}

/// The gate stalls from 500 to 900 ms while journeys arrive every 50 ms. A step that reaches the
/// gate inside the stall leaves at its end, so its response time (from its due time) is what
/// is left of the stall plus nothing else, whichever step it is; the next step's think starts
/// from that late answer. An oracle written from those two rules gives every figure.
#[test]
fn a_stall_is_in_every_step_due_inside_it_and_in_its_journeys_time() {
    let scenario = builtin(
        "hiccup",
        &[
            "hiccup.baseline=10ms",
            "hiccup.at=500ms",
            "hiccup.duration=400ms",
        ],
    );
    let plan = journeys(
        constant(20.0, End::After(ms(1000))),
        64,
        ThreeSteps::model(ms(100)),
    );
    let sim = simulate(&scenario, &plan);
    assert_accounted(&sim, &[20]);
    let (mut steps, mut journey) = (vec![Vec::new(); 3], Vec::new());
    for i in 0..20 {
        let due = 50 * i * MS;
        let mut answered = due;
        for (k, step) in steps.iter_mut().enumerate() {
            let step_due = answered + if k == 0 { 0 } else { 100 * MS };
            let reach = step_due + 10 * MS;
            answered = if (500 * MS..900 * MS).contains(&reach) {
                900 * MS
            } else {
                reach
            };
            step.push(answered - step_due);
        }
        journey.push(answered - due);
    }
    let m = &sim.measurements;
    for (k, want) in steps.iter().enumerate() {
        assert_eq!(
            buckets(&m.labels[k].response),
            expected(want.clone()),
            "step {k}"
        );
        assert_eq!(
            buckets(&m.labels[k].service),
            expected(want.clone()),
            "step {k}"
        );
    }
    assert_eq!(buckets(&m.journeys[0].response), expected(journey));
    // The stall is in the first step of the journeys due inside it, and in later steps too.
    assert_eq!(
        m.labels[0].response.max(),
        m.labels[0].response.highest_equivalent(400 * MS)
    );
    assert!(m.labels[1].response.max() > 300 * MS);
}

/// Two places, journeys due every 50 ms that last 230 ms each (three 10 ms steps, two 100 ms
/// thinks): they queue FIFO for a place, timed from their due time, and the wait is step 1's send
/// lag. Journey k starts when the earlier of the two places frees (0, 50, 230, 280, 460, …), so
/// its wait grows by 130 ms every two journeys. The run ends at 1000 + 315 ms: journeys 0 to 9
/// completed; 10 (thinking before its step 3, not yet due) and 11 (step 2 in flight, sent at
/// 1310 ms) are censored; 12 to 19 never started.
#[test]
fn journeys_beyond_max_journeys_wait_fifo_from_their_due_time() {
    let scenario = builtin("healthy", &["healthy.baseline=10ms"]);
    let mut plan = journeys(
        constant(20.0, End::After(ms(1000))),
        2,
        ThreeSteps::model(ms(100)),
    );
    plan.timeout = ms(315);
    let sim = simulate(&scenario, &plan);
    assert_accounted(&sim, &[20]);
    let end = 1315 * MS;
    assert_eq!(sim.elapsed, Duration::from_nanos(end));
    let mut free = [0u64; 2];
    let starts: Vec<u64> = (0..20)
        .map(|k| {
            let place = if free[0] <= free[1] { 0 } else { 1 };
            let start = free[place].max(50 * k * MS);
            free[place] = start + 230 * MS;
            start
        })
        .collect();
    let m = &sim.measurements;
    let [login, list, open] = [0, 1, 2].map(|k| m.labels[k].tally);
    let journey = m.journeys[0].tally;
    let counts = |t: Tally| (t.completed, t.censored, t.never_sent);
    assert_eq!(counts(journey), (10, 2, 8), "{journey:?}");
    assert_eq!(counts(login), (12, 0, 8), "{login:?}");
    assert_eq!(counts(list), (11, 1, 0), "{list:?}");
    assert_eq!(
        counts(open),
        (10, 0, 0),
        "journey 10's step 3 is not yet due: {open:?}"
    );
    assert_eq!(sim.scheduled, 30 + 2 + 2 + 8);
    let lags = (0..12).map(|k| starts[k as usize] - 50 * k * MS);
    assert_eq!(buckets(&m.labels[0].send_lag), expected(lags));
    assert_eq!(
        m.labels[0].send_lag.max(),
        m.labels[0].send_lag.highest_equivalent(650 * MS)
    );
    // Completed journeys last their wait plus 230 ms; the censored ones count to the end, and
    // so do the ones that never started.
    let times = (0..20).map(|k| {
        let (due, start) = (50 * k * MS, starts[k as usize]);
        if start + 230 * MS <= end {
            start + 230 * MS - due
        } else {
            end - due
        }
    });
    assert_eq!(buckets(&m.journeys[0].response), expected(times));
}

/// Half the answers are 500s. A journey ends at its first failed step, failed with its class,
/// unless its steps go on; then it runs all three and still ends failed.
#[test]
fn a_failed_step_ends_its_journey_unless_it_goes_on() {
    let toml = r#"
        [law]
        kind = "fixed"
        value = "10ms"
        [[faults]]
        kind = "errors"
        percent = 50
        status = 500
    "#;
    let scenario = Scenario::from_toml_str(toml, "half").unwrap();
    for continue_on_error in [false, true] {
        let model = Arc::new(ThreeSteps {
            think: ms(20),
            continue_on_error,
        });
        let sim = simulate(
            &scenario,
            &journeys(constant(100.0, End::After(ms(2000))), 256, model),
        );
        assert_accounted(&sim, &[200]);
        let m = &sim.measurements;
        let (j, s) = (m.journeys[0].tally, [0, 1, 2].map(|k| m.labels[k].tally));
        let http = |t: Tally| t.failed.get(FailureClass::Http5xx);
        assert!(http(s[0]) > 50, "{:?}", s[0]);
        if continue_on_error {
            for t in s {
                assert_eq!(t.accounted(), 200, "every step runs: {t:?}");
            }
            assert_eq!(http(j), 200 - j.completed, "{j:?}");
            assert!(j.completed < s[2].completed, "{j:?} {:?}", s[2]);
        } else {
            assert_eq!(
                j.completed, s[2].completed,
                "a journey completes with its last step"
            );
            assert_eq!(s[1].accounted(), s[0].completed, "{s:?}");
            assert_eq!(s[2].accounted(), s[1].completed, "{s:?}");
            assert_eq!(http(j), http(s[0]) + http(s[1]) + http(s[2]), "{j:?}");
        }
    }
}

/// Everything a simulation produced, hashed (`DefaultHasher::new` has fixed keys), beside a
/// short summary for the failure message.
fn fingerprint(sim: &Simulation) -> (u64, String) {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let all = format!(
        "{} {:?} {:?} {:?} {:?}",
        sim.scheduled, sim.elapsed, sim.measurements, sim.impact, sim.server
    );
    let mut h = DefaultHasher::new();
    all.hash(&mut h);
    let summary = format!(
        "{} steps, {:?}, {:?}",
        sim.scheduled, sim.elapsed, sim.measurements.tally
    );
    (h.finish(), summary)
}

/// The same inputs give the same simulation, bit for bit; another seed of the schedule, the
/// scenario or the model's draws gives another.
#[test]
fn journeys_are_deterministic_and_every_seed_matters() {
    let scenario = |seed: u64| {
        let toml = format!(
            "seed = {seed}\n[law]\nkind = \"exponential\"\nmean = \"10ms\"\n\
             [[faults]]\nkind = \"stall\"\nat = \"500ms\"\nduration = \"300ms\"\n"
        );
        Scenario::from_toml_str(&toml, "drawn").unwrap()
    };
    let sim = |schedule_seed: u64, scenario_seed: u64, model_seed: u64| {
        let plan = journeys(
            poisson(50.0, End::After(ms(1000)), schedule_seed),
            8,
            Arc::new(Drawn { seed: model_seed }),
        );
        fingerprint(&simulate(&scenario(scenario_seed), &plan))
    };
    let base = sim(1, 1, 1);
    assert_eq!(base, sim(1, 1, 1), "the same inputs, the same result");
    assert_ne!(base, sim(2, 1, 1), "the schedule's seed");
    assert_ne!(base, sim(1, 2, 1), "the scenario's seed");
    assert_ne!(base, sim(1, 1, 2), "the model's seed");
}
