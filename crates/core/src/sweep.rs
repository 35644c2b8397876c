//! The capacity sweep, as pure functions: which rates to offer, what one step at a rate says
//! (its figures and whether the target kept up), service-level objectives, and the search for the
//! highest rate that meets them. `sojourn sweep` (real HTTP) and `sojourn sim --sweep` (virtual
//! time) differ only in how they run one step, so both feed their results through here.
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::result::{decode_base64, HdrDecodeError, IntervalSummary, RunResult};
use crate::stats::TrendTest;
use crate::units::{format_ns, nanos, Rate};

/// `count` rates evenly spaced from `from` to `to` inclusive (`--from --to --steps`).
pub fn linear_rates(from: Rate, to: Rate, count: usize) -> Vec<Rate> {
    let (a, b) = (from.get(), to.get());
    match count {
        0 => Vec::new(),
        1 => vec![from],
        n => (0..n)
            .filter_map(|i| Rate::per_second(a + (b - a) * i as f64 / (n - 1) as f64).ok())
            .collect(),
    }
}

/// A latency objective on the response time (from the due time): `p99<200ms`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Slo {
    pub percentile: f64,
    #[serde(rename = "limit_ns", serialize_with = "as_nanos")]
    pub limit: Duration,
}

fn as_nanos<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(nanos(*d))
}

/// Why a text is not an SLO.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SloError {
    /// Write the objective as `pPERCENTILE<LIMIT`, e.g. `p99<200ms` or `p99.9<1s`.
    #[error("expected an objective like p99<200ms or p99.9<1s, got {0:?}")]
    Shape(String),
    /// The percentile must be above 0 and at most 100, e.g. `p99`.
    #[error("percentile must be in (0, 100], got {0:?}")]
    Percentile(String),
    /// The limit needs a unit of ns, us, µs, ms or s and must be above zero.
    #[error("limit must be a positive time like 200ms, 1.5s or 500us, got {0:?}")]
    Limit(String),
}

impl FromStr for Slo {
    type Err = SloError;
    fn from_str(text: &str) -> Result<Slo, SloError> {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let (p, limit) = compact
            .strip_prefix(['p', 'P'])
            .and_then(|rest| rest.split_once('<'))
            .ok_or_else(|| SloError::Shape(text.into()))?;
        let percentile: f64 = p.parse().map_err(|_| SloError::Percentile(p.into()))?;
        if !(percentile > 0.0 && percentile <= 100.0) {
            return Err(SloError::Percentile(p.into()));
        }
        let limit = parse_limit(limit).ok_or_else(|| SloError::Limit(limit.into()))?;
        Ok(Slo { percentile, limit })
    }
}

fn parse_limit(text: &str) -> Option<Duration> {
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().ok()?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        _ => return None,
    };
    let seconds = value * scale;
    (seconds.is_finite() && seconds > 0.0).then(|| Duration::from_secs_f64(seconds))
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "p{}<{}", self.percentile, format_ns(nanos(self.limit)))
    }
}

/// Whether the target kept up with the offered rate during a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Saturated,
}

/// One piece of evidence that a step saturated.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reason {
    /// Answers per second after the settle fell short of the offered rate.
    BelowTarget { achieved: f64 },
    /// Per-interval response p50 was still rising across the step (Mann–Kendall z, and the
    /// Theil–Sen fitted rise in nanoseconds).
    StillRising { z: f64, rise_ns: f64 },
    /// Requests still unanswered when the step's drain ended.
    Censored { count: u64 },
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::BelowTarget { achieved } => write!(f, "achieved {achieved:.1}/s"),
            Reason::StillRising { z, rise_ns } => write!(
                f,
                "p50 rising (+{} over the step, z={z:.1})",
                format_ns(*rise_ns as u64)
            ),
            Reason::Censored { count } => write!(f, "{count} unanswered at the end"),
        }
    }
}

