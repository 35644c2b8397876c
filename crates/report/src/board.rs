//! The page's first answer and its last details: the verdict board (every run against the
//! model, sorted so the tools that hide the stall stand out) and the notes, grouped and folded.
//!
//! The one circle left among the report's modules is this one with [`crate::html`]: the board
//! is a section of that page, drawn from the page's own run views, which the page places.
use std::fmt::Write as _;

use sojourn_core::result::{Mode, RunResult, Tool};
use sojourn_core::verdict::{is_model, judge, verdict, Verdict};

use crate::compare::{format_ratio, Clock};
use crate::escape::escape;
use crate::html::{clock_views, latency, swatch, value_at, ClockView, RunView};

/// The percentiles the board shows, beside the model's.
const BOARD_PERCENTILES: [(f64, &str); 3] = [(50.0, "p50"), (99.0, "p99"), (99.9, "p99.9")];

/// The board, when one of the runs is the model: one row per view (a paced closed loop has
/// two), each judged from its own data, sorted by verdict.
pub(crate) fn board_section(page: &mut String, runs: &[RunView]) {
    let views = clock_views(runs);
    let Some(model) = views.iter().find(|v| is_model(v.r())) else {
        return;
    };
    let mut rows: Vec<(&ClockView, Option<f64>, Verdict)> = views
        .iter()
        .map(|v| {
            let (ratio, verdict) = judged(v, model.r());
            (v, ratio, verdict)
        })
        .collect();
    rows.sort_by_key(|(_, _, verdict)| verdict.rank());
    page.push_str(
        "<section id=\"board\">\n<h2>Which runs hide the stall?</h2>\n<table class=\"board\">\n\
         <colgroup><col style=\"width: 16%\"><col style=\"width: 6%\"><col style=\"width: 9%\">\
         <col style=\"width: 9%\"><col style=\"width: 9%\"><col style=\"width: 13%\">\
         <col style=\"width: 13%\"><col></colgroup>\n<thead><tr><th>run</th><th>loop</th>",
    );
    for (p, name) in BOARD_PERCENTILES {
        let model_value = value_at(model, p).map_or("—".into(), |(v, lb)| latency(v, lb));
        let _ = write!(
            page,
            "<th>{name}<br><small>model {model_value}</small></th>"
        );
    }
    page.push_str(
        "<th>p99 vs model</th><th class=\"verdict\">verdict</th><th>what it cannot show</th></tr></thead>\n<tbody>\n",
    );
    for (v, ratio, verdict) in rows {
        board_row(page, v, ratio, verdict);
    }
    page.push_str(
        "</tbody>\n</table>\n<p class=\"muted\">Each run's p99 against the model's, the \
         simulator's exact answer for the same schedule and server. Within 3× either way is \
         honest; under a third, the tool never sent (or never timed) the requests that waited \
         out the stall; a closed loop that lands on the model's tail anyway rebuilt it after the \
         run. A paced closed loop has two rows, one per clock: <i>from send</i> is what hey -q, \
         bombardier -r, fortio -qps and JMeter report, <i>from slot</i> is wrk2's view. The bar \
         is the ratio on a log scale from 1/100 to 100×; the tick is the model. Hover a cell for \
         its full text.</p>\n</section>\n",
    );
}

/// A view's verdict: the model is the reference; every other view is judged by its own p99.
pub(crate) fn judged(v: &ClockView, model: &RunResult) -> (Option<f64>, Verdict) {
    if is_model(v.r()) {
        return (Some(1.0), Verdict::Model);
    }
    judge(v.summary(), v.r().mode, model)
}

fn board_row(page: &mut String, v: &ClockView, ratio: Option<f64>, verdict: Verdict) {
    let r = v.r();
    let name = escape(&v.label);
    let _ = write!(
        page,
        "<tr data-verdict=\"{}\" data-clock=\"{}\"><td title=\"{name}\">{}{name}</td><td>{}</td>",
        verdict_class(verdict),
        clock_name(v.clock),
        swatch(v.look),
        short_mode(r.mode)
    );
    for (p, _) in BOARD_PERCENTILES {
        let cell = value_at(v, p).map_or("—".into(), |(v, lb)| latency(v, lb));
        let _ = write!(page, "<td>{cell}</td>");
    }
    let (caveat, bad) = view_caveat(v, verdict);
    let _ = writeln!(
        page,
        "<td class=\"bar\">{}</td><td class=\"verdict\"><span class=\"badge {}\">{}</span></td><td class=\"caveat{}\" title=\"{caveat}\">{caveat}</td></tr>",
        ratio_bar(ratio),
        verdict_class(verdict),
        badge(verdict),
        if bad { " bad" } else { "" },
        caveat = escape(&caveat)
    );
}

fn clock_name(c: Clock) -> &'static str {
    match c {
        Clock::Response => "response",
        Clock::FromSend => "from-send",
    }
}

