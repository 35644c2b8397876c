//! Every output behind the one trait writes the bytes its format's writer writes, as the
//! commands wrote them before there was a trait; and a finished run's OpenMetrics text counts
//! every request.
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use sojourn_core::gate::{evaluate, Objective};
use sojourn_core::RunResult;
use sojourn_report::gate::Gated;
use sojourn_report::html::{HtmlOptions, ReportRun};
use sojourn_report::output::{Hgrm, Hlog, Html, Json, Junit, OpenMetrics, Output};

#[path = "common/mod.rs"]
mod common;

fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sojourn-outputs-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The open run, started at a known wall-clock instant.
fn run() -> RunResult {
    let (mut r, _) = common::open_run();
    r.started_unix_ns = Some(1_700_000_000_123_456_789);
    r
}

#[test]
fn json_is_the_pretty_document_the_loader_reads_back() {
    let r = run();
    let path = out_dir("json").join("run.json");
    assert_eq!(Json.write(&r, &path).unwrap(), vec![path.clone()]);
    assert_eq!(bytes(&path), serde_json::to_vec_pretty(&r).unwrap());
    assert_eq!(sojourn_report::load::load_result(&path).unwrap(), r);
}

#[test]
fn hgrm_writes_a_file_per_histogram_from_the_prefix() {
    let r = run();
    let (ours, theirs) = (out_dir("hgrm-output"), out_dir("hgrm-writer"));
    let written = Hgrm.write(&r, &ours.join("run")).unwrap();
    let expected = sojourn_report::hgrm::write_result_files(&theirs.join("run"), &r).unwrap();
    assert_eq!(written.len(), 3);
    for (a, b) in written.iter().zip(&expected) {
        assert_eq!(a.file_name(), b.file_name());
        assert_eq!(bytes(a), bytes(b), "{}", a.display());
    }
}

/// The log's `StartTime` is the run's own wall-clock start, as `run --hlog` wrote it.
#[test]
fn hlog_starts_at_the_runs_wall_clock_start() {
    let r = run();
    let path = out_dir("hlog").join("run.hlog");
    Hlog.write(&r, &path).unwrap();
    let start = UNIX_EPOCH + Duration::from_nanos(r.started_unix_ns.unwrap());
    let expected = sojourn_report::hlog::write(Vec::new(), &r, Some(start)).unwrap();
    assert_eq!(bytes(&path), expected);
    let text = String::from_utf8(expected).unwrap();
    assert!(text.contains("#[StartTime: 1700000000.123 "), "{text}");
}

#[test]
fn html_is_the_page_render_draws_for_one_run_or_several() {
    let (closed, samples) = common::closed_run();
    let (open, _) = common::open_run();
    let dir = out_dir("html");
    let one = dir.join("one.html");
    Html::default().write(&open, &one).unwrap();
    let alone = ReportRun {
        source: open.label.clone(),
        result: open.clone(),
        samples: Vec::new(),
    };
    let page = sojourn_report::html::render(&[alone], &HtmlOptions::default()).unwrap();
    assert_eq!(bytes(&one), page.as_bytes());

    let runs = [
        ReportRun {
            source: "closed.json".into(),
            result: closed.clone(),
            samples,
        },
        ReportRun {
            source: "open.json".into(),
            result: open.clone(),
            samples: Vec::new(),
        },
    ];
    let objectives: Vec<Objective> = vec!["p99<100ms".parse().unwrap()];
    let judged: Vec<_> = runs
        .iter()
        .map(|r| evaluate(&r.result, &objectives).unwrap())
        .collect();
    let gates: Vec<Gated> = runs
        .iter()
        .zip(&judged)
        .map(|(r, j)| Gated {
            label: &r.result.label,
            judgements: j,
        })
        .collect();
    let both = dir.join("both.html");
    let html = Html {
        title: Some("closed vs open"),
        gates: &gates,
    };
    html.write(&runs[..], &both).unwrap();
    let options = HtmlOptions {
        title: Some("closed vs open".into()),
    };
    let page = sojourn_report::html::render_gated(&runs, &options, &gates).unwrap();
    assert_eq!(bytes(&both), page.as_bytes());
    assert!(page.contains("id=\"gate\""), "the verdicts are on the page");
}

