//! Turning a finished run into the shared result document.

use std::time::Duration;

use hdrhistogram::Histogram;

use sojourn_core::check::{assess_closed, assess_open_pool, Pool, RateVerdict};
use sojourn_core::placement::{fingerprint, plan_key, Placement};
use sojourn_core::result::{sends_conformance, HistogramSummary, WarmupRequest};
use sojourn_core::sweep::{self, StepRules};
use sojourn_core::{nanos, Mode, RunConfig, RunFacts, RunResult};
use sojourn_core::{Arrival, Measurements, Schedule, Shard};

use crate::run::{Load, Plan, RunReport};

/// What a result says of itself beyond its plan: its label, the target it names, the protocol
/// it spoke and the targets file it sent, and the warm-up to trim. Given whole to [`build`], so
/// that nothing is patched into a result after it is built.
#[derive(Debug, Clone, Default)]
pub struct About {
    /// The run's label in every output.
    pub label: String,
    /// The target as the result shows it (a URL, or a targets file's origin).
    pub target: Option<String>,
    /// `h2` or `h2c` over HTTP/2; none for HTTP/1.1 and in-process calls.
    pub protocol: Option<String>,
    /// The targets file sent, if any.
    pub targets: Option<sojourn_core::TargetsConfig>,
    /// The warm-up to trim.
    pub warmup: Option<WarmupRequest>,
    /// The scenario the target served, when the run knows it (`demo`, `suite`: their own
    /// pathology server), as the result document stores it.
    pub scenario: Option<serde_json::Value>,
    /// Journeys (`--journey`): the file as the result records it, and the names of its steps
    /// and journeys.
    pub journeys: Option<JourneyNames>,
}

/// What a journey run's result names: each step label (`JOURNEY/STEP`) and each journey, with
/// its share of the schedule (its weight over all), in the file's order.
#[derive(Debug, Clone)]
pub struct JourneyNames {
    pub config: sojourn_core::JourneysConfig,
    /// Per step label: its name and its journey's share.
    pub steps: Vec<(String, f64)>,
    /// Per journey: its name and share.
    pub journeys: Vec<(String, f64)>,
}

impl About {
    /// A result labelled `label`, naming no target.
    pub fn labelled(label: &str) -> About {
        About {
            label: label.to_string(),
            ..About::default()
        }
    }
}

/// Describes the plan in the result's terms.
pub fn config(plan: &Plan, about: &About) -> RunConfig {
    let streams = plan.streams.unwrap_or(1).max(1);
    let mut c = RunConfig {
        target: about.target.clone(),
        protocol: about.protocol.clone(),
        targets: about.targets.clone(),
        journeys: about.journeys.as_ref().map(|j| j.config.clone()),
        connections: (plan.connections / streams) as u32,
        streams: plan.streams.map(|s| s as u32),
        threads: Some(plan.worker_count() as u32),
        timeout_ns: Some(nanos(plan.timeout)),
        interval_ns: nanos(plan.interval),
        ..Default::default()
    };
    match &plan.load {
        Load::Open(s) | Load::Paced(s) => c.describe_schedule(s),
        Load::Closed(end) => c.describe_end(*end),
    }
    c
}

/// The open loop's pool as its notes name it: connections, or HTTP/2 stream slots.
fn pool(plan: &Plan) -> Pool {
    match plan.streams {
        Some(streams) => Pool::Streams {
            connections: (plan.connections / streams.max(1)) as u32,
            streams: streams as u32,
        },
        None => Pool::Connections(plan.connections as u32),
    }
}