/// A view's caveat: a paced loop's two views say which clock each is.
fn view_caveat(v: &ClockView, verdict: Verdict) -> (String, bool) {
    let (line, bad) = caveat(v.r(), verdict);
    if v.r().mode != Mode::Paced || v.r().import.is_some() || bad {
        return (line, bad);
    }
    let clock = match v.clock {
        Clock::FromSend => {
            "timed from each send, as hey -q and JMeter report it: late slots look fast"
        }
        Clock::Response => "timed from each slot, as wrk2 reports it",
    };
    (format!("paced closed loop, {clock}"), false)
}

/// A verdict as a badge says it: short enough for its column.
fn badge(v: Verdict) -> &'static str {
    match v {
        Verdict::Model => "model",
        Verdict::CorrectedAfterTheFact => "back-filled",
        other => other.describe(),
    }
}

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Model => "v-model",
        Verdict::Honest => "v-honest",
        Verdict::HidesTheStall => "v-hides",
        Verdict::Overstates => "v-overstates",
        Verdict::CorrectedAfterTheFact => "v-corrected",
        Verdict::NoData => "v-nodata",
    }
}

fn short_mode(m: Mode) -> &'static str {
    match m {
        Mode::Open => "open",
        Mode::Closed => "closed",
        Mode::Paced => "paced",
        Mode::Tracking => "tracking",
    }
}

/// The ratio as a bar from the model's tick, on a log scale from 1/100× to 100×, and as text.
fn ratio_bar(ratio: Option<f64>) -> String {
    let Some(x) = ratio.filter(|x| *x > 0.0) else {
        return "—".into();
    };
    let (mid, half) = (50.0, 48.0);
    let at = mid + half * (x.log10() / 2.0).clamp(-1.0, 1.0);
    let (from, to) = (at.min(mid), at.max(mid));
    let colour = if !(1.0 / 3.0..=3.0).contains(&x) {
        "#b00020"
    } else {
        "#1b6e20"
    };
    let text = format!("{}×", format_ratio(x));
    format!(
        "<svg class=\"bar\" width=\"60\" height=\"12\" viewBox=\"0 0 100 12\" aria-hidden=\"true\">\
         <rect x=\"0\" y=\"5\" width=\"100\" height=\"2\" fill=\"#e4e4e4\"/>\
         <rect x=\"{from:.1}\" y=\"2\" width=\"{:.1}\" height=\"8\" fill=\"{colour}\"/>\
         <rect x=\"49.5\" y=\"0\" width=\"1\" height=\"12\" fill=\"#222\"/></svg> {text}",
        (to - from).max(1.0)
    )
}

/// The one line that matters most about how far a run can be trusted, and whether it is bad
/// news about the run itself (lost requests, an interrupted run).
pub(crate) fn caveat(r: &RunResult, verdict: Verdict) -> (String, bool) {
    let unaccounted = r.counts.unaccounted();
    if unaccounted != 0 {
        return (
            format!("{unaccounted} scheduled requests are unaccounted for"),
            true,
        );
    }
    if r.interrupted {
        return (
            "the run was interrupted; this is what was gathered until then".into(),
            true,
        );
    }
    if is_model(r) {
        return (
            "simulated: the exact answer for this schedule and server".into(),
            false,
        );
    }
    // A back-filled curve beside a measurement is labelled in the charts; only a run whose
    // reported numbers are the estimate gets this caveat.
    if verdict == Verdict::CorrectedAfterTheFact {
        return (
            "back-filled after the run: an estimate, not a measurement".into(),
            false,
        );
    }
    let line = match r.mode {
        Mode::Closed => Some("closed loop: sends nothing new while its connections wait".into()),
        Mode::Paced => Some(
            "paced closed loop: a connection sends its next slot only after its last answer".into(),
        ),
        _ => None,
    };
    let first_note = r.import.as_ref().and_then(|i| i.notes.first().cloned());
    let held_back = r
        .checks
        .rate
        .as_ref()
        .filter(|v| v.status != sojourn_core::sweep::Status::Ok)
        .map(|v| format!("{}: {}", v.status.label(), v.why.join("; ")));
    let open = "open loop: timed from each request's due time".to_string();
    (line.or(first_note).or(held_back).unwrap_or(open), false)
}

/// A tool's name and version, from whatever banner it printed: "ab 2.3" from "This is
/// ApacheBench, Version 2.3 <$Revision$>", "wrk 4.1.0" from "wrk debian/4.1.0-3+b2 [epoll]
/// Copyright (C) 2012 Will Glozer". The raw banner stays in the result file.
pub fn tool_version(tool: &Tool) -> String {
    match version_number(&tool.version) {
        Some(v) => format!("{} {v}", tool.name),
        None => tool.name.clone(),
    }
}

/// The first dotted number in `raw`, standing alone or after a `v`: `2.3`, `4.1.0`, `0.49.0`.
fn version_number(raw: &str) -> Option<String> {
    raw.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
        .map(|t| t.strip_prefix('v').unwrap_or(t).trim_end_matches('.'))
        .find(|t| {
            t.starts_with(|c: char| c.is_ascii_digit())
                && t.contains('.')
                && t.chars().all(|c| c.is_ascii_digit() || c == '.')
        })
        .map(str::to_string)
}

