//! Service-level gates for CI: objectives such as `p99<200ms`, `errors<0.1%` and `rate>=99%`,
//! each for the whole run, for one stage (`3:p99<200ms`, `hold:errors<0.1%`), or for one step
//! or the journeys of a journey run (`step:checkout:p99<300ms`, `journey:p99<2s`), and a verdict
//! for each: met, breached, or too few samples to judge, with the measured value's 95%
//! confidence interval and whether the verdict is significant (the whole interval on one side
//! of the limit).
//!
//! A gate that cannot judge an objective fails it: a p99.9 objective on 500 requests, or an
//! error budget of 0.1% on 200 answers, must not pass only because the sample was too small to
//! show the breach. docs/gates.md explains every rule.
use std::fmt;
use std::str::FromStr;

use hdrhistogram::Histogram;

use crate::confidence::{percentile_interval, sample_warning, LEVEL};
use crate::evidence::interval_text;
use crate::record::{bound_at, new_histogram};
use crate::result::{decode_base64, RunResult, StageConfig};
use crate::sweep::{Slo, SloError};
use crate::units::{format_ns, nanos};

/// The normal quantile of a two-sided interval at [`LEVEL`] (95%).
const Z: f64 = 1.959_963_984_540_054;

/// One objective as given to `--slo`.
#[derive(Debug, Clone, PartialEq)]
pub struct Objective {
    /// As written, whitespace removed: the objective's name in tables and JUnit files.
    pub text: String,
    /// The stage it judges; `None` for the whole run.
    pub stage: Option<StageRef>,
    /// The step or journeys it judges (a journey run); `None` for the whole run.
    pub label: Option<LabelRef>,
    pub measure: Measure,
}

/// A part of a journey run an objective judges on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelRef {
    /// `step:NAME:`: a step by its label (`JOURNEY/STEP`), or by its own name when only one
    /// journey has a step of that name.
    Step(String),
    /// `journey:`: every journey together (`None`), or `journey:NAME:` one of them, each timed
    /// from its due time to the end of its last step.
    Journey(Option<String>),
}

impl fmt::Display for LabelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabelRef::Step(name) => write!(f, "step {name}"),
            LabelRef::Journey(Some(name)) => write!(f, "journey {name}"),
            LabelRef::Journey(None) => f.write_str("journeys"),
        }
    }
}

/// What an objective measures and the limit it sets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Measure {
    /// A response-time percentile below a limit: `p99<200ms`.
    Percentile(Slo),
    /// Failed over answered (completed + failed) below this share: `errors<0.1%` is 0.001.
    Errors { below: f64 },
    /// Answered over scheduled (a stage: over its expected count) at least this share:
    /// `rate>=99%` is 0.99.
    Rate { at_least: f64 },
}

/// A stage, by its number from 1 or by its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StageRef {
    Number(usize),
    Name(String),
}

impl fmt::Display for StageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StageRef::Number(n) => write!(f, "{n}"),
            StageRef::Name(name) => f.write_str(name),
        }
    }
}

/// Why a text is not an objective. Each message says what was wrong and shows a good form.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ObjectiveError {
    #[error("expected an objective like p99<200ms, errors<0.1% or rate>=99%, optionally for one stage as 3:p99<200ms or hold:errors<0.1%; got {0:?}")]
    Shape(String),
    /// The percentile form, as `sweep --slo` parses it.
    #[error("{0}; e.g. p99<200ms")]
    Percentile(#[from] SloError),
    #[error(
        "an error budget is a percentage above 0 and at most 100, like errors<0.1%; got {0:?}"
    )]
    ErrorShare(String),
    #[error("a rate objective is a percentage above 0 and at most 100 of the scheduled requests, like rate>=99%; got {0:?}")]
    RateShare(String),
    #[error("before ':' give a stage's number from 1 or its name, like 3:p99<200ms or hold:p99<200ms; got {0:?}")]
    Stage(String),
    #[error("a step objective names the step, like step:checkout:p99<300ms or step:shop/checkout:errors<1%; got {0:?}")]
    Step(String),
}

impl FromStr for Objective {
    type Err = ObjectiveError;
    fn from_str(text: &str) -> Result<Objective, ObjectiveError> {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let (stage, label, body) = match split_label(&compact, text)? {
            Some((label, body)) => (None, Some(label), body),
            None => match compact.split_once(':') {
                Some((stage, body)) => (Some(parse_stage(stage)?), None, body),
                None => (None, None, compact.as_str()),
            },
        };
        let measure = parse_measure(body).ok_or_else(|| ObjectiveError::Shape(text.into()))??;
        Ok(Objective {
            text: compact.clone(),
            stage,
            label,
            measure,
        })
    }
}

