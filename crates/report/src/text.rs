//! Terminal tables: the run summary. (The seeds' side-by-side comparison is in [`crate::compare`].)
use std::fmt::Write as _;

use sojourn_core::placement::{MergeInfo, ShardState};
use sojourn_core::result::{
    Counts, HistogramSummary, RunConfig, RunResult, TargetResult, PERCENTILES,
};
use sojourn_core::validity::{TestName, TestOutcome, Validity, ValidityTest};
use sojourn_core::{format_ns, GeneratorVerdict, Mode};

/// Column headers for [`PERCENTILES`].
fn header(label_width: usize) -> String {
    let mut s = format!("{:label_width$}", "");
    for p in PERCENTILES {
        let name = if p >= 100.0 {
            "max".to_string()
        } else {
            format!("p{p}")
        };
        let _ = write!(s, "{name:>12}");
    }
    s
}

/// A percentile value, prefixed with `≥` when it is only a lower bound.
pub fn cell(h: &HistogramSummary, p: f64) -> String {
    match h.at(p) {
        Some(b) if b.lower_bound => format!("≥{}", format_ns(b.value)),
        Some(b) => format_ns(b.value),
        None => "-".into(),
    }
}

/// A value with its confidence interval, written as on the page and in the gate's table:
/// `194.60 ms [191.00 ms, 197.90 ms]`. An open upper end (censored or beyond the data) reads
/// `≥ 198.00 ms`.
pub fn with_interval(h: &HistogramSummary, p: f64) -> String {
    let value = cell(h, p);
    match h.ci_at(p) {
        Some(ci) => format!("{value} {}", ci.text()),
        None => value,
    }
}

/// The response percentiles with their intervals, and a warning for each that rests on too
/// few samples.
fn confidence(h: &HistogramSummary) -> String {
    let mut out = String::new();
    let Some(set) = &h.ci else {
        return out;
    };
    let _ = writeln!(
        out,
        "response with {:.0}% confidence intervals (order statistics; they treat requests as independent, see docs/statistics.md):",
        set.level * 100.0
    );
    let cells: Vec<String> = PERCENTILES
        .iter()
        .filter(|&&p| p < 100.0)
        .map(|&p| format!("p{p} {}", with_interval(h, p)))
        .collect();
    let _ = writeln!(out, "  {}", cells.join("   "));
    out.push_str(&batch_intervals(h));
    for &p in &PERCENTILES {
        if let Some(t) = h.thin_at(p) {
            let _ = writeln!(out, "  {}", thin_warning(p, t));
        }
    }
    out
}

/// The response percentiles with the intervals that allow for dependence between requests, or
/// the run's word that it holds too few independent stretches for one.
fn batch_intervals(h: &HistogramSummary) -> String {
    let Some(set) = &h.batch_ci else {
        return String::new();
    };
    let cells: Vec<String> = PERCENTILES
        .iter()
        .filter_map(|&p| {
            let b = set
                .percentiles
                .get(&sojourn_core::result::percentile_key(p))?;
            Some(format!("p{p} {} {}", cell(h, p), b.text()))
        })
        .collect();
    format!(
        "response with {:.0}% intervals from the run's {} intervals (batch means; they allow for requests that move together, see docs/statistics.md):\n  {}\n",
        set.level * 100.0,
        set.intervals,
        cells.join("   ")
    )
}

/// "p99.99: 1 sample above — not meaningful; run ≥ 100k requests". Samples come whole.
pub fn thin_warning(p: f64, t: sojourn_core::evidence::Thin) -> String {
    let n = t.samples_beyond();
    format!(
        "p{p}: {n} sample{} above — not meaningful; run ≥ {} requests",
        if n == 1 { "" } else { "s" },
        short_count(t.needed)
    )
}

fn short_count(n: u64) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

/// Arrival conformance, steady state and warm-up, one line each.
pub fn statistics(r: &RunResult) -> String {
    let mut out = String::new();
    let s = &r.statistics;
    if let Some(c) = &s.conformance {
        let _ = writeln!(out, "arrivals  {}", conformance_line(c));
    }
    if let Some(w) = &s.warmup {
        let how = match w.method {
            sojourn_core::evidence::WarmupMethod::Auto => "found automatically",
            sojourn_core::evidence::WarmupMethod::Fixed => "as asked",
        };
        let _ = writeln!(
            out,
            "warm-up   trimmed the first {} ({} requests, {how}) from the percentiles; the counts and timeline keep them",
            format_ns(w.until_ns),
            w.requests
        );
    }
    if let Some(ss) = &s.steady_state {
        let _ = writeln!(out, "steady    {}", steady_line(ss, s.warmup.is_some()));
    }
    out
}

/// The validity verdict: a headline, then one line per test with its figures, its outcome and,
/// when it failed, what that means.
pub fn validity(v: &Validity) -> String {
    let mut out = String::new();
    let head = if v.valid {
        "VALID: no test failed"
    } else {
        "NOT VALID: a test failed"
    };
    let _ = writeln!(
        out,
        "validity  {head} (each at 1%; independence and stationarity read the per-interval percentiles: the run keeps no per-request series)"
    );
    for t in &v.tests {
        let _ = writeln!(out, "  {:<15} {}", t.name.label(), validity_line(t));
    }
    out
}

fn validity_line(t: &ValidityTest) -> String {
    let outcome = match t.outcome {
        TestOutcome::Pass => "pass",
        TestOutcome::Fail => "FAIL",
        TestOutcome::NotApplicable => return format!("n/a   {}", t.note),
    };
    let figures = validity_figures(t);
    match t.note.is_empty() {
        true => format!("{outcome:<5} {figures}"),
        false => format!("{outcome:<5} {figures}: {}", t.note),
    }
}

