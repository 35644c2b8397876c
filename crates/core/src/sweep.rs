//! The capacity sweep, as pure functions: which rates to offer, what one step at a rate says
//! (its figures and whether the target kept up), service-level objectives, and the search for the
//! highest rate that meets them. `sojourn sweep` (real HTTP) and `sojourn sim --sweep` (virtual
//! time) differ only in how they run one step, so both feed their results through here.
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::result::{HdrDecodeError, IntervalSummary, RunResult};
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

/// Who, if anyone, held a run back at its offered rate. A sweep's cliff is the target's only
/// when its steps say SATURATED: a generator that could not send on schedule, or a pool whose
/// connections were all busy, says nothing about what the target can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The target kept up, and so did the generator.
    Ok,
    /// The target fell behind (answers short, response time rising, or requests unanswered)
    /// while the generator kept its schedule and connections were free.
    Saturated,
    /// The generator could not send on schedule, whatever the target did.
    GeneratorBound,
    /// Every connection was busy: the target was slow, or `--connections` too few for its
    /// service time.
    PoolBound,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Saturated => "SATURATED",
            Status::GeneratorBound => "GENERATOR-BOUND",
            Status::PoolBound => "POOL-BOUND",
        }
    }

    /// A step that says something about the target: OK or SATURATED. The others are limits of
    /// the client side, and a search stops at them rather than bracket a cliff.
    pub fn judges_the_target(self) -> bool {
        matches!(self, Status::Ok | Status::Saturated)
    }
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
    /// The generator itself fell behind its schedule: its dispatch lag p99 distorts the
    /// results and lies above the machine's floor (the control meter's hiccup p99, when one
    /// ran), with the busiest worker's CPU share beside it.
    GeneratorLate {
        dispatch_p99_ns: u64,
        control_hiccup_p99_ns: Option<u64>,
        busy: Option<f64>,
    },
    /// The generator sent late because it freed connections late: requests waited for a
    /// connection (how many) while its busiest worker was this busy reading answers, and the
    /// send lag p99 distorts the results.
    GeneratorSlowToFree {
        waited: u64,
        send_lag_p99_ns: u64,
        busy: f64,
    },
    /// Requests waited because every connection was busy: how many, and how many connections
    /// the offered rate needs at the measured service time (Little's law: rate × mean service
    /// of the requests answered; see [`crate::result::HistogramSet::measured_service_mean`]).
    PoolFull {
        waited: u64,
        connections: u32,
        needed: f64,
    },
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
            Reason::GeneratorLate {
                dispatch_p99_ns,
                control_hiccup_p99_ns,
                busy,
            } => {
                write!(
                    f,
                    "sojourn itself sent late: dispatch lag p99 {}",
                    format_ns(*dispatch_p99_ns)
                )?;
                match control_hiccup_p99_ns {
                    Some(h) => write!(f, " (the machine's own {})", format_ns(*h))?,
                    None => write!(f, " (no control meter: none of it excused)")?,
                }
                if let Some(b) = busy {
                    write!(f, "; worker on CPU {:.0}%", 100.0 * b)?;
                }
                Ok(())
            }
            Reason::GeneratorSlowToFree {
                waited,
                send_lag_p99_ns,
                busy,
            } => write!(
                f,
                "sojourn itself sent late: {waited} requests waited for connections its busy worker (on CPU {:.0}%) was slow to free; send lag p99 {}",
                100.0 * busy,
                format_ns(*send_lag_p99_ns)
            ),
            Reason::PoolFull {
                waited,
                connections,
                needed,
            } => write!(
                f,
                "{waited} waited for one of {connections} connections; the rate needs ~{needed:.0} at this service time"
            ),
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
    /// What raises a client-side limit (GENERATOR-BOUND, POOL-BOUND).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
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
    /// The busiest worker thread's share of the step on CPU (idle spinning excluded): the
    /// generator's headroom, beside the verdict. A busy generator that kept its schedule is OK.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busiest_worker: Option<f64>,
}

impl Step {
    /// OK and every SLO met: what the search looks for.
    pub fn passes(&self) -> bool {
        self.status == Status::Ok && self.slos.iter().all(|c| c.met)
    }