impl Objective {
    /// The objective as a sweep step judges it: a response-time percentile over the whole
    /// step. `None` for error and rate objectives and for one stage or journey step, which a
    /// sweep's steps do not have.
    pub fn step_slo(&self) -> Option<Slo> {
        match (&self.stage, &self.label, self.measure) {
            (None, None, Measure::Percentile(slo)) => Some(slo),
            _ => None,
        }
    }
}

/// `step:NAME:BODY` and `journey:[NAME:]BODY`, split; `None` for anything else (a stage or
/// the whole run). A measure holds no ':', so the name runs to the last one and may hold ':'
/// itself.
fn split_label<'a>(
    compact: &'a str,
    text: &str,
) -> Result<Option<(LabelRef, &'a str)>, ObjectiveError> {
    if let Some(rest) = compact.strip_prefix("step:") {
        return match rest.rsplit_once(':') {
            Some((name, body)) if !name.is_empty() => Ok(Some((LabelRef::Step(name.into()), body))),
            _ => Err(ObjectiveError::Step(text.into())),
        };
    }
    let Some(rest) = compact.strip_prefix("journey:") else {
        return Ok(None);
    };
    Ok(Some(match rest.rsplit_once(':') {
        Some((name, body)) if !name.is_empty() => (LabelRef::Journey(Some(name.into())), body),
        Some((_, body)) => (LabelRef::Journey(None), body),
        None => (LabelRef::Journey(None), rest),
    }))
}

fn parse_stage(text: &str) -> Result<StageRef, ObjectiveError> {
    let bad = || ObjectiveError::Stage(text.into());
    if text.is_empty() {
        return Err(bad());
    }
    if text.chars().all(|c| c.is_ascii_digit()) {
        return match text.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(StageRef::Number(n)),
            _ => Err(bad()),
        };
    }
    Ok(StageRef::Name(text.into()))
}

/// The measure named at the start of `body`, parsed; `None` when no measure is named there.
fn parse_measure(body: &str) -> Option<Result<Measure, ObjectiveError>> {
    let lower = body.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("errors") {
        let share = rest.strip_prefix('<').and_then(parse_percent);
        return Some(
            share
                .map(|below| Measure::Errors { below })
                .ok_or_else(|| ObjectiveError::ErrorShare(body.into())),
        );
    }
    if let Some(rest) = lower.strip_prefix("rate") {
        let share = rest.strip_prefix(">=").and_then(parse_percent);
        return Some(
            share
                .map(|at_least| Measure::Rate { at_least })
                .ok_or_else(|| ObjectiveError::RateShare(body.into())),
        );
    }
    if lower.starts_with('p') {
        return Some(
            body.parse::<Slo>()
                .map(Measure::Percentile)
                .map_err(Into::into),
        );
    }
    None
}

/// `0.1%` as 0.001: a percentage above 0 and at most 100.
fn parse_percent(text: &str) -> Option<f64> {
    let number: f64 = text.strip_suffix('%')?.parse().ok()?;
    (number > 0.0 && number <= 100.0).then_some(number / 100.0)
}

/// An objective that names a stage the result does not have.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GateError {
    #[error("{objective}: the run has no stages, so there is no stage {stage}; drop the \"{stage}:\" prefix to judge the whole run")]
    NoStages { objective: String, stage: String },
    #[error("{objective}: there is no stage {stage}; the run's stages are {known}")]
    UnknownStage {
        objective: String,
        stage: String,
        known: String,
    },
    #[error("{objective}: the run followed no journey file, so it has no steps or journeys; judge the whole run without the \"step:\" or \"journey:\" prefix")]
    NoJourneys { objective: String },
    #[error("{objective}: there is no {wanted}; the run's {kind} are {known}")]
    UnknownLabel {
        objective: String,
        wanted: String,
        kind: &'static str,
        known: String,
    },
    #[error("{objective}: several steps are named {name} ({matches}); name one in full, like step:{first}:…")]
    AmbiguousStep {
        objective: String,
        name: String,
        matches: String,
        first: String,
    },
    #[error("{objective}: a step has no schedule of its own (it is due when its journey reaches it); judge the rate of the journeys instead, like journey:{body}")]
    StepRate { objective: String, body: String },
}

