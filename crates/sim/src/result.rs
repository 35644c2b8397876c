//! Turning a simulation into the shared result document, with the engine's conventions: the same
//! config fields, the open loop's self-check, the closed loop's back-filled estimate, and a note
//! that says the numbers come from the model, not from a network.

use sojourn_core::check::{assess_closed, assess_open};
use sojourn_core::record::Measurements;
use sojourn_core::{nanos, Checks, RunConfig, RunFacts, RunResult};
use sojourn_scenario::Scenario;

use crate::{Client, Plan, Simulation};

/// Describes the plan in the result's terms (as `sojourn_engine::result::config` does).
pub fn config(scenario: &Scenario, plan: &Plan) -> RunConfig {
    let mut c = RunConfig {
        target: Some(format!("sim:{}", scenario.name())),
        timeout_ns: Some(nanos(plan.timeout)),
        interval_ns: nanos(plan.interval),
        ..Default::default()
    };
    match &plan.client {
        Client::Open {
            schedule,
            connections,
            threads,
        } => {
            c.describe_schedule(schedule);
            c.connections = u32::try_from(*connections).unwrap_or(u32::MAX);
            c.threads = Some((*threads).clamp(1, (*connections).max(1)) as u32);
        }
        Client::Journeys {
            schedule,
            max_journeys,
            threads,
            ..
        } => {
            c.describe_schedule(schedule);
            c.connections = u32::try_from(*max_journeys).unwrap_or(u32::MAX);
            c.threads = Some((*threads).clamp(1, (*max_journeys).max(1)) as u32);
        }
        Client::Tracking { schedule } => {
            c.describe_schedule(schedule);
            c.connections = 1;
            c.threads = Some(1);
        }
        Client::Paced {
            schedule,
            connections,
        } => {
            c.describe_schedule(schedule);
            c.connections = u32::try_from(*connections).unwrap_or(u32::MAX);
            c.threads = Some(1);
        }
        Client::Closed {
            end,
            connections,
            threads,
        }
        | Client::ClosedJourneys {
            end,
            users: connections,
            threads,
            ..
        } => {
            c.describe_end(*end);
            c.connections = u32::try_from(*connections).unwrap_or(u32::MAX);
            c.threads = Some((*threads).clamp(1, (*connections).max(1)) as u32);
        }
    }
    c
}

/// The result document of a simulation, labelled `label`, with the scenario it ran.
pub fn build_result(scenario: &Scenario, plan: &Plan, sim: &Simulation, label: &str) -> RunResult {
    let m = &sim.measurements;
    let (mut checks, backfill_interval) = match &plan.client {
        Client::Open { connections, .. }
        | Client::Journeys {
            max_journeys: connections,
            ..
        } => (
            assess_open(m, u32::try_from(*connections).unwrap_or(u32::MAX)),
            None,
        ),
        Client::Closed { connections, .. }
        | Client::ClosedJourneys {
            users: connections, ..
        } => (
            assess_closed(),
            Some(m.per_connection_interval(sim.elapsed, *connections)),
        ),
        Client::Tracking { .. } => (tracking_checks(m), None),
        Client::Paced { .. } => (sojourn_core::check::assess_paced(m), None),
    };
    checks.notes.push(simulated_note(scenario, plan));
    let facts = RunFacts {
        label: label.to_string(),
        mode: plan.client.mode(),
        config: config(scenario, plan),
        scheduled: sim.scheduled,
        elapsed: sim.elapsed,
        interrupted: false,
        checks,
        backfill_interval,
    };
    let mut result = RunResult::build(m, facts);
    result.scenario = serde_json::to_value(scenario).ok();
    result
}

/// The tracking client sends late only because it waits for its own previous answer: that is
/// the model (seeds 000 and 004), not a fault of the generator, so there is no generator verdict
/// to give, and the notes say what each view means.
fn tracking_checks(m: &Measurements) -> Checks {
    let sent = m.hist.send_lag.len();
    let late = sent - m.hist.send_lag.count_between(0, 0);
    let mut notes = vec![format!(
        "schedule-tracking client (seeds 000 and 004): one request at a time, each measured from its slot \
         on the schedule. 'response' is the sojourn (slot → answer), 'service' the latency (send → answer), \
         'send lag' the queue wait; {late} of {sent} requests went out late because the previous answer had \
         not come back"
    )];
    if m.tally.never_sent > 0 {
        notes.push(format!(
            "{} slots were due before the end but the client never got round to them: they are counted as \
             never sent and censored at the end (the seeds' scripts simply drop them)",
            m.tally.never_sent
        ));
    }
    Checks::not_applicable(notes)
}

fn simulated_note(scenario: &Scenario, plan: &Plan) -> String {
    let rtt = if plan.rtt.is_zero() {
        "no network".to_string()
    } else {
        format!(
            "a fixed round trip of {}",
            sojourn_core::format_ns(nanos(plan.rtt))
        )
    };
    format!(
        "simulated in virtual time (sojourn sim): scenario {scenario}; {rtt}, no timer error, no CPU limits, \
         so every figure is the model's exact answer"
    )
}