    /// What a search makes of this step.
    pub fn probe(&self) -> Probe {
        match self.status {
            _ if self.passes() => Probe::Pass,
            s if s.judges_the_target() => Probe::Fail,
            _ => Probe::Inconclusive,
        }
    }
}

/// One probe of a search: the target met the objectives, failed them, or the client side set
/// the limit, so the step says nothing about the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Probe {
    Pass,
    Fail,
    Inconclusive,
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
    let response = IntervalSummary::merged_response(&kept)?;
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
    let (status, advice) = classify(result, target, &mut reasons);
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
        status,
        advice,
        reasons,
        busiest_worker: result.checks.busiest_worker,
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

/// Who held the run back, from what it measured of itself: `reasons` holds the evidence that
/// the target fell behind (empty: it kept up), and gains the evidence against the client side.
///
/// The generator comes first: when it sent late (see [`generator_late`]), nothing the step
/// shows can be laid at the target's door. A busy generator that kept its schedule is not
/// behind, however busy. Then the pool: requests that waited for a connection while the target
/// fell behind were held by the client's connection limit, which a target of this service time
/// could only have carried with more connections. Only then is it the target's.
fn classify(
    result: &RunResult,
    target: Rate,
    reasons: &mut Vec<Reason>,
) -> (Status, Option<String>) {
    let h = &result.histograms;
    if let Some(late) = generator_late(result) {
        reasons.push(late);
        let threads = result.config.threads.unwrap_or(1);
        let advice = format!(
            "the generator could not send {} req/s on schedule on this machine with {threads} \
             thread{}: add --threads, split the load over more machines, or use a bigger one",
            rate_text(target.get()),
            if threads == 1 { "" } else { "s" }
        );
        return (Status::GeneratorBound, Some(advice));
    }
    if reasons.is_empty() {
        return (Status::Ok, None);
    }
    if result.checks.pool_bound {
        let connections = result.config.connections.max(1);
        let service_mean = h.measured_service_mean();
        let needed = target.get() * service_mean / 1e9;
        reasons.push(Reason::PoolFull {
            waited: result.counts.waited_for_connection + result.counts.never_sent,
            connections,
            needed,
        });
        let plural = if connections == 1 { "" } else { "s" };
        let carry = f64::from(connections) * 1e9 / service_mean.max(1.0);
        let advice = if needed > 0.9 * f64::from(connections) {
            format!(
                "at the measured service time (mean {}) {connections} connection{plural} \
                 carr{} at most {} req/s: raise --connections to at least {}",
                format_ns(service_mean as u64),
                if connections == 1 { "ies" } else { "y" },
                rate_text((carry * 10.0).round() / 10.0),
                (needed * 1.25).ceil() as u64
            )
        } else {
            format!(
                "every one of {connections} connections was busy although they should carry \
                 the rate at the measured service time: raise --connections to tell a slow \
                 target from a small pool"
            )
        };
        return (Status::PoolBound, Some(advice));
    }
    (Status::Saturated, None)
}

/// Whether the generator fell behind its schedule. Either its dispatch lag (which also holds
/// the wait of requests it never got to before the end) distorts the results, by the
/// self-check's rule, and is not within the machine's floor; or requests waited for
/// connections that a busy worker was slow to free, long enough that send lag distorts them. Only the control meter (an idle process of
/// its own) measures the floor; a meter inside the generator is as late as the generator's own
/// work makes it, and without a control meter nothing is excused. A busy worker whose sends
/// kept the schedule is not behind, however busy.
pub fn generator_late(result: &RunResult) -> Option<Reason> {
    dispatched_late(result).or_else(|| {
        let h = &result.histograms;
        let busy = result.checks.busiest_worker?;
        let waited = result.counts.waited_for_connection;
        let send_lag_p99_ns = h.send_lag.percentiles.get(99.0).unwrap_or(0);
        let response_p99_ns = h.response.percentiles.get(99.0).unwrap_or(0);
        crate::check::slow_to_free(
            busy,
            waited,
            h.send_lag.count,
            send_lag_p99_ns,
            response_p99_ns,
        )
        .then_some(Reason::GeneratorSlowToFree {
            waited,
            send_lag_p99_ns,
            busy,
        })
    })
}

