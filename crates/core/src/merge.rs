//! `sojourn merge`: shard results of one plan into one result, without loss.
//!
//! Every histogram is added bucket by bucket (HdrHistogram addition is exact), the timeline's
//! intervals are added where they cover the same wall-clock window, counts, failure classes and
//! HTTP status counts are summed, each label's (`--targets`) histograms and counts are added to
//! the same label's, and the senders' gap records are pooled into one conformance test. The
//! merged document is an ordinary result.
//!
//! Nothing goes missing silently: the plan says how many requests each shard was due to send,
//! so a shard that is absent, or whose result accounts for fewer, is named in
//! `merged.shards`, and its requests are counted as `not_measured`, keeping
//! `scheduled = completed + failed + censored + never sent + not measured`.
//!
//! The merge is associative and order-independent: a merged result records which shards it
//! holds, so merging it again with the rest gives the same histograms, byte for byte, as merging
//! everything at once (each sum is re-encoded from a fresh histogram, so its bytes depend only
//! on its counts).
use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::check::{Checks, GeneratorVerdict};
use crate::conformance::GapRecord;
use crate::evidence::{conformance_of, steady_state_of, Statistics};
use crate::outcome::FailureCounts;
use crate::placement::{
    fingerprint, key_of, plan_difference, plan_shards, schedule_of, MergeInfo, Placement,
    ShardState, ShardStatus,
};
use crate::record::new_histogram;
use crate::result::{
    decode_base64, encode_base64, Counts, HistogramSet, HistogramSummary, IntervalSummary,
    LabelCounts, LabelInterval, RateSummary, RunConfig, RunResult, TargetResult, SCHEMA,
};
use crate::result::{JourneysConfig, StreamSummary};
use crate::shard::Shard;

mod repeated;
pub use repeated::{repeated, Repeated};

/// One input: where it came from and what it holds.
pub struct Input {
    pub source: String,
    pub result: RunResult,
}

/// Why results cannot be merged. Each names the file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error(
        "nothing to merge: give the shard results (JSON files that `sojourn run --shard` wrote)"
    )]
    Empty,
    #[error("{0}: no placement: it was not written by `sojourn run` of this version (an import, a simulation, or an older result)")]
    NoPlacement(String),
    #[error("{file}: its plan differs in {field}: {theirs} here, {ours} in {first}; merge only shards of one plan, or give --force")]
    PlanDiffers {
        file: String,
        first: String,
        field: String,
        theirs: String,
        ours: String,
    },
    #[error("shard {shard} is given twice: {a} and {b}")]
    Duplicate { shard: u32, a: String, b: String },
    /// A whole run (not `--shard K/N`) beside other results: there is no plan it is a part of.
    #[error("{whole} is a whole run, not a shard (it was not run with --shard K/N), so there is nothing to merge it with {other}: merge adds up the shards of one plan; to compare whole runs, give them to `sojourn report` or `sojourn diff`")]
    NotShards { whole: String, other: String },
    #[error("{file}: {reason}")]
    Damaged { file: String, reason: String },
}

/// Merges `inputs`; `force` adds results of different plans anyway (and says so).
///
/// The merged result is built field by field, each saying how it merges: summed, joined,
/// equal in every shard of a plan, the first input's by definition (with the reason), or
/// recomputed from the merged parts. No field is copied from a shard by default: the literal
/// below, and the ones it calls, list every field without `..`, so a field added to
/// [`RunResult`] (or to a part that merges) does not compile until it says how it merges:
///
/// ```compile_fail
/// # use sojourn_core::result::Counts;
/// // A struct literal without `..` must name every field: `not_measured` is missing.
/// let c = Counts { scheduled: 0, completed: 0, failed: Default::default(), censored: 0,
///                  never_sent: 0, waited_for_connection: 0 };
/// ```
pub fn merge(inputs: Vec<Input>, force: bool) -> Result<RunResult, MergeError> {
    let first = inputs.first().ok_or(MergeError::Empty)?;
    for i in &inputs {
        if i.result.placement.is_none() {
            return Err(MergeError::NoPlacement(i.source.clone()));
        }
    }
    check_shards(&inputs)?;
    let forced = check_plans(&inputs, force)?;
    let shards = plan_shards(&first.result);
    let held = held_shards(&inputs, shards)?;
    let statuses = statuses(&inputs, &held, shards, &first.result)?;
    combine(&inputs, &held, statuses, forced)
}

/// The checked inputs as one result, field by field.
fn combine(
    inputs: &[Input],
    held: &BTreeMap<u32, usize>,
    statuses: Vec<ShardStatus>,
    forced: bool,
) -> Result<RunResult, MergeError> {
    let first = &inputs[0].result;
    let shards = plan_shards(first);
    let config = config(inputs);
    let histograms = histograms(inputs)?;
    let intervals = intervals(inputs)?;
    let counts = counts(inputs, &statuses);
    // The longest shard: the merge lasted until its last shard ended.
    let elapsed_ns = inputs
        .iter()
        .map(|i| i.result.elapsed_ns)
        .max()
        .unwrap_or(0);
    let journeys = labelled(inputs, held, |r| &r.journeys)?;
    let rate = match config.journeys {
        Some(_) => RateSummary::of_journeys(&config, elapsed_ns, &journeys),
        None => rate(&config, elapsed_ns, &counts, &histograms),
    };
    let statistics = statistics(inputs, &config, &intervals, &histograms, shards);
    let mut merged = RunResult {
        // Recomputed: a merge is written in this build's schema.
        schema: SCHEMA.into(),
        // First by definition: the shards of one plan are runs of one tool; the first names it.
        tool: first.tool.clone(),
        // First by definition: each shard is labelled by its own run, and the merge needs one.
        label: first.label.clone(),
        // Equal: the mode is part of the plan every shard was checked against.
        mode: first.mode,
        // Field by field: see `config`.
        config,
        // First by definition: every shard of a plan measures the same target, so the
        // scenario it serves is the same one.
        scenario: first.scenario.clone(),
        // Recomputed from the sums, over the longest shard's time.
        rate,
        // Recomputed: the senders' gaps pooled, the steady state of the merged timeline.
        statistics,
        // Summed; the requests of missing or short shards counted from the plan.
        counts,
        // Summed, bucket by bucket.
        histograms,
        // Summed where they cover the same wall-clock window.
        intervals,
        // Field by field: see `checks`.
        checks: checks(inputs),
        elapsed_ns,
        // Any: if one shard was stopped early, the whole is cut short.
        interrupted: inputs.iter().any(|i| i.result.interrupted),
        // The earliest: the merged timeline starts with the first shard to start.
        started_unix_ns: inputs.iter().filter_map(|i| i.result.started_unix_ns).min(),
        // First by definition: a shard is a run of sojourn's own, never an import, so this
        // is `None` in every input.
        import: first.import.clone(),
        // Recomputed: the merged result stands for the whole plan.
        placement: Some(placement(first, &statuses)),
        // Recomputed: which shards it holds, and which are missing or short.
        merged: Some(MergeInfo {
            partial: statuses.iter().any(|s| s.status != ShardState::Complete),
            shards: statuses,
            forced,
        }),
        // Summed, code by code.
        statuses: status_codes(inputs),
        // Summed label by label.
        targets: targets(inputs, held)?,
        // Summed step by step, and journey by journey.
        steps: labelled(inputs, held, |r| &r.steps)?,
        journeys,
        // None: `--repeat` and `--shard` exclude each other, so no shard is a repeated run.
        repetitions: None,
        // Summed: messages added, first-message histograms added.
        stream: stream(inputs)?,
    }
    // Recomputed: the response percentiles' batch-means intervals, from the merged timeline.
    .with_batch_intervals();
    merged.statistics.validity = Some(crate::validity::validity_of(&merged));
    Ok(merged)
}