/// The index (from 0) of the stage `r` names among `stages`.
pub fn resolve_stage(
    objective: &Objective,
    r: &StageRef,
    stages: Option<&[StageConfig]>,
) -> Result<usize, GateError> {
    let stages = stages
        .filter(|s| !s.is_empty())
        .ok_or_else(|| GateError::NoStages {
            objective: objective.text.clone(),
            stage: r.to_string(),
        })?;
    let found = match r {
        StageRef::Number(n) => (*n >= 1 && *n <= stages.len()).then(|| n - 1),
        StageRef::Name(name) => stages
            .iter()
            .position(|s| s.name.as_deref() == Some(name.as_str())),
    };
    found.ok_or_else(|| GateError::UnknownStage {
        objective: objective.text.clone(),
        stage: r.to_string(),
        known: stage_list(stages),
    })
}

/// "1, 2 (hold), 3": every stage by number, with its name where it has one.
fn stage_list(stages: &[StageConfig]) -> String {
    let names: Vec<String> = stages
        .iter()
        .enumerate()
        .map(|(i, s)| match &s.name {
            Some(name) => format!("{} ({name})", i + 1),
            None => (i + 1).to_string(),
        })
        .collect();
    names.join(", ")
}

/// What a measured value is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds of response time.
    Nanos,
    /// A share from 0 to 1, printed as a percentage.
    Share,
}

impl Unit {
    pub fn format(self, value: f64) -> String {
        match self {
            Unit::Nanos => format_ns(value.max(0.0) as u64),
            Unit::Share => format_share(value),
        }
    }
}

/// A share as a percentage with enough digits to tell 99.95% from 100%, and 0.012% from 0.
pub fn format_share(share: f64) -> String {
    let percent = share * 100.0;
    if percent == 0.0 || !percent.is_finite() {
        return format!("{percent}%");
    }
    let decimals = (2 - percent.abs().log10().floor() as i32).clamp(2, 6) as usize;
    format!("{percent:.decimals$}%")
}

/// A measured value and its 95% confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub unit: Unit,
    pub value: f64,
    /// The value is only a lower bound: requests unanswered or timed out could raise it.
    pub lower_bound: bool,
    pub lo: f64,
    /// `None`: no upper end the data can vouch for.
    pub hi: Option<f64>,
    /// Without an upper end: how far the data reach (a percentile's largest value recorded).
    /// The interval's upper end is at least this.
    pub hi_reached: Option<f64>,
    /// An exact count with no sampling noise: the interval is the value itself.
    pub exact: bool,
}

impl Estimate {
    fn exact(unit: Unit, value: f64) -> Estimate {
        Estimate {
            unit,
            value,
            lower_bound: false,
            lo: value,
            hi: Some(value),
            hi_reached: None,
            exact: true,
        }
    }

    /// `1.02 s`, or `≥1.02 s` for a lower bound.
    pub fn value_text(&self) -> String {
        let bound = if self.lower_bound { "≥" } else { "" };
        format!("{bound}{}", self.unit.format(self.value))
    }

    /// `[987.00 ms, 1.05 s]`; an open upper end the data reach reads `[987.00 ms, ≥ 1.05 s]`,
    /// as every interval does (see [`crate::evidence::interval_text`]), and one they do not
    /// reach at all `[987.00 ms, ∞)`; an exact count (the interval is the value itself) reads
    /// `exact count`.
    pub fn interval_text(&self) -> String {
        if self.exact {
            return "exact count".into();
        }
        let lo = self.unit.format(self.lo);
        match (self.hi, self.hi_reached) {
            (Some(hi), _) => interval_text(&lo, &self.unit.format(hi), false),
            (None, Some(reached)) => interval_text(&lo, &self.unit.format(reached), true),
            (None, None) => format!("[{lo}, ∞)"),
        }
    }
}

/// The verdict on one objective.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Within the limit; significant when the whole interval is.
    Met { significant: bool },
    /// Beyond the limit; significant when the whole interval is.
    Breached { significant: bool },
    /// The sample cannot say whether the limit holds: why, and what would fix it.
    TooFew { reason: String },
}

impl Verdict {
    /// Whether the gate lets this objective through: only a met one.
    pub fn passes(&self) -> bool {
        matches!(self, Verdict::Met { .. })
    }