pub(crate) fn validity_figures(t: &ValidityTest) -> String {
    let stat = t.statistic.unwrap_or(f64::NAN);
    let critical = t.critical_value.unwrap_or(f64::NAN);
    let p = t
        .p_value
        .map_or(String::new(), |p| format!(", p {}", p_text(p)));
    match t.name {
        TestName::Rate => format!(
            "achieved {:+.1}% of the target (limit ±{:.0}%)",
            100.0 * stat,
            100.0 * critical
        ),
        TestName::ArrivalLaw if t.p_value.is_none() => format!(
            "send lag p99 {} (limit {}, constant schedule)",
            format_ns(stat as u64),
            format_ns(critical as u64)
        ),
        TestName::ArrivalLaw => {
            format!("Anderson–Darling A² = {stat:.2}{p} (1% critical {critical:.3})")
        }
        TestName::Independence => {
            let lag = t
                .thinning_lag
                .map_or("no lag up to 512 passes".into(), |k| {
                    format!("independent at lag {k}")
                });
            format!("Spearman lag 1 of per-interval p50 ρ = {stat:.2}{p}; {lag}")
        }
        TestName::StationarityP50 | TestName::StationarityP99 => format!(
            "KPSS (level) η = {stat:.3} (1% critical {critical:.3}), level moved {:.0}%",
            100.0 * t.effect.unwrap_or(0.0)
        ),
    }
}

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("= {p:.3}")
    }
}

fn conformance_line(c: &sojourn_core::evidence::Conformance) -> String {
    let verdict = if c.conforms {
        "sends conform"
    } else {
        "sends DO NOT conform"
    };
    let [p1, p50, p99] = c.gap_quantiles;
    let gaps = format!("gaps p1/p50/p99 {p1:.2}/{p50:.2}/{p99:.2} of the scheduled spacing");
    match (c.ks_distance, c.p_value, c.send_lag_p99_ns) {
        (Some(d), Some(pv), _) => format!(
            "{verdict} to Poisson: KS distance {d:.3} (tolerance {:.3}), p = {pv:.3}, {} gaps; {gaps}",
            c.tolerance, c.gaps
        ),
        (_, _, Some(lag)) => format!(
            "{verdict} to the constant schedule: send lag p99 {} (tolerance {}); {gaps}",
            format_ns(lag),
            format_ns(c.tolerance as u64)
        ),
        _ => verdict.to_string(),
    }
}

fn steady_line(s: &sojourn_core::evidence::SteadyStateSummary, trimmed: bool) -> String {
    let trend = match (s.trend_z, s.rise_ns) {
        (Some(z), Some(rise)) => format!("Mann–Kendall z = {z:.1}, rise {}", signed_ns(rise)),
        _ => "too few intervals for a trend test".into(),
    };
    if s.rising {
        return format!(
            "NOT STEADY: per-interval medians still rising ({trend}) over {} intervals",
            s.intervals
        );
    }
    match (s.warmup_intervals, trimmed) {
        (0, _) => format!("steady: no warm-up, no trend in {} per-interval medians ({trend})", s.intervals),
        (_, true) => format!("steady after the warm-up ({trend})"),
        (_, false) => format!(
            "WARM-UP: the first {} differ from the rest (MSER on per-interval medians); --warmup auto trims them ({trend})",
            format_ns(s.warmup_ns)
        ),
    }
}

fn signed_ns(ns: f64) -> String {
    let sign = if ns < 0.0 { "−" } else { "+" };
    format!("{sign}{}", format_ns(ns.abs() as u64))
}

fn row(name: &str, h: &HistogramSummary, label_width: usize) -> String {
    let mut s = format!("{name:label_width$}");
    for p in PERCENTILES {
        let _ = write!(s, "{:>12}", cell(h, p));
    }
    s
}

/// The connections a run had, and over HTTP/2 the streams each carried and how:
/// `16 connections × 128 streams (h2c)`.
pub fn pool_text(c: &RunConfig) -> String {
    let connections = format!("{} connections", c.connections);
    match (c.streams, &c.protocol) {
        (Some(s), Some(p)) => format!("{connections} × {s} streams ({p})"),
        (Some(s), None) => format!("{connections} × {s} streams"),
        (None, Some(p)) => format!("{connections} ({p})"),
        (None, None) => connections,
    }
}

/// What a due request waits for when the pool is full: a free connection, or over HTTP/2 a
/// free stream slot on any connection.
pub fn slot_word(c: &RunConfig) -> &'static str {
    if c.protocol.is_some() || c.streams.is_some() {
        "stream slot"
    } else {
        "connection"
    }
}

/// One line describing how the load was generated.
pub fn describe(r: &RunResult) -> String {
    let c = &r.config;
    let bound = match (c.duration_ns, c.requests) {
        (Some(ns), _) => format!("for {}", format_ns(ns)),
        (_, Some(n)) => format!("for {n} requests"),
        _ => String::new(),
    };
    if let Some(j) = &c.journeys {
        if r.mode == Mode::Closed {
            return format!(
                "CLOSED LOOP, journeys of {}: {} virtual users, each starting its next journey \
                 when the last ends, every step timed from its send, {bound}",
                j.file, j.max_journeys
            );
        }
        let arrival = c.arrival.as_deref().unwrap_or("constant");
        let rate = match stages_text(r) {
            Some(stages) => format!("arrivals along stages {stages}"),
            None => c
                .rate
                .map(|r| format!("{r} journeys/s"))
                .unwrap_or_default(),
        };
        return format!(
            "{}, journeys of {}: {arrival} {rate} {bound}, up to {} at once, each on a \
             connection of its own",
            r.mode.label(),
            j.file,
            j.max_journeys
        );
    }
    if let Some(stages) = stages_text(r) {
        let arrival = c.arrival.as_deref().unwrap_or("constant");
        let mean = c.rate.map(|r| format!("{r:.1}")).unwrap_or_default();
        let pool = match r.mode {
            Mode::Paced => format!(
                "{}, each sending at its next slot or when its previous answer arrives",
                pool_text(c)
            ),
            _ => format!("up to {}", pool_text(c)),
        };
        return format!(
            "{}, {arrival} arrivals along stages {stages} (mean {mean} req/s) {bound}, {pool}",
            r.mode.label(),
        );
    }
    match r.mode {
        Mode::Open | Mode::Tracking => {
            let arrival = c.arrival.as_deref().unwrap_or("constant");
            let rate = c.rate.map(|r| format!("{r} req/s")).unwrap_or_default();
            let ramp = c
                .ramp_to
                .map(|t| format!(" → {t} req/s"))
                .unwrap_or_default();
            format!(
                "{}, {arrival} {rate}{ramp} {bound}, up to {}",
                r.mode.label(),
                pool_text(c)
            )
        }
        Mode::Closed => format!(
            "CLOSED LOOP, {} each send → wait → record, {bound}",
            pool_text(c)
        ),
        Mode::Paced => format!(
            "PACED CLOSED LOOP, {} {} req/s {bound}: {}, each sending at its next slot \
             or when its previous answer arrives, whichever is later",
            c.arrival.as_deref().unwrap_or("constant"),
            c.rate.map(|r| r.to_string()).unwrap_or_default(),
            pool_text(c)
        ),
    }
}

