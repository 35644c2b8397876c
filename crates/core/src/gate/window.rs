//! The requests an objective is judged on: the whole run, or the intervals of one stage.
use hdrhistogram::Histogram;

use super::judge_percentile_over;
use super::{decoded, empty, judge_errors, judge_percentile, judge_rate, too_few, Arrivals};
use super::{Estimate, GateError, LabelRef, Measure, Objective, Verdict};
use crate::result::{RunResult, StageConfig, TargetResult};
use crate::units::format_ns;

pub(super) struct Window {
    /// `None` when the result carries no histogram (an imported summary).
    response: Option<Histogram<u64>>,
    /// The values in `response` that are only lower bounds.
    censored: Histogram<u64>,
    /// The response times of each interval of the window's timeline, in time order; `None`
    /// when the result carries none to read (a percentile is then judged on the order
    /// statistics alone).
    timeline: Option<Vec<Histogram<u64>>>,
    completed: u64,
    failed: u64,
    /// The count the window was due to send and how it was drawn, or why there is none.
    schedule: Result<(f64, Arrivals), String>,
    /// Why nothing in the window can be judged (the run ended before it).
    not_reached: Option<String>,
}

impl Window {
    pub(super) fn judge(&self, measure: Measure) -> (Option<Estimate>, Verdict) {
        if let Some(reason) = &self.not_reached {
            return (None, too_few(reason.clone()));
        }
        let answered = self.completed.saturating_add(self.failed);
        match measure {
            Measure::Percentile(slo) => match &self.response {
                Some(h) => match &self.timeline {
                    Some(t) => judge_percentile_over(slo, h, &self.censored, t),
                    None => judge_percentile(slo, h, &self.censored),
                },
                None => (None, too_few("the result carries no response histogram (an imported summary), so no percentile interval")),
            },
            Measure::Errors { below } => judge_errors(below, self.failed, answered),
            Measure::Rate { at_least } => match &self.schedule {
                Ok((expected, arrivals)) => judge_rate(at_least, answered, *expected, *arrivals),
                Err(reason) => (None, too_few(reason.clone())),
            },
        }
    }
}

/// The whole run: the summary histograms (less any warm-up trim) and the run's counts. The
/// rate's denominator is the count actually scheduled, exact whatever the arrival law.
pub(super) fn whole(r: &RunResult) -> Window {
    let censored = r.histograms.censored.as_ref().and_then(|c| decoded(&c.hdr));
    let schedule = match r.config.rate {
        Some(_) => Ok((r.counts.scheduled as f64, Arrivals::Exact)),
        None => Err("an unpaced closed loop has no schedule to keep; a rate objective needs a run with --rate".into()),
    };
    // The summary histograms leave out any warm-up trim; so does the timeline they are judged on.
    let from = r.statistics.warmup.map_or(0, |w| w.until_ns);
    let timeline = r
        .intervals
        .iter()
        .filter(|i| i.start_ns >= from)
        .map(|i| decoded(&i.response_hdr))
        .collect::<Option<Vec<_>>>()
        .filter(|t| !t.is_empty());
    Window {
        response: decoded(&r.histograms.response.hdr),
        censored: censored.unwrap_or_else(empty),
        timeline,
        completed: r.counts.completed,
        failed: r.counts.failed.total(),
        schedule,
        not_reached: None,
    }
}

/// A window of a run still going, from the intervals completed so far: the same window as a
/// finished run's, so judged by the same rules.
pub(super) fn live(w: &super::LiveWindow) -> Window {
    let mut response = w.censored.clone();
    for h in &w.timeline {
        add(&mut response, h);
    }
    let mut censored = possible_timeouts(&response, w.timeout_ns);
    add(&mut censored, &w.censored);
    Window {
        response: Some(response),
        censored,
        timeline: (!w.timeline.is_empty()).then(|| w.timeline.clone()),
        completed: w.completed,
        failed: w.failed,
        schedule: w.expected.ok_or_else(|| {
            "an unpaced closed loop has no schedule to keep; a rate objective needs a run with --rate".into()
        }),
        not_reached: None,
    }
}