/// What was asked for, field by field. Most fields are part of the plan (see [`plan_key`]):
/// equal in every shard, unless `--force` merged other plans, when they are the first input's.
fn config(inputs: &[Input]) -> RunConfig {
    let RunConfig {
        target,
        rate,
        arrival,
        ramp_to,
        seed,
        duration_ns,
        requests,
        connections: _, // summed below
        threads,
        timeout_ns,
        interval_ns,
        stages,
        protocol,
        streams,
        targets,
        journeys,
    } = &inputs[0].result.config;
    RunConfig {
        target: target.clone(),
        rate: *rate,
        arrival: arrival.clone(),
        ramp_to: *ramp_to,
        seed: *seed,
        duration_ns: *duration_ns,
        requests: *requests,
        // Summed: each shard brought its own pool.
        connections: inputs.iter().map(|i| i.result.config.connections).sum(),
        threads: *threads,
        timeout_ns: *timeout_ns,
        interval_ns: *interval_ns,
        stages: stages.clone(),
        // First by definition: one plan speaks one protocol to one target.
        protocol: protocol.clone(),
        // Equal in a paced loop (its slots are cut per stream); otherwise first by
        // definition: a limit per connection, which adding shards does not change.
        streams: *streams,
        // Equal but for the file's path, which may differ from node to node: the first's.
        targets: targets.clone(),
        // The same, with the places summed: each shard ran its own.
        journeys: journeys.clone().map(|j| JourneysConfig {
            max_journeys: inputs
                .iter()
                .filter_map(|i| i.result.config.journeys.as_ref())
                .map(|j| j.max_journeys)
                .sum(),
            ..j
        }),
    }
}

/// A whole run holds all of its plan (shard 0 of 1): beside anything else, it is not a shard.
/// Named before any plan check, since a plan difference would hide the real mistake.
fn check_shards(inputs: &[Input]) -> Result<(), MergeError> {
    let is_whole = |i: &Input| {
        i.result.merged.is_none()
            && i.result
                .placement
                .as_ref()
                .is_some_and(|p| p.shard.is_whole())
    };
    if inputs.len() < 2 {
        return Ok(());
    }
    match inputs.iter().position(is_whole) {
        Some(n) => Err(MergeError::NotShards {
            whole: inputs[n].source.clone(),
            other: inputs[if n == 0 { 1 } else { 0 }].source.clone(),
        }),
        None => Ok(()),
    }
}

/// Every input's plan against the first's; with `force`, whether any differed.
fn check_plans(inputs: &[Input], force: bool) -> Result<bool, MergeError> {
    let first = &inputs[0];
    let mut differed = false;
    for i in &inputs[1..] {
        if let Some(d) = plan_difference(&i.result, &first.result) {
            if !force {
                return Err(MergeError::PlanDiffers {
                    file: i.source.clone(),
                    first: first.source.clone(),
                    field: d.field,
                    theirs: d.theirs,
                    ours: d.ours,
                });
            }
            differed = true;
        }
    }
    Ok(differed)
}

/// Which input holds each shard: a shard result holds its own, a merged one the shards it
/// measured.
fn held_shards(inputs: &[Input], shards: u32) -> Result<BTreeMap<u32, usize>, MergeError> {
    let mut held: BTreeMap<u32, usize> = BTreeMap::new();
    for (n, i) in inputs.iter().enumerate() {
        let mine: Vec<u32> = match (&i.result.merged, &i.result.placement) {
            (Some(m), _) => m
                .shards
                .iter()
                .filter(|s| s.status != ShardState::Missing)
                .map(|s| s.index)
                .collect(),
            (None, Some(p)) => vec![p.shard.index],
            (None, None) => Vec::new(),
        };
        for k in mine.into_iter().filter(|&k| k < shards) {
            if let Some(&other) = held.get(&k) {
                return Err(MergeError::Duplicate {
                    shard: k,
                    a: inputs[other].source.clone(),
                    b: i.source.clone(),
                });
            }
            held.insert(k, n);
        }
    }
    Ok(held)
}

/// Each shard of the plan: complete, short (fewer requests than its due) or missing.
fn statuses(
    inputs: &[Input],
    held: &BTreeMap<u32, usize>,
    shards: u32,
    first: &RunResult,
) -> Result<Vec<ShardStatus>, MergeError> {
    (0..shards)
        .map(|k| match held.get(&k) {
            Some(&n) => Ok(held_status(&inputs[n], k)),
            None => missing_status(first, k, shards),
        })
        .collect()
}

fn held_status(input: &Input, k: u32) -> ShardStatus {
    let r = &input.result;
    if let Some(m) = &r.merged {
        let s = m
            .shards
            .iter()
            .find(|s| s.index == k)
            .expect("held shards are listed");
        return s.clone();
    }
    let p = r.placement.as_ref().expect("checked before");
    let accounted = measured(&r.counts);
    ShardStatus {
        index: k,
        status: if accounted >= p.due {
            ShardState::Complete
        } else {
            ShardState::Short
        },
        due: p.due,
        accounted,
        source: Some(input.source.clone()),
        start_skew_ns: p.start_skew_ns,
    }
}