/// Every note of every run: the runs' own, a note several runs share stated once naming them
/// all, each folded under a line that keeps the run's caveat in view.
pub(crate) fn notes_section(page: &mut String, views: &[RunView]) {
    let per_run: Vec<Vec<String>> = views.iter().map(|v| run_notes(v.r())).collect();
    // Each distinct note, in first-seen order, with the runs that carry it.
    let mut grouped: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, notes) in per_run.iter().enumerate() {
        for n in notes {
            match grouped.iter_mut().find(|(text, _)| text == n) {
                Some((_, runs)) => runs.push(i),
                None => grouped.push((n, vec![i])),
            }
        }
    }
    page.push_str("<section id=\"notes\">\n<h2>Notes</h2>\n");
    let shared: Vec<&(&str, Vec<usize>)> = grouped.iter().filter(|(_, r)| r.len() > 1).collect();
    if !shared.is_empty() {
        let _ = write!(
            page,
            "<details class=\"shared\"><summary>{} shared by several runs</summary><ul>",
            plural(shared.len(), "note")
        );
        for (text, runs) in &shared {
            let names: Vec<String> = runs.iter().map(|&i| escape(&views[i].r().label)).collect();
            let _ = write!(
                page,
                "<li><b>{}</b>: {}</li>",
                names.join(", "),
                escape(text)
            );
        }
        page.push_str("</ul></details>\n");
    }
    let model = views.iter().find(|v| is_model(v.r()));
    for (i, v) in views.iter().enumerate() {
        let own: Vec<&str> = grouped
            .iter()
            .filter(|(_, runs)| runs == &[i])
            .map(|(text, _)| *text)
            .collect();
        let judged = model.map_or(Verdict::NoData, |m| verdict(v.r(), m.r()).1);
        run_details(page, v, judged, &own, views.len() > crate::html::MANY_RUNS);
    }
    page.push_str("</section>\n");
}

/// One run's folded notes (and, with many runs, the facts its table row had no room for).
fn run_details(page: &mut String, v: &RunView, judged: Verdict, own: &[&str], with_facts: bool) {
    let r = v.r();
    let (caveat, bad) = caveat(r, judged);
    let _ = write!(
        page,
        "<details class=\"run-notes\"><summary>{}<b>{}</b>: <span{}>{}</span> <span class=\"muted\">({})</span></summary>",
        swatch(v.look),
        escape(&v.name()),
        if bad { " class=\"bad\"" } else { "" },
        escape(&caveat),
        plural(own.len(), "note of its own")
    );
    if with_facts {
        page.push_str("<table class=\"per-run\"><tbody>");
        for (name, cell) in crate::html::detail_rows(r) {
            let _ = write!(page, "<tr><th>{name}</th><td>{}</td></tr>", cell(r));
        }
        page.push_str("</tbody></table>");
    }
    if !own.is_empty() {
        page.push_str("<ul>");
        for n in own {
            let _ = write!(page, "<li>{}</li>", escape(n));
        }
        page.push_str("</ul>");
    }
    page.push_str("</details>\n");
}

/// A run's notes, each once: its checks, its importer's, its statistics, and whether it was
/// interrupted.
fn run_notes(r: &RunResult) -> Vec<String> {
    let imported = r.import.iter().flat_map(|i| i.notes.iter().cloned());
    let statistics = crate::text::statistics(r)
        .lines()
        .map(str::to_string)
        .collect::<Vec<_>>();
    let mut out: Vec<String> = Vec::new();
    for n in r
        .checks
        .notes
        .iter()
        .cloned()
        .chain(imported)
        .chain(statistics)
    {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

fn plural(n: usize, what: &str) -> String {
    match (n, what.split_once(' ')) {
        (1, _) => format!("1 {what}"),
        (_, Some((noun, rest))) => format!("{n} {noun}s {rest}"),
        (_, None) => format!("{n} {what}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_cut_from_the_banners_tools_print() {
        let rows = [
            (
                "ab",
                "This is ApacheBench, Version 2.3 <$Revision$>",
                "ab 2.3",
            ),
            (
                "wrk",
                "wrk debian/4.1.0-3+b2 [epoll] Copyright (C) 2012 Will Glozer",
                "wrk 4.1.0",
            ),
            ("hey", "v0.1.5", "hey 0.1.5"),
            ("k6", "k6 v0.49.0 (go1.21.6, linux/amd64)", "k6 0.49.0"),
            ("oha", "oha 1.4.5", "oha 1.4.5"),
            ("sojourn", "0.1.0", "sojourn 0.1.0"),
            ("hey", "unknown", "hey"),
            ("x", "", "x"),
        ];
        for (name, raw, want) in rows {
            let tool = Tool {
                name: name.into(),
                version: raw.into(),
            };
            assert_eq!(tool_version(&tool), want, "from {raw:?}");
        }
    }

    #[test]
    fn plurals() {
        assert_eq!(plural(1, "note"), "1 note");
        assert_eq!(plural(3, "note"), "3 notes");
        assert_eq!(plural(0, "note of its own"), "0 notes of its own");
    }
}