/// Builds the result document, with the self-check for open loops and the back-filled
/// estimate for closed ones.
pub fn build(plan: &Plan, report: &RunReport, about: &About) -> RunResult {
    let m = &report.measurements;
    let (mode, checks, backfill_interval) = match plan.load {
        Load::Open(_) => {
            let mut checks = assess_open_pool(m, pool(plan));
            if let Some(busy) = report.busiest_worker {
                sojourn_core::check::cpu_bound(&mut checks, m, busy);
            }
            let control = report.control.as_ref().and_then(|c| c.as_ref().ok());
            sojourn_core::check::machine_floor(
                &mut checks,
                m,
                report.hiccup.as_ref(),
                control.map(|c| &c.oversleeps.histogram),
            );
            if let Some(Err(e)) = &report.control {
                checks
                    .notes
                    .push(format!("{e}: nothing is excused as the machine's"));
            }
            if !report.precise_timer {
                checks.notes.push("no timerfd on this system: the pacer used tokio's 1 ms timer, so send lag includes up to 1 ms of timer error".into());
            }
            (Mode::Open, checks, None)
        }
        Load::Paced(_) => (Mode::Paced, sojourn_core::check::assess_paced(m), None),
        Load::Closed(_) => (
            Mode::Closed,
            assess_closed(),
            Some(m.per_connection_interval(report.elapsed, plan.connections)),
        ),
    };
    let facts = RunFacts {
        label: about.label.clone(),
        mode,
        config: config(plan, about),
        scheduled: report.scheduled,
        elapsed: report.elapsed,
        interrupted: report.interrupted,
        checks,
        backfill_interval,
    };
    let mut result = RunResult::build_with_warmup(m, facts, about.warmup);
    let summary =
        |h: &Histogram<u64>| HistogramSummary::of(h, &sojourn_core::record::new_histogram());
    result.histograms.hiccup = report.hiccup.as_ref().map(summary);
    // A run too short for the child to tick once has no floor to show, rather than a floor of 0.
    result.histograms.control_hiccup = report
        .control
        .as_ref()
        .and_then(|c| c.as_ref().ok())
        .map(|c| &c.oversleeps.histogram)
        .filter(|h| !h.is_empty())
        .map(summary);
    result.started_unix_ns = unix_ns(report.started);
    if let Load::Open(schedule) = &plan.load {
        if !plan.shard.is_whole() {
            share_of_the_plan(&mut result, m, plan, schedule);
        }
        // Journeys: the schedule's rate is journeys per second, not the answers it counts.
        if about.journeys.is_none() {
            result.checks.rate = rate_verdict(&result, schedule, plan.shard);
        }
    }
    result.placement = Some(placement(plan, report, &result));
    result.scenario = about.scenario.clone();
    if let Some(targets) = &plan.targets {
        result.targets = per_label(targets, m);
    }
    if let Some(names) = &about.journeys {
        with_journeys(&mut result, names, m, report.elapsed);
    }
    result
}

/// Gives a journey run's result (real or simulated) its steps and journeys, named, and its
/// rate in journeys per second.
pub fn with_journeys(
    result: &mut RunResult,
    names: &JourneyNames,
    m: &Measurements,
    elapsed: Duration,
) {
    let of = |names: &[(String, f64)], records: &[sojourn_core::record::LabelRecord]| {
        names
            .iter()
            .zip(records)
            .map(|((name, share), r)| sojourn_core::TargetResult::of(name, *share, r))
            .collect()
    };
    result.config.journeys = Some(names.config.clone());
    result.steps = of(&names.steps, &m.labels);
    result.journeys = of(&names.journeys, &m.journeys);
    journey_rates(result, elapsed);
}

/// A journey run's rate is journeys per second over the schedule's length (the run's, if it
/// has none): achieved and sent count the journeys that started (a place was free before the
/// end). The validity verdict's rate test reads them.
fn journey_rates(result: &mut RunResult, elapsed: Duration) {
    let target = result.rate.target;
    result.rate = sojourn_core::result::RateSummary::of_journeys(
        &result.config,
        sojourn_core::nanos(elapsed),
        &result.journeys,
    );
    // The schedule's rate as the run states it (a shard's share), not the plan's.
    result.rate.target = target;
    result.statistics.validity = Some(sojourn_core::validity::validity_of(result));
}

/// Each label's own counts and histograms, with the share of the schedule the file gives it.
fn per_label(
    targets: &sojourn_core::targets::Targets,
    m: &Measurements,
) -> Vec<sojourn_core::TargetResult> {
    let mut shares = vec![0.0; targets.labels().len()];
    for t in 0..targets.targets().len() {
        shares[targets.label_of(t)] += targets.share(t);
    }
    targets
        .labels()
        .iter()
        .zip(&shares)
        .zip(&m.labels)
        .map(|((label, share), record)| sojourn_core::TargetResult::of(label, *share, record))
        .collect()
}

/// A shard sends 1/N of the plan: its target rate is that share, and its senders' slots are
/// N times as far apart as its own threads alone would make them.
fn share_of_the_plan(result: &mut RunResult, m: &Measurements, plan: &Plan, schedule: &Schedule) {
    result.rate.target = Some(schedule.rate.split(plan.shard.count as usize).get());
    let senders = plan.shard.slot(0, plan.worker_count()).1;
    result.statistics.conformance = sends_conformance(m, &result.config, senders as u32);
    // The verdict reads the shard's own conformance.
    result.statistics.validity = Some(sojourn_core::validity::validity_of(result));
}