/// How one step is judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepRules {
    /// The first part of the step whose intervals are left out of percentiles, achieved rate
    /// and trend, so the empty queue at the start does not flatter the figures.
    pub settle: Duration,
    /// The schedule's length (the drain after it is not "offered" time).
    pub length: Duration,
    /// Achieved below this share of the target means saturated. Constant arrivals at a
    /// stable load deliver within a few requests of the target; the slack absorbs one interval
    /// of queue swing, not a shortfall.
    pub min_achieved_share: f64,
    pub trend: TrendTest,
}

impl StepRules {
    pub fn new(settle: Duration, length: Duration) -> StepRules {
        StepRules {
            settle,
            length,
            min_achieved_share: 0.9,
            trend: TrendTest::default(),
        }
    }
}

/// An SLO checked against one step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SloCheck {
    pub slo: Slo,
    pub value_ns: u64,
    pub met: bool,
}

/// One step of a sweep: the seed's table row, the evidence, and the SLO checks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub target: f64,
    /// Answers per second in the kept (post-settle) part of the schedule.
    pub achieved: f64,
    /// Service time p99 over the whole step.
    pub service_p99_ns: u64,
    /// Response time (from the due time) percentiles of requests that finished after the
    /// settle, drain included.
    pub response_p50_ns: u64,
    pub response_p99_ns: u64,
    /// Mean time from due to sent over the whole step: the queue in front of the target.
    pub mean_send_lag_ns: f64,
    /// Requests behind the post-settle percentiles; the rest of `scheduled` finished during the
    /// settle or were censored, and are still counted in the step's own result.
    pub settled_requests: u64,
    pub scheduled: u64,
    pub censored: u64,
    pub status: Status,
    pub reasons: Vec<Reason>,
    pub slos: Vec<SloCheck>,
}

impl Step {
    /// OK and every SLO met: what the search looks for.
    pub fn passes(&self) -> bool {
        self.status == Status::Ok && self.slos.iter().all(|c| c.met)
    }
}

/// Judges one step's result at `target`.
pub fn evaluate(
    result: &RunResult,
    target: Rate,
    rules: &StepRules,
    slos: &[Slo],
) -> Result<Step, HdrDecodeError> {
    let settle_ns = nanos(rules.settle);
    let end_ns = nanos(rules.length);
    let kept: Vec<&IntervalSummary> = result
        .intervals
        .iter()
        .filter(|i| i.start_ns >= settle_ns)
        .collect();
    let response = merged(&kept)?;
    let offered: Vec<&IntervalSummary> = kept
        .iter()
        .copied()
        .filter(|i| i.start_ns + i.duration_ns <= end_ns)
        .collect();
    let achieved = achieved(&offered, settle_ns, end_ns);
    let p50s: Vec<f64> = offered
        .iter()
        .filter(|i| i.completed + i.failed > 0)
        .map(|i| i.p50 as f64)
        .collect();
    let mut reasons = Vec::new();
    if achieved < rules.min_achieved_share * target.get() {
        reasons.push(Reason::BelowTarget { achieved });
    }
    if let Some(t) = rules.trend.test(&p50s).filter(|t| t.rising) {
        reasons.push(Reason::StillRising {
            z: t.z,
            rise_ns: t.rise,
        });
    }
    if result.counts.censored + result.counts.never_sent > 0 {
        reasons.push(Reason::Censored {
            count: result.counts.censored + result.counts.never_sent,
        });
    }
    let at = |p: f64| {
        if response.is_empty() {
            0
        } else {
            response.value_at_percentile(p)
        }
    };
    Ok(Step {
        target: target.get(),
        achieved,
        service_p99_ns: result.histograms.service.percentiles.get(99.0).unwrap_or(0),
        response_p50_ns: at(50.0),
        response_p99_ns: at(99.0),
        mean_send_lag_ns: result.histograms.send_lag.mean,
        settled_requests: response.len(),
        scheduled: result.counts.scheduled,
        censored: result.counts.censored + result.counts.never_sent,
        status: if reasons.is_empty() {
            Status::Ok
        } else {
            Status::Saturated
        },
        reasons,
        slos: slos
            .iter()
            .map(|&slo| {
                let value_ns = at(slo.percentile);
                SloCheck {
                    slo,
                    value_ns,
                    met: !response.is_empty() && value_ns < nanos(slo.limit),
                }
            })
            .collect(),
    })
}