/// A shard nobody measured: its due count comes from the plan.
fn missing_status(first: &RunResult, k: u32, shards: u32) -> Result<ShardStatus, MergeError> {
    let damaged = |reason: String| MergeError::Damaged {
        file: "the plan".into(),
        reason,
    };
    let schedule = schedule_of(&first.config).map_err(damaged)?;
    let shard = Shard::new(k, shards).map_err(|e| damaged(e.to_string()))?;
    let threads = first.config.threads.unwrap_or(1).max(1) as usize;
    // A paced loop cuts its shard's slots per connection; a merge has summed the pools.
    let slices = match (first.mode, &first.merged) {
        (crate::Mode::Paced, None) => first.config.connections as usize,
        (crate::Mode::Paced, Some(m)) => {
            let held = m
                .shards
                .iter()
                .filter(|s| s.status != ShardState::Missing)
                .count();
            first.config.connections as usize / held.max(1)
        }
        _ => threads,
    };
    Ok(ShardStatus {
        index: k,
        status: ShardState::Missing,
        due: schedule.due_count(shard, slices.max(1)),
        accounted: 0,
        source: None,
        start_skew_ns: None,
    })
}

/// The requests an input's shards measured: its scheduled count without any not-measured
/// requests a merge put in, so that a merge of merges counts each shard once.
fn measured(c: &Counts) -> u64 {
    c.scheduled.saturating_sub(c.not_measured)
}

/// Every count summed, except the requests nobody measured: those come from the plan's
/// shards, not from any input, so that a shard missing from one input and held by another
/// counts once.
fn counts(inputs: &[Input], statuses: &[ShardStatus]) -> Counts {
    let not_measured = statuses
        .iter()
        .map(|s| s.due.saturating_sub(s.accounted))
        .sum();
    let unmeasured = Counts {
        scheduled: not_measured,
        completed: 0,
        failed: FailureCounts::default(),
        censored: 0,
        never_sent: 0,
        waited_for_connection: 0,
        not_measured,
    };
    inputs
        .iter()
        .fold(unmeasured, |total, i| add_counts(total, &i.result.counts))
}

/// One input's counts added to the total, field by field.
fn add_counts(total: Counts, c: &Counts) -> Counts {
    let Counts {
        scheduled,
        completed,
        failed,
        censored,
        never_sent,
        waited_for_connection,
        not_measured,
    } = *c;
    Counts {
        // Summed, without the input's own not-measured requests (the total has the plan's).
        scheduled: total.scheduled + scheduled.saturating_sub(not_measured),
        completed: total.completed + completed,
        failed: failures(total.failed, &failed),
        censored: total.censored + censored,
        never_sent: total.never_sent + never_sent,
        waited_for_connection: total.waited_for_connection + waited_for_connection,
        // Recounted from the plan: already in the total.
        not_measured: total.not_measured,
    }
}

/// Failures added class by class.
fn failures(mut total: FailureCounts, more: &FailureCounts) -> FailureCounts {
    total.merge(more);
    total
}

/// Final answers by HTTP status code, summed over the inputs.
fn status_codes(inputs: &[Input]) -> BTreeMap<u16, u64> {
    let mut total: BTreeMap<u16, u64> = BTreeMap::new();
    for (code, n) in inputs.iter().flat_map(|i| &i.result.statuses) {
        let sum = total.entry(*code).or_default();
        *sum = sum.saturating_add(*n);
    }
    total
}

/// Each label's parts added together. Labels come in the order the shards first name them,
/// shard 0's first (then inputs that hold no shard, as given): that order does not depend on
/// the order of the inputs, and a merge of merges keeps it. A label that only some shards sent
/// is merged from those.
fn targets(inputs: &[Input], held: &BTreeMap<u32, usize>) -> Result<Vec<TargetResult>, MergeError> {
    labelled(inputs, held, |r| &r.targets)
}

/// Per-label parts of every input (targets, journeys' steps, journeys), label by label: in
/// the order the inputs first name them, the shard that holds the lowest slice first.
pub(crate) fn labelled(
    inputs: &[Input],
    held: &BTreeMap<u32, usize>,
    pick: fn(&RunResult) -> &Vec<TargetResult>,
) -> Result<Vec<TargetResult>, MergeError> {
    let first_shard = |n: usize| {
        held.iter()
            .find(|(_, &input)| input == n)
            .map_or(u32::MAX, |(&k, _)| k)
    };
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    order.sort_by_key(|&n| first_shard(n));
    let origin = origin(inputs);
    let mut labels: Vec<Vec<(&str, &TargetResult)>> = Vec::new();
    let mut offsets: Vec<Vec<u64>> = Vec::new();
    for n in order {
        let source = inputs[n].source.as_str();
        let offset = offset(&inputs[n], origin);
        for t in pick(&inputs[n].result) {
            match labels.iter().position(|parts| parts[0].1.label == t.label) {
                Some(at) => {
                    labels[at].push((source, t));
                    offsets[at].push(offset);
                }
                None => {
                    labels.push(vec![(source, t)]);
                    offsets.push(vec![offset]);
                }
            }
        }
    }
    labels
        .iter()
        .zip(&offsets)
        .map(|(parts, offsets)| target(parts, offsets))
        .collect()
}

/// A label's timelines added where they cover the same wall-clock window, as the run's are
/// ([`intervals`]); `offsets` are each part's start after the earliest.
fn label_intervals(
    parts: &[(&str, &TargetResult)],
    offsets: &[u64],
) -> Result<Vec<LabelInterval>, MergeError> {
    // Per window start: the widest part's width, and each part's (source, histogram).
    type Window<'a> = (u64, Vec<(&'a str, &'a str)>);
    let mut windows: BTreeMap<u64, Window> = BTreeMap::new();
    for ((source, t), offset) in parts.iter().zip(offsets) {
        for iv in &t.intervals {
            let window = windows
                .entry(iv.start_ns.saturating_add(*offset))
                .or_default();
            window.0 = window.0.max(iv.duration_ns);
            window.1.push((source, iv.response_hdr.as_str()));
        }
    }
    windows
        .into_iter()
        .map(|(start_ns, (duration_ns, hdrs))| {
            Ok(LabelInterval {
                start_ns,
                duration_ns,
                response_hdr: encode_base64(&sum(&hdrs)?),
            })
        })
        .collect()
}

