//! Turning what a tool reported into a [`RunResult`]: per-request samples go through the same
//! recorder as sojourn's own runs; summaries fill only what the tool printed.
use std::path::PathBuf;
use std::time::Duration;

use sojourn_core::check::assess_closed;
use sojourn_core::record::LabelRecord;
use sojourn_core::result::{
    Counts, Detail, HistogramSet, HistogramSummary, ImportInfo, Percentiles, RateSummary, Tool,
};
use sojourn_core::{
    Checks, FailureClass, FailureCounts, Mode, Outcome, Recorder, RunFacts, RunResult, Stamps,
    TargetResult,
};

use crate::{ImportContext, ImportError, PeerTool};

/// One request as the tool logged it. Times are nanoseconds on the tool's own clock (any
/// epoch); only differences matter.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    /// When it was due: the tool's own start stamp.
    pub start_ns: u64,
    /// How long after that it was actually sent, when the tool says (oha's latency
    /// correction); 0 otherwise.
    pub queued_ns: u64,
    /// From due to done.
    pub latency_ns: u64,
    pub outcome: Outcome,
    /// Its step, an index into [`PerRequest::labels`], when the tool names steps.
    pub label: Option<usize>,
}

impl Sample {
    pub fn new(start_ns: u64, latency_ns: u64, outcome: Outcome) -> Sample {
        Sample {
            start_ns,
            queued_ns: 0,
            latency_ns,
            outcome,
            label: None,
        }
    }
}

/// Everything a per-request importer gathered.
#[derive(Debug, Default)]
pub(crate) struct PerRequest {
    pub samples: Vec<Sample>,
    /// Requests the tool meant to send but dropped: when they were due, on the samples' clock,
    /// and how many were due then.
    pub never_sent: Vec<(u64, u64)>,
    /// Failures the tool counted without any timing (e.g. hey's transport errors, absent from
    /// its CSV): in the counts, not in the histograms.
    pub untimed_failures: FailureCounts,
    /// Requests still in flight when the tool stopped, counted without times (oha's "aborted
    /// due to deadline").
    pub untimed_censored: u64,
    /// Requests answered OK that the tool counted but kept no times for (ghz past its cap on
    /// details).
    pub untimed_completed: u64,
    /// Step names (`JOURNEY/STEP`), when the tool logged each request's step: the result gets
    /// one `steps` entry per name, in this order. Empty otherwise.
    pub labels: Vec<String>,
    pub notes: Vec<String>,
}

fn interval(ctx: &ImportContext) -> Duration {
    match ctx.config.interval_ns {
        0 => Duration::from_secs(1),
        ns => Duration::from_nanos(ns),
    }
}

/// Replays every sample through a recorder, due when the tool started it.
pub(crate) fn per_request(
    tool: PeerTool,
    mut data: PerRequest,
    ctx: &ImportContext,
    sources: &[PathBuf],
) -> Result<RunResult, ImportError> {
    // Sorted by finish time, the recorder's timeline keeps only its newest intervals live.
    data.samples
        .sort_by_key(|s| (s.start_ns.saturating_add(s.latency_ns), s.start_ns));
    let origin = data
        .samples
        .iter()
        .map(|s| s.start_ns)
        .chain(data.never_sent.iter().map(|&(due, _)| due))
        .min()
        .unwrap_or(0);
    let at = |ns: u64| Duration::from_nanos(ns.saturating_sub(origin));
    let end = data
        .samples
        .iter()
        .map(|s| at(s.start_ns.saturating_add(s.latency_ns)))
        .chain(data.never_sent.iter().map(|&(due, _)| at(due)))
        .max()
        .unwrap_or_default();
    let mut recorder = Recorder::with_labels(interval(ctx), data.labels.len());
    for s in &data.samples {
        replay(&mut recorder, s, at(s.start_ns));
    }
    for &(due, n) in &data.never_sent {
        recorder.record_never_sent_n(at(due), at(due), end, n);
    }
    let mut m = Recorder::merge_all([recorder]);
    m.tally.failed.merge(&data.untimed_failures);
    m.tally.censored = m.tally.censored.saturating_add(data.untimed_censored);
    m.tally.completed = m.tally.completed.saturating_add(data.untimed_completed);
    let t = &m.tally;
    let scheduled = checked_total(
        tool,
        sources,
        &[t.completed, t.failed.total(), t.censored, t.never_sent],
    )?;
    let facts = RunFacts {
        label: ctx.label.clone(),
        mode: ctx.mode,
        config: ctx.config.clone(),
        scheduled,
        elapsed: end,
        interrupted: false,
        checks: checks(tool, ctx.mode),
        backfill_interval: None,
    };
    let mut result = RunResult::build(&m, facts);
    result.steps = steps(&data.labels, &m.labels);
    // The tool's own lateness before its start stamp is unknown, not zero.
    result.histograms.dispatch_lag = None;
    data.notes.push(format!(
        "each request is due when {tool} stamped it: any lateness of {tool} before its own \
         stamp is invisible"
    ));
    if data.samples.is_empty() {
        data.notes
            .push(format!("{tool} recorded no timed requests in these files"));
    }
    finish(
        &mut result,
        tool,
        ctx,
        sources,
        Detail::PerRequest,
        data.notes,
    );
    Ok(result)
}