fn merged(intervals: &[&IntervalSummary]) -> Result<Histogram<u64>, HdrDecodeError> {
    let mut out = Histogram::<u64>::new(3).expect("3 significant digits is valid");
    for i in intervals {
        out.add(decode_base64(&i.response_hdr)?)
            .expect("auto-resizing histograms accept any values");
    }
    Ok(out)
}

/// Answers per second over the offered, post-settle window (whole intervals only).
fn achieved(offered: &[&IntervalSummary], settle_ns: u64, end_ns: u64) -> f64 {
    let answers: u64 = offered.iter().map(|i| i.completed + i.failed).sum();
    let span: u64 = offered.iter().map(|i| i.duration_ns).sum();
    let span = if span == 0 {
        end_ns.saturating_sub(settle_ns)
    } else {
        span
    };
    if span == 0 {
        0.0
    } else {
        answers as f64 / (span as f64 / 1e9)
    }
}

/// Where the cliff lies: the highest passing rate below the lowest failing one.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Bracket {
    /// Highest rate that passed below `failing` (none: even the lowest rate failed).
    pub passing: Option<f64>,
    /// Lowest rate that failed (none: every rate passed).
    pub failing: Option<f64>,
}

/// The bracket of a list of (rate, passed) outcomes, in any order.
pub fn bracket(outcomes: &[(f64, bool)]) -> Bracket {
    let failing = outcomes
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(r, _)| *r)
        .min_by(f64::total_cmp);
    let passing = outcomes
        .iter()
        .filter(|(r, ok)| *ok && failing.is_none_or(|f| *r < f))
        .map(|(r, _)| *r)
        .max_by(f64::total_cmp);
    Bracket { passing, failing }
}

/// The search for the highest passing rate: double from `from` until a probe fails (or `to`
/// is reached), then bisect the bracket down to `resolution`, never more than `max_probes`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Search {
    pub from: Rate,
    pub to: Rate,
    /// Bisection stops once the bracket is at most this many requests per second wide.
    pub resolution: f64,
    pub max_probes: usize,
}

/// What the search did and found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchOutcome {
    /// Every probe in order: (rate, passed).
    pub probes: Vec<(f64, bool)>,
    pub bracket: Bracket,
    /// The probe budget ran out before the bracket narrowed to the resolution.
    pub budget_exhausted: bool,
}

impl Search {
    /// Runs the search with `probe`, which runs one step at a rate and says whether it passed.
    /// A failing probe ends the climb at once: nothing above a saturated rate is tried.
    pub fn run<E>(
        &self,
        mut probe: impl FnMut(Rate) -> Result<bool, E>,
    ) -> Result<SearchOutcome, E> {
        let mut probes = Vec::new();
        let mut call = |rate: Rate, probes: &mut Vec<(f64, bool)>| {
            let ok = probe(rate)?;
            probes.push((rate.get(), ok));
            Ok::<bool, E>(ok)
        };
        let (mut lo, mut hi) = (None::<Rate>, None::<Rate>);
        let mut rate = self.from;
        while probes.len() < self.max_probes {
            if !call(rate, &mut probes)? {
                hi = Some(rate);
                break;
            }
            lo = Some(rate);
            if rate >= self.to {
                break;
            }
            rate = Rate::per_second((rate.get() * 2.0).min(self.to.get())).unwrap_or(self.to);
        }
        while let (Some(l), Some(h)) = (lo, hi) {
            if h.get() - l.get() <= self.resolution || probes.len() >= self.max_probes {
                break;
            }
            let mid = Rate::per_second((l.get() + h.get()) / 2.0).unwrap_or(l);
            if call(mid, &mut probes)? {
                lo = Some(mid);
            } else {
                hi = Some(mid);
            }
        }
        let narrow = match (lo, hi) {
            (Some(l), Some(h)) => h.get() - l.get() <= self.resolution,
            (None, Some(_)) => true,
            (Some(l), None) => l >= self.to,
            (None, None) => false,
        };
        Ok(SearchOutcome {
            bracket: bracket(&probes),
            probes,
            budget_exhausted: !narrow,
        })
    }
}

#[cfg(test)]
mod tests;
