//! The HTML report's content, and loading result files.
mod common;

use std::time::Duration;

use sojourn_core::outcome::Outcome;
use sojourn_core::record::{bound_at, Recorder, Stamps};
use sojourn_core::result::{Mode, RunConfig, RunFacts, RunResult, READABLE_SCHEMAS};
use sojourn_report::html::{render, scenario_windows, HtmlOptions, ReportRun, Window};
use sojourn_report::load::load_result;
use sojourn_report::ReportError;

fn run(result: RunResult) -> ReportRun {
    ReportRun {
        source: format!("{}.json", result.label),
        result,
        samples: Vec::new(),
    }
}

fn page(runs: &[ReportRun]) -> String {
    render(runs, &HtmlOptions::default()).unwrap()
}

/// The `<svg id="…">…</svg>` element with this id.
/// The cells of the percentile table's row named `name` (e.g. "p99").
fn table_row<'a>(page: &'a str, name: &str) -> &'a str {
    page.split(&format!("<tr><th>{name}</th>"))
        .nth(1)
        .unwrap_or_else(|| panic!("no row {name}"))
        .split("</tr>")
        .next()
        .unwrap()
}

fn svg<'a>(page: &'a str, id: &str) -> &'a str {
    let start = page
        .find(&format!("<svg id=\"{id}\""))
        .unwrap_or_else(|| panic!("no chart {id}"));
    let end = start + page[start..].find("</svg>").unwrap();
    &page[start..end]
}

/// The trimmed contents of every `<text>` element of an SVG.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            Some(
                t.split_once('>')?
                    .1
                    .split("</text>")
                    .next()?
                    .trim()
                    .to_string(),
            )
        })
        .collect()
}

#[test]
fn every_chart_and_table_is_there() {
    let (closed, _) = common::closed_run();
    let (open, samples) = common::open_run();
    let p = page(&[
        run(closed),
        ReportRun {
            samples,
            ..run(open)
        },
    ]);
    for id in [
        "spectrum",
        "timeline-1",
        "timeline-2",
        "throughput",
        "send-lag",
    ] {
        assert!(svg(&p, id).len() > 1000, "chart {id} has content");
    }
    assert!(p.contains("<section id=\"summary\">") && p.contains("<section id=\"percentiles\">"));
    assert!(
        !p.contains("<script") && !p.contains("src=\"http") && !p.contains("<link"),
        "self-contained, no script"
    );
    let spectrum = svg(&p, "spectrum");
    let labels = texts(spectrum);
    for label in [
        "50%",
        "90%",
        "99%",
        "99.9%",
        "response time (ms, log scale)",
        "open (open loop)",
        "closed (closed loop)",
    ] {
        assert!(
            labels.iter().any(|t| t == label),
            "spectrum shows {label:?} in {labels:?}"
        );
    }
    assert!(
        labels
            .iter()
            .any(|t| t == "closed: back-filled estimate (not measured)"),
        "the estimate is labelled as such"
    );
    assert!(
        svg(&p, "timeline-2").matches("<circle").count() > 100,
        "the open loop's samples are drawn as dots"
    );
    assert!(texts(svg(&p, "throughput"))
        .iter()
        .any(|t| t == "target 200 req/s"));
}

#[test]
fn the_stall_is_shaded_from_the_stored_scenario() {
    let (open, _) = common::open_run();
    let windows = scenario_windows(open.scenario.as_ref().unwrap(), open.elapsed_ns);
    assert_eq!(
        windows,
        vec![Window {
            kind: "stall".into(),
            start_ns: 5_000_000_000,
            end_ns: 6_000_000_000
        }]
    );
    let p = page(&[run(open)]);
    for id in ["timeline-1", "throughput", "send-lag"] {
        assert!(
            texts(svg(&p, id)).iter().any(|t| t == "stall"),
            "{id} labels the shaded stall"
        );
    }
}