    pub fn label(&self) -> &'static str {
        match self {
            Verdict::Met { .. } => "met",
            Verdict::Breached { .. } => "BREACHED",
            Verdict::TooFew { .. } => "TOO FEW SAMPLES",
        }
    }

    /// "significant", "not significant", or "" for an unjudged objective.
    pub fn significance(&self) -> &'static str {
        match self {
            Verdict::Met { significant } | Verdict::Breached { significant } if *significant => {
                "significant"
            }
            Verdict::Met { .. } | Verdict::Breached { .. } => "not significant",
            Verdict::TooFew { .. } => "",
        }
    }
}

/// One objective judged against one result.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub objective: Objective,
    /// The stage's title (name or number), `None` for the whole run.
    pub stage: Option<String>,
    /// The step or journeys judged (`step shop/checkout`, `journeys`), `None` for the whole
    /// run or a stage.
    pub label: Option<String>,
    /// `None` when there was nothing to measure.
    pub estimate: Option<Estimate>,
    pub verdict: Verdict,
    /// A repeated run's whole-run percentile: judged on the between-run interval of this many
    /// complete repetitions. `None`: judged on the run's own interval.
    pub between_runs: Option<u32>,
}

/// Whether every objective was met: the gate's pass (exit 0) or fail (exit 4).
pub fn passes(judgements: &[Judgement]) -> bool {
    judgements.iter().all(|j| j.verdict.passes())
}

fn too_few(reason: impl Into<String>) -> Verdict {
    Verdict::TooFew {
        reason: reason.into(),
    }
}

/// The verdict on `value < limit` (or `value >= limit` when `higher_is_better`) from the value
/// and its interval. An open upper end cannot vouch for "below", so it is judged by the caller.
fn against(limit: f64, e: &Estimate, higher_is_better: bool) -> Verdict {
    let hi = e.hi.unwrap_or(f64::INFINITY);
    if higher_is_better {
        match e.value >= limit {
            true => Verdict::Met {
                significant: e.lo >= limit,
            },
            false => Verdict::Breached {
                significant: hi < limit,
            },
        }
    } else {
        match e.value < limit {
            true => Verdict::Met {
                significant: hi < limit,
            },
            false => Verdict::Breached {
                significant: e.lo >= limit,
            },
        }
    }
}

/// A percentile objective on the response times in `h`, of which those in `censored` are
/// lower bounds (in flight at the end, timed out).
///
/// Breached when the measured value reaches the limit (a lower bound that reaches it is a
/// breach too). Below it, the interval's upper end must be bounded by the data, or the sample
/// cannot vouch for the percentile: too few samples to judge.
pub fn judge_percentile(
    slo: Slo,
    h: &Histogram<u64>,
    censored: &Histogram<u64>,
) -> (Option<Estimate>, Verdict) {
    let limit = nanos(slo.limit) as f64;
    let Some(ci) = percentile_interval(h, censored, slo.percentile, LEVEL) else {
        return (None, too_few("no requests finished in this window"));
    };
    let bound = bound_at(h, censored, slo.percentile);
    let e = Estimate {
        unit: Unit::Nanos,
        value: bound.value as f64,
        lower_bound: bound.lower_bound,
        lo: ci.lo as f64,
        hi: (!ci.hi_open).then_some(ci.hi as f64),
        hi_reached: ci.hi_open.then_some(ci.hi as f64),
        exact: false,
    };
    if e.value < limit && ci.hi_open {
        return (
            Some(e),
            too_few(open_end_reason(slo.percentile, h, censored)),
        );
    }
    (Some(e), against(limit, &e, false))
}