/// Stage `i` of `stages`: its intervals as [`crate::by_stage`] cuts them (those that start in
/// it; the drain belongs to the last), and its expected count ∫rate = (from + to) / 2 ×
/// duration.
pub(super) fn stage(r: &RunResult, stages: &[StageConfig], i: usize) -> Window {
    let s = &stages[i];
    let mut w = Window {
        response: Some(empty()),
        censored: empty(),
        timeline: Some(Vec::new()),
        completed: 0,
        failed: 0,
        schedule: Ok((expected(r, s), arrivals(r))),
        not_reached: (s.start_ns >= r.elapsed_ns).then(|| {
            format!(
                "the run ended at {}, before stage {} began at {}",
                format_ns(r.elapsed_ns),
                s.title(i),
                format_ns(s.start_ns)
            )
        }),
    };
    let slices = crate::by_stage::stages(r);
    for interval in slices.get(i).map_or(&[][..], |s| &s.intervals[..]) {
        let h = decoded(&interval.response_hdr);
        match (&mut w.response, h) {
            (Some(all), Some(h)) => {
                add(all, &h);
                if let Some(t) = &mut w.timeline {
                    t.push(h);
                }
            }
            _ => w.response = None,
        }
        w.completed += interval.completed;
        w.failed += interval.failed;
    }
    if let Some(h) = &mut w.response {
        w.censored = possible_timeouts(h, r.config.timeout_ns);
        if holds_the_end(r, stages, i) {
            add_unfinished(r, h, &mut w.censored);
        }
    }
    w
}

/// A step, or one or every journey, of a journey run, with its title: its own counts, its
/// whole-run histograms and its own timeline (every journey's added where they cover the same
/// interval). A rate objective on journeys is judged against the journeys scheduled, an exact
/// count; a step has no schedule of its own.
pub(super) fn label(
    r: &RunResult,
    o: &Objective,
    label: &LabelRef,
) -> Result<(Window, String), GateError> {
    if r.steps.is_empty() && r.journeys.is_empty() {
        return Err(GateError::NoJourneys {
            objective: o.text.clone(),
        });
    }
    let parts: Vec<&TargetResult> = match label {
        LabelRef::Step(name) => {
            if let Measure::Rate { .. } = o.measure {
                return Err(GateError::StepRate {
                    objective: o.text.clone(),
                    body: o.text.rsplit(':').next().unwrap_or_default().into(),
                });
            }
            vec![step(r, o, name)?]
        }
        LabelRef::Journey(None) => r.journeys.iter().collect(),
        LabelRef::Journey(Some(name)) => vec![r
            .journeys
            .iter()
            .find(|j| j.label == *name)
            .ok_or_else(|| GateError::UnknownLabel {
                objective: o.text.clone(),
                wanted: format!("journey {name}"),
                kind: "journeys",
                known: names(&r.journeys),
            })?],
    };
    let title = match label {
        LabelRef::Step(_) => format!("step {}", parts[0].label),
        _ => label.to_string(),
    };
    let scheduled = parts.iter().map(|t| t.counts.total()).sum::<u64>();
    let mut w = of_labels(&parts);
    w.schedule = match label {
        LabelRef::Journey(_) => Ok((scheduled as f64, Arrivals::Exact)),
        LabelRef::Step(_) => Err("a step has no schedule of its own".into()),
    };
    Ok((w, title))
}

/// A step by its full label, or by its own name when exactly one journey has a step so named.
fn step<'a>(r: &'a RunResult, o: &Objective, name: &str) -> Result<&'a TargetResult, GateError> {
    if let Some(t) = r.steps.iter().find(|t| t.label == name) {
        return Ok(t);
    }
    let own_name = |t: &&TargetResult| {
        t.label
            .strip_suffix(name)
            .is_some_and(|journey| journey.ends_with('/'))
    };
    let matches: Vec<&TargetResult> = r.steps.iter().filter(own_name).collect();
    match matches[..] {
        [one] => Ok(one),
        [] => Err(GateError::UnknownLabel {
            objective: o.text.clone(),
            wanted: format!("step {name}"),
            kind: "steps",
            known: names(&r.steps),
        }),
        _ => Err(GateError::AmbiguousStep {
            objective: o.text.clone(),
            name: name.into(),
            matches: names(matches.iter().copied()),
            first: matches[0].label.clone(),
        }),
    }
}