#[test]
fn scenario_windows_read_an_explicit_list_and_ignore_garbage() {
    let listed = serde_json::json!({"windows": [{"kind": "pause", "start_ns": 10, "end_ns": 20}, {"kind": "pause", "start_ns": 500, "end_ns": 600}]});
    assert_eq!(
        scenario_windows(&listed, 100),
        vec![Window {
            kind: "pause".into(),
            start_ns: 10,
            end_ns: 20
        }],
        "windows past the run's end are dropped"
    );
    assert!(scenario_windows(
        &serde_json::json!({"name": "x", "faults": "nonsense"}),
        1_000
    )
    .is_empty());
    assert!(scenario_windows(&serde_json::json!(42), 1_000).is_empty());
}

#[test]
fn percentiles_sit_side_by_side_with_ratios_from_the_data() {
    let (closed, _) = common::closed_run();
    let (open, _) = common::open_run();
    let p = page(&[run(closed.clone()), run(open.clone())]);
    assert!(p.contains("<th>ratio open / closed</th>"));
    let p99 = |r: &RunResult| r.histograms.response.at(99.0).unwrap().value as f64;
    let want = p99(&open) / p99(&closed);
    let row = table_row(&p, "p99");
    assert!(
        row.contains(&format!("<td class=\"ratio\">{want:.1}×</td>")),
        "p99 ratio {want:.1}× in {row}"
    );
    assert!(want > 10.0, "the hiccup separates the loops at p99");
}

#[test]
fn every_percentile_shows_its_interval_and_thin_ones_are_flagged() {
    let (open, _) = common::open_run();
    let p = page(&[run(open.clone())]);
    let h = &open.histograms.response;
    let ci = h.ci_at(99.0).expect("a stored interval at p99");
    let row = table_row(&p, "p99");
    assert!(
        row.contains(&format!("[{}, ", sojourn_core::format_ns(ci.lo))),
        "the interval's lower end under the value: {row}"
    );
    let thin = h
        .thin
        .keys()
        .next()
        .expect("the fixture run has a thin percentile");
    let row = table_row(&p, &format!("p{thin}"));
    assert!(row.contains("not meaningful"), "{row}");
    // Samples come whole: the requests ranked above the percentile, n − ⌈n·p⌉.
    let hundredths = (thin.parse::<f64>().unwrap() * 100.0).round() as u64;
    let above = h.count - (h.count * hundredths).div_ceil(10_000);
    assert!(
        row.contains(&format!(">{above} beyond: not meaningful<")),
        "{above} whole samples beyond p{thin}: {row}"
    );
    assert!(p.contains("arrivals vs the schedule") && p.contains("steady state"));
}

/// A run whose last requests were still out when it ended.
fn censored_run() -> RunResult {
    let mut r = Recorder::new(Duration::from_secs(1));
    for i in 0..100u64 {
        let at = Duration::from_millis(i * 10);
        r.record(
            &Stamps::on_time(at),
            at + Duration::from_millis(5),
            Outcome::Ok,
        );
    }
    for i in 0..3u64 {
        r.record_in_flight(
            &Stamps::on_time(Duration::from_millis(990 + i)),
            Duration::from_millis(1500),
        );
    }
    let m = Recorder::merge_all([r]);
    let config = RunConfig {
        rate: Some(100.0),
        connections: 4,
        interval_ns: 1_000_000_000,
        ..Default::default()
    };
    let checks = sojourn_core::check::assess_open(&m, 4);
    let facts = RunFacts {
        label: "cut-short".into(),
        mode: Mode::Open,
        config,
        scheduled: 103,
        elapsed: Duration::from_millis(1500),
        interrupted: true,
        checks,
        backfill_interval: None,
    };
    RunResult::build(&m, facts)
}

#[test]
fn censored_percentiles_print_as_lower_bounds() {
    let r = censored_run();
    let h = r.histograms.response.histogram().unwrap();
    let c = r.histograms.censored.as_ref().unwrap().histogram().unwrap();
    assert!(
        bound_at(&h, &c, 99.0).lower_bound,
        "the fixture censors p99"
    );
    let p = page(&[run(r)]);
    let row = table_row(&p, "p99");
    assert!(row.contains("≥ "), "p99 is printed as a lower bound: {row}");
    let p50 = table_row(&p, "p50");
    assert!(!p50.contains('≥'), "p50 is exact: {p50}");
    assert!(p.contains("the run was interrupted"));
}