/// A staged run's stages in the short form `--stages` reads.
fn stages_text(r: &RunResult) -> Option<String> {
    let configs = r.config.stages.as_ref()?;
    Some(match sojourn_core::Stages::from_configs(configs) {
        Ok(s) => s.to_string(),
        Err(e) => format!("(unreadable: {e})"),
    })
}

/// Response percentiles stage by stage, for a staged run.
pub fn stage_table(r: &RunResult) -> String {
    let slices = sojourn_core::by_stage::stages(r);
    let mut out = String::new();
    if slices.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "by stage (requests by when they finished; the last stage includes the drain):"
    );
    let _ = writeln!(
        out,
        "{:<10}{:>18}{:>20}{:>10}{:>8}{}",
        "stage",
        "window",
        "rate (req/s)",
        "answered",
        "failed",
        header(0)
    );
    for s in &slices {
        let c = s.config;
        let window = format!("{}–{}", short_time(c.start_ns), short_time(c.end_ns()));
        let rate = if c.from == c.to {
            format!("{}", c.from)
        } else {
            format!("{} → {}", c.from, c.to)
        };
        let mut line = format!(
            "{:<10}{window:>18}{rate:>20}{:>10}{:>8}",
            s.title(),
            s.completed() + s.failed(),
            s.failed()
        );
        match s.response() {
            Ok(h) if !h.is_empty() => {
                for p in PERCENTILES {
                    let _ = write!(line, "{:>12}", format_ns(h.value_at_percentile(p)));
                }
            }
            Ok(_) => line.push_str("  no answers"),
            Err(e) => line.push_str(&format!("  unreadable histogram: {e}")),
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The percentiles the per-target table shows (p99.99 needs more requests than a label has).
const TARGET_PERCENTILES: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 100.0];

/// The widest label the per-target table shows whole; longer ones are cut with `…`.
const MAX_LABEL_WIDTH: usize = 40;

/// Response percentiles label by label, for a run of many requests (`--targets`): each label's
/// requests, its share of them (as the targets file expects / as sent), completed and failed,
/// response p50 … max, and its service and send-lag p99.
pub fn target_table(r: &RunResult) -> String {
    let from = if r.mode == Mode::Paced { "slot" } else { "due" };
    let title =
        format!("by target (share: expected / actual of the requests; response from {from}):");
    label_table(&title, &r.targets, "requests")
}

/// Journey by journey (`--journey`): journeys, their share, completed and failed, the journey
/// time (from its due time to the end of its last step), its first step's send lag.
pub fn journey_table(r: &RunResult) -> String {
    let from = match r.mode {
        Mode::Closed => "its first send",
        _ => "the journey's due time",
    };
    let title = format!(
        "by journey (share: expected / actual of the journeys; time from {from} to the end of \
         its last step):"
    );
    label_table(&title, &r.journeys, "journeys")
}

/// Step by step (`--journey`): each step timed from its own due time (its journey's previous
/// answer plus its think time).
pub fn step_table(r: &RunResult) -> String {
    let from = match r.mode {
        Mode::Closed => "its send",
        _ => "the step's due time",
    };
    let title =
        format!("by step (share: its journey's / actual of the steps; response from {from}):");
    label_table(&title, &r.steps, "steps")
}

/// A row per label of `rows` under `title`; `what` names what the counts count.
fn label_table(title: &str, rows: &[TargetResult], what: &str) -> String {
    let mut out = String::new();
    if rows.is_empty() {
        return out;
    }
    let w = rows
        .iter()
        .map(|t| t.label.chars().count().min(MAX_LABEL_WIDTH))
        .chain([5])
        .max()
        .unwrap_or(5)
        + 2;
    let _ = writeln!(out, "{title}");
    let mut head = format!(
        "{:<w$}{:>10}{:>17}{:>11}{:>8}",
        "label", what, "share", "completed", "failed"
    );
    for p in TARGET_PERCENTILES {
        let name = if p >= 100.0 {
            "max".to_string()
        } else {
            format!("p{p}")
        };
        let _ = write!(head, "{name:>12}");
    }
    let _ = write!(head, "{:>14}{:>14}", "service p99", "send lag p99");
    let _ = writeln!(out, "{head}");
    for t in rows {
        let _ = writeln!(out, "{}", target_row(t, rows, w));
    }
    out
}

/// `journeys due 100  completed 97  failed 2 (check 2)  running at the end 1  never started 0`.
fn journey_counts(r: &RunResult) -> Option<String> {
    r.config.journeys.as_ref()?;
    let mut total = sojourn_core::LabelCounts::default();
    for j in &r.journeys {
        total.completed += j.counts.completed;
        total.failed.merge(&j.counts.failed);
        total.censored += j.counts.censored;
        total.never_sent += j.counts.never_sent;
    }
    let failed: Vec<String> = total
        .failed
        .iter()
        .filter(|&(_, n)| n > 0)
        .map(|(k, n)| format!("{} {n}", k.name()))
        .collect();
    let failed = if failed.is_empty() {
        "none".into()
    } else {
        failed.join(", ")
    };
    Some(format!(
        "journeys  due {}  completed {}  failed {} ({failed})  running at the end {}  never \
         started {}",
        total.total(),
        total.completed,
        total.failed.total(),
        total.censored,
        total.never_sent
    ))
}

fn target_row(t: &TargetResult, all: &[TargetResult], w: usize) -> String {
    let actual = t
        .actual_share(all)
        .map_or("—".to_string(), |a| format!("{:.1}%", a * 100.0));
    let share = format!("{:.1}% / {actual}", t.share * 100.0);
    let mut line = format!(
        "{:<w$}{:>10}{share:>17}{:>11}{:>8}",
        cut(&t.label, MAX_LABEL_WIDTH),
        t.counts.total(),
        t.counts.completed,
        t.counts.failed.total()
    );
    for p in TARGET_PERCENTILES {
        let _ = write!(line, "{:>12}", cell(&t.response, p));
    }
    let _ = write!(
        line,
        "{:>14}{:>14}",
        cell(&t.service, 99.0),
        cell(&t.send_lag, 99.0)
    );
    line
}

/// `text` whole if it has at most `width` characters, else its start and `…`.
fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut s: String = text.chars().take(width - 1).collect();
    s.push('…');
    s
}

