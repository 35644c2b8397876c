//! `sojourn report`: result files → one self-contained HTML file.
//!
//! Everything is inline (CSS and SVG; no script, no fonts, no network), so the file reads the
//! same offline, attached to a ticket, or years later. Sections: the verdict board (when a
//! model run is among them), a summary per run (for a merge, its shard table, and a warning
//! when shards are missing or short), the response percentiles (with ratios when runs are
//! compared), the percentile spectrum, a latency timeline per run, throughput and send lag
//! over time, and the notes, grouped and folded.
//!
//! Up to [`MANY_RUNS`] runs sit side by side in each table and share each chart. Beyond that
//! the tables turn to one row per run, and the charts become grids of small multiples on shared
//! axes, so twenty tools fit the page's width and no chart is a tangle.
//!
//! The page's sections live beside it: the SLO gate's ([`crate::gate`]), the charts
//! (`plot`, [`crate::sweep_plot`]) and the verdict board, the one module that also
//! reads back into this one (see its doc); all of them escape text with one function.
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use sojourn_core::by_stage;
use sojourn_core::check::GeneratorVerdict;
use sojourn_core::record::bound_at;
use sojourn_core::result::{decode_base64, HistogramSummary, Mode, RunResult};
use sojourn_core::units::format_ns;

use crate::compare::Clock;
use crate::error::ReportError;
use crate::escape::escape;
use crate::plot::{self, Band, Curve, LineKind, Look, OverTime, Size, Span, Timeline};
use crate::samples::Sample;

/// Sampled requests drawn per run on its timeline; more add bytes, not insight.
pub const MAX_DOTS: usize = 2500;

/// Runs that still share one table and one chart; more get one row each and small multiples.
pub const MANY_RUNS: usize = 5;

/// One run to report on ([`ReportRun::load`] reads one from its result file).
#[derive(Debug, Clone)]
pub struct ReportRun {
    /// Where it came from (shown in the report), e.g. the result file's name.
    pub source: String,
    pub result: RunResult,
    /// Per-request samples, if recorded (already downsampled; see [`MAX_DOTS`]).
    pub samples: Vec<Sample>,
}

#[derive(Debug, Clone, Default)]
pub struct HtmlOptions {
    /// The page title; a default names the runs.
    pub title: Option<String>,
}

/// The whole report as one HTML document.
pub fn render(runs: &[ReportRun], opts: &HtmlOptions) -> Result<String, ReportError> {
    render_gated(runs, opts, &[])
}

/// The report with the SLO gate's verdicts (`report --slo`) in a section after the header.
pub fn render_gated(
    runs: &[ReportRun],
    opts: &HtmlOptions,
    gates: &[crate::gate::Gated],
) -> Result<String, ReportError> {
    let views: Vec<RunView> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| RunView::new(i, r))
        .collect::<Result<_, _>>()?;
    let title = opts.title.clone().unwrap_or_else(|| default_title(runs));
    let mut page = String::new();
    head(&mut page, &title);
    let _ = writeln!(
        page,
        "<header><h1>{}</h1><p class=\"lede\">{}</p>{}</header>",
        escape(&title),
        lede(runs),
        finding(runs)
    );
    crate::gate::html_section(&mut page, gates);
    crate::board::board_section(&mut page, &views);
    summary_section(&mut page, &views);
    crate::validity_page::section(&mut page, &views);
    percentile_section(&mut page, &views);
    stage_section(&mut page, &views);
    for kind in [&TARGET_TABLE, &JOURNEY_TABLE, &STEP_TABLE] {
        label_section(&mut page, &views, kind);
    }
    spectrum_section(&mut page, &views)?;
    timeline_section(&mut page, &views)?;
    throughput_section(&mut page, &views)?;
    send_lag_section(&mut page, &views)?;
    crate::board::notes_section(&mut page, &views);
    let _ = writeln!(
        page,
        "<footer>Written by sojourn {}. Sources: {}.</footer>\n</body>\n</html>",
        env!("CARGO_PKG_VERSION"),
        sources(runs)
    );
    Ok(page)
}

fn default_title(runs: &[ReportRun]) -> String {
    let labels: Vec<&str> = runs.iter().map(|r| r.result.label.as_str()).collect();
    format!("sojourn report: {}", labels.join(" vs "))
}

fn lede(runs: &[ReportRun]) -> String {
    let scenario = runs
        .iter()
        .find_map(|r| r.result.scenario.as_ref().and_then(scenario_name));
    // The model's target names the simulator; a measured run's names the server.
    let target_of = |r: &ReportRun| r.result.config.target.clone();
    let target = runs
        .iter()
        .filter(|r| !sojourn_core::verdict::is_model(&r.result))
        .find_map(target_of)
        .or_else(|| runs.iter().find_map(target_of));
    let mut parts = vec![format!(
        "{} run{}",
        runs.len(),
        if runs.len() == 1 { "" } else { "s" }
    )];
    if let Some(s) = scenario {
        parts.push(format!("scenario <b>{}</b>", escape(&s)));
    }
    if let Some(t) = target {
        parts.push(format!("target <code>{}</code>", escape(&t)));
    }
    parts.push("response time = done − intended: measured from when each request was due, not from when it was sent".into());
    parts.join(" · ")
}

/// When the runs hold a closed loop and an open loop (`demo`, `compare`), the verdict the
/// terminal printed for them, in its words and numbers: both come from [`crate::finding`].
fn finding(runs: &[ReportRun]) -> String {
    let results: Vec<&RunResult> = runs.iter().map(|r| &r.result).collect();
    let Some((closed, open)) = crate::finding::pair(&results) else {
        return String::new();
    };
    let sentences = crate::finding::finding(results[closed], results[open]);
    let hides = sentences.iter().any(|s| s.contains(" understates "));
    let lines: Vec<String> = sentences
        .iter()
        .map(|s| format!("<b>Verdict:</b> {}.", escape(s)))
        .collect();
    format!(
        "<p id=\"finding\" class=\"finding{}\">{}</p>",
        if hides { " hides" } else { "" },
        lines.join("<br>")
    )
}