/// Dispatch lag that distorts the results and lies above the control meter's floor.
fn dispatched_late(result: &RunResult) -> Option<Reason> {
    let h = &result.histograms;
    let dispatch_p99_ns = h
        .dispatch_lag
        .as_ref()
        .and_then(|d| d.percentiles.get(99.0))
        .unwrap_or(0);
    let response_p99_ns = h.response.percentiles.get(99.0).unwrap_or(0);
    if !crate::check::sends_fell_behind(dispatch_p99_ns, response_p99_ns) {
        return None;
    }
    let control_hiccup_p99_ns = h
        .control_hiccup
        .as_ref()
        .and_then(|x| x.percentiles.get(99.0));
    if control_hiccup_p99_ns.is_some_and(|floor| crate::check::within_floor(dispatch_p99_ns, floor))
    {
        return None;
    }
    Some(Reason::GeneratorLate {
        dispatch_p99_ns,
        control_hiccup_p99_ns,
        busy: result.checks.busiest_worker,
    })
}

/// A rate as people write it: 40, 2.5, 160000.
pub fn rate_text(r: f64) -> String {
    let s = format!("{r:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
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
    /// Every probe in order.
    pub probes: Vec<(f64, Probe)>,
    pub bracket: Bracket,
    /// The probe budget ran out before the bracket narrowed to the resolution.
    pub budget_exhausted: bool,
    /// The lowest rate at which the client side set the limit (a GENERATOR-BOUND or POOL-BOUND
    /// step), narrowed down like a cliff: the target was not judged at or above it.
    pub stopped_at: Option<f64>,
}

impl Search {
    /// Runs the search with `probe`, which runs one step at a rate and says what it showed. The
    /// first probe that does not pass ends the climb: nothing above a saturated rate, or above
    /// a client-side limit, is tried. Bisection then narrows whichever it was: a failing upper
    /// end is the target's cliff; an inconclusive one is the client side's limit (the
    /// generator's, or the pool's), and the target has no cliff below it to name.
    pub fn run<E>(
        &self,
        mut probe: impl FnMut(Rate) -> Result<Probe, E>,
    ) -> Result<SearchOutcome, E> {
        let mut probes = Vec::new();
        let mut call = |rate: Rate, probes: &mut Vec<(f64, Probe)>| {
            let p = probe(rate)?;
            probes.push((rate.get(), p));
            Ok::<Probe, E>(p)
        };
        let (mut lo, mut hi) = (None::<Rate>, None::<(Rate, Probe)>);
        let mut rate = self.from;
        while probes.len() < self.max_probes {
            match call(rate, &mut probes)? {
                Probe::Pass => lo = Some(rate),
                other => {
                    hi = Some((rate, other));
                    break;
                }
            }
            if rate >= self.to {
                break;
            }
            rate = Rate::per_second((rate.get() * 2.0).min(self.to.get())).unwrap_or(self.to);
        }
        while let (Some(l), Some((h, _))) = (lo, hi) {
            if h.get() - l.get() <= self.resolution || probes.len() >= self.max_probes {
                break;
            }
            let mid = Rate::per_second((l.get() + h.get()) / 2.0).unwrap_or(l);
            match call(mid, &mut probes)? {
                Probe::Pass => lo = Some(mid),
                other => hi = Some((mid, other)),
            }
        }
        let narrow = match (lo, hi) {
            (Some(l), Some((h, _))) => h.get() - l.get() <= self.resolution,
            (None, Some(_)) => true,
            (Some(l), None) => l >= self.to,
            (None, None) => false,
        };
        let stopped_at = hi
            .filter(|(_, p)| *p == Probe::Inconclusive)
            .map(|(r, _)| r.get());
        Ok(SearchOutcome {
            bracket: bracket_of(&probes),
            probes,
            budget_exhausted: !narrow,
            stopped_at,
        })
    }
}

/// The bracket of a search's probes: its passes and fails, below any client-side limit.
pub fn bracket_of(probes: &[(f64, Probe)]) -> Bracket {
    let judged: Vec<(f64, bool)> = probes
        .iter()
        .filter(|(_, p)| *p != Probe::Inconclusive)
        .map(|(r, p)| (*r, *p == Probe::Pass))
        .collect();
    bracket(&judged)
}

#[cfg(test)]
mod tests;
