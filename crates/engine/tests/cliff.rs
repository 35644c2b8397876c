//! Whose cliff is it? Real sockets, real servers, and a search that must not name the
//! generator's limit or the pool's as the target's: each step is judged as `sojourn sweep`
//! judges it (`sojourn_core::sweep::evaluate`), from the result `sojourn run` would write.
mod common;

use std::time::{Duration, Instant};

use common::{open_plan, transport, Behaviour, TestServer};
use sojourn_core::sweep::{self, Probe, Reason, Search, Status, Step, StepRules};
use sojourn_core::{Rate, RunResult};
use sojourn_engine::{Connection, ExchangeError, HttpTransport, Plan, Transport};

// This binary starts control meters: it serves as one, too.
sojourn_testkit::control_meter_hook!();

const STEP: Duration = Duration::from_secs(2);

/// HTTP with a CPU cost of its own on every request: a generator made the bottleneck on
/// purpose, whatever the target can take.
#[derive(Clone)]
struct Costly {
    inner: HttpTransport,
    cost: Duration,
}

struct CostlyConnection<C> {
    inner: C,
    cost: Duration,
}

impl Transport for Costly {
    type Conn = CostlyConnection<<HttpTransport as Transport>::Conn>;

    async fn connect(&self) -> Result<Self::Conn, sojourn_core::FailureClass> {
        Ok(CostlyConnection {
            inner: self.inner.connect().await?,
            cost: self.cost,
        })
    }
}

impl<C: Connection> Connection for CostlyConnection<C> {
    async fn exchange(
        &mut self,
        ex: &sojourn_engine::transport::Exchange,
    ) -> Result<sojourn_core::Outcome, ExchangeError> {
        let start = Instant::now();
        while start.elapsed() < self.cost {
            std::hint::spin_loop();
        }
        self.inner.exchange(ex).await
    }

    fn reusable(&self) -> bool {
        self.inner.reusable()
    }
}

/// The one worker's CPU time per scheduled request over a step: its CPU share (idle spinning
/// excluded) times the run's length, shared out. `None` if the share is unknown.
fn cpu_per_request(result: &RunResult) -> Option<Duration> {
    let busy = result.checks.busiest_worker?;
    let secs = busy * result.elapsed_ns as f64 / 1e9;
    Some(Duration::from_secs_f64(
        secs / result.counts.scheduled.max(1) as f64,
    ))
}

/// One step at `rate`: run, build the result as `sojourn run` does, judge it as a sweep does.
fn step<T: Transport>(plan_for: impl Fn(Rate) -> Plan, transport: &T, rate: Rate) -> Step {
    judged_step(plan_for, transport, rate).0
}

/// [`step`], with the result it judged.
fn judged_step<T: Transport>(
    plan_for: impl Fn(Rate) -> Plan,
    transport: &T,
    rate: Rate,
) -> (Step, RunResult) {
    let plan = plan_for(rate);
    let report = sojourn_engine::execute(
        &plan,
        transport.clone(),
        tokio_util::sync::CancellationToken::new(),
        sojourn_engine::Progress::new(plan.worker_count()),
    )
    .unwrap();
    let result = sojourn_engine::result::build(
        &plan,
        &report,
        &sojourn_engine::result::About::labelled("step"),
    );
    let rules = StepRules::new(Duration::from_millis(500), STEP);
    let judged = sweep::evaluate(&result, rate, &rules, &[]).unwrap();
    eprintln!(
        "{} req/s: {} {:?} {:?}",
        rate.get(),
        judged.status.label(),
        judged
            .reasons
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        result.checks.rate.as_ref().map(|v| v.status)
    );
    assert_eq!(
        result.checks.rate.as_ref().map(|v| v.status),
        Some(judged.status),
        "run's self-check and the sweep agree"
    );
    (judged, result)
}

fn plan(rate: Rate, connections: usize) -> Plan {
    Plan {
        interval: Duration::from_millis(250),
        timeout: Duration::from_secs(2),
        hiccup: Some(sojourn_engine::HICCUP_TICK),
        control: Some(control_command()),
        ..open_plan(rate.get(), STEP, connections)
    }
}

/// What the generator's own spin costs per request.
const COST: Duration = Duration::from_micros(400);