#[test]
fn junit_is_the_gates_xml() {
    let r = run();
    let objectives: Vec<Objective> = vec!["p50<1s".parse().unwrap(), "p99<1ms".parse().unwrap()];
    let judgements = evaluate(&r, &objectives).unwrap();
    let gated = [Gated {
        label: &r.label,
        judgements: &judgements,
    }];
    let path = out_dir("junit").join("gate.xml");
    assert_eq!(Junit.write(&gated[..], &path).unwrap(), vec![path.clone()]);
    let xml = sojourn_report::gate::junit(&gated).unwrap();
    assert_eq!(bytes(&path), xml.as_bytes());
    assert!(xml.contains("failures=\"1\""), "{xml}");
}

#[test]
fn outputs_are_named_as_their_flags() {
    let names = [
        Output::<RunResult>::name(&Json),
        Hgrm.name(),
        Hlog.name(),
        Output::<RunResult>::name(&Html::default()),
        Output::<[Gated]>::name(&Junit),
        OpenMetrics::default().name(),
    ];
    assert_eq!(
        names,
        ["json", "hgrm", "hlog", "html", "junit", "openmetrics"]
    );
}

/// The sample lines of `family` (with any labels), as (labels, value).
fn samples<'t>(text: &'t str, family: &str) -> Vec<(&'t str, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            let labels = name.strip_prefix(family)?;
            (labels.is_empty() || labels.starts_with('{')).then(|| (labels, value.parse().unwrap()))
        })
        .collect()
}

/// A run with requests unanswered at its end: the counts add up to what was scheduled, the
/// percentiles they could move say they are lower bounds, and the same run gives the same
/// bytes.
#[test]
fn openmetrics_counts_every_request_and_marks_lower_bounds() {
    let mut r = run();
    r.counts.completed -= 7;
    r.counts.censored = 4;
    r.counts.never_sent = 3;
    r.histograms.response.lower_bounds = vec!["99.99".into(), "100".into()];
    let path = out_dir("openmetrics").join("run.prom");
    OpenMetrics::default().write(&r, &path).unwrap();
    let text = String::from_utf8(bytes(&path)).unwrap();
    assert_eq!(
        text,
        sojourn_report::openmetrics::finished(&r),
        "same run, same bytes"
    );
    assert!(text.ends_with("# EOF\n"), "{text}");

    let one = |family: &str| {
        let s = samples(&text, family);
        assert_eq!(s.len(), 1, "{family} in {text}");
        s[0].1
    };
    let finished: f64 = samples(&text, "sojourn_requests_finished_total")
        .iter()
        .map(|(_, v)| v)
        .sum();
    let accounted = finished
        + one("sojourn_requests_censored_total")
        + one("sojourn_requests_never_sent_total");
    assert_eq!(one("sojourn_requests_scheduled_total"), accounted);
    assert_eq!(
        one("sojourn_requests_scheduled_total"),
        r.counts.scheduled as f64
    );
    assert!(text.contains("sojourn_requests_finished_total{outcome=\"ok\"} "));

    let response = samples(&text, "sojourn_response_seconds");
    assert_eq!(response.len(), 6, "{text}");
    assert_eq!(response[0].0, "{percentile=\"50\",bound=\"exact\"}");
    assert_eq!(response[5].0, "{percentile=\"100\",bound=\"lower\"}");
    assert_eq!(response[5].1, r.histograms.response.max as f64 / 1e9);
    assert!(text.contains("sojourn_run_info{label=\"open\",mode=\"open\"} 1"));

    let classic = out_dir("openmetrics").join("run.txt");
    OpenMetrics { classic: true }.write(&r, &classic).unwrap();
    let classic = String::from_utf8(bytes(&classic)).unwrap();
    assert!(!classic.contains("# EOF") && !classic.contains("# UNIT"));
    assert!(classic.contains("# TYPE sojourn_requests_scheduled_total counter\n"));
}

/// The classic form is what node_exporter's textfile collector reads: `promtool check
/// metrics`, which reads that form, finds nothing to say about it.
#[test]
fn the_classic_final_figures_pass_promtool() {
    let Some(promtool) = sojourn_testkit::on_path("promtool") else {
        sojourn_testkit::skip("promtool check metrics: `promtool` is not on PATH");
        return;
    };
    let path = out_dir("promtool").join("run.prom");
    OpenMetrics { classic: true }.write(&run(), &path).unwrap();
    let out = std::process::Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&path).unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