/// One label from its parts: histograms added, counts summed, percentiles read off the sums.
fn target(parts: &[(&str, &TargetResult)], offsets: &[u64]) -> Result<TargetResult, MergeError> {
    let none = new_histogram();
    let whole = |pick: fn(&TargetResult) -> &HistogramSummary| {
        let hdrs: Vec<(&str, &str)> = parts
            .iter()
            .map(|(source, t)| (*source, pick(t).hdr.as_str()))
            .collect();
        sum(&hdrs)
    };
    let lower_bounds = |pick: fn(&TargetResult) -> Option<&HistogramSummary>| {
        let hdrs: Vec<(&str, &str)> = parts
            .iter()
            .filter_map(|(source, t)| pick(t).map(|c| (*source, c.hdr.as_str())))
            .collect();
        (!hdrs.is_empty()).then(|| sum(&hdrs)).transpose()
    };
    let censored = lower_bounds(|t| t.censored.as_ref())?;
    let censored_service = lower_bounds(|t| t.censored_service.as_ref())?;
    let counts = parts.iter().fold(LabelCounts::default(), |total, (_, t)| {
        add_label_counts(total, &t.counts)
    });
    let first = parts[0].1;
    Ok(TargetResult {
        // Equal: the parts are gathered by label.
        label: first.label.clone(),
        // First by definition: every shard reads the same targets file, so the same weights.
        share: first.share,
        counts,
        response: HistogramSummary::of(
            &whole(|t| &t.response)?,
            censored.as_ref().unwrap_or(&none),
        ),
        service: HistogramSummary::of(
            &whole(|t| &t.service)?,
            censored_service.as_ref().unwrap_or(&none),
        ),
        send_lag: HistogramSummary::of(&whole(|t| &t.send_lag)?, &none),
        censored: censored.map(|c| HistogramSummary::of(&c, &none)),
        censored_service: censored_service.map(|c| HistogramSummary::of(&c, &none)),
        intervals: label_intervals(parts, offsets)?,
    })
}

/// One shard's counts of a label added to the total, field by field.
fn add_label_counts(total: LabelCounts, c: &LabelCounts) -> LabelCounts {
    let LabelCounts {
        completed,
        failed,
        censored,
        never_sent,
    } = *c;
    LabelCounts {
        completed: total.completed.saturating_add(completed),
        failed: failures(total.failed, &failed),
        censored: total.censored.saturating_add(censored),
        never_sent: total.never_sent.saturating_add(never_sent),
    }
}

/// Adds histograms and re-encodes the sum from a fresh histogram, so its bytes depend only
/// on its counts, not on the order of the additions.
fn sum(hdrs: &[(&str, &str)]) -> Result<Histogram<u64>, MergeError> {
    let mut total = new_histogram();
    for (source, hdr) in hdrs {
        let h = decode_base64(hdr).map_err(|e| MergeError::Damaged {
            file: (*source).into(),
            reason: e.to_string(),
        })?;
        total.add(&h).expect("auto-resizing histograms add");
    }
    let mut canonical = new_histogram();
    canonical.add(&total).expect("auto-resizing histograms add");
    Ok(canonical)
}

/// The inputs' server-streaming summaries, summed; `None` when no input has one.
pub(crate) fn stream(inputs: &[Input]) -> Result<Option<StreamSummary>, MergeError> {
    let held: Vec<(&Input, &StreamSummary)> = inputs
        .iter()
        .filter_map(|i| i.result.stream.as_ref().map(|s| (i, s)))
        .collect();
    if held.is_empty() {
        return Ok(None);
    }
    let hdrs: Vec<(&str, &str)> = held
        .iter()
        .map(|(i, s)| (i.source.as_str(), s.first_message.hdr.as_str()))
        .collect();
    let none = crate::record::new_histogram();
    Ok(Some(StreamSummary {
        messages: held.iter().map(|(_, s)| s.messages).sum(),
        first_message: HistogramSummary::of(&sum(&hdrs)?, &none),
    }))
}

fn summed<'a>(
    inputs: &'a [Input],
    pick: impl Fn(&'a HistogramSet) -> Option<&'a HistogramSummary>,
) -> Result<Option<Histogram<u64>>, MergeError> {
    let hdrs: Vec<(&str, &str)> = inputs
        .iter()
        .filter_map(|i| pick(&i.result.histograms).map(|h| (i.source.as_str(), h.hdr.as_str())))
        .collect();
    if hdrs.is_empty() {
        return Ok(None);
    }
    sum(&hdrs).map(Some)
}

fn histograms(inputs: &[Input]) -> Result<HistogramSet, MergeError> {
    let none = new_histogram();
    let censored = summed(inputs, |h| h.censored.as_ref())?;
    let censored_or_none = censored.as_ref().unwrap_or(&none);
    let censored_service = summed(inputs, |h| h.censored_service.as_ref())?;
    let whole = |pick: fn(&HistogramSet) -> &HistogramSummary| {
        summed(inputs, |h| Some(pick(h))).map(|h| h.unwrap_or_else(new_histogram))
    };
    let summary = |h: Option<Histogram<u64>>| h.map(|h| HistogramSummary::of(&h, &none));
    // Every histogram summed; each summary's percentiles and lower bounds read off the sums.
    Ok(HistogramSet {
        response: HistogramSummary::of(&whole(|h| &h.response)?, censored_or_none),
        service: HistogramSummary::of(
            &whole(|h| &h.service)?,
            censored_service.as_ref().unwrap_or(&none),
        ),
        send_lag: HistogramSummary::of(&whole(|h| &h.send_lag)?, &none),
        dispatch_lag: summary(summed(inputs, |h| h.dispatch_lag.as_ref())?),
        censored: summary(censored),
        censored_service: summary(censored_service),
        // None: only an unpaced closed loop estimates it, and one is never sharded (it has
        // no schedule to share out).
        backfilled: None,
        hiccup: summary(summed(inputs, |h| h.hiccup.as_ref())?),
        control_hiccup: summary(summed(inputs, |h| h.control_hiccup.as_ref())?),
    })
}

/// Intervals added where they cover the same wall-clock window: each input's interval starts
/// at its own start plus `start_ns`, measured from the earliest start among them.
fn intervals(inputs: &[Input]) -> Result<Vec<IntervalSummary>, MergeError> {
    let origin = origin(inputs);
    let mut windows: BTreeMap<u64, Vec<(&str, &IntervalSummary)>> = BTreeMap::new();
    for i in inputs {
        let offset = offset(i, origin);
        for iv in &i.result.intervals {
            windows
                .entry(iv.start_ns.saturating_add(offset))
                .or_default()
                .push((i.source.as_str(), iv));
        }
    }
    windows
        .into_iter()
        .map(|(start_ns, parts)| interval(start_ns, &parts))
        .collect()
}

/// The earliest start among the inputs (Unix ns), 0 when none says.
fn origin(inputs: &[Input]) -> u64 {
    inputs
        .iter()
        .filter_map(|i| i.result.started_unix_ns)
        .min()
        .unwrap_or(0)
}

/// How long after `origin` this input started: its intervals' offset on the merged clock.
fn offset(i: &Input, origin: u64) -> u64 {
    i.result.started_unix_ns.map_or(0, |s| s - origin)
}