/// One sample into the run's record and its step's, due at `start` (the tool's stamp).
fn replay(recorder: &mut Recorder, s: &Sample, start: Duration) {
    let done = start + Duration::from_nanos(s.latency_ns);
    let queued = Duration::from_nanos(s.queued_ns);
    let stamps = Stamps {
        sent: start + queued,
        waited_for_connection: !queued.is_zero(),
        ..Stamps::on_time(start)
    };
    // A refused connect reached nothing: no service time, no send.
    let unsent = s.outcome == Outcome::Failed(FailureClass::Connect);
    if unsent {
        recorder.record_unsent_failure(start, start, done, FailureClass::Connect);
    } else {
        recorder.record(&stamps, done, s.outcome);
    }
    let Some(step) = s.label.and_then(|l| recorder.label(l)) else {
        return;
    };
    if unsent {
        step.record_unsent_failure(start, done, FailureClass::Connect);
    } else {
        step.record(&stamps, done, s.outcome);
    }
}

/// One `steps` entry per step name, its share the part of the logged requests it has.
fn steps(names: &[String], records: &[LabelRecord]) -> Vec<TargetResult> {
    let all = records
        .iter()
        .fold(0u64, |sum, r| sum.saturating_add(r.tally.accounted()));
    names
        .iter()
        .zip(records)
        .map(|(name, r)| {
            let share = r.tally.accounted() as f64 / all.max(1) as f64;
            TargetResult::of(name, share, r)
        })
        .collect()
}

/// The number of requests that `counts` (which together account for every request) add up
/// to, or an error naming the files when the sum does not fit: no run has 2^64 requests, so
/// the files are damaged. (A count that saturated at `u64::MAX` on the way fails here too.)
fn checked_total(tool: PeerTool, sources: &[PathBuf], counts: &[u64]) -> Result<u64, ImportError> {
    let total = counts
        .iter()
        .try_fold(0u64, |sum, &n| sum.checked_add(n))
        .filter(|&t| t < u64::MAX);
    total.ok_or_else(|| {
        let names: Vec<String> = sources.iter().map(|p| p.display().to_string()).collect();
        ImportError::Files {
            tool,
            message: format!(
                "{}: the request counts add up to more than {}; damaged output?",
                names.join(", "),
                u64::MAX - 1
            ),
        }
    })
}

/// An imported run cannot be self-checked: the tool's own lateness is not in its output.
fn checks(tool: PeerTool, mode: Mode) -> Checks {
    if mode == Mode::Closed {
        return assess_closed();
    }
    Checks::not_applicable(vec![format!(
        "imported from {tool}: whether {tool} itself sent on time is not in its output, so it \
         cannot be checked"
    )])
}

fn finish(
    result: &mut RunResult,
    tool: PeerTool,
    ctx: &ImportContext,
    sources: &[PathBuf],
    detail: Detail,
    notes: Vec<String>,
) {
    result.tool = Tool {
        name: tool.name().to_string(),
        version: ctx.version.clone(),
    };
    result.import = Some(ImportInfo {
        detail,
        source: sources.iter().map(|p| p.display().to_string()).collect(),
        notes,
    });
    // Judged on the tool's figures as they now stand: a summary's counts and rate replace the
    // empty recording the result was built from.
    result.statistics.validity = Some(sojourn_core::validity::validity_of(result));
}

/// The latency distribution a tool printed, in nanoseconds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Latency {
    /// (percentile 0–100, value) pairs exactly as printed.
    pub percentiles: Vec<(f64, u64)>,
    pub count: u64,
    pub min: Option<u64>,
    pub max: Option<u64>,
    pub mean: Option<f64>,
    pub stdev: Option<f64>,
}

