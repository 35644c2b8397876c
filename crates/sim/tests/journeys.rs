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

fn closed_journeys(end: End, users: usize, threads: usize, model: Arc<dyn JourneyModel>) -> Plan {
    Plan::new(Client::ClosedJourneys {
        end,
        users,
        threads,
        model,
    })
}

/// The closed journey loop has no schedule, so nothing waits and nothing is never sent: every
/// step sent is completed, failed or in flight at the end, and every journey started completes,
/// fails or is censored.
fn assert_closed_accounted(sim: &Simulation, journeys_started: &[u64]) {
    assert_accounted(sim, journeys_started);
    let m = &sim.measurements;
    assert_eq!(m.tally.never_sent, 0, "{:?}", m.tally);
    for j in &m.journeys {
        assert_eq!(j.tally.never_sent, 0, "no journey waits: {:?}", j.tally);
    }
}

/// A count of journeys, split over three lanes as the engine splits it: lane w of 3 runs
/// indices w, w + 3, …, so together they run indices 0 to 100 exactly once, whatever the
/// stalls, errors, resets and timeouts did to their timing, and a count has no clock bound, so
/// nothing is censored. With a duration, the run stops one timeout after it: what runs then is
/// censored, at most one journey and one step per user.
#[test]
fn closed_journeys_account_for_every_step_and_journey() {
    let toml = r#"
        [law]
        kind = "fixed"
        value = "10ms"
        [[faults]]
        kind = "stall"
        at = "1900ms"
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
    let mut kinds = [0u64; 2];
    for index in 0..101 {
        kinds[model.journey_of(index)] += 1;
    }
    let model: Arc<dyn JourneyModel> = Arc::new(model);
    let mut plan = closed_journeys(End::Count(101), 8, 3, model.clone());
    plan.timeout = ms(300);
    let sim = simulate(&scenario, &plan);
    assert_closed_accounted(&sim, &kinds);
    let m = &sim.measurements;
    let (a, b) = (m.journeys[0].tally, m.journeys[1].tally);
    assert_eq!(a.censored + b.censored, 0, "{a:?} {b:?}");
    assert_eq!(m.tally.censored, 0, "{:?}", m.tally);
    assert!(a.failed.get(FailureClass::Http5xx) > 0, "{a:?}");
    assert!(a.failed.get(FailureClass::Timeout) > 0, "{a:?}");

    // The stall holds every step sent from 1.89 s on past the end, so some are in flight then.
    let mut plan = closed_journeys(End::After(ms(2000)), 8, 2, model);
    plan.timeout = ms(300);
    let sim = simulate(&scenario, &plan);
    let m = &sim.measurements;
    let started: Vec<u64> = m.journeys.iter().map(|j| j.tally.accounted()).collect();
    assert_closed_accounted(&sim, &started);
    assert_eq!(sim.elapsed, ms(2300), "the run stops one timeout after 2 s");
    let censored: u64 = m.journeys.iter().map(|j| j.tally.censored).sum();
    assert!((1..=8).contains(&censored), "{censored} journeys censored");
    assert!(m.tally.censored <= censored, "{:?}", m.tally);
}

/// Three users, a fixed 10 ms service and a 2 ms round trip: a journey is its three 12 ms
/// exchanges and two 100 ms thinks (236 ms), each user's journeys run back to back, and every
/// step is answered 12 ms after its send, with no send lag. A duration bounds when a journey may
/// start: one at 472 ms starts under `After(473 ms)` and not under `After(472 ms)`. Under
/// `After(300 ms)` with a 50 ms timeout the run stops at 350 ms: the second journeys (started at
/// 236 ms) have step 2 in flight, sent at 348 ms, and are censored from their send.
#[test]
fn a_closed_journey_is_its_services_plus_its_thinks_from_its_send() {
    let scenario = builtin("healthy", &["healthy.baseline=10ms"]);
    let journey = 2 * 100 * MS + 3 * 12 * MS;
    let run = |end: End, users: usize, timeout: Duration| {
        let mut plan = closed_journeys(end, users, 1, ThreeSteps::model(ms(100)));
        plan.rtt = ms(2);
        plan.timeout = timeout;
        simulate(&scenario, &plan)
    };

    let sim = run(End::Count(6), 3, ms(1000));
    assert_closed_accounted(&sim, &[6]);
    let m = &sim.measurements;
    assert_eq!(m.journeys[0].tally.completed, 6);
    assert_eq!(sim.scheduled, 18);
    assert_eq!(buckets(&m.journeys[0].response), expected([journey; 6]));
    for (label, l) in m.labels.iter().enumerate() {
        assert_eq!(buckets(&l.response), expected([12 * MS; 6]), "step {label}");
        assert_eq!(buckets(&l.service), expected([12 * MS; 6]), "step {label}");
        assert_eq!(buckets(&l.send_lag), expected([0; 6]), "step {label}");
    }
    assert_eq!(buckets(&m.hist.send_lag), expected([0; 18]));
    assert_eq!(sim.elapsed, Duration::from_nanos(2 * journey));

    for (end, rounds) in [(472, 2), (473, 3)] {
        let sim = run(End::After(ms(end)), 2, ms(1000));
        assert_closed_accounted(&sim, &[2 * rounds]);
        let j = sim.measurements.journeys[0].tally;
        assert_eq!(j.completed, 2 * rounds, "After({end} ms): {j:?}");
        assert_eq!(sim.elapsed, Duration::from_nanos(rounds * journey));
    }

    let sim = run(End::After(ms(300)), 2, ms(50));
    assert_closed_accounted(&sim, &[4]);
    let m = &sim.measurements;
    assert_eq!(sim.elapsed, ms(350));
    let counts = |t: Tally| (t.completed, t.censored);
    assert_eq!(counts(m.journeys[0].tally), (2, 2));
    assert_eq!(counts(m.labels[0].tally), (4, 0));
    assert_eq!(counts(m.labels[1].tally), (2, 2));
    assert_eq!(counts(m.labels[2].tally), (2, 0), "step 3 was not yet due");
    assert_eq!(sim.scheduled, 10, "steps sent");
    // Censored from the send (348 ms) and from the journey's first send (236 ms).
    assert_eq!(
        buckets(&m.labels[1].response),
        expected([12 * MS, 12 * MS, 2 * MS, 2 * MS])
    );
    assert_eq!(
        buckets(&m.journeys[0].response),
        expected([journey, journey, 114 * MS, 114 * MS])
    );
}