fn names<'a>(labels: impl IntoIterator<Item = &'a TargetResult>) -> String {
    let names: Vec<&str> = labels.into_iter().map(|t| t.label.as_str()).collect();
    names.join(", ")
}

/// The labels' parts added: histograms, lower bounds, counts, and their timelines interval by
/// interval. A label carrying no timeline (a result written before labels kept one) leaves an
/// empty one, which holds no independent stretch: its percentiles are not judged.
fn of_labels(parts: &[&TargetResult]) -> Window {
    let mut response = Some(empty());
    let mut censored = empty();
    let mut timeline: std::collections::BTreeMap<u64, Histogram<u64>> = Default::default();
    let (mut completed, mut failed) = (0u64, 0u64);
    for t in parts {
        match (&mut response, decoded(&t.response.hdr)) {
            (Some(all), Some(h)) => add(all, &h),
            _ => response = None,
        }
        if let Some(c) = t.censored.as_ref().and_then(|c| decoded(&c.hdr)) {
            add(&mut censored, &c);
        }
        for iv in &t.intervals {
            if let Some(h) = decoded(&iv.response_hdr) {
                add(timeline.entry(iv.start_ns).or_insert_with(empty), &h);
            }
        }
        completed = completed.saturating_add(t.counts.completed);
        failed = failed.saturating_add(t.counts.failed.total());
    }
    Window {
        response,
        censored,
        timeline: Some(timeline.into_values().collect()),
        completed,
        failed,
        schedule: Err(String::new()),
        not_reached: None,
    }
}

/// The stage the run ended in: requests unanswered at the end were sent there.
fn holds_the_end(r: &RunResult, stages: &[StageConfig], i: usize) -> bool {
    let last_started = stages.iter().rposition(|s| s.start_ns < r.elapsed_ns);
    last_started.unwrap_or(0) == i
}

/// ∫rate over the stage (up to where an interrupted run stopped): the rate moves linearly.
fn expected(r: &RunResult, s: &StageConfig) -> f64 {
    let end = match r.interrupted {
        true => s.end_ns().min(r.elapsed_ns),
        false => s.end_ns(),
    };
    let ran = end.saturating_sub(s.start_ns) as f64;
    let share = match s.duration_ns {
        0 => 0.0,
        d => ran / d as f64,
    };
    let rate_at_end = s.from + (s.to - s.from) * share;
    (s.from + rate_at_end) / 2.0 * ran / 1e9
}

fn arrivals(r: &RunResult) -> Arrivals {
    match r.config.arrival.as_deref() {
        Some("poisson") => Arrivals::Poisson,
        _ => Arrivals::Exact,
    }
}

/// The values in `h` at or above the timeout: the intervals do not say which requests timed
/// out, and a timed-out request's time is only a lower bound, so every value that could be
/// one is treated as one. That only ever widens the interval.
fn possible_timeouts(h: &Histogram<u64>, timeout_ns: Option<u64>) -> Histogram<u64> {
    let mut out = empty();
    let Some(timeout) = timeout_ns else {
        return out;
    };
    for v in h.iter_recorded() {
        let value = v.value_iterated_to();
        if value >= timeout {
            let _ = out.record_n(value, v.count_at_value());
        }
    }
    out
}

/// The requests in flight or never sent at the end are in no interval. They join the stage
/// the run ended in as censored values at the smallest lower bound the run recorded, which is
/// at most each one's own.
fn add_unfinished(r: &RunResult, h: &mut Histogram<u64>, censored: &mut Histogram<u64>) {
    let unfinished = r.counts.censored.saturating_add(r.counts.never_sent);
    if unfinished == 0 {
        return;
    }
    let floor = r
        .histograms
        .censored
        .as_ref()
        .and_then(|c| decoded(&c.hdr))
        .map_or(0, |c| c.min());
    for target in [h, censored] {
        let _ = target.record_n(floor, unfinished);
    }
}

fn add(into: &mut Histogram<u64>, h: &Histogram<u64>) {
    // Both come from sojourn's own recording precision; a stray one that will not add leaves
    // the sum as it was rather than failing the gate.
    let _ = into.add(h);
}