/// One wall-clock window from the shards' intervals in it, field by field.
fn interval(
    start_ns: u64,
    parts: &[(&str, &IntervalSummary)],
) -> Result<IntervalSummary, MergeError> {
    let (mut responses, mut send_lags) = (Vec::new(), Vec::new());
    let (mut duration, mut completed, mut failed) = (0, 0, 0);
    for (source, part) in parts {
        let IntervalSummary {
            start_ns: _, // aligned on the wall clock: `start_ns` above
            duration_ns,
            completed: c,
            failed: f,
            // Read off the summed histograms by `summarise`.
            p50: _,
            p99: _,
            max: _,
            send_lag_p99: _,
            response_hdr,
            send_lag_hdr,
        } = part;
        duration = duration.max(*duration_ns);
        completed += c;
        failed += f;
        responses.push((*source, response_hdr.as_str()));
        send_lags.push((*source, send_lag_hdr.as_str()));
    }
    Ok(IntervalSummary::summarise(
        start_ns,
        duration,
        (completed, failed),
        &sum(&responses)?,
        &sum(&send_lags)?,
    ))
}

/// Recomputed from the merged counts and histograms over the merged elapsed time.
fn rate(config: &RunConfig, elapsed_ns: u64, c: &Counts, h: &HistogramSet) -> RateSummary {
    let secs = (elapsed_ns as f64 / 1e9).max(1e-9);
    RateSummary {
        // Equal: the rate is part of the plan.
        target: config.rate,
        achieved: (c.completed + c.failed.total()) as f64 / secs,
        sent: h.send_lag.count as f64 / secs,
    }
}

/// The worst generator verdict of any shard, and every shard's notes, marked with it.
fn checks(inputs: &[Input]) -> Checks {
    let rank = |g: GeneratorVerdict| match g {
        GeneratorVerdict::Behind => 2,
        GeneratorVerdict::Ok => 1,
        GeneratorVerdict::NotApplicable => 0,
    };
    let generator = inputs
        .iter()
        .map(|i| i.result.checks.generator)
        .max_by_key(|g| rank(*g))
        .unwrap_or(GeneratorVerdict::NotApplicable);
    Checks {
        // The worst.
        generator,
        // Any: one shard's pool holding requests back held the plan's back.
        pool_bound: inputs.iter().any(|i| i.result.checks.pool_bound),
        // The busiest of the busiest.
        busiest_worker: inputs
            .iter()
            .filter_map(|i| i.result.checks.busiest_worker)
            .reduce(f64::max),
        // None: each shard's verdict judged its own share of the rate, not the plan's.
        rate: None,
        // Joined, each marked with its shard's source.
        notes: inputs
            .iter()
            .flat_map(|i| {
                i.result
                    .checks
                    .notes
                    .iter()
                    .map(move |n| format!("{}: {n}", i.source))
            })
            .collect(),
    }
}

/// The senders' gap records pooled into one conformance test, and the steady-state test on
/// the merged timeline.
fn statistics(
    inputs: &[Input],
    config: &RunConfig,
    intervals: &[IntervalSummary],
    histograms: &HistogramSet,
    shards: u32,
) -> Statistics {
    let medians: Vec<(Duration, f64)> = intervals
        .iter()
        .filter(|i| i.answered() > 0)
        .map(|i| (Duration::from_nanos(i.start_ns), i.p50 as f64))
        .collect();
    Statistics {
        conformance: pooled_conformance(inputs, config, histograms, shards),
        steady_state: steady_state_of(&medians),
        // None: a shard's warm-up trim cut its own histograms; the merge has no trim of its own.
        warmup: None,
        // Judged on the merged document once it is whole (see `merge`).
        validity: None,
    }
}

fn pooled_conformance(
    inputs: &[Input],
    c: &RunConfig,
    histograms: &HistogramSet,
    shards: u32,
) -> Option<crate::evidence::Conformance> {
    let mut gaps = GapRecord::new();
    for i in inputs {
        let doc = i.result.statistics.conformance.as_ref()?.record.as_ref()?;
        gaps.merge(&GapRecord::from_doc(doc).ok()?);
    }
    let senders = f64::from(c.threads.unwrap_or(1).max(1)) * f64::from(shards);
    let rate = c.rate?;
    let lane = Duration::from_secs_f64(senders / rate.max(1e-9));
    let lag_p99 = histograms.send_lag.percentiles.get(99.0).unwrap_or(0);
    conformance_of(c.arrival.as_deref()?, &gaps, lane, lag_p99)
}