/// A fast target, and a generator that spends 400 µs of CPU on every request: past ~2,500
/// req/s it cannot keep its schedule. The search stops there and names no cliff.
#[test]
fn a_search_stops_at_the_generators_limit_and_names_no_cliff() {
    let server = TestServer::start(Behaviour::Answer);
    let costly = Costly {
        inner: transport(&server.url()),
        cost: COST,
    };
    let search = Search {
        from: Rate::per_second(300.0).unwrap(),
        to: Rate::per_second(20_000.0).unwrap(),
        resolution: 100.0,
        max_probes: 8,
    };
    let mut steps = Vec::new();
    let out = search
        .run(|rate| {
            let (s, result) = judged_step(|r| plan(r, 32), &costly, rate);
            let probe = s.probe();
            steps.push((s, result));
            Ok::<Probe, ()>(probe)
        })
        .unwrap();
    // The search narrows the generator's limit as it would a cliff, but brackets none.
    assert_eq!(
        out.bracket.failing, None,
        "no cliff of the target's: {out:?}"
    );
    let all: Vec<&Step> = steps.iter().map(|(s, _)| s).collect();
    assert!(
        all.iter()
            .all(|s| matches!(s.status, Status::Ok | Status::GeneratorBound)),
        "every step was OK or the generator's: {all:#?}"
    );
    let (highest_ok, ok_result) = steps
        .iter()
        .filter(|(s, _)| s.status == Status::Ok)
        .max_by(|a, b| a.0.target.total_cmp(&b.0.target))
        .map(|(s, r)| (s.target, r))
        .expect("an OK step below the limit");
    let bound: Vec<&Step> = all
        .iter()
        .copied()
        .filter(|s| s.status == Status::GeneratorBound)
        .collect();
    let lowest = bound
        .iter()
        .min_by(|a, b| a.target.total_cmp(&b.target))
        .expect("a GENERATOR-BOUND step");
    let lowest_bound = lowest.target;
    assert!(highest_ok < lowest_bound, "{all:#?}");
    assert_eq!(out.stopped_at, Some(lowest_bound));
    assert!(bound
        .iter()
        .all(|s| s.advice.as_deref().unwrap().contains("--threads")));
    // The bound step is the generator's for the right reason: its sends fell behind (dispatch
    // lag over the self-check's 1 ms, or connections it was too busy to free), with its worker
    // busy, not merely a busy worker. Busy: on CPU a third of the step or more; a false limit
    // at a rate the worker carries easily shows far less.
    let busy = lowest.reasons.iter().find_map(|r| match r {
        Reason::GeneratorLate {
            dispatch_p99_ns,
            busy,
            ..
        } if *dispatch_p99_ns > sojourn_core::check::BEHIND_P99_NS => *busy,
        Reason::GeneratorSlowToFree { busy, .. } => Some(*busy),
        _ => None,
    });
    assert!(
        busy.is_some_and(|b| b >= 1.0 / 3.0),
        "late sends with the worker busy ({busy:?}): {lowest:#?}"
    );
    // Where the limit lies, from this run's own figures. The highest OK step measured what a
    // request costs the worker (400 µs of spin plus its own work); a due request that finds
    // the worker in another's spin waits for it, so the sends start to fall behind the
    // self-check's 1 ms from about 1 / (400 µs + that cost) on a machine that adds noise of
    // its own, and one whole core, 1 / cost, is about twice that. The bound lies between 0.7×
    // and 2.5× the first (the second, with the bisection's overshoot): a false
    // GENERATOR-BOUND at a rate the worker carries easily falls below, and a generator that
    // is let run far past its CPU lies above.
    let cost = cpu_per_request(ok_result).expect("the worker's CPU share");
    assert!(
        cost >= COST,
        "{cost:?} per request, less than the spin alone"
    );
    let expected = 1.0 / (COST + cost).as_secs_f64();
    let ratio = lowest_bound / expected;
    eprintln!(
        "highest OK {highest_ok} req/s at {cost:?} of CPU a request: 1 / (400 µs + that) is {expected:.0} req/s; lowest bound {lowest_bound} req/s, {ratio:.2}× that"
    );
    assert!(
        (0.7..=2.5).contains(&ratio),
        "the limit at {lowest_bound} req/s is {ratio:.2}× the {expected:.0} req/s of 1 / (400 µs + {cost:?})"
    );
}

/// A target that takes 100 ms a request, and two connections: they carry 20 req/s. At 10 req/s
/// all is well; at 40 the pool, not the target, is full, and the advice says how many
/// connections the rate needs.
#[test]
fn too_few_connections_for_a_slow_target_is_pool_bound() {
    let server = TestServer::start(Behaviour::Slow(Duration::from_millis(100)));
    let http = transport(&server.url());
    let ok = step(|r| plan(r, 2), &http, Rate::per_second(10.0).unwrap());
    assert_eq!(ok.status, Status::Ok, "{:?}", ok.reasons);
    let full = step(|r| plan(r, 2), &http, Rate::per_second(40.0).unwrap());
    assert_eq!(full.status, Status::PoolBound, "{:?}", full.reasons);
    let advice = full.advice.as_deref().unwrap();
    assert!(
        advice.contains("2 connections carry at most 20 req/s")
            || advice.contains("2 connections carry at most 19"),
        "{advice}"
    );
    // 40 req/s × ~100 ms needs 4 connections; the advice leaves a quarter of headroom.
    let at_least: u32 = advice
        .rsplit("at least ")
        .next()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count in {advice:?}"));
    assert!((5..=7).contains(&at_least), "{advice}");
    assert_eq!(full.probe(), Probe::Inconclusive);
}