/// The gate stalls from 2 s to 3 s. 23 users whose journeys last 230 ms (three 10 ms steps, two
/// 100 ms thinks) run 100 journeys a second, the open loop's rate beside them. A user whose
/// step is held waits for it and sends nothing more until the gate opens, so the stall holds
/// exactly one step per user (every user sends well within a second). The open loop's journeys
/// keep arriving, and the stall holds each step that reaches the gate inside it: an oracle of
/// the journeys' steps in virtual time counts them.
#[test]
fn a_stall_holds_one_step_per_closed_user_and_many_open_steps() {
    let scenario = builtin(
        "hiccup",
        &["hiccup.baseline=10ms", "hiccup.at=2s", "hiccup.duration=1s"],
    );
    let (stall, gate_opens) = (2000 * MS..3000 * MS, 3000 * MS);
    let model = ThreeSteps::model(ms(100));
    let users = 23;
    let closed = simulate(
        &scenario,
        &closed_journeys(End::After(ms(5000)), users, 1, model.clone()),
    );
    let open = simulate(
        &scenario,
        &journeys(constant(100.0, End::After(ms(5000))), 1000, model),
    );
    assert_closed_accounted(
        &closed,
        &[closed.measurements.journeys[0].tally.accounted()],
    );
    assert_accounted(&open, &[500]);

    let mut held = 0;
    for i in 0..500u64 {
        let mut answered = 10 * i * MS;
        for k in 0..3 {
            let reach = answered + if k == 0 { 0 } else { 100 * MS } + 10 * MS;
            answered = if stall.contains(&reach) {
                held += 1;
                gate_opens
            } else {
                reach
            };
        }
    }
    assert_eq!(
        held, 122,
        "the oracle: 100 first steps and 11 of each later step"
    );
    let in_stall = |sim: &Simulation| sim.impact.stalls[0].delayed;
    assert_eq!(in_stall(&closed), users as u64, "one step per user");
    assert_eq!(in_stall(&open), held);
    // Timed from the send, the closed loop's held steps waited out the stall once each.
    let m = &closed.measurements;
    let slow: u64 = m
        .labels
        .iter()
        .map(|l| l.response.count_between(11 * MS, u64::MAX))
        .sum();
    assert_eq!(slow, users as u64);
}

/// The same inputs give the same closed journey loop, bit for bit; another seed of the scenario
/// or of the model's draws gives another, and so does another split over lanes.
#[test]
fn closed_journeys_are_deterministic_and_every_seed_matters() {
    let scenario = |seed: u64| {
        let toml = format!(
            "seed = {seed}\n[law]\nkind = \"exponential\"\nmean = \"10ms\"\n\
             [[faults]]\nkind = \"stall\"\nat = \"500ms\"\nduration = \"300ms\"\n"
        );
        Scenario::from_toml_str(&toml, "drawn").unwrap()
    };
    let sim = |scenario_seed: u64, model_seed: u64, threads: usize| {
        let plan = closed_journeys(
            End::After(ms(1000)),
            8,
            threads,
            Arc::new(Drawn { seed: model_seed }),
        );
        fingerprint(&simulate(&scenario(scenario_seed), &plan))
    };
    let base = sim(1, 1, 2);
    assert_eq!(base, sim(1, 1, 2), "the same inputs, the same result");
    assert_ne!(base, sim(2, 1, 2), "the scenario's seed");
    assert_ne!(base, sim(1, 2, 2), "the model's seed");
    assert_ne!(base, sim(1, 1, 3), "the lanes");
}