/// The merged result stands for the whole plan.
fn placement(first: &RunResult, statuses: &[ShardStatus]) -> Placement {
    let p = first.placement.as_ref().expect("checked before");
    Placement {
        fingerprint: fingerprint(&key_of(first)),
        shard: Shard::WHOLE,
        due: statuses.iter().map(|s| s.due).sum(),
        start_at_unix_ns: p.start_at_unix_ns,
        start_skew_ns: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::plan_key;
    use crate::record::{LabelRecord, Recorder, Stamps};
    use crate::result::{RunConfig, RunFacts};
    use crate::schedule::{Arrival, End, Schedule};
    use crate::units::Rate;
    use crate::{Mode, Outcome};

    const START: u64 = 1_700_000_000_000_000_000;

    fn config() -> RunConfig {
        RunConfig {
            rate: Some(300.0),
            arrival: Some("constant".into()),
            duration_ns: Some(2_000_000_000),
            connections: 16,
            threads: Some(1),
            timeout_ns: Some(1_000_000_000),
            interval_ns: 1_000_000_000,
            ..Default::default()
        }
    }

    /// The labels the shards send, by the parity of a request's index in its shard: shard 1
    /// sends `GET /b` and `GET /c`, the others `GET /a` and `GET /b`. So `GET /c` is one
    /// shard's alone, and shard 1 alone would name `GET /b` first.
    const LABELS: [&str; 3] = ["GET /a", "GET /b", "GET /c"];

    fn label_of(k: u32, i: usize) -> usize {
        if k == 1 {
            1 + i % 2
        } else {
            i % 2
        }
    }

    /// `GET /b` is answered 204, the others 200.
    fn status_of(label: usize) -> u16 {
        if label == 1 {
            204
        } else {
            200
        }
    }

    /// Shard `k` of `n` of 300 req/s for 2 s: each request answered in 1 ms, shard 1 also
    /// stalls 200 ms a second into the run. `stop` cuts it short after that many requests.
    fn shard(k: u32, n: u32, stop: Option<usize>) -> Input {
        labelled_shard(k, n, stop, false).0
    }

    /// [`shard`], recording each request in its label too, and also returning the labels'
    /// records; `censor`: the shard's last request is still in flight when it ends.
    fn labelled_shard(
        k: u32,
        n: u32,
        stop: Option<usize>,
        censor: bool,
    ) -> (Input, Vec<LabelRecord>) {
        let schedule = Schedule::new(
            Arrival::Constant,
            Rate::per_second(300.0).unwrap(),
            End::After(Duration::from_secs(2)),
        )
        .unwrap();
        let s = Shard::new(k, n).unwrap();
        let (w, ws) = s.slot(0, 1);
        // Labels with timelines, as a journey run's steps keep them.
        let mut rec = Recorder::with_journeys(Duration::from_secs(1), LABELS.len(), 0);
        let mut scheduled = 0;
        let dues: Vec<_> = schedule
            .slice(w, ws)
            .take(stop.unwrap_or(usize::MAX))
            .collect();
        let end = Duration::from_millis(2001);
        for (i, due) in dues.iter().enumerate() {
            rec.record_send_at(schedule.expected_by(due.at) / ws as f64);
            let stall = k == 1 && (1000..1200).contains(&due.at.as_millis());
            let took = if stall {
                Duration::from_millis(1200) - due.at
            } else {
                Duration::ZERO
            };
            let label = label_of(k, i);
            let stamps = Stamps::on_time(due.at);
            scheduled += 1;
            if censor && i + 1 == dues.len() {
                rec.record_in_flight(&stamps, end);
                let l = rec.label(label).unwrap();
                l.record_unfinished(due.at, Some(due.at), end);
                continue;
            }
            let done = due.at + took + Duration::from_millis(1);
            let outcome = Outcome::of_status(status_of(label));
            rec.record(&stamps, done, outcome);
            rec.record_status(status_of(label));
            rec.label(label).unwrap().record(&stamps, done, outcome);
        }
        let m = Recorder::merge_all([rec]);
        let facts = RunFacts {
            label: format!("shard {k}"),
            mode: Mode::Open,
            config: config(),
            scheduled,
            elapsed: end,
            interrupted: stop.is_some(),
            checks: Checks::not_applicable(vec![format!("note of {k}")]),
            backfill_interval: None,
        };
        let mut result = RunResult::build(&m, facts);
        result.targets = LABELS
            .iter()
            .zip(&m.labels)
            .filter(|(_, r)| r.tally.accounted() > 0)
            .map(|(label, r)| TargetResult::of(label, 0.5, r))
            .collect();
        result.started_unix_ns = Some(START);
        let key = plan_key(Mode::Open, &result.config, n, Some(START));
        result.placement = Some(Placement {
            fingerprint: fingerprint(&key),
            shard: s,
            due: schedule.due_count(s, 1),
            start_at_unix_ns: Some(START),
            start_skew_ns: Some(1_000 * i64::from(k)),
        });
        let input = Input {
            source: format!("shard-{k}.json"),
            result,
        };
        (input, m.labels)
    }

    fn shards(n: u32) -> Vec<Input> {
        (0..n).map(|k| shard(k, n, None)).collect()
    }

    fn again(r: &RunResult, source: &str) -> Input {
        Input {
            source: source.into(),
            result: r.clone(),
        }
    }

    #[test]
    fn all_shards_make_the_whole_plan() {
        let m = merge(shards(3), false).unwrap();
        assert_eq!(m.counts.scheduled, 600);
        assert_eq!(m.counts.completed, 600);
        assert_eq!(m.counts.not_measured, 0);
        assert_eq!(m.counts.unaccounted(), 0);
        assert_eq!(m.histograms.response.count, 600);
        let info = m.merged.as_ref().unwrap();
        assert!(!info.partial);
        assert!(info
            .shards
            .iter()
            .all(|s| s.status == ShardState::Complete && s.due == 200));
        assert_eq!(info.shards[2].start_skew_ns, Some(2_000));
        // The stall of shard 1 lands in the second second of the merged timeline, for all.
        assert_eq!(m.intervals.len(), 2);
        assert!(
            m.intervals[1].max >= 190_000_000,
            "{:?}",
            m.intervals[1].max
        );
        assert_eq!(m.intervals.iter().map(|i| i.completed).sum::<u64>(), 600);
        // The pooled conformance test saw every sender's gaps.
        let c = m.statistics.conformance.as_ref().unwrap();
        assert_eq!(c.gaps, 600 - 3);
        assert_eq!(m.placement.as_ref().unwrap().due, 600);
        assert_eq!(m.checks.notes.len(), 3);
    }

    /// Each shard's meters are added: its own process's and its control process's, each into
    /// its own histogram.
    #[test]
    fn the_meters_merge_each_into_its_own() {
        let meter = |ns: u64, n: u64| {
            let mut h = new_histogram();
            h.record_n(ns, n).unwrap();
            Some(HistogramSummary::of(&h, &new_histogram()))
        };
        let mut inputs = shards(2);
        for (k, i) in inputs.iter_mut().enumerate() {
            i.result.histograms.hiccup = meter(5_000_000, 100 + k as u64);
            i.result.histograms.control_hiccup = meter(50_000, 1000 + k as u64);
        }
        let m = merge(inputs, false).unwrap();
        let (own, control) = (
            m.histograms.hiccup.as_ref().unwrap(),
            m.histograms.control_hiccup.as_ref().unwrap(),
        );
        assert_eq!((own.count, control.count), (201, 2001));
        assert!(
            control.max < 60_000 && own.max > 4_000_000,
            "{control:?} {own:?}"
        );
    }

    #[test]
    fn merging_is_associative_and_order_independent() {
        let all = merge(shards(3), false).unwrap();
        let mut parts = shards(3);
        let c = parts.pop().unwrap();
        let ab = merge(parts, false).unwrap();
        let nested = merge(vec![again(&ab, "ab.json"), c], false).unwrap();
        let c_first = merge(vec![shard(2, 3, None), again(&ab, "ab.json")], false).unwrap();
        // Shard 1's merge named first: its first label, GET /b, must still not come first.
        let bc = merge(vec![shard(1, 3, None), shard(2, 3, None)], false).unwrap();
        let a_bc = merge(vec![again(&bc, "bc.json"), shard(0, 3, None)], false).unwrap();
        let mut reversed = shards(3);
        reversed.reverse();
        let reversed = merge(reversed, false).unwrap();
        for other in [&nested, &c_first, &a_bc, &reversed] {
            assert_eq!(other.histograms, all.histograms);
            assert_eq!(other.intervals, all.intervals);
            assert_eq!(other.counts, all.counts);
            assert_eq!(other.statuses, all.statuses);
            assert_eq!(other.targets, all.targets);
            assert!(!other.merged.as_ref().unwrap().partial);
        }
        for other in [&nested, &c_first, &a_bc] {
            assert_eq!(
                serde_json::to_string(&other.histograms).unwrap(),
                serde_json::to_string(&all.histograms).unwrap(),
                "byte for byte"
            );
            assert_eq!(
                serde_json::to_string(&(&other.targets, &other.statuses)).unwrap(),
                serde_json::to_string(&(&all.targets, &all.statuses)).unwrap(),
                "byte for byte"
            );
        }
        let labels: Vec<&str> = all.targets.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, LABELS, "shard 0's labels first, then shard 1's own");
    }

    /// Where the shards differ, the merge takes no field from shard 0 unless it says so: each
    /// is summed, the worst, the longest, the earliest or any. Here shard 0 holds the value
    /// the merge must not keep for every such field.
    #[test]
    fn no_field_is_shard_zeros_where_the_shards_differ() {
        let mut inputs = shards(2);
        let later = &mut inputs[1].result;
        later.config.connections = 5;
        later.counts.waited_for_connection = 7;
        later.elapsed_ns += 500_000_000;
        later.interrupted = true;
        later.started_unix_ns = Some(START - 1_000);
        later.checks.generator = GeneratorVerdict::Behind;
        later.checks.pool_bound = true;
        later.checks.busiest_worker = Some(0.9);
        inputs[0].result.checks.busiest_worker = Some(0.2);
        let m = merge(inputs, false).unwrap();
        assert_eq!(m.config.connections, 16 + 5, "summed");
        assert_eq!(m.counts.waited_for_connection, 7, "summed");
        assert_eq!(m.elapsed_ns, 2_501_000_000, "the longest");
        assert!(m.interrupted, "any");
        assert_eq!(m.started_unix_ns, Some(START - 1_000), "the earliest");
        assert_eq!(m.checks.generator, GeneratorVerdict::Behind, "the worst");
        assert!(m.checks.pool_bound, "any");
        assert_eq!(m.checks.busiest_worker, Some(0.9), "the busiest");
        let achieved = m.counts.completed as f64 / 2.501;
        assert!(
            (m.rate.achieved - achieved).abs() < 1e-6,
            "recomputed over the longest: {:?}",
            m.rate
        );
        assert_eq!(m.schema, SCHEMA);
    }

    /// A summary with its carried histogram left out: two encodings of one histogram may
    /// differ in bytes, so the histograms are compared decoded.
    fn without_hdr(h: &HistogramSummary) -> HistogramSummary {
        HistogramSummary {
            hdr: String::new(),
            ..h.clone()
        }
    }

    /// Each label merged from the shards' documents is what one record of all its requests
    /// would have said: the same counts, histograms, percentiles and lower bounds. A label
    /// only one shard sent comes through, and the status counts add up.
    #[test]
    fn labels_and_statuses_merge_as_if_recorded_together() {
        let parts: Vec<(Input, Vec<LabelRecord>)> =
            (0..3).map(|k| labelled_shard(k, 3, None, k == 1)).collect();
        let mut together = vec![LabelRecord::with_timeline(Duration::from_secs(1)); LABELS.len()];
        for (_, records) in &parts {
            for (whole, part) in together.iter_mut().zip(records) {
                whole.merge(part);
            }
        }
        let mut expected_statuses: BTreeMap<u16, u64> = BTreeMap::new();
        for (input, _) in &parts {
            for (code, n) in &input.result.statuses {
                *expected_statuses.entry(*code).or_default() += n;
            }
        }
        let m = merge(parts.into_iter().map(|(i, _)| i).collect(), false).unwrap();
        assert_eq!(m.targets.len(), LABELS.len());
        for (t, (label, record)) in m.targets.iter().zip(LABELS.iter().zip(&together)) {
            let want = TargetResult::of(label, 0.5, record);
            assert_eq!(t.counts, want.counts, "{label}");
            for (got, want) in [
                (&t.response, &want.response),
                (&t.service, &want.service),
                (&t.send_lag, &want.send_lag),
            ] {
                assert_eq!(without_hdr(got), without_hdr(want), "{label}");
                assert_eq!(got.histogram().unwrap(), want.histogram().unwrap());
            }
            assert_eq!(
                t.censored.as_ref().map(without_hdr),
                want.censored.as_ref().map(without_hdr),
                "{label}"
            );
            assert_eq!(
                t.censored_service.as_ref().map(without_hdr),
                want.censored_service.as_ref().map(without_hdr),
                "{label}"
            );
            // The label's timeline, window by window: the stall of shard 1 lands in the same
            // second as it would have recorded together.
            let windows = |t: &TargetResult| -> Vec<(u64, Histogram<u64>)> {
                let at = |i: &LabelInterval| decode_base64(&i.response_hdr).unwrap();
                t.intervals.iter().map(|i| (i.start_ns, at(i))).collect()
            };
            assert!(!want.intervals.is_empty(), "{label}");
            assert_eq!(windows(t), windows(&want), "{label}");
        }
        let censored: Vec<&TargetResult> =
            m.targets.iter().filter(|t| t.counts.censored > 0).collect();
        assert_eq!(censored.len(), 1, "shard 1's one request in flight");
        assert!(
            censored[0].response.at(100.0).unwrap().lower_bound,
            "its label's max is a lower bound after the merge too"
        );
        assert!(
            censored[0].service.at(100.0).unwrap().lower_bound,
            "and so is its service max: it was sent and never answered"
        );
        assert!(
            m.histograms.service.at(100.0).unwrap().lower_bound,
            "the run's service max, summed from the shards, is a lower bound"
        );
        assert_eq!(m.histograms.censored_service.as_ref().unwrap().count, 1);
        let labelled: u64 = m.targets.iter().map(|t| t.counts.total()).sum();
        assert_eq!(
            labelled, m.counts.scheduled,
            "every request is in one label"
        );
        assert_eq!(m.statuses, expected_statuses);
        assert_eq!(
            m.statuses.values().sum::<u64>(),
            m.counts.completed,
            "every answer has its status"
        );
    }

    /// Shards that sent their targets in another order, or another number of them, are not
    /// one plan.
    #[test]
    fn shards_of_other_targets_are_refused() {
        let picks = |order: &str| crate::result::TargetsConfig {
            file: "targets.txt".into(),
            count: 3,
            order: order.into(),
            seed: None,
        };
        let mut inputs = shards(2);
        inputs[0].result.config.targets = Some(picks("round_robin"));
        inputs[1].result.config.targets = Some(crate::result::TargetsConfig {
            file: "/elsewhere/targets.txt".into(),
            ..picks("round_robin")
        });
        assert!(merge(inputs, false).is_ok(), "the path alone may differ");
        let mut inputs = shards(2);
        inputs[0].result.config.targets = Some(picks("round_robin"));
        inputs[1].result.config.targets = Some(picks("random"));
        let e = merge(inputs, false).unwrap_err();
        assert!(
            matches!(&e, MergeError::PlanDiffers { field, .. } if field == "--targets"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_or_short_shard_is_named_and_counted_not_measured() {
        let mut inputs = shards(4);
        inputs.remove(2);
        inputs[2] = shard(3, 4, Some(40));
        let m = merge(inputs, false).unwrap();
        let info = m.merged.as_ref().unwrap();
        assert!(info.partial);
        let states: Vec<ShardState> = info.shards.iter().map(|s| s.status).collect();
        use ShardState::*;
        assert_eq!(states, [Complete, Complete, Missing, Short]);
        assert_eq!(info.shards[2].due, 150, "from the plan: 600 / 4");
        assert_eq!(info.shards[3].accounted, 40);
        assert_eq!(m.counts.not_measured, 150 + 110);
        assert_eq!(
            m.counts.scheduled, 600,
            "the plan's total, never a smaller one"
        );
        assert_eq!(m.counts.unaccounted(), 0);
        // A partial merge, with its shard table and not-measured count, is a valid document.
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../schema/result.schema.json")).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let doc = serde_json::to_value(&m).unwrap();
        assert!(doc["merged"]["shards"][2]["status"] == "missing");
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:#?}");
        let mut broken = doc.clone();
        broken["merged"]["shards"][2]["status"] = serde_json::json!("lost");
        assert!(!validator.is_valid(&broken), "the schema knows the states");
        // Merging in the missing shard later completes the plan.
        let m2 = merge(vec![again(&m, "partial.json"), shard(2, 4, None)], false).unwrap();
        assert_eq!(m2.counts.not_measured, 110, "shard 3 is still short");
        assert_eq!(m2.merged.unwrap().shards[2].status, Complete);
    }

    #[test]
    fn other_plans_and_duplicates_are_refused() {
        let mut inputs = shards(2);
        inputs[1].result.config.duration_ns = Some(3_000_000_000);
        let e = merge(inputs, false).unwrap_err();
        assert!(
            matches!(&e, MergeError::PlanDiffers { field, file, .. } if field == "--duration" && file == "shard-1.json"),
            "{e}"
        );
        let mut inputs = shards(2);
        inputs[1].result.config.duration_ns = Some(3_000_000_000);
        assert!(merge(inputs, true).unwrap().merged.unwrap().forced);
        let e = merge(vec![shard(0, 2, None), shard(0, 2, None)], false).unwrap_err();
        assert!(matches!(e, MergeError::Duplicate { shard: 0, .. }), "{e}");
        let mut plain = shard(0, 1, None);
        plain.result.placement = None;
        assert!(matches!(
            merge(vec![plain], false),
            Err(MergeError::NoPlacement(_))
        ));
        assert!(matches!(merge(vec![], false), Err(MergeError::Empty)));
    }

    /// Shard `k` of `n`, read from `source`, changed by `edit`.
    fn named(source: &str, k: u32, n: u32, edit: fn(&mut RunResult)) -> Input {
        let mut i = shard(k, n, None);
        i.source = source.into();
        edit(&mut i.result);
        i
    }

    fn as_is(_: &mut RunResult) {}

    /// What a user reads when results cannot be merged: the difference in the words they ran
    /// with, and whole runs called whole runs, not duplicate shards.
    #[test]
    fn refusals_name_the_difference_in_the_users_terms() {
        let closed = |r: &mut RunResult| {
            r.mode = crate::Mode::Closed;
            r.config.rate = None;
            r.config.arrival = None;
        };
        let cases: Vec<(&str, Vec<Input>, &str)> = vec![
            (
                "an open and a closed loop differ in their arrival too: the mode is named",
                vec![named("a.json", 0, 2, as_is), named("b.json", 1, 2, closed)],
                "b.json: its plan differs in mode: closed loop here, open loop in a.json; merge only shards of one plan, or give --force",
            ),
            (
                "a field of the key reads as its flag, its value in the flag's units",
                vec![
                    named("a.json", 0, 2, as_is),
                    named("b.json", 1, 2, |r| r.config.duration_ns = Some(3_000_000_000)),
                ],
                "b.json: its plan differs in --duration: 3.000 s here, 2.000 s in a.json; merge only shards of one plan, or give --force",
            ),
            (
                "threads",
                vec![
                    named("a.json", 0, 2, as_is),
                    named("b.json", 1, 2, |r| r.config.threads = Some(4)),
                ],
                "b.json: its plan differs in --threads: 4 here, 1 in a.json; merge only shards of one plan, or give --force",
            ),
            (
                "a rate, with its unit",
                vec![
                    named("a.json", 0, 2, as_is),
                    named("b.json", 1, 2, |r| r.config.rate = Some(450.0)),
                ],
                "b.json: its plan differs in --rate: 450 req/s here, 300 req/s in a.json; merge only shards of one plan, or give --force",
            ),
            (
                "shards of plans cut differently",
                vec![named("a.json", 0, 2, as_is), named("b.json", 1, 3, as_is)],
                "b.json: its plan differs in the shard count (N of --shard K/N): 3 here, 2 in a.json; merge only shards of one plan, or give --force",
            ),
            (
                "a start that was not set on one of them",
                vec![
                    named("a.json", 0, 2, as_is),
                    named("b.json", 1, 2, |r| {
                        r.placement.as_mut().unwrap().start_at_unix_ns = None
                    }),
                ],
                "b.json: its plan differs in --start-at: not set here, 1700000000 (Unix seconds) in a.json; merge only shards of one plan, or give --force",
            ),
            (
                "two ordinary runs are whole runs, not shard 0 twice",
                vec![named("a.json", 0, 1, as_is), named("b.json", 0, 1, as_is)],
                "a.json is a whole run, not a shard (it was not run with --shard K/N), so there is nothing to merge it with b.json: merge adds up the shards of one plan; to compare whole runs, give them to `sojourn report` or `sojourn diff`",
            ),
            (
                "a whole run beside a shard of another plan is still a whole run",
                vec![named("a.json", 0, 2, as_is), named("b.json", 0, 1, closed)],
                "b.json is a whole run, not a shard (it was not run with --shard K/N), so there is nothing to merge it with a.json: merge adds up the shards of one plan; to compare whole runs, give them to `sojourn report` or `sojourn diff`",
            ),
            (
                "one shard given twice",
                vec![named("a.json", 0, 2, as_is), named("b.json", 0, 2, as_is)],
                "shard 0 is given twice: a.json and b.json",
            ),
        ];
        for (why, inputs, want) in cases {
            let e = merge(inputs, false).expect_err(why);
            assert_eq!(e.to_string(), want, "{why}");
        }
        let one = vec![named("a.json", 0, 1, as_is)];
        assert!(merge(one, false).is_ok(), "one whole run is its own plan");
    }
}