#[test]
fn an_imported_result_without_histograms_or_timeline_still_renders() {
    let mut r = censored_run();
    r.histograms.response.hdr = String::new();
    r.intervals.clear();
    r.tool.name = "wrk".into();
    r.import = Some(sojourn_core::result::ImportInfo {
        detail: sojourn_core::result::Detail::Summary,
        source: vec!["wrk.txt".into()],
        notes: vec!["wrk back-fills its histogram after the run".into()],
    });
    let p = page(&[run(r.clone())]);
    assert!(
        p.contains("wrk back-fills its histogram after the run"),
        "an import's notes reach the page"
    );
    let spectrum = svg(&p, "spectrum");
    assert!(
        spectrum.contains("cut-short"),
        "the spectrum falls back to the summary percentiles"
    );
    assert!(p.contains("this result has no timeline"));
    assert!(p.contains(&sojourn_core::units::format_ns(
        r.histograms.response.at(50.0).unwrap().value
    )));
}

#[test]
fn labels_are_escaped() {
    let mut r = censored_run();
    r.label = "<script>alert(1)</script>".into();
    let p = page(&[run(r)]);
    assert!(!p.contains("<script>"));
    assert!(p.contains("&lt;script&gt;"));
}

fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sojourn-report-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn loading_names_what_is_wrong() {
    let missing = load_result(std::path::Path::new("/nonexistent/result.json")).unwrap_err();
    assert!(matches!(missing, ReportError::Io { .. }), "{missing}");
    let not_json = load_result(&temp_file("a.json", "hello")).unwrap_err();
    assert!(
        matches!(not_json, ReportError::NotAResult { .. })
            && not_json.to_string().contains("a.json"),
        "{not_json}"
    );
    let other = load_result(&temp_file("b.json", r#"{"schema": "k6.summary/1"}"#)).unwrap_err();
    assert!(matches!(other, ReportError::NotAResult { .. }), "{other}");
    let newer = load_result(&temp_file("c.json", r#"{"schema": "sojourn.result/9"}"#)).unwrap_err();
    assert!(
        matches!(newer, ReportError::Schema { .. }) && newer.to_string().contains("result/9"),
        "{newer}"
    );
    let [s1, s2, s3, s4, s5] = READABLE_SCHEMAS;
    assert!(
        newer
            .to_string()
            .contains(&format!("reads {s1}, {s2}, {s3}, {s4} and {s5}")),
        "{newer}"
    );
    // A version 4 document reads as one without journeys.
    let (open, _) = common::open_run();
    let mut doc = serde_json::to_value(&open).unwrap();
    doc["schema"] = s4.into();
    let old = load_result(&temp_file("v4.json", &doc.to_string())).unwrap();
    assert!(old.steps.is_empty() && old.journeys.is_empty());
    assert_eq!(old.counts, open.counts);
    // A version 3 document reads as one without a validity verdict.
    let (open, _) = common::open_run();
    let mut doc = serde_json::to_value(&open).unwrap();
    doc["schema"] = s3.into();
    doc["statistics"]
        .as_object_mut()
        .unwrap()
        .remove("validity");
    let old = load_result(&temp_file("v3.json", &doc.to_string())).unwrap();
    assert_eq!(old.statistics.validity, None);
    assert_eq!(old.counts, open.counts);
    // A version 2 document reads as one without statuses and targets.
    let (open, _) = common::open_run();
    let mut doc = serde_json::to_value(&open).unwrap();
    doc["schema"] = s2.into();
    let old = load_result(&temp_file("v2.json", &doc.to_string())).unwrap();
    assert!(old.statuses.is_empty() && old.targets.is_empty());
    assert_eq!(old.counts, open.counts);
    // A version 1 document (the checked-in fixture) still reads, as one without placement.
    let v1 = load_result(&common::fixtures().join("hiccup-open.json")).unwrap();
    assert_eq!(v1.schema, "sojourn.result/1");
    assert!(v1.placement.is_none() && v1.counts.not_measured == 0);
    let (open, _) = common::open_run();
    let good = temp_file("d.json", &serde_json::to_string(&open).unwrap());
    assert_eq!(load_result(&good).unwrap(), open);
}

#[test]
fn checked_in_fixtures_load_and_match_the_result_schema() {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../schema/result.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let (open, _) = common::open_run();
    let (closed, _) = common::closed_run();
    let built = [
        serde_json::to_value(open).unwrap(),
        serde_json::to_value(closed).unwrap(),
        serde_json::to_value(censored_run()).unwrap(),
    ];
    let files = ["hiccup-open.json", "hiccup-closed.json"]
        .map(|f| serde_json::to_value(load_result(&common::fixtures().join(f)).unwrap()).unwrap());
    for doc in built.iter().chain(&files) {
        let errors: Vec<String> = validator
            .iter_errors(doc)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(
            errors.is_empty(),
            "{} ({}): {errors:#?}",
            doc["label"],
            doc["mode"]
        );
    }
}

/// One interval is written one way on the terminal, on the page and in the gate's table:
/// `[lo, hi]` with units, and `[lo, ≥ hi]` when the upper end is open — never `∞)`, never a
/// bare number.
#[test]
fn an_interval_reads_the_same_in_the_terminal_the_page_and_the_gate() {
    let r = censored_run();
    let objectives: Vec<sojourn_core::gate::Objective> =
        vec!["p50<1s".parse().unwrap(), "p99<1s".parse().unwrap()];
    let judgements = sojourn_core::gate::evaluate(&r, &objectives).unwrap();
    let gate = sojourn_report::gate::table(&judgements);
    let text = sojourn_report::text::summary(&r);
    let p = page(&[run(r.clone())]);
    let h = &r.histograms.response;
    for (p_, row, open) in [(50.0, "p50", false), (99.0, "p99", true)] {
        let ci = h.ci_at(p_).unwrap();
        assert_eq!(ci.hi_open, open, "the fixture's p{p_}");
        let (lo, hi) = (
            sojourn_core::format_ns(ci.lo),
            sojourn_core::format_ns(ci.hi),
        );
        let want = if open {
            format!("[{lo}, ≥ {hi}]")
        } else {
            format!("[{lo}, {hi}]")
        };
        assert_eq!(ci.text(), want);
        assert!(text.contains(&want), "terminal, {row}: {want}\n{text}");
        assert!(
            table_row(&p, row).contains(&want),
            "page, {row}: {want}\n{}",
            table_row(&p, row)
        );
        assert!(gate.contains(&want), "gate, {row}: {want}\n{gate}");
    }
    for (what, out) in [("terminal", &text), ("page", &p), ("gate", &gate)] {
        assert!(!out.contains('∞'), "{what}");
    }
}

/// A paced loop that never reached 1,130 of its slots: the note under the percentiles names
/// them, with their count, and does not blame requests still unanswered.
fn never_sent_run(label: &str, censored: u64) -> RunResult {
    let mut r = Recorder::new(Duration::from_secs(1));
    for i in 0..200u64 {
        let at = Duration::from_millis(i);
        r.record(
            &Stamps::on_time(at),
            at + Duration::from_millis(5),
            Outcome::Ok,
        );
    }
    let end = Duration::from_secs(3);
    for i in 0..censored {
        r.record_in_flight(&Stamps::on_time(Duration::from_millis(200 + i)), end);
    }
    for i in 0..1_130u64 {
        let at = Duration::from_millis(300 + i);
        r.record_never_sent(at, at, end);
    }
    let m = Recorder::merge_all([r]);
    let facts = RunFacts {
        label: label.into(),
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
        checks: sojourn_core::check::Checks::not_applicable(vec![]),
        backfill_interval: None,
    };
    RunResult::build(&m, facts)
}

/// The note under the percentile table.
fn percentile_note(page: &str) -> &str {
    let section = page.split("<section id=\"percentiles\">").nth(1).unwrap();
    section
        .split("<p class=\"muted\">")
        .nth(1)
        .unwrap()
        .split("</p>")
        .next()
        .unwrap()
}

#[test]
fn the_lower_bound_note_names_never_sent_slots_with_their_count() {
    let r = never_sent_run("paced", 0);
    assert!(r.histograms.response.at(50.0).unwrap().lower_bound);
    let p = page(&[run(r)]);
    let note = percentile_note(&p);
    assert!(
        note.contains(
            "from requests without an answer: 1,130 never sent (due, but the run ended before they went out)."
        ),
        "{note}"
    );
    assert!(!note.contains("unanswered"), "{note}");
    // Two runs: each named with its own causes.
    let p = page(&[
        run(never_sent_run("paced", 0)),
        run(never_sent_run("cut", 988)),
    ]);
    let note = percentile_note(&p);
    assert!(
        note.contains(
            "in paced, 1,130 never sent (due, but the run ended before they went out); in cut, 988 still unanswered at the end and 1,130 never sent"
        ),
        "{note}"
    );
}

/// Shard `k` of 2 of a plan of 1,000 req/s for 2.4 s (1,200 requests each), every request
/// answered in 5 ms, as `sojourn run --shard k/2` writes it.
fn shard_of_two(k: u32) -> sojourn_core::merge::Input {
    use sojourn_core::placement::{fingerprint, plan_key, Placement};
    let mut r = Recorder::new(Duration::from_secs(1));
    for i in 0..1_200u64 {
        let at = Duration::from_millis(2 * i + u64::from(k));
        r.record(
            &Stamps::on_time(at),
            at + Duration::from_millis(5),
            Outcome::Ok,
        );
    }
    let m = Recorder::merge_all([r]);
    let config = RunConfig {
        rate: Some(1000.0),
        arrival: Some("constant".into()),
        duration_ns: Some(2_400_000_000),
        connections: 8,
        threads: Some(1),
        interval_ns: 1_000_000_000,
        ..Default::default()
    };
    let facts = RunFacts {
        label: "sharded".into(),
        mode: Mode::Open,
        config: config.clone(),
        scheduled: 1_200,
        elapsed: Duration::from_millis(2_400),
        interrupted: false,
        checks: sojourn_core::check::assess_open(&m, 8),
        backfill_interval: None,
    };
    let mut result = RunResult::build(&m, facts);
    result.placement = Some(Placement {
        fingerprint: fingerprint(&plan_key(Mode::Open, &config, 2, None)),
        shard: sojourn_core::Shard::new(k, 2).unwrap(),
        due: 1_200,
        start_at_unix_ns: None,
        start_skew_ns: Some(1_000_000 * i64::from(k)),
    });
    sojourn_core::merge::Input {
        source: format!("shard-{k}.json"),
        result,
    }
}

/// The cells of the summary row named `name`.
fn summary_row<'a>(page: &'a str, name: &str) -> Option<&'a str> {
    let summary = page.split("<section id=\"summary\">").nth(1)?;
    let summary = summary.split("</section>").next()?;
    summary
        .split(&format!("<tr><th>{name}</th>"))
        .nth(1)?
        .split("</tr>")
        .next()
}

/// A merge that lacks a shard says so: a not-measured count, the shard named, and a warning
/// that the totals are partial, in the terminal summary and on the page, with its shard table.
#[test]
fn a_partial_merge_shows_what_it_lacks_in_the_text_and_on_the_page() {
    let m = sojourn_core::merge::merge(vec![shard_of_two(0)], false).unwrap();
    assert_eq!(
        (
            m.counts.scheduled,
            m.counts.completed,
            m.counts.not_measured
        ),
        (2_400, 1_200, 1_200)
    );
    let text = sojourn_report::text::summary(&m);
    assert!(
        text.contains("never sent 0  NOT MEASURED 1200 (shards missing or cut short)"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with(
            "PARTIAL MERGE: shard 1 missing; 1200 of 2400 scheduled requests not measured"
        )),
        "{text}"
    );
    let p = page(&[run(m.clone())]);
    let row = summary_row(&p, "not measured (shards missing or cut short)").expect("a row");
    assert!(row.contains("<span class=\"bad\">1,200</span>"), "{row}");
    let warning = p
        .split("<p class=\"bad partial\">")
        .nth(1)
        .expect("a warning")
        .split("</p>")
        .next()
        .unwrap();
    assert!(
        warning.contains(
            "PARTIAL MERGE: shard 1 missing. 1,200 of 2,400 scheduled requests were not measured"
        ),
        "{warning}"
    );
    let shards = p
        .split("<section id=\"shards\">")
        .nth(1)
        .expect("a shard table")
        .split("</section>")
        .next()
        .unwrap();
    assert!(shards.contains("<th>shard</th><th>status</th><th>due</th><th>measured</th>"));
    assert!(
        shards.contains("<tr><th>0</th><td><span class=\"ok\">complete</span></td><td>1,200</td><td>1,200</td><td>+0 ns</td><td><code>shard-0.json</code></td></tr>"),
        "{shards}"
    );
    assert!(
        shards.contains("<tr><th>1</th><td><span class=\"bad\">missing</span></td><td>1,200</td><td>0</td><td>—</td><td>—</td></tr>"),
        "{shards}"
    );
    // The whole plan: a shard table and a zero, but nothing to warn about.
    let whole = sojourn_core::merge::merge(vec![shard_of_two(0), shard_of_two(1)], false).unwrap();
    let p = page(&[run(whole.clone())]);
    assert!(
        summary_row(&p, "not measured (shards missing or cut short)")
            .is_some_and(|r| r.contains("<td>0</td>"))
    );
    assert!(p.contains("<section id=\"shards\">") && !p.contains("PARTIAL MERGE"));
    let text = sojourn_report::text::summary(&whole);
    assert!(!text.contains("PARTIAL MERGE"), "{text}");
    assert!(text.contains("never sent 0  not measured 0\n"), "{text}");
    // An ordinary run has neither.
    let (open, _) = common::open_run();
    let p = page(&[run(open)]);
    assert!(summary_row(&p, "not measured (shards missing or cut short)").is_none());
    assert!(!p.contains("<section id=\"shards\">"));
}

/// A paced closed loop of 10 connections through a 1 s stall at 100 req/s: each slot due in the
/// stall is sent late, once its connection's answer came back. From the slot it waited out the
/// stall; from the send it took 10 ms.
fn paced_through_a_stall(label: &str) -> RunResult {
    let mut rec = Recorder::new(Duration::from_secs(1));
    let (stall, end) = (Duration::from_secs(2)..Duration::from_secs(3), 500u64);
    for i in 0..end {
        let due = Duration::from_millis(10 * i);
        let sent = if stall.contains(&due) { stall.end } else { due };
        let stamps = Stamps {
            intended: due,
            dispatched: due,
            sent,
            waited_for_connection: false,
        };
        rec.record(&stamps, sent + Duration::from_millis(10), Outcome::Ok);
    }
    let facts = RunFacts {
        label: label.into(),
        mode: Mode::Paced,
        config: RunConfig {
            rate: Some(100.0),
            duration_ns: Some(5_000_000_000),
            connections: 10,
            interval_ns: 1_000_000_000,
            ..Default::default()
        },
        scheduled: end,
        elapsed: Duration::from_secs(5),
        interrupted: false,
        checks: sojourn_core::check::assess_closed(),
        backfill_interval: None,
    };
    RunResult::build(&Recorder::merge_all([rec]), facts)
}

/// The open loop and the model through the same stall: every request due in it waits for its
/// end.
fn open_through_a_stall(label: &str) -> RunResult {
    let mut r = paced_through_a_stall(label);
    r.mode = Mode::Open;
    r.histograms.service = r.histograms.response.clone();
    r
}

#[test]
fn a_paced_loop_is_two_views_each_judged_from_its_own_data() {
    let (paced, open, model) = (
        paced_through_a_stall("paced"),
        open_through_a_stall("open loop"),
        open_through_a_stall("model"),
    );
    let html = page(&[run(paced.clone()), run(open.clone()), run(model)]);
    let board = html
        .split("id=\"board\"")
        .nth(1)
        .unwrap()
        .split("</table>")
        .next()
        .unwrap();
    let row = |clock: &str| {
        board
            .split("<tr data-verdict")
            .find(|r| r.contains(&format!("data-clock=\"{clock}\"")) && r.contains("paced"))
            .unwrap_or_else(|| panic!("no {clock} row for the paced loop on the board: {board}"))
    };
    // From the send it hides the stall; from the slot it shows it, as the open loop does.
    assert!(
        row("from-send").contains("paced, from send")
            && row("from-send").contains("HIDES THE STALL")
    );
    assert!(row("response").contains("paced, from slot") && row("response").contains(">honest<"));
    // The percentile table has both views, and the open loop's p99 over the from-send view is
    // the terminal's ratio, to its digits.
    let head = html
        .split("id=\"percentiles\"")
        .nth(1)
        .unwrap()
        .split("</thead>")
        .next()
        .unwrap();
    assert!(
        head.contains("ratio open loop / paced, from send"),
        "{head}"
    );
    let columns = sojourn_report::finding::closed_columns(&paced);
    let want = sojourn_report::finding::ratio_at(&columns[0], &open, 99.0).unwrap();
    let p99 = table_row(&html, "p99");
    let shown = format!("{}×", sojourn_report::compare::format_ratio(want));
    assert!(p99.contains(&shown), "p99 ratio {shown} in {p99}");
    // The spectrum draws both of its curves, and the lede states the terminal's verdict.
    let spectrum = texts(svg(&html, "spectrum")).join("|");
    assert!(
        spectrum.contains("paced, from send") && spectrum.contains("paced, from slot"),
        "{spectrum}"
    );
    let verdict = sojourn_report::finding::finding(&paced, &open);
    assert!(
        verdict[0].contains("understates open-loop p99"),
        "{verdict:?}"
    );
    assert!(
        html.contains(&format!(
            "<b>Verdict:</b> {}.",
            verdict[0].replace('\'', "&#39;")
        )),
        "the lede states: {}",
        verdict[0]
    );
}

#[test]
fn a_label_that_names_its_loop_is_not_said_twice() {
    let html = page(&[run(open_through_a_stall("open loop"))]);
    assert!(!html.contains("open loop (open loop)"));
    assert!(html.contains("open loop"));
}

#[test]
fn the_validity_section_has_a_row_per_test_and_says_what_a_failure_means() {
    use sojourn_core::validity::{TestName, TestOutcome};
    let (mut open, _) = common::open_run();
    let verdict = open
        .statistics
        .validity
        .as_mut()
        .expect("every run is judged");
    // Make the rate test fail as an underloaded run's would.
    let rate = verdict
        .tests
        .iter_mut()
        .find(|t| t.name == TestName::Rate)
        .unwrap();
    rate.outcome = TestOutcome::Fail;
    rate.statistic = Some(-0.25);
    rate.note = "the load offered was not the load asked for".into();
    verdict.valid = false;
    let html = page(&[run(open.clone())]);
    let section = html
        .split("<section id=\"validity\">")
        .nth(1)
        .expect("a validity section")
        .split("</section>")
        .next()
        .unwrap();
    assert_eq!(section.matches("<tr><td>").count(), 5, "{section}");
    assert!(section.contains("NOT VALID: rate"), "{section}");
    assert!(
        section.contains("<tr><td>rate</td><td><span class=\"bad\">FAIL</span></td><td>achieved -25.0% of the target (limit ±10%)</td><td>the load offered was not the load asked for</td></tr>"),
        "{section}"
    );
    assert!(table_row(&html, "validity").contains("NOT VALID: rate"));
    // A document older than the verdict shows no section and says n/a in the summary.
    open.statistics.validity = None;
    let old = page(&[run(open)]);
    assert!(!old.contains("<section id=\"validity\">"));
    assert!(table_row(&old, "validity").contains("n/a"));
}