/// A percentile objective judged on the interval that allows for dependence between requests:
/// batch means over `intervals`, the window's timeline (see [`crate::batches`]). Where the
/// window holds too few independent stretches for one, there are too few samples to judge, on
/// either side of the limit: the order statistics would call a verdict significant that the
/// run cannot support. Their interval stays the floor, and decides alone only for p100.
pub fn judge_percentile_over(
    slo: Slo,
    h: &Histogram<u64>,
    censored: &Histogram<u64>,
    intervals: &[Histogram<u64>],
) -> (Option<Estimate>, Verdict) {
    let (estimate, verdict) = judge_percentile(slo, h, censored);
    let (Some(mut e), false) = (estimate, matches!(verdict, Verdict::TooFew { .. })) else {
        return (estimate, verdict);
    };
    let Some(b) = crate::batches::batch_interval(h, censored, intervals, slo.percentile, LEVEL)
    else {
        return (Some(e), verdict);
    };
    let Some(ci) = b.ci() else {
        return (
            Some(e),
            too_few(few_stretches_reason(slo.percentile, b.stretches)),
        );
    };
    e.lo = ci.lo as f64;
    e.hi = (!ci.hi_open).then_some(ci.hi as f64);
    e.hi_reached = ci.hi_open.then_some(ci.hi as f64);
    let limit = nanos(slo.limit) as f64;
    if e.value < limit && ci.hi_open {
        let floor_open =
            percentile_interval(h, censored, slo.percentile, LEVEL).is_some_and(|f| f.hi_open);
        let reason = match floor_open {
            true => open_end_reason(slo.percentile, h, censored),
            false => format!(
                "the run's batches spread so far that p{}'s upper end lies beyond the largest value recorded; run longer, with a finer --interval, or with --repeat",
                slo.percentile
            ),
        };
        return (Some(e), too_few(reason));
    }
    (Some(e), against(limit, &e, false))
}

/// Why a run cannot support a batch-means interval, and what would.
fn few_stretches_reason(p: f64, stretches: u64) -> String {
    format!(
        "too few independent stretches: {stretches} put requests beyond p{p}, and an interval that allows for requests that move together needs {}; run longer, with a finer --interval, or with --repeat",
        crate::batches::MIN_STRETCHES
    )
}

/// Why a percentile's upper end is open: too few requests beyond it, or unanswered ones.
fn open_end_reason(p: f64, h: &Histogram<u64>, censored: &Histogram<u64>) -> String {
    let n = h.len();
    if p >= 100.0 {
        return format!("{n} requests; no sample can bound the maximum from above, so p100 can never be shown below a limit: use a percentile such as p99.9");
    }
    match sample_warning(n, p) {
        Some(w) => format!(
            "{n} requests put {} beyond p{p}; p{p} needs about {} for its interval to close",
            w.samples_beyond(),
            w.needed
        ),
        None => format!(
            "{} of {n} requests went unanswered (in flight at the end or timed out) and could lie beyond p{p}",
            censored.len()
        ),
    }
}

/// Wilson's score interval at 95% for `x` successes in `n` trials; `None` for `n = 0`.
pub fn wilson(x: u64, n: u64) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let (n, p) = (n as f64, x as f64 / n as f64);
    let z2 = Z * Z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // At the edges the interval ends exactly at 0 or 1; rounding would leave a speck.
    let lo = if x == 0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let hi = if p == 1.0 {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    Some((lo, hi))
}

/// The fewest answers whose Wilson upper bound with no errors at all is below `limit`:
/// z² / (n + z²) < limit.
pub fn answers_needed(limit: f64) -> u64 {
    (Z * Z * (1.0 - limit) / limit).floor() as u64 + 1
}

/// An error-rate objective: `failed` of `answered` (completed + failed) against `below`.
///
/// Too few samples to judge: the rate is under the limit, but even no errors at all in this
/// many answers would leave the interval's upper end at or above it.
pub fn judge_errors(below: f64, failed: u64, answered: u64) -> (Option<Estimate>, Verdict) {
    let Some((lo, hi)) = wilson(failed.min(answered), answered) else {
        return (None, too_few("no requests were answered in this window"));
    };
    let e = Estimate {
        unit: Unit::Share,
        value: failed.min(answered) as f64 / answered as f64,
        lower_bound: false,
        lo,
        hi: Some(hi),
        hi_reached: None,
        exact: false,
    };
    let zero_errors_hi = wilson(0, answered).map_or(1.0, |(_, hi)| hi);
    if e.value < below && zero_errors_hi >= below {
        let reason = format!(
            "{answered} answers cannot show an error rate below {}: even none failing leaves up to {} at 95%; it needs at least {} answers",
            format_share(below),
            format_share(zero_errors_hi),
            answers_needed(below)
        );
        return (Some(e), too_few(reason));
    }
    (Some(e), against(below, &e, false))
}

/// How the count a window expected was drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrivals {
    /// A fixed schedule (constant or ramped rate), or the count actually scheduled: exact.
    Exact,
    /// Poisson arrivals: the window's actual count varies around its expectation.
    Poisson,
}