/// The result's mode for a kind of load.
pub fn mode_of(load: &Load) -> Mode {
    match load {
        Load::Open(_) => Mode::Open,
        Load::Paced(_) => Mode::Paced,
        Load::Closed(_) => Mode::Closed,
    }
}

/// The fingerprint the result of `plan` will carry in its placement, whose `config` is what
/// [`config`] makes of the plan plus what the caller adds (the targets): every shard of one
/// plan has the same, so a process can name its plan before it runs.
pub fn plan_fingerprint(plan: &Plan, config: &RunConfig) -> String {
    let key = plan_key(
        mode_of(&plan.load),
        config,
        plan.shard.count,
        plan.start_at.and_then(unix_ns),
    );
    fingerprint(&key)
}

/// Where this run stands in its plan.
fn placement(plan: &Plan, report: &RunReport, result: &RunResult) -> Placement {
    Placement {
        fingerprint: plan_fingerprint(plan, &result.config),
        shard: plan.shard,
        due: due(plan, result),
        start_at_unix_ns: plan.start_at.and_then(unix_ns),
        start_skew_ns: report.start_skew,
    }
}

/// Requests this process was due to schedule, from the plan. Where the plan's count has to be
/// drawn (seeded Poisson arrivals bounded by a duration), a run that reached its end has just
/// drawn exactly those: its scheduled count is taken rather than the streams drawn again.
fn due(plan: &Plan, result: &RunResult) -> u64 {
    let drawn = match &plan.load {
        Load::Open(s) | Load::Paced(s) => s.planned_count().is_none(),
        Load::Closed(_) => false,
    };
    if drawn && !result.interrupted {
        return result.counts.scheduled;
    }
    plan.due().unwrap_or(result.counts.scheduled)
}

fn unix_ns(t: std::time::SystemTime) -> Option<u64> {
    t.duration_since(std::time::UNIX_EPOCH).ok().map(nanos)
}

/// Judges an open loop at its rate as a sweep judges a step, leaving a quarter of it (at most
/// 5 s) out as its settle: who, if anyone, held it back. A ramp or a staged run has no one rate
/// to be judged at, a run cut short no whole schedule, and a run shorter than its settle plus
/// one interval no interval to judge it on.
fn rate_verdict(result: &RunResult, schedule: &Schedule, shard: Shard) -> Option<RateVerdict> {
    if matches!(schedule.arrival, Arrival::Ramp { .. })
        || schedule.stages.is_some()
        || result.interrupted
    {
        return None;
    }
    let length = crate::run::schedule_end(schedule);
    let settle = (length / 4).min(Duration::from_secs(5));
    let interval = Duration::from_nanos(result.config.interval_ns);
    if !holds_a_judged_interval(length, settle, interval) {
        return None;
    }
    let rules = StepRules::new(settle, length);
    let rate = schedule.rate.split(shard.count as usize);
    let step = sweep::evaluate(result, rate, &rules, &[]).ok()?;
    Some(RateVerdict {
        status: step.status,
        why: step.reasons.iter().map(ToString::to_string).collect(),
        advice: step.advice,
    })
}

/// The achieved rate is read from whole intervals that start after the settle and end by the
/// schedule's end: a run too short to hold one has nothing to be judged on (which is not an
/// achieved rate of zero).
fn holds_a_judged_interval(length: Duration, settle: Duration, interval: Duration) -> bool {
    let width = interval.as_nanos().max(1);
    let first = settle.as_nanos().div_ceil(width) * width;
    first + width <= length.as_nanos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_verdict_needs_a_whole_interval_after_the_settle() {
        let ms = Duration::from_millis;
        let table = [
            (
                1_000,
                250,
                1_000,
                false,
                "1 s: the only interval starts before the settle",
            ),
            (2_000, 500, 1_000, true, "2 s: the interval from 1 s to 2 s"),
            (
                1_000,
                250,
                250,
                true,
                "250 ms intervals: 250–500 ms is after the settle",
            ),
            (
                1_500,
                375,
                1_000,
                false,
                "1.5 s: the interval from 1 s would end at 2 s",
            ),
            (10_000, 2_500, 1_000, true, "10 s"),
        ];
        for (length, settle, interval, judged, why) in table {
            assert_eq!(
                holds_a_judged_interval(ms(length), ms(settle), ms(interval)),
                judged,
                "{why}"
            );
        }
    }
}
