//! Terminal tables: the run summary. (The seeds' side-by-side comparison is in [`crate::compare`].)
use std::fmt::Write as _;

use sojourn_core::result::{HistogramSummary, RunResult, PERCENTILES};
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

/// A value with its confidence interval in the value's own unit: `194.60 ms [191.00, 197.90]`.
/// An open upper end (censored or beyond the data) reads `≥198.00`.
pub fn with_interval(h: &HistogramSummary, p: f64) -> String {
    let value = cell(h, p);
    let Some(ci) = h.ci_at(p) else {
        return value;
    };
    let unit = sojourn_core::units::unit_for(h.at(p).map_or(ci.hi, |b| b.value));
    let number = |ns: u64| unit.number(ns);
    let hi = if ci.hi_open {
        format!("≥{}", number(ci.hi))
    } else {
        number(ci.hi)
    };
    format!("{value} [{}, {hi}]", number(ci.lo))
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
    for &p in &PERCENTILES {
        if let Some(t) = h.thin_at(p) {
            let _ = writeln!(out, "  {}", thin_warning(p, t));
        }
    }
    out
}

/// "p99.99: 1.35 samples above — not meaningful; run ≥ 100k requests".
pub fn thin_warning(p: f64, t: sojourn_core::evidence::Thin) -> String {
    format!(
        "p{p}: {:.2} samples above — not meaningful; run ≥ {} requests",
        t.beyond,
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

/// One line describing how the load was generated.
pub fn describe(r: &RunResult) -> String {
    let c = &r.config;
    let bound = match (c.duration_ns, c.requests) {
        (Some(ns), _) => format!("for {}", format_ns(ns)),
        (_, Some(n)) => format!("for {n} requests"),
        _ => String::new(),
    };
    if let Some(stages) = stages_text(r) {
        let arrival = c.arrival.as_deref().unwrap_or("constant");
        let mean = c.rate.map(|r| format!("{r:.1}")).unwrap_or_default();
        let pool = match r.mode {
            Mode::Paced => format!(
                "{} connections, each sending at its next slot or when its previous answer arrives",
                c.connections
            ),
            _ => format!("up to {} connections", c.connections),
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
                "{}, {arrival} {rate}{ramp} {bound}, up to {} connections",
                r.mode.label(),
                c.connections
            )
        }
        Mode::Closed => format!(
            "CLOSED LOOP, {} connections each send → wait → record, {bound}",
            c.connections
        ),
        Mode::Paced => format!(
            "PACED CLOSED LOOP, {} {} req/s {bound}: {} connections, each sending at its next slot \
             or when its previous answer arrives, whichever is later",
            c.arrival.as_deref().unwrap_or("constant"),
            c.rate.map(|r| r.to_string()).unwrap_or_default(),
            c.connections
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
    let not_measured = if c.not_measured > 0 {
        format!(
            "  NOT MEASURED {} (shards missing or cut short)",
            c.not_measured
        )
    } else {
        String::new()
    };
    format!(
        "requests  scheduled {}  completed {}  failed {} ({})  censored {}  never sent {}{not_measured}",
        c.scheduled,
        c.completed,
        c.failed.total(),
        failed.join(", "),
        c.censored,
        c.never_sent
    )
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
            .filter(|s| s.status == sojourn_core::placement::ShardState::Complete)
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
    if r.mode != Mode::Closed {
        let _ = writeln!(out, "{}", row("send lag", &h.send_lag, w));
    }
    if let Some(hiccup) = &h.hiccup {
        let _ = writeln!(out, "{}", row("machine hiccups†", hiccup, w));
    }
    if let Some(b) = &h.backfilled {
        let _ = writeln!(out, "{}", row("back-filled estimate*", b, w));
        let _ = writeln!(out, "* closed loop + HdrHistogram expected-interval correction: invented samples, not measurements");
    }
    if h.hiccup.is_some() {
        let _ = writeln!(out, "† how late a thread that only sleeps got the CPU back, beside the run: the machine's floor under send lag");
    }
    if !h.response.lower_bounds.is_empty() {
        let _ = writeln!(out, "≥ marks lower bounds: requests still unanswered at the end (or timed out) could only raise them");
    }
    let _ = writeln!(out);
    let by_stage = stage_table(r);
    if !by_stage.is_empty() {
        out.push_str(&by_stage);
        let _ = writeln!(out);
    }
    out.push_str(&confidence(&h.response));
    out.push_str(&statistics(r));
    let _ = writeln!(out);
    let verdict = match r.checks.generator {
        GeneratorVerdict::Ok if r.checks.pool_bound => {
            "generator ok: it kept the schedule, but requests waited for a free connection (see below)".to_string()
        }
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
            text.contains("p99.99: 0.10 samples above — not meaningful; run ≥ 100k requests"),
            "{text}"
        );
        assert!(
            text.contains("p99.9: 1.00 samples above — not meaningful; run ≥ 10k requests"),
            "{text}"
        );
        assert!(
            !text.contains("p99: "),
            "p99 rests on ten samples: no warning\n{text}"
        );
    }

    #[test]
    fn an_interval_reads_in_its_value_unit() {
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
        assert_eq!(with_interval(&h, p), "194.60 ms [191.00, 197.90]");
        let open = sojourn_core::evidence::Ci {
            hi_open: true,
            ..ci
        };
        h.ci.as_mut().unwrap().percentiles.insert("99".into(), open);
        assert_eq!(with_interval(&h, p), "194.60 ms [191.00, ≥197.90]");
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
