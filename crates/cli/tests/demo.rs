//! `sojourn demo` end to end, shortened: the hiccup splits the loops, the healthy control does
//! not, and the report renders in a real browser with both curves.
mod common;

use std::path::Path;

use common::*;

fn demo(
    scenario: &str,
    dir: &Path,
) -> (
    sojourn_core::RunResult,
    sojourn_core::RunResult,
    sojourn_core::RunResult,
    String,
) {
    let report = dir.join("demo.html");
    let out = sojourn(&[
        "demo",
        "--scenario",
        scenario,
        "--duration",
        "4s",
        "--rate",
        "500",
        "--json-dir",
        dir.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "demo {scenario} failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        read_result(&dir.join("closed.json")),
        read_result(&dir.join("open.json")),
        read_result(&dir.join("model.json")),
        stdout,
    )
}

fn p99(r: &sojourn_core::RunResult) -> f64 {
    r.histograms.response.percentiles.get(99.0).unwrap() as f64
}

fn from_send_p99(r: &sojourn_core::RunResult) -> f64 {
    r.histograms.service.percentiles.get(99.0).unwrap() as f64
}

#[test]
fn hiccup_splits_the_loops_and_the_healthy_control_does_not() {
    let _guard = serial();
    let dir = temp_dir("demo-hiccup");
    let (closed, open, model, stdout) = demo("hiccup", &dir);
    for r in [&closed, &open, &model] {
        assert_nothing_lost(r);
    }
    // The demo's closed loop is paced at the open loop's rate: the same sends. From the send
    // (what hey -q reports) it hides the stall; from the slot it shows the open loop's tail.
    assert_eq!(closed.mode, sojourn_core::Mode::Paced);
    assert_eq!(closed.counts.scheduled, open.counts.scheduled, "same rate");
    assert!(
        p99(&open) >= 10.0 * from_send_p99(&closed),
        "open p99 {} vs paced from the send {}",
        p99(&open),
        from_send_p99(&closed)
    );
    assert!(
        (p99(&closed) - p99(&open)).abs() <= 0.1 * p99(&open),
        "paced from the slot {} vs open {}",
        p99(&closed),
        p99(&open)
    );
    // Measurement and model agree on the open loop's tail within 4%, as docs/peers.md says of
    // every scenario with an event (+1.1% here on the 2-vCPU VM: the server answers the ~500
    // requests the stall released over a few milliseconds, which the model does in an instant).
    let (measured, truth) = (p99(&open), p99(&model));
    assert!(
        (measured - truth).abs() <= 0.04 * truth,
        "open p99 {measured} vs model {truth}: {:+.2}%",
        100.0 * (measured / truth - 1.0)
    );
    assert!(
        stdout.contains("the paced closed loop's p99 from the send understates open-loop p99 by"),
        "{stdout}"
    );
    assert!(
        stdout.contains("model (open)") && stdout.contains("never sent"),
        "{stdout}"
    );
    assert_report_shows_both_curves(&dir.join("demo.html"), &dir);
    verdict_page::assert_page_agrees(
        &dir.join("demo.html"),
        &dir,
        &stdout,
        "open",
        3,
        verdict_page::Expect::HidesTheStall,
    );
    // Both loops' requests are drawn as dots on the timelines (the wedge): thousands of them.
    let html = std::fs::read_to_string(dir.join("demo.html")).unwrap();
    assert!(
        html.matches("<circle").count() > 1000,
        "the timelines carry per-request dots"
    );

    let dir = temp_dir("demo-healthy");
    let (closed, open, _, stdout) = demo("healthy", &dir);
    // Agreement within noise: a 10 ms service measured by a debug build on two shared cores
    // can wobble at p99 by a few ms either way, while a stall splits the loops by 10x or more
    // (60x typically). A factor of 3 tells the two apart with room on both sides.
    for closed_p99 in [p99(&closed), from_send_p99(&closed)] {
        let ratio = p99(&open) / closed_p99;
        assert!(
            (1.0 / 3.0..=3.0).contains(&ratio),
            "healthy: both loops agree, ratio {ratio}"
        );
    }
    // The words follow the data: loops within the demo's 1.5x say they agree; loops further
    // apart (a machine freeze met by one of them, as a CI run once saw at 32 ms) are said to
    // differ for a reason outside the scenario, never called coordinated omission.
    let ratio = p99(&open) / from_send_p99(&closed);
    if ratio < 1.5 {
        assert!(stdout.contains("agree here"), "{stdout}");
    } else {
        assert!(
            stdout.contains("not because of scenario healthy")
                && !stdout.contains("coordinated omission"),
            "{stdout}"
        );
    }
    verdict_page::assert_page_agrees(
        &dir.join("demo.html"),
        &dir,
        &stdout,
        "open",
        3,
        verdict_page::Expect::AllHonest,
    );
}

/// Headless Chromium renders the report; the spectrum has both loops in it. At 1280 px the
/// page does not scroll sideways, no legend covers data, each run has its own look, and the
/// verdict board opens the page with all three runs.
fn assert_report_shows_both_curves(report: &Path, dir: &Path) {
    let Some(chromium) = sojourn_testkit::chromium() else {
        sojourn_testkit::skip(
            "the demo report in headless Chromium: no chromium on PATH (apt-get install chromium)",
        );
        return;
    };
    let out = sojourn_testkit::browser::run_chromium(
        &chromium,
        &dir.join("profile"),
        report,
        &["--dump-dom".into()],
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    let spectrum = dom
        .split("id=\"spectrum\"")
        .nth(1)
        .and_then(|s| s.split("</svg>").next())
        .unwrap_or_else(|| panic!("no spectrum chart in the rendered page"));
    assert!(
        spectrum.contains("closed loop") && spectrum.contains("open loop"),
        "both curves are labelled in the spectrum"
    );
    let seen = sojourn_testkit::browser::layout(&chromium, report, (1280, 800), dir);
    assert_eq!(seen.faults(3), Vec::<String>::new());
    assert_eq!(
        seen.board_rows, 4,
        "model, open and the paced loop's two views on the board"
    );
    assert!(
        seen.board_bottom.is_some_and(|b| b <= 800.0),
        "the board is on the first screen: {:?}",
        seen.board_bottom
    );
}