/// A rate objective: `answered` requests against the `expected` count of the window.
///
/// With a fixed schedule the ratio is an exact count. With Poisson arrivals the count the
/// window really drew is Poisson(expected), so the share of it that was answered is uncertain:
/// the interval divides by the ends of that count's 95% range (normal approximation). Too few
/// samples to judge: the window expected no requests.
pub fn judge_rate(
    at_least: f64,
    answered: u64,
    expected: f64,
    arrivals: Arrivals,
) -> (Option<Estimate>, Verdict) {
    // NaN (a damaged file) expects nothing too.
    if expected.is_nan() || expected <= 0.0 {
        return (None, too_few("the window expected no requests"));
    }
    let value = answered as f64 / expected;
    let e = match arrivals {
        Arrivals::Exact => Estimate::exact(Unit::Share, value),
        Arrivals::Poisson => {
            let spread = Z * expected.sqrt();
            Estimate {
                unit: Unit::Share,
                value,
                lower_bound: false,
                lo: answered as f64 / (expected + spread),
                hi: (expected > spread).then(|| answered as f64 / (expected - spread)),
                hi_reached: None,
                exact: false,
            }
        }
    };
    (Some(e), against(at_least, &e, true))
}

/// A window of a run still going (the whole run so far, or a stage), as a live sink keeps it
/// from the run's completed intervals.
#[derive(Debug, Clone)]
pub struct LiveWindow {
    /// Each completed interval's response times, in time order.
    pub timeline: Vec<Histogram<u64>>,
    /// Lower bounds known so far of requests not yet finished (the oldest in flight).
    pub censored: Histogram<u64>,
    /// Requests that finished in the window, answered and failed.
    pub completed: u64,
    pub failed: u64,
    /// Requests the window was due to send so far and how they were drawn (a rate objective's
    /// denominator); `None` without a schedule.
    pub expected: Option<(f64, Arrivals)>,
    /// The run's timeout: a time at or above it may be a timeout's lower bound, as the gate
    /// treats a stage's at the end.
    pub timeout_ns: Option<u64>,
}

/// An objective's measure judged on a live window, by the rules a finished run's window is
/// judged by (the verdict is "so far": the run's end decides).
pub fn judge_live(w: &LiveWindow, measure: Measure) -> (Option<Estimate>, Verdict) {
    window::live(w).judge(measure)
}

/// Judges every objective against `result`. An objective naming a stage the result does not
/// have is an error (bad input), not a verdict.
pub fn evaluate(result: &RunResult, objectives: &[Objective]) -> Result<Vec<Judgement>, GateError> {
    let stages = result.config.stages.as_deref();
    objectives
        .iter()
        .map(|o| {
            if let Some(label) = &o.label {
                return judge_label(result, o, label);
            }
            let index = match &o.stage {
                Some(r) => Some(resolve_stage(o, r, stages)?),
                None => None,
            };
            let window = match (index, stages) {
                (Some(i), Some(s)) => window::stage(result, s, i),
                _ => window::whole(result),
            };
            let repeated = match (index, o.measure, &result.repetitions) {
                (None, Measure::Percentile(slo), Some(reps)) => repeated::judge(slo, reps),
                _ => None,
            };
            let (estimate, verdict, between_runs) = match repeated {
                Some((e, v, runs)) => (Some(e), v, Some(runs)),
                None => {
                    let (e, v) = window.judge(o.measure);
                    (e, v, None)
                }
            };
            Ok(Judgement {
                objective: o.clone(),
                stage: index.zip(stages).map(|(i, s)| s[i].title(i)),
                label: None,
                estimate,
                verdict,
                between_runs,
            })
        })
        .collect()
}

/// A step or the journeys of a journey run, judged on their own counts, histograms and
/// timeline as a stage is on its own.
fn judge_label(
    result: &RunResult,
    o: &Objective,
    label: &LabelRef,
) -> Result<Judgement, GateError> {
    let (w, title) = window::label(result, o, label)?;
    let (estimate, verdict) = w.judge(o.measure);
    Ok(Judgement {
        objective: o.clone(),
        stage: None,
        label: Some(title),
        estimate,
        verdict,
        between_runs: None,
    })
}

mod repeated;
mod window;

#[cfg(test)]
mod tests;

/// Decodes a carried histogram, `None` when the result carries none (an imported summary).
fn decoded(hdr: &str) -> Option<Histogram<u64>> {
    decode_base64(hdr).ok()
}

/// An empty histogram of the recording precision.
fn empty() -> Histogram<u64> {
    new_histogram()
}
