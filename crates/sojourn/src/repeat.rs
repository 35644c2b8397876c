//! `--repeat N`: N independent repetitions of one run, each with seeds of its own, written as
//! one document whose histograms are the repetitions merged and whose `repetitions` section
//! gives each repetition and a between-run interval for every percentile
//! (see `sojourn_core::repeat` and docs/statistics.md).
//!
//! Repetition 1 runs with the seeds given (or the defaults); repetition k's derive from them
//! ([`sojourn_core::repeat::repetition_seed`]), so a repeated run can itself be repeated exactly.
use std::time::Duration;

use sojourn_core::merge::{repeated, Repeated};
use sojourn_core::repeat::repetition_seed;
use sojourn_core::{nanos, Arrival, RunResult, Schedule};
use sojourn_engine::Load;
use sojourn_scenario::{Parts, Scenario};
use sojourn_sim::{Client, Plan as SimPlan};

use crate::bad_input;

/// How many repetitions, and how long to wait between two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repeat {
    /// At least 1.
    pub count: u32,
    /// Between the end of one repetition's drain and the start of the next: time for the
    /// target's queues, pools and caches to settle, so the next starts from the same state.
    pub pause: Duration,
}

impl Repeat {
    /// `--repeat N` with `--repeat-pause D`; `None` for a single run (no `--repeat`).
    pub fn check(count: Option<u32>, pause: Duration) -> anyhow::Result<Option<Repeat>> {
        match count {
            None => Ok(None),
            Some(0) => Err(bad_input!(
                "--repeat: must be at least 1, got 0 (give the number of repetitions, e.g. --repeat 5)"
            )),
            Some(count) => Ok(Some(Repeat { count, pause })),
        }
    }
}

/// Repetition `k`'s (from 0) schedule: Poisson arrivals reseeded, anything else as it is.
/// Returns the seed it runs with, if any.
pub fn reseeded_schedule(s: &Schedule, k: u32) -> (Schedule, Option<u64>) {
    let mut s = s.clone();
    let seed = match &mut s.arrival {
        Arrival::Poisson { seed } => {
            *seed = repetition_seed(*seed, k);
            Some(*seed)
        }
        Arrival::Constant | Arrival::Ramp { .. } => None,
    };
    (s, seed)
}

/// Repetition `k`'s engine load (see [`reseeded_schedule`]).
pub fn reseeded_load(load: &Load, k: u32) -> (Load, Option<u64>) {
    match load {
        Load::Open(s) => {
            let (s, seed) = reseeded_schedule(s, k);
            (Load::Open(s), seed)
        }
        Load::Paced(s) => {
            let (s, seed) = reseeded_schedule(s, k);
            (Load::Paced(s), seed)
        }
        Load::Closed(end) => (Load::Closed(*end), None),
    }
}

/// Runs `repeat.count` repetitions of `plan`, pausing between them, each by `run_one(k, plan)`
/// with its reseeded plan. A repetition cut short (Ctrl-C, SIGTERM) ends the series, and so
/// does a signal during a pause; the document then holds the repetitions done, the partial one
/// marked interrupted, and is itself marked interrupted.
pub fn run_repeated(
    rt: &tokio::runtime::Runtime,
    plan: &sojourn_engine::Plan,
    repeat: Repeat,
    mut run_one: impl FnMut(u32, &sojourn_engine::Plan) -> anyhow::Result<RunResult>,
) -> anyhow::Result<RunResult> {
    let mut runs = Vec::new();
    let mut stopped = false;
    for k in 0..repeat.count {
        if k > 0 && rt.block_on(pause_interrupted(repeat.pause)) {
            stopped = true;
            break;
        }
        let (load, seed) = reseeded_load(&plan.load, k);
        let plan = sojourn_engine::Plan {
            load,
            ..plan.clone()
        };
        let result = run_one(k, &plan)?;
        let cut = result.interrupted;
        runs.push(Repeated {
            result,
            seed,
            scenario_seed: None,
        });
        if cut {
            break;
        }
    }
    let mut doc = repeated(runs, repeat.count, nanos(repeat.pause))?;
    doc.interrupted |= stopped;
    Ok(doc)
}