impl Latency {
    fn summary(mut self) -> HistogramSummary {
        self.percentiles.sort_by(|a, b| a.0.total_cmp(&b.0));
        // A tool may print the same percentile twice (rounded); the later line is the finer one.
        self.percentiles.reverse();
        self.percentiles.dedup_by(|a, b| (a.0 - b.0).abs() < 1e-9);
        self.percentiles.reverse();
        HistogramSummary {
            unit: "ns".into(),
            count: self.count,
            min: self.min.unwrap_or(0),
            max: self.max.unwrap_or(0),
            mean: self
                .mean
                .filter(|m| m.is_finite() && *m >= 0.0)
                .unwrap_or(0.0),
            stdev: self
                .stdev
                .filter(|s| s.is_finite() && *s >= 0.0)
                .unwrap_or(0.0),
            percentiles: Percentiles(self.percentiles),
            lower_bounds: Vec::new(),
            // No histogram, so no interval: only the tool's own printed values.
            ci: None,
            batch_ci: None,
            thin: Default::default(),
            hdr: String::new(),
        }
    }
}

/// Everything a summary importer gathered.
#[derive(Debug, Default)]
pub(crate) struct Summary {
    pub latency: Latency,
    pub completed: u64,
    pub failed: FailureCounts,
    /// In flight when the tool stopped.
    pub censored: u64,
    pub never_sent: u64,
    pub elapsed: Duration,
    pub notes: Vec<String>,
}

fn empty_histogram() -> HistogramSummary {
    Latency::default().summary()
}

/// A result from a tool's printed summary only.
pub(crate) fn summary(
    tool: PeerTool,
    mut s: Summary,
    ctx: &ImportContext,
    sources: &[PathBuf],
) -> Result<RunResult, ImportError> {
    let facts = RunFacts {
        label: ctx.label.clone(),
        mode: ctx.mode,
        config: ctx.config.clone(),
        scheduled: 0,
        elapsed: s.elapsed,
        interrupted: false,
        checks: checks(tool, ctx.mode),
        backfill_interval: None,
    };
    let mut result = RunResult::build(&Recorder::merge_all([]), facts);
    let answered = checked_total(tool, sources, &[s.completed, s.failed.total()])?;
    result.counts = Counts {
        scheduled: checked_total(tool, sources, &[answered, s.censored, s.never_sent])?,
        completed: s.completed,
        failed: s.failed,
        censored: s.censored,
        never_sent: s.never_sent,
        waited_for_connection: 0,
        not_measured: 0,
    };
    let secs = s.elapsed.as_secs_f64().max(1e-9);
    result.rate = RateSummary {
        target: ctx.config.rate,
        achieved: answered as f64 / secs,
        sent: (answered + s.censored) as f64 / secs,
    };
    result.histograms = HistogramSet {
        response: s.latency.summary(),
        service: empty_histogram(),
        send_lag: empty_histogram(),
        dispatch_lag: None,
        censored: None,
        censored_service: None,
        backfilled: None,
        hiccup: None,
        control_hiccup: None,
    };
    s.notes.push(format!(
        "summary only: {tool}'s latency is in `response`; service time and send lag are unknown"
    ));
    finish(&mut result, tool, ctx, sources, Detail::Summary, s.notes);
    Ok(result)
}

/// Failures whose cause the tool does not give are counted in one class, with a note saying so.
pub(crate) fn unknown_cause(
    failed: &mut FailureCounts,
    notes: &mut Vec<String>,
    tool: PeerTool,
    n: u64,
    why: &str,
) {
    if n == 0 {
        return;
    }
    failed.add_n(FailureClass::HttpOther, n);
    notes.push(format!(
        "{tool} {why}: its {n} failed requests are counted as http_other"
    ));
}

/// The class of a transport error from its message (Go's net/http and similar wording).
pub(crate) fn error_class(message: &str) -> FailureClass {
    let m = message.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| m.contains(w));
    if has(&[
        "connection refused",
        "connectionrefused",
        "newconnectionerror",
        "dial",
        "no such host",
        "handshake",
    ]) {
        FailureClass::Connect
    } else if has(&["timeout", "deadline exceeded", "timed out"]) {
        FailureClass::Timeout
    } else if has(&["malformed", "protocol", "parse"]) {
        FailureClass::Protocol
    } else {
        FailureClass::Io
    }
}
