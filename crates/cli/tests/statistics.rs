//! Numbers you can defend, end to end: intervals and warnings in what `run` and `sim` print and
//! store, the warm-up trim, and `sojourn diff`.
mod common;

use std::path::Path;
use std::time::Duration;

use common::*;

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `sojourn sim` with an open client, its result written to `json`.
fn sim(json: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["sim", "--client", "open", "--json", json.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = sojourn(&all);
    assert!(out.status.success(), "sim failed: {}", stderr(&out));
    out
}

#[test]
fn a_stalled_start_is_found_and_trimmed_as_warm_up() {
    let _guard = serial();
    let server = TestServer::start(false);
    let dir = temp_dir("warmup");
    let json = dir.join("run.json");
    let url = server.url("http");
    let child = spawn(&[
        "run",
        &url,
        "--rate",
        "300",
        "--duration",
        "8s",
        "--warmup",
        "auto",
        "--json",
        json.to_str().unwrap(),
    ]);
    // The server stalls for its first 1.5 s: the first intervals' medians are far above the rest.
    server.stall_for(Duration::from_millis(1500));
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stdout(&out));
    let r = read_result(&json);
    assert_nothing_lost(&r);
    let w = r.statistics.warmup.expect("a trim was asked for");
    // Judged against the run's own timeline, not the wall clock: the trim covers every
    // interval whose median shows the stall, and MSER never cuts more than half the timeline
    // (on a short steady remainder it may take an interval or two of it with the stall).
    let stalled_until = r
        .intervals
        .iter()
        .filter(|i| i.p50 > 100_000_000)
        .map(|i| i.start_ns + i.duration_ns)
        .max()
        .expect("the stall shows in the timeline");
    let timeline_end = r
        .intervals
        .iter()
        .map(|i| i.start_ns + i.duration_ns)
        .max()
        .unwrap();
    assert!(
        w.until_ns >= stalled_until && w.until_ns <= timeline_end / 2,
        "the trim covers the stall, not the run: {w:?}, stalled until {stalled_until}, \
         timeline to {timeline_end}"
    );
    let before_cut: u64 = r
        .intervals
        .iter()
        .filter(|i| i.start_ns < w.until_ns)
        .map(|i| i.completed + i.failed)
        .sum();
    assert_eq!(
        w.requests, before_cut,
        "exactly the requests before the cut"
    );
    // The counts keep everything; the summary histogram holds exactly what was not trimmed.
    assert_eq!(r.counts.completed, r.counts.scheduled);
    assert_eq!(
        r.histograms.response.count,
        r.counts.completed - w.requests,
        "trimmed requests leave the percentiles"
    );
    let p99 = r.histograms.response.percentiles.get(99.0).unwrap();
    assert!(p99 < 200_000_000, "the steady part has no stall: {p99} ns");
    assert!(stdout(&out).contains("warm-up   trimmed the first"));
}