fn sources(runs: &[ReportRun]) -> String {
    runs.iter()
        .map(|r| format!("<code>{}</code>", escape(&r.source)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn head(page: &mut String, title: &str) {
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{}</style>\n</head>\n<body>\n",
        escape(title),
        CSS
    );
}

const CSS: &str = "
body { font-family: system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; color: #222;
       max-width: 1060px; margin: 0 auto; padding: 16px 24px 48px; line-height: 1.45; background: #fff; }
h1 { font-size: 26px; margin: 8px 0 4px; } h2 { font-size: 20px; margin: 36px 0 8px; border-bottom: 1px solid #ddd; }
.lede { color: #555; margin-top: 0; }
.finding { font-size: 17px; margin: 4px 0 0; padding: 6px 10px; border-left: 4px solid #1b6e20; background: #f4f8f4; }
.finding.hides { border-left-color: #b00020; background: #fbf2f3; }
table { border-collapse: collapse; margin: 8px 0 4px; font-size: 14px; }
th, td { padding: 4px 12px; border-bottom: 1px solid #e4e4e4; text-align: right; vertical-align: top; }
th:first-child, td:first-child { text-align: left; }
thead th { border-bottom: 2px solid #999; }
td.note { text-align: left; max-width: 640px; color: #444; }
.bad { color: #b00020; font-weight: 600; } .ok { color: #1b6e20; } .muted { color: #777; }
figure { margin: 12px 0 24px; } figure svg { max-width: 100%; height: auto; display: block; }
figcaption { color: #444; font-size: 14px; max-width: 900px; }

code { background: #f3f3f3; padding: 0 3px; border-radius: 3px; }
footer { margin-top: 40px; color: #777; font-size: 13px; }
svg.swatch { width: 14px; height: 14px; margin-right: 6px; vertical-align: -2px; }
.grid { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: 8px 12px; }
.grid svg { max-width: 100%; height: auto; display: block; }
table.board { table-layout: fixed; width: 100%; font-size: 13px; }
table.stages td, table.stages th { white-space: nowrap; padding: 4px 8px; }
table.targets { font-size: 13px; } table.targets td { white-space: nowrap; padding: 3px 6px; }
table.targets th { padding: 3px 6px; } table.targets tbody th { max-width: 220px; overflow-wrap: anywhere; }
table.board td, table.board th { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; padding: 3px 6px; vertical-align: middle; }
table.board thead th { white-space: normal; vertical-align: bottom; }
table.board small { color: #666; font-weight: normal; }
table.board td.caveat { text-align: left; font-size: 13px; color: #444; }
table.board td.verdict, table.board th.verdict { text-align: center; } table.board td.bar { text-align: left; }
#board h2 { margin-top: 16px; }
.badge { display: inline-block; padding: 1px 6px; border-radius: 9px; font-size: 11px; font-weight: 600; color: #fff; }
.v-model { background: #555; } .v-honest { background: #1b6e20; } .v-hides { background: #b00020; }
.v-overstates { background: #a85a00; } .v-corrected { background: #6a3d9a; } .v-nodata { background: #999; }
details { margin: 4px 0; } details > summary { cursor: pointer; } details ul { margin: 4px 0 8px; }
table.per-run td, table.per-run th { padding: 3px 8px; }
p.partial { border: 1px solid #b00020; background: #fff4f4; padding: 6px 10px; }
#gate td { white-space: nowrap; } #gate td.note { white-space: normal; min-width: 240px; }
#gate tr.bad td { font-weight: normal; }
";

/// Everything the page needs about one run, computed once.
pub(crate) struct RunView<'a> {
    pub run: &'a ReportRun,
    pub look: Look,
    response: Option<Histogram<u64>>,
    censored: Histogram<u64>,
    spans: Vec<Span>,
    /// A shaped run's stages: where each begins (seconds) and its title.
    stages: Vec<(f64, String)>,
}

impl<'a> RunView<'a> {
    fn new(index: usize, run: &'a ReportRun) -> Result<RunView<'a>, ReportError> {
        let r = &run.result;
        // A result imported from a peer tool may carry no histogram: fall back to its percentiles.
        let response = decode_base64(&r.histograms.response.hdr).ok();
        let censored = r
            .histograms
            .censored
            .as_ref()
            .and_then(|c| decode_base64(&c.hdr).ok())
            .unwrap_or_else(sojourn_core::record::new_histogram);
        let spans = r
            .scenario
            .as_ref()
            .map(|s| scenario_windows(s, r.elapsed_ns))
            .unwrap_or_default();
        let spans = spans
            .into_iter()
            .map(|w| Span {
                label: w.kind,
                start: w.start_ns as f64 / 1e9,
                end: w.end_ns as f64 / 1e9,
                tint: crate::plot::Tint::Target,
            })
            .collect();
        let stages = r
            .config
            .stages
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, s)| (s.start_ns as f64 / 1e9, s.title(i)))
            .collect();
        Ok(RunView {
            run,
            look: look_for(index, r.mode),
            response,
            censored,
            spans,
            stages,
        })
    }

    pub fn r(&self) -> &RunResult {
        &self.run.result
    }

    /// The run's label and its loop, unless the label already says which loop it is.
    pub fn name(&self) -> String {
        named(&self.r().label, self.r().mode)
    }
}

/// `label (loop)`, or the label alone when it is the loop's own name ("open loop", never
/// "open loop (open loop)").
fn named(label: &str, mode: Mode) -> String {
    if label == mode.label() {
        label.to_string()
    } else {
        format!("{label} ({})", mode.label())
    }
}

/// One way of timing one run, as the board, the percentile table and the spectrum show it. A
/// paced closed loop is two views of one run, each judged from its own data: from the send
/// (what hey -q, bombardier -r, fortio -qps and JMeter report) and from the slot (wrk2's view).
/// Every other run is its response time.
pub(crate) struct ClockView<'v, 'a> {
    pub run: &'v RunView<'a>,
    pub clock: Clock,
    pub look: Look,
    /// The view's short label: the run's, or `paced, from send` / `paced, from slot`.
    pub label: String,
    /// The view's histogram, decoded; `None` for an imported run that carries none.
    times: Option<Histogram<u64>>,
}

impl ClockView<'_, '_> {
    pub fn r(&self) -> &RunResult {
        self.run.r()
    }

    /// What the view reports: the response times, or a paced loop's times from the send.
    pub fn summary(&self) -> &HistogramSummary {
        match self.clock {
            Clock::Response => &self.r().histograms.response,
            Clock::FromSend => &self.r().histograms.service,
        }
    }

    /// The label with its loop, for legends and headings.
    pub fn name(&self) -> String {
        named(&self.label, self.r().mode)
    }
}

/// Whether a run measured both of a paced loop's clocks. An imported paced tool (hey -q,
/// fortio -qps) stamped only its sends, so it has one view: from the send, under its own name.
fn two_clocks(r: &RunResult) -> bool {
    r.mode == Mode::Paced && r.import.is_none()
}

/// Every run's views, in the runs' order; a paced loop's view from the send comes first and
/// takes a look of its own, after every run's.
pub(crate) fn clock_views<'v, 'a>(views: &'v [RunView<'a>]) -> Vec<ClockView<'v, 'a>> {
    let mut extra = views.len();
    let mut out = Vec::new();
    for v in views {
        let r = v.r();
        if two_clocks(r) {
            out.push(ClockView {
                run: v,
                clock: Clock::FromSend,
                look: look_for(extra, Mode::Closed),
                label: crate::finding::from_send_label(&r.label),
                times: decode_base64(&r.histograms.service.hdr).ok(),
            });
            extra += 1;
        }
        let label = if two_clocks(r) {
            crate::finding::from_slot_label(&r.label)
        } else {
            r.label.clone()
        };
        out.push(ClockView {
            run: v,
            clock: Clock::Response,
            look: v.look,
            label,
            times: v.response.clone(),
        });
    }
    out
}

fn look_for(index: usize, mode: Mode) -> Look {
    let line = match mode {
        Mode::Open => LineKind::Solid,
        Mode::Closed => LineKind::Dashed,
        Mode::Tracking | Mode::Paced => LineKind::Dotted,
    };
    plot::look_of(index, line)
}

/// A run's colour and marker as a small inline SVG, the same shape its charts draw.
pub(crate) fn swatch(look: Look) -> String {
    let c = look.color;
    let points: Vec<String> = plot::marker_points(look.marker, (0, 0))
        .iter()
        .map(|(x, y)| format!("{x},{y}"))
        .collect();
    format!(
        "<svg class=\"swatch\" viewBox=\"-8 -8 16 16\" aria-hidden=\"true\"><polygon points=\"{}\" fill=\"rgb({},{},{})\"/></svg>",
        points.join(" "),
        c.0,
        c.1,
        c.2
    )
}

// ---- summary -------------------------------------------------------------------------------

/// How one summary row shows a run.
pub(crate) type Cell = fn(&RunResult) -> String;

/// The summary row of HTTP status counts: shown only for runs that counted them.
const STATUS_ROW: &str = "answers by HTTP status";

/// The summary row of a merge's requests nobody measured: shown only when a merge is there.
const NOT_MEASURED_ROW: &str = "not measured (shards missing or cut short)";

/// The summary's rows: what each run was asked, what it did, and its self-checks.
pub(crate) const SUMMARY_ROWS: [(&str, Cell); 22] = [
    ("tool", |r| escape(&crate::board::tool_version(&r.tool))),
    ("target rate", |r| {
        r.rate
            .target
            .map_or("— (closed loop: as fast as answers come)".into(), |t| {
                format!("{} req/s", num(t))
            })
    }),
    ("achieved rate (answers)", |r| {
        format!("{} req/s", num(r.rate.achieved))
    }),
    ("duration", |r| format_ns(r.elapsed_ns)),
    ("connections", connections),
    ("scheduled", |r| count(r.counts.scheduled)),
    ("completed", |r| count(r.counts.completed)),
    ("failed", failures),
    ("censored (no answer at the end)", |r| {
        count(r.counts.censored)
    }),
    ("never sent", |r| count(r.counts.never_sent)),
    (NOT_MEASURED_ROW, not_measured),
    (STATUS_ROW, status_counts),
    ("waited for a free connection", |r| {
        let n = count(r.counts.waited_for_connection);
        match crate::text::slot_word(&r.config) {
            "connection" => n,
            slot => format!("{n} <span class=\"muted\">(for a {slot})</span>"),
        }
    }),
    ("send lag p99 / p99.9", |r| {
        lag_pair(r.mode, Some(&r.histograms.send_lag))
    }),
    (
        "machine hiccups p99 / p99.9 (an idle control process's lateness)",
        |r| lag_pair(r.mode, r.histograms.control_hiccup.as_ref()),
    ),
    (
        "own hiccups p99 / p99.9 (a sleeping thread of this process)",
        |r| lag_pair(r.mode, r.histograms.hiccup.as_ref()),
    ),
    ("generator self-check", verdict),
    ("self-check", short_verdict),
    ("who held the rate back", held_back),
    ("arrivals vs the schedule", conformance),
    ("steady state", steady),
    ("validity", |r| {
        crate::validity_page::cell(r.statistics.validity.as_ref())
    }),
];

/// The rows the compact table (many runs) shows; the rest go to each run's folded details.
const COMPACT_ROWS: [&str; 9] = [
    "tool",
    "achieved rate (answers)",
    "scheduled",
    "completed",
    "failed",
    "censored (no answer at the end)",
    "never sent",
    NOT_MEASURED_ROW,
    "self-check",
];

fn summary_section(page: &mut String, views: &[RunView]) {
    page.push_str("<section id=\"summary\">\n<h2>Runs</h2>\n");
    for v in views {
        if let Some(warning) = partial_warning(v.r()) {
            let _ = writeln!(
                page,
                "<p class=\"bad partial\">{}: {warning}</p>",
                escape(&v.name())
            );
        }
    }
    page.push_str("<table>\n");
    if views.len() <= MANY_RUNS {
        side_by_side_summary(page, views);
    } else {
        compact_summary(page, views);
    }
    page.push_str("</tbody>\n</table>\n</section>\n");
    shard_section(page, views);
    repetition_section(page, views);
}

/// Whether the summary shows row `name` for these runs: the status counts when any run counted
/// them, the not-measured count when any is a merge.
fn row_shown(name: &str, views: &[RunView]) -> bool {
    match name {
        STATUS_ROW => views.iter().any(|v| !v.r().statuses.is_empty()),
        NOT_MEASURED_ROW => views.iter().any(|v| is_merge(v.r())),
        _ => true,
    }
}

fn is_merge(r: &RunResult) -> bool {
    r.merged.is_some() || r.counts.not_measured > 0
}

fn not_measured(r: &RunResult) -> String {
    match r.counts.not_measured {
        0 if is_merge(r) => "0".into(),
        0 => "—".into(),
        n => format!("<span class=\"bad\">{}</span>", count(n)),
    }
}

/// A partial merge's warning: which shards it lacks, and that its totals are not the plan's.
fn partial_warning(r: &RunResult) -> Option<String> {
    let gaps = crate::text::shard_gaps(r.merged.as_ref()?);
    if gaps.is_empty() {
        return None;
    }
    Some(format!(
        "PARTIAL MERGE: {}. {} of {} scheduled requests were not measured: every count, rate and percentile on this page covers only the shards that were.",
        escape(&crate::text::in_words(&gaps)),
        count(r.counts.not_measured),
        count(r.counts.scheduled)
    ))
}

/// Each repeated run's repetitions and between-run intervals.
fn repetition_section(page: &mut String, views: &[RunView]) {
    let tables: Vec<String> = views
        .iter()
        .map(|v| crate::repetitions::html(v.r()))
        .filter(|t| !t.is_empty())
        .collect();
    if tables.is_empty() {
        return;
    }
    page.push_str("<section id=\"repetitions\">\n<h2>Repetitions</h2>\n");
    for t in tables {
        page.push_str(&t);
    }
    page.push_str("<p class=\"muted\">Each repetition ran with seeds of its own; the summary above is all of them merged. The between-run interval reads each percentile through the repetitions pooled, with Student's t on each run's fraction of requests at or below the pooled estimate (the replication method): it holds whatever the dependence inside a run, since the runs are independent.</p>\n</section>\n");
}

/// Each merge's shards: index, status, the requests the plan gave it and those its result
/// accounts for, how late it started, and its file.
fn shard_section(page: &mut String, views: &[RunView]) {
    let merges: Vec<(&RunView, &sojourn_core::placement::MergeInfo)> = views
        .iter()
        .filter_map(|v| v.r().merged.as_ref().map(|m| (v, m)))
        .collect();
    if merges.is_empty() {
        return;
    }
    page.push_str("<section id=\"shards\">\n<h2>Shards</h2>\n");
    for (v, info) in merges {
        let _ = writeln!(
            page,
            "<h3>{}{}</h3>\n<table class=\"shards\">\n<thead><tr><th>shard</th><th>status</th><th>due</th><th>measured</th><th>start skew</th><th>source</th></tr></thead>\n<tbody>",
            swatch(v.look),
            escape(&v.name())
        );
        for s in &info.shards {
            shard_row(page, s);
        }
        page.push_str("</tbody>\n</table>\n");
    }
    page.push_str("<p class=\"muted\"><i>Due</i> is what the plan gave each shard; <i>measured</i> is what its result accounts for (completed, failed, censored or never sent). A missing or short shard's requests are counted as not measured.</p>\n</section>\n");
}

fn shard_row(page: &mut String, s: &sojourn_core::placement::ShardStatus) {
    use sojourn_core::placement::ShardState;
    let status = match s.status {
        ShardState::Complete => "<span class=\"ok\">complete</span>",
        ShardState::Short => "<span class=\"bad\">short</span>",
        ShardState::Missing => "<span class=\"bad\">missing</span>",
    };
    let skew = s.start_skew_ns.map_or("—".into(), |ns| {
        let sign = if ns < 0 { "−" } else { "+" };
        format!("{sign}{}", format_ns(ns.unsigned_abs()))
    });
    let _ = writeln!(
        page,
        "<tr><th>{}</th><td>{status}</td><td>{}</td><td>{}</td><td>{skew}</td><td>{}</td></tr>",
        s.index,
        count(s.due),
        count(s.accounted),
        s.source
            .as_deref()
            .map_or("—".into(), |f| format!("<code>{}</code>", escape(f)))
    );
}

/// One column per run, one row per fact.
fn side_by_side_summary(page: &mut String, views: &[RunView]) {
    page.push_str("<thead><tr><th></th>");
    for v in views {
        let _ = write!(page, "<th>{}{}</th>", swatch(v.look), escape(&v.name()));
    }
    page.push_str("</tr></thead>\n<tbody>\n");
    // The full self-check sentence has room here; the one-word form is for a row per run.
    let shown = |name: &str| name != "self-check" && row_shown(name, views);
    for (name, cell) in SUMMARY_ROWS.into_iter().filter(|(n, _)| shown(n)) {
        let _ = write!(page, "<tr><th>{name}</th>");
        for v in views {
            let _ = write!(page, "<td>{}</td>", cell(v.r()));
        }
        page.push_str("</tr>\n");
    }
}

/// One row per run, the facts that fit a line; the rest are in the run's notes.
fn compact_summary(page: &mut String, views: &[RunView]) {
    let rows: Vec<(&str, Cell)> = SUMMARY_ROWS
        .into_iter()
        .filter(|(name, _)| COMPACT_ROWS.contains(name) && row_shown(name, views))
        .collect();
    page.push_str("<thead><tr><th>run</th>");
    for (name, _) in &rows {
        let _ = write!(page, "<th>{name}</th>");
    }
    page.push_str("</tr></thead>\n<tbody>\n");
    for v in views {
        let _ = write!(page, "<tr><th>{}{}</th>", swatch(v.look), escape(&v.name()));
        for (_, cell) in &rows {
            let _ = write!(page, "<td>{}</td>", cell(v.r()));
        }
        page.push_str("</tr>\n");
    }
}

/// The summary rows a compact table leaves to run `r`'s folded details.
pub(crate) fn detail_rows(r: &RunResult) -> impl Iterator<Item = (&'static str, Cell)> {
    let statuses = !r.statuses.is_empty();
    SUMMARY_ROWS
        .into_iter()
        .filter(move |(name, _)| !COMPACT_ROWS.contains(name) && (*name != STATUS_ROW || statuses))
}

/// The connections; over HTTP/2 also the streams each carried: `16 × 128 streams (h2c)`.
fn connections(r: &RunResult) -> String {
    let c = &r.config;
    let streams = c
        .streams
        .map(|s| format!(" × {s} streams"))
        .unwrap_or_default();
    let protocol = c
        .protocol
        .as_ref()
        .map(|p| format!(" ({})", escape(p)))
        .unwrap_or_default();
    format!("{}{streams}{protocol}", count(u64::from(c.connections)))
}

/// Final answers by HTTP status code: `200: 3,000 · 404: 100`, 4xx and 5xx marked.
fn status_counts(r: &RunResult) -> String {
    if r.statuses.is_empty() {
        return "—".into();
    }
    let parts: Vec<String> = r
        .statuses
        .iter()
        .map(|(code, n)| {
            let text = format!("{code}: {}", count(*n));
            if *code >= 400 {
                format!("<span class=\"bad\">{text}</span>")
            } else {
                text
            }
        })
        .collect();
    parts.join(" · ")
}

/// p99 and p99.9 of a lateness histogram; a dash where there is none (closed loops, imports).
fn lag_pair(mode: Mode, h: Option<&HistogramSummary>) -> String {
    match h {
        Some(h) if mode != Mode::Closed && h.count > 0 => format!(
            "{} / {}",
            format_ns(h.percentiles.get(99.0).unwrap_or(0)),
            format_ns(h.percentiles.get(99.9).unwrap_or(0))
        ),
        _ => "—".into(),
    }
}

fn num(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// A count with thousands separators: 13,500.
fn count(n: u64) -> String {
    crate::compare::thousands(n)
}

fn failures(r: &RunResult) -> String {
    let parts: Vec<String> = r
        .counts
        .failed
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(c, n)| format!("{} {}", count(n), c.name()))
        .collect();
    if parts.is_empty() {
        "0".into()
    } else {
        format!("<span class=\"bad\">{}</span>", parts.join(", "))
    }
}

fn verdict(r: &RunResult) -> String {
    match r.checks.generator {
        GeneratorVerdict::Ok if r.checks.pool_bound => format!(
            "<span class=\"ok\">ok: on time</span>, but <span class=\"bad\">requests waited for a free {}</span>",
            crate::text::slot_word(&r.config)
        ),
        GeneratorVerdict::Ok => "<span class=\"ok\">ok: sent on schedule</span>".into(),
        GeneratorVerdict::Behind => {
            "<span class=\"bad\">BEHIND: the generator itself was late</span>".into()
        }
        GeneratorVerdict::NotApplicable => {
            "<span class=\"muted\">n/a (closed loop has no schedule)</span>".into()
        }
    }
}

/// The self-check in a word or two, for a table row per run.
fn short_verdict(r: &RunResult) -> String {
    match r.checks.generator {
        GeneratorVerdict::Ok if r.checks.pool_bound => {
            "<span class=\"ok\">on time</span>, <span class=\"bad\">pool full</span>".into()
        }
        GeneratorVerdict::Ok => "<span class=\"ok\">on time</span>".into(),
        GeneratorVerdict::Behind => "<span class=\"bad\">BEHIND</span>".into(),
        GeneratorVerdict::NotApplicable => "<span class=\"muted\">n/a</span>".into(),
    }
}

/// OK, SATURATED (the target), GENERATOR-BOUND or POOL-BOUND (the client side), with why.
fn held_back(r: &RunResult) -> String {
    let Some(v) = &r.checks.rate else {
        return "<span class=\"muted\">n/a</span>".into();
    };
    let class = match v.status {
        sojourn_core::sweep::Status::Ok => "ok",
        _ => "bad",
    };
    let mut cell = format!("<span class=\"{class}\">{}</span>", v.status.label());
    if !v.why.is_empty() {
        cell.push_str(&format!(": {}", escape(&v.why.join("; "))));
    }
    if let Some(advice) = &v.advice {
        cell.push_str(&format!(". {}", escape(advice)));
    }
    cell
}

fn conformance(r: &RunResult) -> String {
    match &r.statistics.conformance {
        None => "<span class=\"muted\">n/a</span>".into(),
        Some(c) if c.conforms => format!(
            "<span class=\"ok\">conform to {}</span>",
            escape(&c.process)
        ),
        Some(c) => format!(
            "<span class=\"bad\">DO NOT conform to {}</span>",
            escape(&c.process)
        ),
    }
}

fn steady(r: &RunResult) -> String {
    let s = &r.statistics;
    let trimmed = s
        .warmup
        .map(|w| format!(" (warm-up of {} trimmed)", format_ns(w.until_ns)));
    match &s.steady_state {
        None => "<span class=\"muted\">too short to tell</span>".into(),
        Some(ss) if ss.rising => "<span class=\"bad\">NOT STEADY: still rising</span>".into(),
        Some(ss) if ss.warmup_intervals > 0 && trimmed.is_none() => format!(
            "<span class=\"bad\">warm-up of {} not trimmed</span>",
            format_ns(ss.warmup_ns)
        ),
        Some(_) => format!(
            "<span class=\"ok\">steady{}</span>",
            trimmed.unwrap_or_default()
        ),
    }
}

// ---- percentiles side by side --------------------------------------------------------------

const TABLE_PERCENTILES: [(f64, &str); 6] = [
    (50.0, "p50"),
    (90.0, "p90"),
    (99.0, "p99"),
    (99.9, "p99.9"),
    (99.99, "p99.99"),
    (100.0, "max"),
];

fn percentile_section(page: &mut String, views: &[RunView]) {
    let clocks = clock_views(views);
    page.push_str("<section id=\"percentiles\">\n<h2>Response time percentiles</h2>\n<table>\n");
    if clocks.len() <= MANY_RUNS {
        side_by_side_percentiles(page, &clocks);
    } else {
        percentiles_per_row(page, &clocks);
    }
    let _ = write!(
        page,
        "</tbody>\n</table>\n<p class=\"muted\">{} Under each value, its 95% confidence interval from order statistics (no assumption about the distribution); a percentile with fewer than ten samples beyond it is marked not meaningful.{}</p>\n</section>\n",
        lower_bound_sentence(views),
        if clocks.iter().any(|c| c.clock == Clock::FromSend) {
            " A paced closed loop is shown twice, as two views of one run: <i>from send</i> times each request from when it left, as hey -q, bombardier -r, fortio -qps and JMeter report it; <i>from slot</i> times it from when its slot was due, as wrk2 does."
        } else {
            ""
        }
    );
}

/// What a `≥` rests on, run by run with the counts: requests still unanswered at the end,
/// never sent, or timed out, each counted at the time it had waited by then.
fn lower_bound_sentence(views: &[RunView]) -> String {
    let per_run: Vec<String> = views
        .iter()
        .filter_map(|v| {
            let causes = crate::text::lower_bound_causes(&v.r().counts, count);
            let causes = crate::text::in_words(&causes);
            match (causes.is_empty(), views.len()) {
                (true, _) => None,
                (false, 1) => Some(causes),
                (false, _) => Some(format!("in {}, {causes}", escape(&v.r().label))),
            }
        })
        .collect();
    if per_run.is_empty() {
        return "A value marked ≥ is only a lower bound: requests without an answer are counted at the time they had waited, and could have taken longer.".into();
    }
    format!(
        "A value marked ≥ is only a lower bound, from requests without an answer: {}. Each is counted at the time it had waited by then, and could have taken longer.",
        per_run.join("; ")
    )
}

/// A shaped run's percentiles stage by stage: one table per staged run.
fn stage_section(page: &mut String, views: &[RunView]) {
    let staged: Vec<(&RunView, Vec<by_stage::StageSlice>)> = views
        .iter()
        .map(|v| (v, by_stage::stages(v.r())))
        .filter(|(_, s)| !s.is_empty())
        .collect();
    if staged.is_empty() {
        return;
    }
    page.push_str("<section id=\"stages\">\n<h2>Stage by stage</h2>\n");
    for (v, slices) in staged {
        let _ = write!(
            page,
            "<h3>{}{}</h3>\n<table class=\"stages\">\n<thead><tr><th>stage</th><th>from</th><th>to</th><th>rate (req/s)</th><th>answered</th><th>failed</th>",
            swatch(v.look),
            escape(&v.name())
        );
        for (_, name) in TABLE_PERCENTILES {
            let _ = write!(page, "<th>{name}</th>");
        }
        page.push_str("</tr></thead>\n<tbody>\n");
        for s in &slices {
            stage_row(page, s);
        }
        page.push_str("</tbody>\n</table>\n");
    }
    page.push_str("<p class=\"muted\">Requests are placed by when they <i>finished</i>, as on the timeline: a stage's row holds the answers that arrived during it, and the last stage also holds the drain after the schedule's end. Dashed rules on the timeline mark where each stage begins.</p>\n</section>\n");
}

/// The percentiles of the per-target table (a label rarely has enough requests for p99.99).
const TARGET_PERCENTILES: [(f64, &str); 5] = [
    (50.0, "p50"),
    (90.0, "p90"),
    (99.0, "p99"),
    (99.9, "p99.9"),
    (100.0, "max"),
];

/// One kind of per-label table: a run's targets, journeys or steps.
struct LabelTable {
    id: &'static str,
    heading: &'static str,
    /// What the counts count.
    counted: &'static str,
    rows: fn(&RunResult) -> &[sojourn_core::TargetResult],
    note: &'static str,
}

const TARGET_TABLE: LabelTable = LabelTable {
    id: "targets",
    heading: "Target by target",
    counted: "requests",
    rows: |r| &r.targets,
    note: "One row per label of the targets file. <i>Share</i> is the part of the schedule the file's weights give the label, then the part of the requests it actually had. Response time is measured from when each request was due, as for the whole run; a value marked ≥ is only a lower bound, and a grey one rests on fewer than ten samples beyond it (not meaningful at this label's size).",
};

const JOURNEY_TABLE: LabelTable = LabelTable {
    id: "journeys",
    heading: "Journey by journey",
    counted: "journeys",
    rows: |r| &r.journeys,
    note: "One row per journey of the journey file. Its time runs from when the journey was due to the end of its last step: what the user lived, thinking included. Its counts count journeys: those still running at the end are lower bounds (≥), and those that never got a place are in the run's counts as never started. <i>Share</i> is the journey's weight over all, then the part of the journeys it actually had. Send lag is its first step's.",
};

const STEP_TABLE: LabelTable = LabelTable {
    id: "steps",
    heading: "Step by step",
    counted: "steps",
    rows: |r| &r.steps,
    note: "One row per step of every journey (<code>JOURNEY/STEP</code>). Each step is timed from when it was due: when its journey's previous answer arrived plus the think time drawn for it (the first step: when its journey was due), so a wait for a place, a connect or a stall before the send is in it. <i>Share</i> is its journey's weight over all, then the part of the steps it actually had.",
};

/// A run's labels of one kind (`--targets`, or a journey file's journeys and steps): one
/// table per run that has them.
fn label_section(page: &mut String, views: &[RunView], kind: &LabelTable) {
    let labelled: Vec<&RunView> = views
        .iter()
        .filter(|v| !(kind.rows)(v.r()).is_empty())
        .collect();
    if labelled.is_empty() {
        return;
    }
    let _ = writeln!(
        page,
        "<section id=\"{}\">\n<h2>{}</h2>",
        kind.id, kind.heading
    );
    for v in labelled {
        let _ = write!(
            page,
            "<h3>{}{}</h3>\n<table class=\"targets\">\n<thead><tr><th>label</th><th>{}</th><th>share expected / actual</th><th>completed</th><th>failed</th>",
            swatch(v.look),
            escape(&v.name()),
            kind.counted
        );
        for (_, name) in TARGET_PERCENTILES {
            let _ = write!(page, "<th>{name}</th>");
        }
        page.push_str("<th>service p99</th><th>send lag p99</th></tr></thead>\n<tbody>\n");
        let rows = (kind.rows)(v.r());
        for t in rows {
            target_row(page, t, rows);
        }
        page.push_str("</tbody>\n</table>\n");
    }
    let _ = writeln!(page, "<p class=\"muted\">{}</p>\n</section>", kind.note);
}

fn target_row(
    page: &mut String,
    t: &sojourn_core::TargetResult,
    all: &[sojourn_core::TargetResult],
) {
    let actual = t
        .actual_share(all)
        .map_or("—".to_string(), |a| format!("{:.1}%", a * 100.0));
    let failed = t.counts.failed.total();
    let failed = if failed == 0 {
        "0".to_string()
    } else {
        let classes: Vec<String> = t
            .counts
            .failed
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(c, n)| format!("{} {}", c.name(), count(n)))
            .collect();
        format!(
            "<span class=\"bad\" title=\"{}\">{}</span>",
            classes.join(", "),
            count(failed)
        )
    };
    let _ = write!(
        page,
        "<tr><th>{}</th><td>{}</td><td>{:.1}% / {actual}</td><td>{}</td><td>{failed}</td>",
        escape(&t.label),
        count(t.counts.total()),
        t.share * 100.0,
        count(t.counts.completed)
    );
    for (p, _) in TARGET_PERCENTILES {
        page.push_str(&target_cell(&t.response, p));
    }
    page.push_str(&target_cell(&t.service, 99.0));
    page.push_str(&target_cell(&t.send_lag, 99.0));
    page.push_str("</tr>\n");
}

/// One percentile of a label: `≥` when a lower bound, grey when too few samples lie beyond.
fn target_cell(h: &HistogramSummary, p: f64) -> String {
    let Some(b) = h.at(p) else {
        return "<td>—</td>".into();
    };
    let value = latency(b.value, b.lower_bound);
    match h.thin_at(p) {
        Some(t) => format!(
            "<td class=\"muted\" title=\"{}\">{value}</td>",
            escape(&crate::text::thin_warning(p, t))
        ),
        None => format!("<td>{value}</td>"),
    }
}

/// A time on the plan's clock; the start reads `0 s`, not `0 ns`.
fn plan_time(ns: u64) -> String {
    if ns == 0 {
        "0 s".into()
    } else {
        format_ns(ns)
    }
}

fn stage_row(page: &mut String, s: &by_stage::StageSlice) {
    let c = s.config;
    let rate = if c.from == c.to {
        format!("{}", c.from)
    } else {
        format!("{} → {}", c.from, c.to)
    };
    let _ = write!(
        page,
        "<tr><th>{}</th><td>{}</td><td>{}</td><td>{rate}</td><td>{}</td><td>{}</td>",
        escape(&s.title()),
        plan_time(c.start_ns),
        plan_time(c.end_ns()),
        count(s.completed() + s.failed()),
        count(s.failed())
    );
    match s.response() {
        Ok(h) if !h.is_empty() => {
            for (p, _) in TABLE_PERCENTILES {
                let _ = write!(
                    page,
                    "<td>{}</td>",
                    latency(h.value_at_percentile(p), false)
                );
            }
        }
        _ => {
            let _ = write!(
                page,
                "<td colspan=\"{}\" class=\"muted\">no answers</td>",
                TABLE_PERCENTILES.len()
            );
        }
    }
    page.push_str("</tr>\n");
}

/// One row per view: its count, each percentile, and its p99 over the first view's.
fn percentiles_per_row(page: &mut String, views: &[ClockView]) {
    page.push_str("<thead><tr><th>run</th><th>count</th>");
    for (_, name) in TABLE_PERCENTILES {
        let _ = write!(page, "<th>{name}</th>");
    }
    let _ = writeln!(
        page,
        "<th>p99 / {}</th></tr></thead>\n<tbody>",
        escape(&views[0].label)
    );
    let base = value_at(&views[0], 99.0);
    for v in views {
        let _ = write!(
            page,
            "<tr><th>{}{}</th><td>{}</td>",
            swatch(v.look),
            escape(&v.label),
            count(v.summary().count)
        );
        for (p, _) in TABLE_PERCENTILES {
            let _ = write!(
                page,
                "<td>{}{}</td>",
                value_at(v, p).map_or("—".into(), |(v, lb)| latency(v, lb)),
                evidence(v.summary(), p)
            );
        }
        let _ = writeln!(page, "<td>{}</td></tr>", ratio(base, value_at(v, 99.0)));
    }
}

/// One column per view, one row per percentile, then the ratios to the first view.
fn side_by_side_percentiles(page: &mut String, views: &[ClockView]) {
    page.push_str("<thead><tr><th></th>");
    for v in views {
        let _ = write!(page, "<th>{}{}</th>", swatch(v.look), escape(&v.label));
    }
    for v in views.iter().skip(1) {
        let _ = write!(
            page,
            "<th>ratio {} / {}</th>",
            escape(&v.label),
            escape(&views[0].label)
        );
    }
    page.push_str("</tr></thead>\n<tbody>\n");
    let _ = write!(page, "<tr><th>count</th>");
    for v in views {
        let _ = write!(page, "<td>{}</td>", count(v.summary().count));
    }
    page.push_str(&"<td></td>".repeat(views.len().saturating_sub(1)));
    page.push_str("</tr>\n");
    for (p, name) in TABLE_PERCENTILES {
        let _ = write!(page, "<tr><th>{name}</th>");
        let cells: Vec<Option<(u64, bool)>> = views.iter().map(|v| value_at(v, p)).collect();
        for (c, v) in cells.iter().zip(views) {
            let _ = write!(
                page,
                "<td>{}{}</td>",
                c.map_or("—".into(), |(v, lb)| latency(v, lb)),
                evidence(v.summary(), p)
            );
        }
        for c in cells.iter().skip(1) {
            let _ = write!(page, "<td class=\"ratio\">{}</td>", ratio(cells[0], *c));
        }
        page.push_str("</tr>\n");
    }
}

/// The interval under a percentile, and a warning when too few samples lie beyond it.
fn evidence(h: &HistogramSummary, p: f64) -> String {
    let mut out = String::new();
    if let Some(ci) = h.ci_at(p) {
        let _ = write!(
            out,
            "<br><small class=\"ci\" title=\"{:.0}% confidence interval (order statistics)\">{}</small>",
            h.ci.as_ref().map_or(95.0, |s| s.level * 100.0),
            ci.text()
        );
    }
    if let Some(b) = h.batch_ci.as_ref().and_then(|set| {
        set.percentiles
            .get(&sojourn_core::result::percentile_key(p))
    }) {
        let class = if b.ci().is_some() { "ci" } else { "bad" };
        let _ = write!(
            out,
            "<br><small class=\"{class}\" title=\"batch means over the run's intervals: an interval that allows for requests that move together ({} independent stretches beyond it)\">{}</small>",
            b.stretches,
            escape(&b.text())
        );
    }
    if let Some(t) = h.thin_at(p) {
        let _ = write!(
            out,
            "<br><small class=\"bad\" title=\"{}\">{} beyond: not meaningful</small>",
            escape(&crate::text::thin_warning(p, t)),
            t.samples_beyond()
        );
    }
    out
}

pub(crate) fn value_at(v: &ClockView, p: f64) -> Option<(u64, bool)> {
    match (&v.times, v.clock) {
        (Some(h), _) if h.is_empty() => None,
        (Some(h), Clock::Response) => {
            let b = bound_at(h, &v.run.censored, p);
            Some((b.value, b.lower_bound))
        }
        // The run keeps no censored histogram of times from the send: its summary says which
        // of them are lower bounds.
        (Some(h), Clock::FromSend) => {
            let value = if p >= 100.0 {
                h.max()
            } else {
                h.value_at_quantile(p / 100.0)
            };
            let lower_bound = v.summary().at(p).is_some_and(|b| b.lower_bound);
            Some((value, lower_bound))
        }
        (None, _) => v.summary().at(p).map(|b| (b.value, b.lower_bound)),
    }
}

pub(crate) fn latency(ns: u64, lower_bound: bool) -> String {
    if lower_bound {
        format!("≥ {}", format_ns(ns))
    } else {
        format_ns(ns)
    }
}

fn ratio(base: Option<(u64, bool)>, other: Option<(u64, bool)>) -> String {
    let (Some((a, a_lb)), Some((b, b_lb))) = (base, other) else {
        return "—".into();
    };
    if a == 0 {
        return "—".into();
    }
    // The terminal's digits, so a ratio reads the same on the page as in the table above it.
    let text = format!("{}×", crate::compare::format_ratio(b as f64 / a as f64));
    match (a_lb, b_lb) {
        (false, false) => text,
        (false, true) => format!("≥ {text}"),
        (true, false) => format!("≤ {text}"),
        (true, true) => "? (both censored)".into(),
    }
}

// ---- spectrum ------------------------------------------------------------------------------

fn spectrum_section(page: &mut String, runs: &[RunView]) -> Result<(), ReportError> {
    let views = clock_views(runs);
    // Each view's curves: its own, then the run's back-filled estimate if it has one.
    let mut per_run: Vec<Vec<Curve>> = Vec::new();
    let mut max_inverse: f64 = 100.0;
    for v in &views {
        let (curve, reach) = spectrum_curve(v);
        max_inverse = max_inverse.max(reach);
        let mut curves = vec![curve];
        if v.clock == Clock::Response {
            curves.extend(
                v.r()
                    .histograms
                    .backfilled
                    .as_ref()
                    .and_then(|b| backfilled_curve(v.run, b)),
            );
        }
        per_run.push(curves);
    }
    let all: Vec<Curve> = per_run.iter().flatten().cloned().collect();
    let axes = plot::SpectrumAxes::fit(&all, max_inverse);
    page.push_str("<section>\n<h2>Percentile spectrum</h2>\n<figure>\n");
    if views.len() <= MANY_RUNS {
        page.push_str(&plot::spectrum(&plot::Spectrum {
            id: "spectrum".into(),
            title: "Response time by percentile".into(),
            curves: &all,
            axes,
            size: Size::Full,
        })?);
    } else {
        small_spectra(page, &views, &per_run, axes)?;
    }
    let _ = write!(
        page,
        "\n<figcaption>How to read: each curve is one run's response time \
         (ms, log scale) at every percentile. Moving right, each grid step is ten times rarer: 90% of requests were at or below the \
         curve's value at 90%, 99% at 99%, and so on. Markers sit at p50, p90, p99, p99.9 and p99.99; a hollow marker is only a lower \
         bound (censored requests). Each run has its own colour and marker; open loops are drawn solid, closed loops dashed, paced \
         loops dotted, and a paced loop's view from the send (what hey -q and JMeter report) dashed in a colour of its own. {} Where a closed-loop \
         curve stays flat while an open-loop curve climbs (usually from p90–p99 on), the closed loop stopped sending while the \
         server stalled and never measured what users would have waited.</figcaption>\n</figure>\n</section>\n",
        if views.len() <= MANY_RUNS {
            "All runs share one chart."
        } else {
            "With this many runs, each chart shows one run against the reference (the model when there is one), all on the same axes."
        }
    );
    Ok(())
}

/// One small chart per run, each against the reference run, on the page's shared axes.
fn small_spectra(
    page: &mut String,
    views: &[ClockView],
    per_run: &[Vec<Curve>],
    axes: plot::SpectrumAxes,
) -> Result<(), ReportError> {
    let reference = views
        .iter()
        .position(|v| sojourn_core::verdict::is_model(v.r()))
        .unwrap_or(0);
    page.push_str("<div class=\"grid\">\n");
    for (i, (v, curves)) in views.iter().zip(per_run).enumerate() {
        if i == reference {
            continue;
        }
        let mut reference_curve = per_run[reference][0].clone();
        reference_curve.width = 2;
        let mut shown = vec![reference_curve];
        shown.extend(curves.iter().cloned());
        page.push_str(&plot::spectrum(&plot::Spectrum {
            id: format!("spectrum-{}", i + 1),
            title: v.name(),
            curves: &shown,
            axes,
            size: Size::Small,
        })?);
        page.push('\n');
    }
    page.push_str("</div>\n");
    Ok(())
}

/// One view's spectrum curve and how far right (1/(1−p)) its data reaches.
fn spectrum_curve(v: &ClockView) -> (Curve, f64) {
    let label = v.name();
    let mut points = Vec::new();
    let mut marks = Vec::new();
    if let Some(h) = v.times.as_ref().filter(|h| !h.is_empty()) {
        // A curve starts where the data starts: a recorded zero has no place on a log axis.
        for t in crate::hgrm::ticks(h, 5)
            .into_iter()
            .filter(|t| t.percentile < 100.0 && t.value > 0)
        {
            points.push((1.0 / (1.0 - t.percentile / 100.0), ms(t.value)));
        }
        for (p, _) in TABLE_PERCENTILES
            .iter()
            .filter(|(p, _)| *p < 100.0 && reachable(*p, h.len()))
        {
            let (value, lower_bound) = value_at(v, *p).unwrap_or((0, false));
            marks.push((1.0 / (1.0 - p / 100.0), ms(value), lower_bound));
        }
    } else {
        // No histogram (imported results): draw the summary percentiles alone.
        for (p, value) in v
            .summary()
            .percentiles
            .0
            .iter()
            .filter(|(p, value)| *p < 100.0 && *value > 0)
        {
            let lb = v.summary().at(*p).is_some_and(|b| b.lower_bound);
            points.push((1.0 / (1.0 - p / 100.0), ms(*value)));
            marks.push((1.0 / (1.0 - p / 100.0), ms(*value), lb));
        }
    }
    let reach = points.last().map_or(1.0, |p| p.0);
    (
        Curve {
            label,
            look: v.look,
            points,
            marks,
            width: 3,
            legend_marker: true,
        },
        reach,
    )
}

/// A percentile is worth marking only if the run has enough requests to resolve it.
fn reachable(p: f64, n: u64) -> bool {
    1.0 / (1.0 - p / 100.0) <= n as f64
}

fn backfilled_curve(v: &RunView, b: &HistogramSummary) -> Option<Curve> {
    let h = b.histogram().ok().filter(|h| !h.is_empty())?;
    let points = crate::hgrm::ticks(&h, 5)
        .into_iter()
        .filter(|t| t.percentile < 100.0 && t.value > 0)
        .map(|t| (1.0 / (1.0 - t.percentile / 100.0), ms(t.value)))
        .collect();
    let look = Look {
        line: LineKind::Dotted,
        color: plot::GREY,
        ..v.look
    };
    Some(Curve {
        label: format!("{}: back-filled estimate (not measured)", v.r().label),
        look,
        points,
        marks: vec![],
        width: 2,
        legend_marker: false,
    })
}

/// Nanoseconds as milliseconds, floored at 1 µs so a log axis can show a zero.
fn ms(ns: u64) -> f64 {
    (ns as f64 / 1e6).max(0.001)
}

// ---- timelines -----------------------------------------------------------------------------

fn x_max(views: &[RunView]) -> f64 {
    let end = views
        .iter()
        .flat_map(|v| v.r().intervals.iter().map(|i| i.end_ns() as f64 / 1e9))
        .fold(0.0, f64::max);
    let elapsed = views
        .iter()
        .map(|v| v.r().elapsed_ns as f64 / 1e9)
        .fold(0.0, f64::max);
    end.max(elapsed).max(1.0)
}

fn bands(r: &RunResult) -> Vec<Band> {
    r.intervals
        .iter()
        .filter(|i| i.answered() > 0)
        .map(|i| Band {
            start: i.start_ns as f64 / 1e9,
            end: i.end_ns() as f64 / 1e9,
            p50: i.p50 as f64 / 1e6,
            p99: i.p99 as f64 / 1e6,
            max: i.max as f64 / 1e6,
        })
        .collect()
}

/// (intended offset s, response ms) of a run's sampled requests.
type Dots = Vec<(f64, f64)>;

fn dots(run: &ReportRun) -> Dots {
    run.samples
        .iter()
        .map(|s| {
            (
                s.intended_offset.as_secs_f64(),
                s.response.as_secs_f64() * 1e3,
            )
        })
        .collect()
}

fn timeline_section(page: &mut String, views: &[RunView]) -> Result<(), ReportError> {
    let x = x_max(views);
    let all: Vec<(Vec<Band>, Dots)> = views.iter().map(|v| (bands(v.r()), dots(v.run))).collect();
    let top = all
        .iter()
        .flat_map(|(b, d)| b.iter().map(|b| b.max).chain(d.iter().map(|d| d.1)))
        .fold(0.0, f64::max);
    let y = plot::nice_ceiling(top * 1.05);
    let size = size_for(views);
    page.push_str("<section>\n<h2>Latency over time</h2>\n<figure id=\"timeline\">\n");
    page.push_str(grid_open(size));
    for (i, (v, (b, d))) in views.iter().zip(&all).enumerate() {
        if b.is_empty() && d.is_empty() {
            let _ = writeln!(
                page,
                "<p class=\"muted\">{}: this result has no timeline.</p>",
                escape(&v.name())
            );
            continue;
        }
        let t = Timeline {
            id: format!("timeline-{}", i + 1),
            title: v.name(),
            look: v.look,
            bands: b,
            dots: d,
            spans: &v.spans,
            stages: &v.stages,
            x_max: x,
            y_max: y,
            size,
        };
        page.push_str(&plot::timeline(&t)?);
        page.push('\n');
    }
    page.push_str(grid_close(size));
    page.push_str(
        "<figcaption>How to read: one chart per run, on the same axes. For every interval (1 s by default) the bands show the \
         p50 (solid), p99 (dashed) and maximum (dotted) response time of the requests that <i>finished</i> in it; a gap means \
         nothing finished. Dots, when samples were recorded, are single requests placed at the time they were <i>due</i>, so a \
         stall appears as a wedge: requests due early in the stall waited longest. Grey shading marks the scenario's stalls, \
         pauses and ramps; dashed rules, where a shaped run's stages begin. A closed loop shows only a few slow requests per stall (one per connection); an open loop shows every \
         request users would have sent.</figcaption>\n</figure>\n</section>\n",
    );
    Ok(())
}

fn spans_of<'a>(views: &'a [RunView]) -> &'a [Span] {
    views
        .iter()
        .map(|v| v.spans.as_slice())
        .find(|s| !s.is_empty())
        .unwrap_or(&[])
}

/// Full-width charts for a few runs; small multiples beyond [`MANY_RUNS`].
fn size_for(views: &[RunView]) -> Size {
    if views.len() <= MANY_RUNS {
        Size::Full
    } else {
        Size::Small
    }
}

fn grid_open(size: Size) -> &'static str {
    match size {
        Size::Full => "",
        Size::Small => "<div class=\"grid\">\n",
    }
}

fn grid_close(size: Size) -> &'static str {
    match size {
        Size::Full => "",
        Size::Small => "</div>\n",
    }
}

/// A value per interval over time: one chart with every run, or (many runs) one small chart
/// per run on a shared y axis.
struct PerInterval<'a> {
    id: &'static str,
    title: &'static str,
    y_desc: &'static str,
    /// The y axis's name on a small chart.
    y_unit: &'static str,
    references: &'a [(String, f64)],
    value: fn(&sojourn_core::result::IntervalSummary) -> f64,
}

fn per_interval_charts(views: &[RunView], c: &PerInterval) -> Result<String, ReportError> {
    let curves: Vec<Curve> = views.iter().map(|v| rate_curve(v, c.value)).collect();
    let size = size_for(views);
    let x_max = x_max(views);
    if size == Size::Full {
        return plot::over_time(&OverTime {
            id: c.id.into(),
            title: c.title.into(),
            y_desc: c.y_desc,
            curves: &curves,
            references: c.references,
            spans: spans_of(views),
            x_max,
            y_max: None,
            size,
        });
    }
    let y_max = Some(plot::over_time_ceiling(&curves, c.references));
    let mut out = grid_open(size).to_string();
    for (i, (v, curve)) in views.iter().zip(&curves).enumerate() {
        out.push_str(&plot::over_time(&OverTime {
            id: format!("{}-{}", c.id, i + 1),
            title: v.name(),
            y_desc: c.y_unit,
            curves: std::slice::from_ref(curve),
            references: c.references,
            spans: &v.spans,
            x_max,
            y_max,
            size,
        })?);
        out.push('\n');
    }
    out.push_str(grid_close(size));
    Ok(out)
}

fn throughput_section(page: &mut String, views: &[RunView]) -> Result<(), ReportError> {
    let mut references: Vec<(String, f64)> = Vec::new();
    // A target that is no rate (a damaged file's -1 or NaN) draws no line.
    let targets = views.iter().filter_map(|v| v.r().rate.target);
    for t in targets.filter(|t| t.is_finite() && *t > 0.0) {
        if !references.iter().any(|r| (r.1 - t).abs() < 1e-9) {
            references.push((format!("target {} req/s", num(t)), t));
        }
    }
    let svg = per_interval_charts(
        views,
        &PerInterval {
            id: "throughput",
            title: "Throughput: answers per second",
            y_desc: "answers per second",
            y_unit: "answers/s",
            references: &references,
            value: |i| i.answered() as f64 / (i.duration_ns as f64 / 1e9).max(1e-9),
        },
    )?;
    let _ = write!(
        page,
        "<section>\n<h2>Throughput</h2>\n<figure>\n{svg}\n<figcaption>How to read: answers (completed or failed) per second, per \
         interval, by when they finished. An open loop keeps offering the target rate, so a stall shows as a drop to zero followed \
         by a burst as the queue drains; a closed loop's rate follows the server down and back up.</figcaption>\n</figure>\n</section>\n"
    );
    Ok(())
}

fn send_lag_section(page: &mut String, views: &[RunView]) -> Result<(), ReportError> {
    let svg = per_interval_charts(
        views,
        &PerInterval {
            id: "send-lag",
            title: "Send lag: p99 per interval",
            y_desc: "send lag p99 (ms)",
            y_unit: "ms",
            references: &[],
            value: |i| i.send_lag_p99 as f64 / 1e6,
        },
    )?;
    let _ = write!(
        page,
        "<section>\n<h2>Send lag</h2>\n<figure>\n{svg}\n<figcaption>How to read: how long requests waited in the client between \
         being due and being sent (p99 per interval). It is counted in response time, not hidden. Lag with a passing self-check \
         means every connection was busy (the pool is part of the offered system); lag with a failing self-check means sojourn \
         itself fell behind — see the run's notes. A closed loop sends when it is ready, so its lag is zero by definition.\
         </figcaption>\n</figure>\n</section>\n"
    );
    Ok(())
}

/// A stepped line of one value per interval, with empty intervals (gaps) drawn as zero.
fn rate_curve(v: &RunView, value: fn(&sojourn_core::result::IntervalSummary) -> f64) -> Curve {
    let mut points = Vec::new();
    let mut expected_start = 0u64;
    for i in &v.r().intervals {
        if i.start_ns > expected_start {
            points.extend([
                (expected_start as f64 / 1e9, 0.0),
                (i.start_ns as f64 / 1e9, 0.0),
            ]);
        }
        let y = value(i);
        points.extend([(i.start_ns as f64 / 1e9, y), (i.end_ns() as f64 / 1e9, y)]);
        expected_start = i.end_ns();
    }
    Curve {
        label: v.name(),
        look: v.look,
        points,
        marks: vec![],
        width: 2,
        legend_marker: true,
    }
}

// ---- scenario ------------------------------------------------------------------------------

/// A span of the run during which a scenario fault acts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub kind: String,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// The stall, pause and ramp windows of the scenario stored in a result, up to `horizon_ns`.
///
/// Reads an explicit `windows` (or `events`) array of `{kind, start_ns, end_ns}` if the result
/// has one; otherwise rebuilds the scenario from its stored TOML form and asks it. Anything
/// unreadable gives no windows: shading is a help, not a requirement.
pub fn scenario_windows(scenario: &serde_json::Value, horizon_ns: u64) -> Vec<Window> {
    for key in ["windows", "events"] {
        if let Some(list) = scenario.get(key).and_then(|l| l.as_array()) {
            return list
                .iter()
                .filter_map(window_of)
                .filter(|w| w.start_ns < horizon_ns)
                .collect();
        }
    }
    let Some(s) = rebuild_scenario(scenario) else {
        return Vec::new();
    };
    s.windows(std::time::Duration::from_nanos(horizon_ns))
        .into_iter()
        .map(|w| Window {
            kind: window_kind(w.kind).into(),
            start_ns: sojourn_core::units::nanos(w.start),
            end_ns: sojourn_core::units::nanos(w.end),
        })
        .collect()
}

fn window_kind(k: sojourn_scenario::WindowKind) -> &'static str {
    match k {
        sojourn_scenario::WindowKind::Stall => "stall",
        sojourn_scenario::WindowKind::Pause => "pause",
        sojourn_scenario::WindowKind::Ramp => "ramp",
    }
}

fn window_of(v: &serde_json::Value) -> Option<Window> {
    Some(Window {
        kind: v.get("kind")?.as_str()?.to_string(),
        start_ns: v.get("start_ns")?.as_u64()?,
        end_ns: v.get("end_ns")?.as_u64()?,
    })
}

/// The scenario from its TOML form, stored as JSON or as TOML text.
fn rebuild_scenario(v: &serde_json::Value) -> Option<sojourn_scenario::Scenario> {
    let text = match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Object(_) => {
            toml::to_string(&serde_json::from_value::<toml::Table>(v.clone()).ok()?).ok()?
        }
        _ => return None,
    };
    sojourn_scenario::Scenario::from_toml_str(&text, "scenario").ok()
}

fn scenario_name(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => s.lines().find_map(|l| {
            l.trim().strip_prefix("name").map(|r| {
                r.trim_start_matches([' ', '='])
                    .trim_matches('"')
                    .to_string()
            })
        }),
        _ => v.get("name")?.as_str().map(str::to_string),
    }
}

/// A sweep's report page: its table as printed, then the two charts with the cliff shaded.
/// `cliff` is (highest passing, lowest failing) offered rate, when the sweep found both.
pub fn sweep_page(
    title: &str,
    table: &str,
    points: &[crate::sweep_plot::SweepPoint],
    cliffs: crate::sweep_plot::Cliffs,
) -> Result<String, ReportError> {
    let mut page = String::new();
    head(&mut page, title);
    let _ = writeln!(
        page,
        "<header><h1>{}</h1><p class=\"lede\">One open-loop step per offered rate. A step is \
         SATURATED when the target delivered less than was offered, when the response time was \
         still rising across the step, or when requests were still unanswered at its end, while \
         sojourn kept its schedule and had a free connection. It is GENERATOR-BOUND when sojourn \
         itself could not send on schedule, and POOL-BOUND when every connection was busy: \
         limits of the client side, shaded orange, which say nothing about the target. The grey \
         band is the cliff, between the highest rate that passed and the lowest that failed; a \
         blue band is the model's cliff for the same steps (<code>--model</code>).</p></header>",
        escape(title)
    );
    let _ = writeln!(
        page,
        "<section><pre style=\"overflow-x:auto\">{}</pre></section>",
        escape(table)
    );
    let _ = writeln!(
        page,
        "<section><h2>Offered vs achieved</h2>{}</section>",
        crate::sweep_plot::rates(points, cliffs)?
    );
    let _ = writeln!(
        page,
        "<section><h2>Response time vs offered rate</h2>{}</section>",
        crate::sweep_plot::latency(points, cliffs)?
    );
    let _ = writeln!(
        page,
        "<footer>Written by sojourn {}.</footer>\n</body>\n</html>",
        env!("CARGO_PKG_VERSION")
    );
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under each percentile the page shows the batch-means interval beside the order
    /// statistics', or the run's word that it holds too few independent stretches.
    #[test]
    fn the_batch_means_interval_or_its_absence_is_under_each_percentile() {
        use sojourn_core::batches::{BatchCi, BatchSet};
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for v in 1..=1_000u64 {
            h.record(v * 1_000_000).unwrap();
        }
        let mut summary = HistogramSummary::of(&h, &sojourn_core::record::new_histogram());
        let given = BatchCi {
            lo: Some(400_000_000),
            hi: Some(600_000_000),
            hi_open: false,
            stretches: 14,
            batches: 7,
        };
        let none = BatchCi {
            lo: None,
            hi: None,
            hi_open: false,
            stretches: 3,
            batches: 0,
        };
        summary.batch_ci = Some(BatchSet {
            level: 0.95,
            intervals: 60,
            percentiles: [("50".to_string(), given), ("99".to_string(), none)].into(),
        });
        let p50 = evidence(&summary, 50.0);
        assert!(
            p50.contains("[400.00 ms, 600.00 ms]") && p50.contains("14 independent stretches"),
            "{p50}"
        );
        let p99 = evidence(&summary, 99.0);
        assert!(
            p99.contains("class=\"bad\"") && p99.contains("[too few independent stretches: 3]"),
            "{p99}"
        );
        assert!(
            p99.contains(&summary.ci_at(99.0).unwrap().text()),
            "the floor stays: {p99}"
        );
    }
    use sojourn_core::record::{Recorder, Stamps};
    use sojourn_core::{check, Outcome, RunConfig, RunFacts};
    use std::time::Duration;

    /// A closed loop whose first answers took no measurable time (a zero in the histogram),
    /// the rest 2 ms, with a back-filled estimate beside it.
    fn run_with_zeros() -> ReportRun {
        let mut rec = Recorder::new(Duration::from_secs(1));
        for i in 0..1000u64 {
            let at = Duration::from_millis(i);
            let took = if i < 20 { 0 } else { 2 };
            rec.record(
                &Stamps::on_time(at),
                at + Duration::from_millis(took),
                Outcome::Ok,
            );
        }
        let facts = RunFacts {
            label: "zeros".into(),
            mode: Mode::Closed,
            config: RunConfig::default(),
            scheduled: 1000,
            elapsed: Duration::from_secs(1),
            interrupted: false,
            checks: check::assess_closed(),
            backfill_interval: Some(Duration::from_millis(1)),
        };
        ReportRun {
            source: "zeros.json".into(),
            result: RunResult::build(&Recorder::merge_all([rec]), facts),
            samples: Vec::new(),
        }
    }

    #[test]
    fn curves_start_where_the_data_starts_and_the_axis_a_decade_below() {
        let run = run_with_zeros();
        let view = RunView::new(0, &run).unwrap();
        let h = view.response.as_ref().unwrap();
        assert_eq!(h.min(), 0, "the run recorded zeros");
        let clocks = clock_views(std::slice::from_ref(&view));
        let (curve, _) = spectrum_curve(&clocks[0]);
        let estimate = run.result.histograms.backfilled.as_ref().unwrap();
        let backfilled = backfilled_curve(&view, estimate).expect("a back-filled estimate");
        let smallest_recorded = |h: &Histogram<u64>| {
            ms(h.iter_recorded()
                .map(|v| v.value_iterated_to())
                .find(|v| *v > 0)
                .unwrap())
        };
        let pairs = [
            (&curve, h.clone()),
            (&backfilled, estimate.histogram().unwrap()),
        ];
        for (c, h) in &pairs {
            let lowest = c.points.iter().map(|p| p.1).fold(f64::MAX, f64::min);
            let floor = smallest_recorded(h);
            assert!(
                lowest >= floor * 0.99,
                "{}: a point at {lowest} ms, below its smallest recorded value {floor} ms",
                c.label
            );
        }
        let axes = plot::SpectrumAxes::fit(&[curve.clone(), backfilled.clone()], 100.0);
        let start = [&curve, &backfilled]
            .iter()
            .flat_map(|c| c.points.iter().map(|p| p.1))
            .fold(f64::MAX, f64::min);
        assert!(
            (axes.y.0 - start / 10.0).abs() < 1e-9,
            "the axis starts one decade below the lowest point: {} vs {start}",
            axes.y.0
        );
    }

    /// The Runs table has a row for each meter, each read from its own histogram.
    #[test]
    fn the_runs_table_shows_the_machines_hiccups_and_the_processs_own() {
        let meter = |p99_us: u64| {
            let mut h = sojourn_core::record::new_histogram();
            h.record_n(10_000, 98).unwrap();
            h.record_n(p99_us * 1_000, 2).unwrap();
            HistogramSummary::of(&h, &sojourn_core::record::new_histogram())
        };
        let mut run = run_with_zeros();
        run.result.mode = Mode::Open;
        run.result.histograms.control_hiccup = Some(meter(300));
        run.result.histograms.hiccup = Some(meter(7_000));
        let page = render(&[run], &HtmlOptions { title: None }).unwrap();
        let row = |name: &str| {
            let at = page
                .find(&format!("<tr><th>{name}"))
                .unwrap_or_else(|| panic!("no {name} row"));
            page[at..at + page[at..].find("</tr>").unwrap()].to_string()
        };
        let machine = row("machine hiccups p99 / p99.9 (an idle control process");
        assert!(machine.contains("300.0 µs"), "{machine}");
        let own = row("own hiccups p99 / p99.9 (a sleeping thread of this process)");
        assert!(own.contains("7.00 ms"), "{own}");
    }

    #[test]
    fn sixteen_runs_get_sixteen_looks_and_modes_keep_their_line() {
        let looks: Vec<Look> = (0..16).map(|i| look_for(i, Mode::Open)).collect();
        for (i, a) in looks.iter().enumerate() {
            for b in &looks[i + 1..] {
                assert!(
                    (a.color, a.marker) != (b.color, b.marker),
                    "two runs share a colour and a marker"
                );
            }
        }
        assert_eq!(look_for(3, Mode::Closed).line, LineKind::Dashed);
        assert_eq!(look_for(3, Mode::Paced).line, LineKind::Dotted);
    }
}
