//! The simulator's side of the application: the model of an engine plan against a scenario
//! (what `demo` and `suite` print beside the measured runs) and the model's sweep (`sojourn sim
//! --sweep`, and `sojourn sweep --model`), in virtual time.
use std::time::Duration;

use sojourn_core::{End, RunResult, Schedule};
use sojourn_scenario::Scenario;
use sojourn_sim::{Client, Plan as SimPlan};

/// The client side of a simulated sweep.
pub struct ModelPool {
    /// The most connections.
    pub connections: usize,
    /// Worker threads.
    pub threads: usize,
    /// Longest wait for one answer.
    pub timeout: Duration,
    /// The network's round trip, added to every exchange.
    pub rtt: Duration,
}

/// The model's sweep: the same steps as `sojourn sweep`, each a fresh open-loop schedule in
/// virtual time against the scenario.
pub fn model_sweep(
    scenario: &Scenario,
    config: &crate::sweep::Config,
    pool: &ModelPool,
    on_step: impl FnMut(&crate::sweep::Step),
) -> anyhow::Result<crate::sweep::Outcome> {
    crate::sweep::drive(
        config,
        |rate| {
            let schedule = Schedule::new(
                sojourn_core::Arrival::Constant,
                rate,
                End::After(config.step),
            )?;
            let client = Client::Open {
                schedule,
                connections: pool.connections,
                threads: pool.threads,
            };
            let plan = SimPlan {
                timeout: pool.timeout,
                interval: config.interval,
                rtt: pool.rtt,
                ..SimPlan::new(client)
            };
            Ok(sojourn_sim::run(scenario, &plan, &format!("sim sweep {} req/s", rate.get())).0)
        },
        on_step,
    )
}

/// The simulator's prediction for an engine plan against a scenario: the same schedule,
/// connections, threads, timeout and intervals, in virtual time (for `demo`).
pub fn model(
    scenario: &Scenario,
    plan: &sojourn_engine::Plan,
    label: &str,
) -> anyhow::Result<RunResult> {
    let client = match &plan.load {
        sojourn_engine::Load::Open(schedule) => Client::Open {
            schedule: schedule.clone(),
            connections: plan.connections,
            threads: plan.threads,
        },
        sojourn_engine::Load::Closed(end) => Client::Closed {
            end: *end,
            connections: plan.connections,
            threads: plan.threads,
        },
        sojourn_engine::Load::Paced(schedule) => Client::Paced {
            schedule: schedule.clone(),
            connections: plan.connections,
        },
    };
    let sim_plan = SimPlan {
        timeout: plan.timeout,
        interval: plan.interval,
        ..SimPlan::new(client)
    };
    Ok(sojourn_sim::run(scenario, &sim_plan, label).0)
}