#[test]
fn run_prints_and_stores_intervals_conformance_and_steady_state() {
    let _guard = serial();
    let server = TestServer::start(false);
    let dir = temp_dir("evidence");
    let json = dir.join("run.json");
    let url = server.url("http");
    let out = sojourn(&[
        "run",
        &url,
        "--rate",
        "400",
        "--duration",
        "4s",
        "--arrival",
        "poisson",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let r = read_result(&json);
    let response = &r.histograms.response;
    // Every percentile below the maximum has an interval around its value.
    for p in [50.0, 90.0, 99.0] {
        let ci = response
            .ci_at(p)
            .unwrap_or_else(|| panic!("interval at p{p}"));
        let v = response.percentiles.get(p).unwrap();
        assert!(
            ci.lo <= v && v <= ci.hi,
            "p{p} {v} outside [{}, {}]",
            ci.lo,
            ci.hi
        );
    }
    // ~1,600 answers: p99.99 has well under ten samples beyond it, p99 has more.
    assert!(response.thin_at(99.99).is_some() && response.thin_at(99.0).is_none());
    assert!(
        text.contains("p99.99: 0 samples above")
            && text.contains("not meaningful; run ≥ 100k requests")
    );
    let c = r
        .statistics
        .conformance
        .as_ref()
        .expect("an open loop is tested");
    assert_eq!(c.process, "poisson");
    let senders = u64::from(r.config.threads.unwrap());
    assert_eq!(
        c.gaps + senders,
        r.counts.completed,
        "one gap per send but each sender's first"
    );
    assert!(text.contains("arrivals  sends"));
    assert!(r.statistics.steady_state.is_some());
    assert!(text.contains("steady    "));
}

#[test]
fn sim_results_carry_intervals_too() {
    let dir = temp_dir("sim-evidence");
    let json = dir.join("model.json");
    let out = sim(
        &json,
        &[
            "--scenario",
            "healthy",
            "--rate",
            "200",
            "--duration",
            "10s",
        ],
    );
    assert!(stdout(&out).contains("confidence intervals"));
    let r = read_result(&json);
    assert!(r.histograms.response.ci_at(99.0).is_some());
    assert!(
        r.histograms.response.thin_at(99.99).is_some(),
        "2,000 samples"
    );
}

#[test]
fn diff_finds_a_slower_tail_and_not_a_difference_between_two_seeds() {
    let dir = temp_dir("diff");
    let (a, b, c) = (dir.join("a.json"), dir.join("b.json"), dir.join("c.json"));
    let common = ["--rate", "20", "--duration", "300s", "--arrival", "poisson"];
    // Bimodal: one worker, 20 ms, 5 % at 200 ms. Two seeds of the same load.
    sim(
        &a,
        &[&["--scenario", "bimodal", "--seed", "1"][..], &common].concat(),
    );
    sim(
        &b,
        &[&["--scenario", "bimodal", "--seed", "2"][..], &common].concat(),
    );
    // The same load, with the slow requests at 300 ms instead.
    sim(
        &c,
        &[
            &[
                "--scenario",
                "bimodal",
                "--seed",
                "1",
                "--set",
                "bimodal.slow=300ms",
            ][..],
            &common,
        ]
        .concat(),
    );
    let out_json = dir.join("diff.json");
    let out = sojourn(&[
        "diff",
        a.to_str().unwrap(),
        c.to_str().unwrap(),
        "--json",
        out_json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    let verdict = |d: &serde_json::Value, p: &str| {
        d["percentiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["percentile"] == p)
            .map(|x| x["verdict"].as_str().unwrap().to_string())
            .unwrap()
    };
    // Slower slow requests also queue the fast ones behind them, so every percentile moves.
    for p in ["50", "90", "99"] {
        assert_eq!(verdict(&d, p), "slower", "p{p}: {}", stdout(&out));
    }
    assert!(stdout(&out).contains("B slower (significant)"));

    let out = sojourn(&[
        "diff",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--json",
        out_json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    for p in ["50", "90", "99"] {
        assert_eq!(verdict(&d, p), "no_difference", "p{p}: {}", stdout(&out));
    }
}

#[test]
fn diff_refuses_runs_of_different_loads_unless_forced() {
    let dir = temp_dir("diff-refuse");
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    sim(
        &a,
        &[
            "--scenario",
            "healthy",
            "--rate",
            "100",
            "--duration",
            "10s",
        ],
    );
    sim(
        &b,
        &[
            "--scenario",
            "healthy",
            "--rate",
            "200",
            "--duration",
            "10s",
        ],
    );
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let out = sojourn(&["diff", a, b]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("rate 100 vs 200 req/s") && err.contains("--force"),
        "{err}"
    );
    let out = sojourn(&["diff", a, b, "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("WARNING: conditions differ (--force): rate 100 vs 200 req/s"));
    let out = sojourn(&["diff", a, "no-such-file.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("B: "), "{}", stderr(&out));
}