/// Waits `pause`; `true` when Ctrl-C or SIGTERM came first.
async fn pause_interrupted(pause: Duration) -> bool {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).ok();
    let terminated = async {
        match term.as_mut() {
            Some(t) => {
                t.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::time::sleep(pause) => false,
        _ = tokio::signal::ctrl_c() => true,
        _ = terminated => true,
    }
}

/// `n` repetitions of `plan` against `scenario` in virtual time, labelled `label`: the
/// document with each repetition and the between-run intervals (none for `n` < 2).
///
/// Repetition 1 runs the scenario's and the schedule's own seeds; repetition k reseeds both
/// (Poisson arrivals, and every random choice of the scenario: its service times, slow
/// shares, errors), so the repetitions are independent replications of one system.
///
/// ```
/// use sojourn_scenario::Scenario;
/// use sojourn_sim::{Client, Plan};
/// use sojourn_core::{Arrival, End, Rate, Schedule};
/// use std::time::Duration;
///
/// let scenario = Scenario::builtin("healthy", &[]).unwrap();
/// let schedule = Schedule::new(
///     Arrival::Poisson { seed: 1 },
///     Rate::per_second(200.0).unwrap(),
///     End::After(Duration::from_secs(2)),
/// )
/// .unwrap();
/// let plan = Plan::new(Client::Open { schedule, connections: 64, threads: 1 });
/// let doc = sojourn::repeat::simulate_repeated(&scenario, &plan, "open", 4).unwrap();
/// let reps = doc.repetitions.as_ref().unwrap();
/// assert_eq!(reps.runs.len(), 4);
/// let p99 = reps.between.as_ref().unwrap().response["99"];
/// assert!(p99.lo <= p99.estimate && p99.estimate <= p99.hi);
/// ```
pub fn simulate_repeated(
    scenario: &Scenario,
    plan: &SimPlan,
    label: &str,
    n: u32,
) -> anyhow::Result<RunResult> {
    if n == 0 {
        return Err(bad_input!("--repeat: must be at least 1, got 0"));
    }
    let runs = (0..n)
        .map(|k| simulate_one(scenario, plan, label, k))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(repeated(runs, n, 0)?)
}

/// Repetition `k` (from 0) of a simulation, with its own seeds.
fn simulate_one(
    scenario: &Scenario,
    plan: &SimPlan,
    label: &str,
    k: u32,
) -> anyhow::Result<Repeated> {
    let scenario_seed = repetition_seed(scenario.seed(), k);
    let scenario = Scenario::new(Parts {
        seed: scenario_seed,
        ..scenario.parts()
    })?;
    let (client, seed) = reseeded_client(&plan.client, k);
    let plan = SimPlan {
        client,
        ..plan.clone()
    };
    let (result, _) = sojourn_sim::run(&scenario, &plan, label);
    Ok(Repeated {
        result,
        seed,
        scenario_seed: Some(scenario_seed),
    })
}

fn reseeded_client(client: &Client, k: u32) -> (Client, Option<u64>) {
    let mut client = client.clone();
    let seed = match &mut client {
        Client::Open { schedule, .. }
        | Client::Tracking { schedule }
        | Client::Paced { schedule, .. }
        | Client::Journeys { schedule, .. } => {
            let (s, seed) = reseeded_schedule(schedule, k);
            *schedule = s;
            seed
        }
        Client::Closed { .. } | Client::ClosedJourneys { .. } => None,
    };
    (client, seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeat_zero_is_refused_naming_the_flag() {
        let e = Repeat::check(Some(0), Duration::ZERO).unwrap_err();
        assert!(e.to_string().starts_with("--repeat: "), "{e}");
        assert_eq!(Repeat::check(None, Duration::ZERO).unwrap(), None);
    }

    #[test]
    fn only_poisson_arrivals_are_reseeded_and_the_first_keeps_its_seed() {
        let rate = sojourn_core::Rate::per_second(10.0).unwrap();
        let end = sojourn_core::End::After(Duration::from_secs(1));
        let poisson = Schedule::new(Arrival::Poisson { seed: 9 }, rate, end).unwrap();
        assert_eq!(reseeded_schedule(&poisson, 0).1, Some(9));
        let (s, seed) = reseeded_schedule(&poisson, 1);
        assert_eq!(seed, Some(repetition_seed(9, 1)));
        assert_eq!(
            s.arrival,
            Arrival::Poisson {
                seed: seed.unwrap()
            }
        );
        let constant = Schedule::new(Arrival::Constant, rate, end).unwrap();
        assert_eq!(reseeded_schedule(&constant, 3), (constant, None));
    }
}