/// Why some times are only lower bounds, with the counts: the requests that got no answer.
/// Each reason is one phrase, counts written by `count`; none when nothing was left unanswered.
pub fn lower_bound_causes(c: &Counts, count: impl Fn(u64) -> String) -> Vec<String> {
    let timeouts = c.failed.get(sojourn_core::FailureClass::Timeout);
    [
        (c.censored, "still unanswered at the end"),
        (
            c.never_sent,
            "never sent (due, but the run ended before they went out)",
        ),
        (timeouts, "timed out (counted at the timeout)"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{} {what}", count(n)))
    .collect()
}

/// `a`, `a and b`, `a, b and c`.
pub fn in_words(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The footnote under a table with `≥` in it: what the lower bounds rest on, by name and count.
fn lower_bound_note(c: &Counts) -> String {
    let causes = lower_bound_causes(c, |n| n.to_string());
    if causes.is_empty() {
        return "≥ marks lower bounds: requests without an answer could only raise them".into();
    }
    format!(
        "≥ marks lower bounds, from requests without an answer: {}; each counts at the time it had waited by then, so the true values could only be higher",
        in_words(&causes)
    )
}

/// Final answers by HTTP status code, `status    200 3000  404 100`; `None` when the run
/// counted none (an import, a simulation, or nothing answered).
pub fn status_line(r: &RunResult) -> Option<String> {
    if r.statuses.is_empty() {
        return None;
    }
    let parts: Vec<String> = r
        .statuses
        .iter()
        .map(|(code, n)| format!("{code} {n}"))
        .collect();
    Some(format!("status    {}", parts.join("  ")))
}

/// A time on the run's clock in the plan's own terms: whole seconds, or milliseconds.
fn short_time(ns: u64) -> String {
    if ns % 1_000_000_000 == 0 {
        format!("{}s", ns / 1_000_000_000)
    } else {
        format_ns(ns).replace(' ', "")
    }
}

fn counts(r: &RunResult) -> String {
    let c = &r.counts;
    let mut failed: Vec<String> = c
        .failed
        .iter()
        .filter(|&(_, n)| n > 0)
        .map(|(k, n)| format!("{} {n}", k.name()))
        .collect();
    if failed.is_empty() {
        failed.push("none".into());
    }
    // A merge always says how much of its plan nobody measured, loudly when any.
    let not_measured = match (c.not_measured, r.merged.is_some()) {
        (0, false) => String::new(),
        (0, true) => "  not measured 0".into(),
        (n, _) => format!("  NOT MEASURED {n} (shards missing or cut short)"),
    };
    let what = match r.config.journeys {
        Some(_) => "steps     due",
        None => "requests  scheduled",
    };
    format!(
        "{what} {}  completed {}  failed {} ({})  censored {}  never sent {}{not_measured}",
        c.scheduled,
        c.completed,
        c.failed.total(),
        failed.join(", "),
        c.censored,
        c.never_sent
    )
}

/// The shards a merge lacks, each in a phrase: `shard 1 missing`, `shard 3 short (40 of 150)`.
pub fn shard_gaps(info: &MergeInfo) -> Vec<String> {
    info.shards
        .iter()
        .filter_map(|s| match s.status {
            ShardState::Complete => None,
            ShardState::Missing => Some(format!("shard {} missing", s.index)),
            ShardState::Short => Some(format!(
                "shard {} short ({} of {})",
                s.index, s.accounted, s.due
            )),
        })
        .collect()
}

/// For a partial merge, one line naming the shards it lacks and what that leaves out.
pub fn partial_line(r: &RunResult) -> Option<String> {
    let gaps = shard_gaps(r.merged.as_ref()?);
    if gaps.is_empty() {
        return None;
    }
    Some(format!(
        "PARTIAL MERGE: {}; {} of {} scheduled requests not measured: every count and percentile here covers only the shards measured",
        gaps.join(", "),
        r.counts.not_measured,
        r.counts.scheduled
    ))
}

/// A merge's shards: each one's status, its due and accounted requests, and how late it began.
pub fn shard_table(r: &RunResult) -> String {
    let mut out = String::new();
    let Some(info) = &r.merged else {
        return out;
    };
    let _ = writeln!(
        out,
        "\nshards ({} of {}{}):",
        info.shards
            .iter()
            .filter(|s| s.status == ShardState::Complete)
            .count(),
        info.shards.len(),
        if info.forced {
            "; plans differed: --force"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "{:>7}  {:<9}{:>12}{:>12}  {:<14}source",
        "shard", "status", "due", "accounted", "start skew"
    );
    for s in &info.shards {
        let skew = s.start_skew_ns.map_or("-".into(), signed_ns_i);
        let _ = writeln!(
            out,
            "{:>7}  {:<9}{:>12}{:>12}  {:<14}{}",
            s.index,
            format!("{:?}", s.status).to_lowercase(),
            s.due,
            s.accounted,
            skew,
            s.source.as_deref().unwrap_or("(none)")
        );
    }
    out
}

fn signed_ns_i(ns: i64) -> String {
    let sign = if ns < 0 { "−" } else { "+" };
    format!("{sign}{}", format_ns(ns.unsigned_abs()))
}

fn rates(r: &RunResult) -> String {
    if r.config.journeys.is_some() {
        let target = r.rate.target.map_or("—".into(), |t| format!("{t:.1}"));
        return format!(
            "rate      target {target} journeys/s  started {:.1}/s",
            r.rate.achieved
        );
    }
    let target = r
        .rate
        .target
        .map_or("none (closed loop)".to_string(), |t| format!("{t:.1}/s"));
    format!(
        "rate      target {target}  achieved {:.1}/s  sent {:.1}/s",
        r.rate.achieved, r.rate.sent
    )
}

/// Who held an open loop back at its rate: `at 5000 req/s: OK`, or the status with its evidence
/// and what would raise a client-side limit.
pub fn rate_line(r: &RunResult) -> Option<String> {
    let v = r.checks.rate.as_ref()?;
    let rate = r
        .config
        .rate
        .map(sojourn_core::sweep::rate_text)
        .unwrap_or_default();
    let mut line = format!("at {rate} req/s: {}", v.status.label());
    if !v.why.is_empty() {
        line.push_str(&format!(" ({})", v.why.join("; ")));
    }
    if let Some(advice) = &v.advice {
        line.push_str(&format!(". {advice}"));
    }
    Some(line)
}

/// The full terminal summary of one run.
pub fn summary(r: &RunResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} — {}", r.label, describe(r));
    if let Some(t) = &r.config.target {
        let _ = writeln!(out, "target    {t}");
    }
    if r.interrupted {
        let _ = writeln!(
            out,
            "INTERRUPTED: stopped early; everything gathered until then is below"
        );
    }
    let _ = writeln!(out, "{}", counts(r));
    if let Some(line) = journey_counts(r) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(line) = partial_line(r) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(line) = status_line(r) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(s) = &r.stream {
        let calls = s.first_message.count;
        let _ = writeln!(
            out,
            "messages  {} in streamed answers ({calls} calls got at least one)",
            s.messages
        );
    }
    let _ = writeln!(out, "{}", rates(r));
    let _ = writeln!(out);
    let w = 22;
    let _ = writeln!(out, "{}", header(w));
    let h = &r.histograms;
    let from_due = if r.mode == Mode::Paced {
        "response (from slot)"
    } else {
        "response (from due)"
    };
    let _ = writeln!(out, "{}", row(from_due, &h.response, w));
    let _ = writeln!(out, "{}", row("service (from send)", &h.service, w));
    if let Some(s) = &r.stream {
        let _ = writeln!(out, "{}", row("first message (due)", &s.first_message, w));
    }
    if r.mode != Mode::Closed {
        let _ = writeln!(out, "{}", row("send lag", &h.send_lag, w));
    }
    if let Some(control) = &h.control_hiccup {
        let _ = writeln!(out, "{}", row("machine hiccups†", control, w));
    }
    if let Some(own) = &h.hiccup {
        let _ = writeln!(out, "{}", row("own hiccups‡", own, w));
    }
    if let Some(b) = &h.backfilled {
        let _ = writeln!(out, "{}", row("back-filled estimate*", b, w));
        let _ = writeln!(out, "* closed loop + HdrHistogram expected-interval correction: invented samples, not measurements");
    }
    if h.control_hiccup.is_some() {
        let _ = writeln!(out, "† how late an idle control process that only sleeps got the CPU back, beside the run: the machine's floor under send lag");
    }
    if h.hiccup.is_some() {
        let _ = writeln!(out, "‡ the same, from a thread inside this process: its own work can make it late, so it excuses nothing");
    }
    for table in [target_table(r), journey_table(r), step_table(r)] {
        if !table.is_empty() {
            let _ = writeln!(out);
            out.push_str(&table);
        }
    }
    let lower_bounds = [&h.response, &h.service]
        .into_iter()
        .chain(
            r.targets
                .iter()
                .chain(&r.steps)
                .chain(&r.journeys)
                .flat_map(|t| [&t.response, &t.service]),
        )
        .any(|h| !h.lower_bounds.is_empty());
    if lower_bounds {
        let _ = writeln!(out, "{}", lower_bound_note(&r.counts));
    }
    let _ = writeln!(out);
    let by_stage = stage_table(r);
    if !by_stage.is_empty() {
        out.push_str(&by_stage);
        let _ = writeln!(out);
    }
    out.push_str(&confidence(&h.response));
    out.push_str(&crate::repetitions::text(r));
    out.push_str(&statistics(r));
    if let Some(v) = &r.statistics.validity {
        out.push_str(&validity(v));
    }
    let _ = writeln!(out);
    let verdict = match r.checks.generator {
        GeneratorVerdict::Ok if r.checks.pool_bound => format!(
            "generator ok: it kept the schedule, but requests waited for a free {} (see below)",
            slot_word(&r.config)
        ),
        GeneratorVerdict::Ok => "generator ok: requests went out on schedule".to_string(),
        GeneratorVerdict::Behind => "generator BEHIND (see below)".to_string(),
        GeneratorVerdict::NotApplicable if r.mode == Mode::Paced => {
            "generator check: not applicable: a paced closed loop sends late by design whenever an answer is late (see send lag)".to_string()
        }
        GeneratorVerdict::NotApplicable if r.mode == Mode::Tracking => {
            "generator check: not applicable: the schedule-tracking client sends late by design (see send lag)".to_string()
        }
        GeneratorVerdict::NotApplicable => {
            "generator check: not applicable to a closed loop".to_string()
        }
    };
    let _ = writeln!(out, "{verdict}");
    if let Some(line) = rate_line(r) {
        let _ = writeln!(out, "{line}");
    }
    for note in &r.checks.notes {
        let _ = writeln!(out, "- {note}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sojourn_core::record::{Recorder, Stamps};
    use sojourn_core::{check, FailureClass, Outcome, RunConfig, RunFacts};
    use std::time::Duration;

    fn result(censor: bool) -> RunResult {
        let mut r = Recorder::new(Duration::from_secs(1));
        for i in 0..1000u64 {
            let at = Duration::from_millis(i);
            let outcome = if i == 7 {
                Outcome::Failed(FailureClass::Http5xx)
            } else {
                Outcome::Ok
            };
            r.record(
                &Stamps::on_time(at),
                at + Duration::from_millis(10),
                outcome,
            );
        }
        if censor {
            r.record_in_flight(
                &Stamps::on_time(Duration::from_millis(999)),
                Duration::from_secs(5),
            );
        }
        let m = Recorder::merge_all([r]);
        let config = RunConfig {
            rate: Some(1000.0),
            arrival: Some("constant".into()),
            duration_ns: Some(1_000_000_000),
            connections: 64,
            interval_ns: 1_000_000_000,
            target: Some("http://127.0.0.1:1/api".into()),
            ..Default::default()
        };
        let facts = RunFacts {
            label: "open".into(),
            mode: Mode::Open,
            config,
            scheduled: m.tally.accounted(),
            elapsed: Duration::from_secs(1),
            interrupted: false,
            checks: check::assess_open(&m, 64),
            backfill_interval: None,
        };
        RunResult::build(&m, facts)
    }

    #[test]
    fn summary_shows_counts_rates_and_the_tail() {
        let text = summary(&result(false));
        assert!(
            text.contains("open loop, constant 1000 req/s for 1.000 s, up to 64 connections"),
            "{text}"
        );
        assert!(
            text.contains(
                "scheduled 1000  completed 999  failed 1 (http_5xx 1)  censored 0  never sent 0"
            ),
            "{text}"
        );
        for col in ["p50", "p90", "p99", "p99.9", "p99.99", "max"] {
            assert!(text.contains(col), "column {col}");
        }
        assert!(text.contains("10.00 ms"), "{text}");
        let table = text
            .lines()
            .find(|l| l.starts_with("response (from"))
            .unwrap();
        assert!(!table.contains('≥'), "nothing censored, nothing marked");
    }

    /// The summary prints each response percentile's batch-means interval under the order
    /// statistics' line, or that the run holds too few independent stretches for one.
    #[test]
    fn the_batch_means_line_gives_each_interval_or_says_why_not() {
        use sojourn_core::batches::{BatchCi, BatchSet};
        let mut h = meter(100);
        assert_eq!(batch_intervals(&h), "", "no line without batch intervals");
        let ci = |lo, hi, stretches| BatchCi {
            lo,
            hi,
            hi_open: false,
            stretches,
            batches: if lo.is_some() { 6 } else { 0 },
        };
        h.batch_ci = Some(BatchSet {
            level: 0.95,
            intervals: 61,
            percentiles: [
                ("50".to_string(), ci(Some(37_950_000), Some(68_810_000), 12)),
                ("99".to_string(), ci(None, None, 3)),
            ]
            .into(),
        });
        let line = batch_intervals(&h);
        assert!(
            line.starts_with(
                "response with 95% intervals from the run's 61 intervals (batch means"
            ),
            "{line}"
        );
        assert!(line.contains("[37.95 ms, 68.81 ms]"), "{line}");
        assert!(
            line.contains("[too few independent stretches: 3]"),
            "{line}"
        );
    }

    fn meter(p99_us: u64) -> sojourn_core::result::HistogramSummary {
        let mut h = sojourn_core::record::new_histogram();
        h.record_n(10_000, 98).unwrap();
        h.record_n(p99_us * 1_000, 2).unwrap();
        sojourn_core::result::HistogramSummary::of(&h, &sojourn_core::record::new_histogram())
    }

    /// Both meters, each on its own row under its own name: the control process's as the
    /// machine's, this process's own apart from it.
    #[test]
    fn summary_shows_the_machines_hiccups_and_the_processs_own() {
        let mut r = result(false);
        r.histograms.control_hiccup = Some(meter(300));
        r.histograms.hiccup = Some(meter(7_000));
        let text = summary(&r);
        let row = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("no {name} row: {text}"))
                .to_string()
        };
        assert!(row("machine hiccups†").contains("300.0 µs"), "{text}");
        assert!(row("own hiccups‡").contains("7.00 ms"), "{text}");
        assert!(
            text.contains("† how late an idle control process"),
            "{text}"
        );
        assert!(
            text.contains("‡ the same, from a thread inside this process"),
            "{text}"
        );
        // A result with only the process's own meter (an older run, or a library's) never
        // calls it the machine's.
        r.histograms.control_hiccup = None;
        let text = summary(&r);
        assert!(!text.contains("machine hiccups"), "{text}");
        assert!(text.contains("own hiccups‡"), "{text}");
    }

    /// Against a target that holds every connection, the generator is on time but the requests
    /// are not: the summary must not say they went out on schedule.
    #[test]
    fn a_full_pool_is_not_called_on_schedule() {
        let mut rec = Recorder::new(Duration::from_secs(1));
        for i in 0..1000u64 {
            let at = Duration::from_millis(i);
            let waited = Stamps {
                intended: at,
                dispatched: at,
                sent: at + Duration::from_secs(4),
                waited_for_connection: true,
            };
            rec.record(&waited, at + Duration::from_secs(5), Outcome::Ok);
        }
        let m = Recorder::merge_all([rec]);
        let facts = RunFacts {
            label: "open".into(),
            mode: Mode::Open,
            config: RunConfig::default(),
            scheduled: 1000,
            elapsed: Duration::from_secs(6),
            interrupted: false,
            checks: check::assess_open(&m, 64),
            backfill_interval: None,
        };
        let r = RunResult::build(&m, facts);
        assert!(r.checks.pool_bound);
        let text = summary(&r);
        assert!(!text.contains("went out on schedule"), "{text}");
        assert!(
            text.contains(
                "generator ok: it kept the schedule, but requests waited for a free connection"
            ),
            "{text}"
        );
        assert!(text.contains("send lag p50 4.001 s"), "{text}");
        assert!(!summary(&result(false)).contains("waited for a free connection"));
    }

    #[test]
    fn summary_shows_intervals_and_thin_percentiles() {
        let r = result(false);
        let text = summary(&r);
        // 1,000 answers: p99 has ten beyond it, p99.9 one, p99.99 a tenth.
        let ci = r
            .histograms
            .response
            .ci_at(99.0)
            .expect("an interval at p99");
        assert!(ci.lo <= r.histograms.response.percentiles.get(99.0).unwrap());
        assert!(text.contains(&format!(
            "p99 {}",
            with_interval(&r.histograms.response, 99.0)
        )));
        assert!(
            text.contains("p99.99: 0 samples above — not meaningful; run ≥ 100k requests"),
            "{text}"
        );
        assert!(
            text.contains("p99.9: 1 sample above — not meaningful; run ≥ 10k requests"),
            "{text}"
        );
        assert!(
            !text.contains("p99: "),
            "p99 rests on ten samples: no warning\n{text}"
        );
    }

    #[test]
    fn an_interval_reads_with_its_units_at_both_ends() {
        let mut h = result(false).histograms.response;
        let p = 99.0;
        let ci = sojourn_core::evidence::Ci {
            lo: 191_000_000,
            hi: 197_900_000,
            hi_open: false,
        };
        h.percentiles.0.retain(|(q, _)| *q != p);
        h.percentiles.0.push((p, 194_600_000));
        h.ci.as_mut().unwrap().percentiles.insert("99".into(), ci);
        assert_eq!(with_interval(&h, p), "194.60 ms [191.00 ms, 197.90 ms]");
        let open = sojourn_core::evidence::Ci {
            hi_open: true,
            ..ci
        };
        h.ci.as_mut().unwrap().percentiles.insert("99".into(), open);
        assert_eq!(with_interval(&h, p), "194.60 ms [191.00 ms, ≥ 197.90 ms]");
        let across = sojourn_core::evidence::Ci {
            lo: 639_000,
            hi: 1_380_000,
            hi_open: true,
        };
        h.ci.as_mut()
            .unwrap()
            .percentiles
            .insert("99".into(), across);
        assert_eq!(
            with_interval(&h, p),
            "194.60 ms [639.0 µs, ≥ 1.38 ms]",
            "each end in its own unit, never a bare number"
        );
    }

    /// Samples are counted whole: the requests ranked above the percentile, n − ⌈n·p⌉.
    #[test]
    fn thin_percentiles_count_whole_samples() {
        let thin = |beyond: f64| sojourn_core::evidence::Thin {
            beyond,
            needed: 1_000,
        };
        let cases = [
            (600.0 * 0.01, "p99: 6 samples above", "600 requests"),
            (5.999_999_999, "p99: 6 samples above", "rounding below six"),
            (
                1.35,
                "p99: 1 sample above",
                "13,500 at p99.99, as an expectation",
            ),
            (0.1, "p99: 0 samples above", "1,000 at p99.99"),
        ];
        for (beyond, want, why) in cases {
            let text = thin_warning(99.0, thin(beyond));
            assert!(
                text.starts_with(&format!("{want} — not meaningful; run ≥ 1k requests")),
                "{why}: {text}"
            );
        }
    }

    /// How many requests `labelled` sends: label 1 takes every fourth.
    const LABELLED: u64 = 400;

    /// A run of two labels, three quarters `GET /item` (answered 200 in 2 ms, one still in
    /// flight at the end) and a quarter `GET /missing` (answered 404 in 30 ms), over HTTP/2 when
    /// `h2`.
    fn labelled(h2: bool) -> RunResult {
        let labels = ["GET /item", "GET /missing"];
        let mut rec = Recorder::with_labels(Duration::from_secs(1), labels.len());
        for i in 0..LABELLED - 1 {
            let at = Duration::from_millis(i);
            let s = Stamps::on_time(at);
            let (label, status, took) = if i % 4 == 3 {
                (1, 404, 30)
            } else {
                (0, 200, 2)
            };
            let done = at + Duration::from_millis(took);
            let outcome = Outcome::of_status(status);
            rec.record(&s, done, outcome);
            rec.record_status(status);
            rec.label(label).unwrap().record(&s, done, outcome);
        }
        let last = Stamps::on_time(Duration::from_millis(LABELLED - 1));
        let end = Duration::from_secs(2);
        rec.record_in_flight(&last, end);
        rec.label(0)
            .unwrap()
            .record_unfinished(last.intended, Some(last.sent), end);
        let m = Recorder::merge_all([rec]);
        let config = RunConfig {
            rate: Some(1000.0),
            arrival: Some("constant".into()),
            duration_ns: Some(LABELLED * 1_000_000),
            connections: 16,
            interval_ns: 1_000_000_000,
            protocol: h2.then(|| "h2c".into()),
            streams: h2.then_some(128),
            ..Default::default()
        };
        let facts = RunFacts {
            label: "targets".into(),
            mode: Mode::Open,
            config,
            scheduled: m.tally.accounted(),
            elapsed: end,
            interrupted: false,
            checks: check::assess_open(&m, 16),
            backfill_interval: None,
        };
        let mut r = RunResult::build(&m, facts);
        r.targets = labels
            .iter()
            .zip([0.75, 0.25])
            .zip(&m.labels)
            .map(|((l, share), rec)| sojourn_core::TargetResult::of(l, share, rec))
            .collect();
        r
    }

    /// Each of `parts` in `line`, in this order.
    fn in_order(line: &str, parts: &[String]) {
        let mut rest = line;
        for part in parts {
            let at = rest
                .find(part.as_str())
                .unwrap_or_else(|| panic!("{part:?} not (in order) in {line:?}"));
            rest = &rest[at + part.len()..];
        }
    }

    #[test]
    fn a_run_of_many_requests_has_a_row_per_label_and_its_status_counts() {
        let r = labelled(false);
        let text = summary(&r);
        let n404 = r.statuses[&404];
        let n200 = r.statuses[&200];
        assert_eq!(
            n200 + n404,
            LABELLED - 1,
            "every answer but the one in flight"
        );
        assert!(
            text.lines()
                .any(|l| l == format!("status    200 {n200}  404 {n404}")),
            "{text}"
        );
        let head = text
            .lines()
            .find(|l| l.starts_with("label"))
            .expect("a per-target table");
        in_order(
            head,
            &[
                "requests",
                "share",
                "completed",
                "failed",
                "p50",
                "p90",
                "p99",
                "p99.9",
            ]
            .map(String::from),
        );
        in_order(
            head,
            &["max", "service p99", "send lag p99"].map(String::from),
        );
        for t in &r.targets {
            let row = text
                .lines()
                .find(|l| l.starts_with(&t.label))
                .unwrap_or_else(|| panic!("a row for {}\n{text}", t.label));
            let actual = t.counts.total() as f64 / (LABELLED as f64) * 100.0;
            let mut cells = vec![
                t.counts.total().to_string(),
                format!("{:.1}% / {actual:.1}%", t.share * 100.0),
                t.counts.completed.to_string(),
                t.counts.failed.total().to_string(),
            ];
            cells.extend(TARGET_PERCENTILES.map(|p| cell(&t.response, p)));
            cells.push(cell(&t.service, 99.0));
            cells.push(cell(&t.send_lag, 99.0));
            in_order(row, &cells);
        }
        let (item, missing) = (&r.targets[0], &r.targets[1]);
        let item_row = text.lines().find(|l| l.starts_with("GET /item")).unwrap();
        let missing_row = text
            .lines()
            .find(|l| l.starts_with("GET /missing"))
            .unwrap();
        assert!(
            item_row.contains(&format!("≥{}", format_ns(item.response.max))),
            "the request in flight makes its label's max a lower bound: {item_row}"
        );
        assert!(!missing_row.contains('≥'), "{missing_row}");
        assert_eq!(missing.counts.failed.total(), n404, "a 404 is a failure");
        assert!(text.contains("≥ marks lower bounds"));
        // A run of one request has neither.
        let plain = summary(&result(false));
        assert!(!plain.contains("by target") && !plain.contains("status  "));
    }

    #[test]
    fn an_http2_run_names_its_streams_and_stream_slots() {
        let r = labelled(true);
        let c = &r.config;
        let text = summary(&r);
        let first = text.lines().next().unwrap();
        let pool = format!(
            "up to {} connections × {} streams ({})",
            c.connections,
            c.streams.unwrap(),
            c.protocol.as_deref().unwrap()
        );
        assert!(first.ends_with(&pool), "{first}");
        let h1 = summary(&labelled(false));
        let h1_first = h1.lines().next().unwrap();
        assert!(
            h1_first.ends_with(&format!("up to {} connections", c.connections)),
            "{h1_first}"
        );
        let mut pooled = r.clone();
        pooled.checks.pool_bound = true;
        let text = summary(&pooled);
        assert!(
            text.contains("but requests waited for a free stream slot"),
            "{text}"
        );
        assert!(!text.contains("free connection (see below)"), "{text}");
    }

    /// 100 requests answered in 10 ms, then `censored` sent and still out, and `never_sent` due
    /// and never sent, when the run ends at 2 s.
    fn unanswered(censored: u64, never_sent: u64) -> RunResult {
        let mut r = Recorder::new(Duration::from_secs(1));
        for i in 0..100u64 {
            let at = Duration::from_millis(i);
            r.record(
                &Stamps::on_time(at),
                at + Duration::from_millis(10),
                Outcome::Ok,
            );
        }
        let end = Duration::from_secs(2);
        for i in 0..censored {
            r.record_in_flight(&Stamps::on_time(Duration::from_millis(100 + i)), end);
        }
        for i in 0..never_sent {
            let at = Duration::from_millis(100 + censored + i);
            r.record_never_sent(at, at, end);
        }
        let m = Recorder::merge_all([r]);
        let facts = RunFacts {
            label: "paced".into(),
            mode: Mode::Paced,
            config: RunConfig {
                rate: Some(1000.0),
                arrival: Some("constant".into()),
                connections: 10,
                interval_ns: 1_000_000_000,
                ..Default::default()
            },
            scheduled: m.tally.accounted(),
            elapsed: end,
            interrupted: false,
            checks: check::Checks::not_applicable(vec![]),
            backfill_interval: None,
        };
        RunResult::build(&m, facts)
    }

    /// The footnote under `≥` names what the bounds rest on, with counts: never-sent slots
    /// are not "requests still unanswered".
    #[test]
    fn the_lower_bound_note_names_its_causes_with_counts() {
        let never_sent = summary(&unanswered(0, 130));
        let note = never_sent
            .lines()
            .find(|l| l.starts_with("≥ marks"))
            .expect("a note");
        assert!(
            note.contains(": 130 never sent (due, but the run ended before they went out);"),
            "{note}"
        );
        assert!(!note.contains("unanswered at the end"), "{note}");
        let both = summary(&unanswered(40, 130));
        let note = both.lines().find(|l| l.starts_with("≥ marks")).unwrap();
        assert!(
            note.contains(
                ": 40 still unanswered at the end and 130 never sent (due, but the run ended before they went out);"
            ),
            "{note}"
        );
    }

    /// The columns of the summary row named `name`: p50, p90, p99, p99.9, p99.99, max.
    fn columns(text: &str, name: &str) -> Vec<String> {
        let row: Vec<char> = text
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}\n{text}"))
            .chars()
            .skip(22)
            .collect();
        row.chunks(12)
            .map(|c| c.iter().collect::<String>().trim().to_string())
            .collect()
    }

    /// Requests sent and unanswered at the end waited at least end − sent for the server: the
    /// service row marks what they could raise, as the response row does.
    #[test]
    fn service_percentiles_that_unanswered_requests_could_raise_are_lower_bounds() {
        let text = summary(&unanswered(40, 0));
        for name in ["response", "service"] {
            let cols = columns(&text, name);
            assert_eq!(cols.len(), 6, "{name}: {cols:?}");
            assert!(!cols[0].starts_with('≥'), "{name} p50 is exact: {cols:?}");
            for (i, p) in [(2, "p99"), (5, "max")] {
                assert!(cols[i].starts_with('≥'), "{name} {p}: {cols:?}");
            }
        }
        let service = columns(&text, "service");
        assert_eq!(service[0], "10.00 ms", "{service:?}");
        assert!(text.contains("≥ marks lower bounds"));
    }

    #[test]
    fn censored_percentiles_print_as_lower_bounds() {
        let text = summary(&result(true));
        let response = text.lines().find(|l| l.starts_with("response")).unwrap();
        assert!(
            response.trim_end().ends_with("≥4.001 s"),
            "max is a lower bound: {response}"
        );
        assert!(!response.contains("≥10"), "p50 is exact: {response}");
        assert!(text.contains("≥ marks lower bounds"));
    }
}
