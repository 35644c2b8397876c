//! `sojourn suite` with real peer tools (wrk, ab, hey, vegeta, h2load) against real embedded
//! servers: the closed and open clusters split on a stall, agree on a healthy server, and
//! sojourn's open loop agrees with the model. ghz gets the same scenario served as gRPC.
//!
//! The tools come from scripts/install-peer-tools.sh, which .ci/run calls (and apt's
//! nghttp2-client for h2load); under CI (CI=true, which .ci/run sets) a missing tool fails the
//! test rather than skipping it.
mod common;

use common::*;
use serde_json::Value;

const TOOLS: [&str; 5] = ["wrk", "ab", "hey", "vegeta", "h2load"];

fn installed(tool: &str) -> bool {
    let home = std::env::var("HOME").unwrap_or_default();
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([
            format!("{home}/go/bin").into(),
            format!("{home}/.cargo/bin").into(),
        ])
        .any(|d| d.join(tool).is_file())
}

fn read_json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn p99(row: &Value) -> f64 {
    row["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p[0] == "p99")
        .and_then(|p| p[1].as_f64())
        .unwrap_or_else(|| panic!("no p99 in {row}"))
}

fn rows<'a>(summary: &'a Value, scenario: &str) -> &'a Vec<Value> {
    summary["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["scenario"] == scenario)
        .unwrap_or_else(|| panic!("no {scenario} in the summary"))["rows"]
        .as_array()
        .unwrap()
}

fn row<'a>(rows: &'a [Value], label: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["label"] == label)
        .unwrap_or_else(|| panic!("no row {label}"))
}

/// The band every tool's p99 must land in on the healthy control, as a ratio to the model's.
/// Below: nothing answers before the server's fixed 10 ms (the model's p99), so a tool under
/// it timed something other than the request (0.99, not 1: tools that print whole
/// milliseconds round to 10). The old floor of 1/3 let a tool that timed a third of each
/// request pass. Above, 3x stays, and not tighter: on this shared two-core machine the p99 of
/// 1,600 requests is their 16th slowest, which a few of the machine's hiccups set, and honest
/// tools were seen at up to 1.98x (h2load, vegeta 1.94x; four runs, 2026-11-26). The claim
/// needs no less: a hidden stall shows as 50x, and the split above is checked at 10x.
const HEALTHY_BAND: std::ops::RangeInclusive<f64> = 0.99..=3.0;

/// Healthy: the control. Every tool lands in the model's band at p99; the clusters of the
/// stall cannot come from the tools. With no tail to hide, no closed loop is taken for a
/// back-fill either: every verdict is plain.
fn check_healthy_control(summary: &Value, stdout: &str) {
    let healthy = rows(summary, "healthy");
    let model = p99(row(healthy, "model"));
    for r in healthy {
        let ratio = p99(r) / model;
        assert!(
            HEALTHY_BAND.contains(&ratio),
            "{} disagrees on a healthy server: {ratio:.2}x the model's p99, outside \
             {HEALTHY_BAND:?}\n{stdout}",
            r["label"]
        );
        let verdict = r["verdict"].as_str().unwrap();
        assert!(
            ["honest", "model"].contains(&verdict),
            "{}: {verdict} on a healthy server\n{stdout}",
            r["label"]
        );
    }
}

#[test]
fn closed_and_open_tools_split_on_a_stall_and_agree_when_healthy() {
    let missing: Vec<&str> = TOOLS.into_iter().filter(|t| !installed(t)).collect();
    if !missing.is_empty() {
        sojourn_testkit::skip(&format!(
            "the suite with peer tools: {missing:?} missing (scripts/install-peer-tools.sh)"
        ));
        return;
    }
    let _guard = serial();
    // The two scenarios side by side, each its own `sojourn suite` with its own servers: the
    // tools run at 200 req/s, a few percent of a core, and the comparisons below are of a 1 s
    // stall (hiccup) and of a band three times the model's p99 (healthy), which the other
    // scenario's few percent do not reach. One after the other, they took 163 s of CI.
    let dir = temp_dir("suite");
    let suite = |scenario: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_sojourn"))
            .args([
                "suite",
                "--scenarios",
                scenario,
                "--tools",
                &TOOLS.join(","),
            ])
            .args(["--duration", "8s", "--out"])
            .arg(dir.join(scenario))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (hiccup_run, healthy_run) = (suite("hiccup"), suite("healthy"));
    let mut stdout = String::new();
    let mut summaries = Vec::new();
    for (scenario, run) in [("hiccup", hiccup_run), ("healthy", healthy_run)] {
        let out = run.wait_with_output().unwrap();
        stdout += &String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{scenario}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary = dir.join(scenario).join("suite.json");
        summaries.push(read_json(&summary));
    }
    let summary = &summaries[0];
    assert_eq!(summary["schema"], "sojourn.suite/1");
    let dir = dir.join("hiccup");

    // Hiccup: a 1 s stall in 8 s at 200 req/s. The closed loops saw a couple of stalled
    // requests; the open loops saw the ~200 that were due during it.
    let hiccup = rows(summary, "hiccup");
    for t in TOOLS {
        row(hiccup, t); // every tool ran and was imported
    }
    let closed = ["ab", "hey", "h2load", "sojourn closed"].map(|l| p99(row(hiccup, l)));
    let open = ["vegeta", "sojourn open", "model"].map(|l| p99(row(hiccup, l)));
    let closed_max = closed.iter().cloned().fold(0.0, f64::max);
    let open_min = open.iter().cloned().fold(f64::MAX, f64::min);
    assert!(
        closed_max * 10.0 < open_min,
        "clusters at p99: closed {closed:?} vs open {open:?}\n{stdout}"
    );
    for l in ["ab", "hey", "h2load"] {
        assert_eq!(
            row(hiccup, l)["verdict"],
            "hides_the_stall",
            "{l}\n{stdout}"
        );
    }
    // The paced closed loops: hey -q and h2load --rps time from the send and hide the stall;
    // sojourn's own paced control makes the same kind of sends and shows the stall from the
    // slot, while its from-send clock hides it just as theirs does.
    for l in ["hey -q", "h2load --rps"] {
        let paced = row(hiccup, l);
        assert_eq!(paced["mode"], "paced", "{l}\n{stdout}");
        assert_eq!(paced["verdict"], "hides_the_stall", "{l}\n{stdout}");
    }
    let paced = row(hiccup, "sojourn paced");
    assert_eq!(paced["mode"], "paced");
    assert_eq!(paced["verdict"], "honest", "from the slot\n{stdout}");
    let from_send = paced["p99_from_send"].as_f64().unwrap();
    assert!(
        from_send * 3.0 < p99(row(hiccup, "model")),
        "from the send sojourn's paced loop hides the stall too: {from_send}\n{stdout}"
    );
    assert!(stdout.contains("sojourn paced: from the send, the paced tools' clock"));
    // wrk is a closed loop whose p99 shows the stall anyway: decided from the data, that is
    // its back-fill.
    assert_eq!(
        row(hiccup, "wrk")["verdict"],
        "corrected_after_the_fact",
        "{stdout}"
    );
    let ours = row(hiccup, "sojourn open")["p99_vs_model"]
        .as_f64()
        .unwrap();
    // Within 4%, as docs/peers.md says (1.001x on the 2-vCPU VM).
    assert!(
        (0.96..1.04).contains(&ours),
        "sojourn open vs the model: {ours}x\n{stdout}"
    );

    check_healthy_control(&summaries[1], &stdout);
    // Each scenario's page names every run and draws them.
    for scenario in ["hiccup", "healthy"] {
        let page = dir
            .with_file_name(scenario)
            .join(format!("{scenario}.html"));
        let html = std::fs::read_to_string(page).unwrap();
        for label in TOOLS.iter().chain(&[
            "hey -q",
            "h2load --rps",
            "sojourn open",
            "sojourn closed",
            "sojourn paced",
            "model",
        ]) {
            assert!(
                html.contains(label),
                "{scenario}.html does not name {label}"
            );
        }
        assert!(
            html.matches("<svg").count() >= 3,
            "{scenario}.html has its charts"
        );
    }

    // Imported results work with `diff`: per request (vegeta) with intervals, a summary (wrk)
    // without.
    let file = |name: &str| dir.join("hiccup").join(name).display().to_string();
    let out = sojourn(&["diff", &file("sojourn_open.json"), &file("vegeta.json")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("bootstrap") && text.contains("p99 "),
        "{text}"
    );
    let out = sojourn(&["diff", &file("sojourn_closed.json"), &file("wrk.json")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("no interval: a summary-only import"),
        "{text}"
    );
}

#[test]
fn an_unknown_tool_is_bad_input_and_a_missing_one_is_skipped() {
    let out = sojourn(&["suite", "--tools", "wrk,jmeterx"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--tools") && err.contains("jmeterx"), "{err}");
    // Whatever this machine has installed, a PATH and a HOME with nothing in them make wrk2
    // and ghz missing: skipped alike, though ghz would have had a gRPC server.
    let _guard = shared();
    let dir = temp_dir("suite-missing");
    let empty = temp_dir("suite-empty-home");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sojourn"))
        .args([
            "suite",
            "--scenarios",
            "healthy",
            "--tools",
            "wrk2,ghz",
            "--duration",
            "2s",
            "--out",
            dir.to_str().unwrap(),
        ])
        .env("PATH", &empty)
        .env("HOME", &empty)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("wrk2: not installed, skipped"), "{stdout}");
    assert!(stdout.contains("ghz: not installed, skipped"), "{stdout}");
    assert!(
        stdout.contains("sojourn open") && stdout.contains("model"),
        "{stdout}"
    );
}

/// ghz in the suite: the hiccup served as gRPC, ghz's `--rps` run against it imported per call
/// and judged from its data against the model. Its few workers (-c) wait out the stall and
/// send the calls they owe late, timed from the send: it hides the stall.
#[test]
fn ghz_runs_against_the_grpc_scenario_server_and_hides_the_stall() {
    if !installed("ghz") {
        sojourn_testkit::skip("ghz in the suite: ghz missing (scripts/install-peer-tools.sh)");
        return;
    }
    // Beside the test above, not beside the comparison of every tool: the stall it judges
    // hidden is a second long.
    let _guard = shared();
    let dir = temp_dir("suite-ghz");
    // 3 s at 200 calls/s, the 1 s stall at 1.2 s: the model's p99 is about 970 ms. ghz's 4
    // workers are 4 calls in 600 stalled, under 1%.
    let out = sojourn(&[
        "suite",
        "--scenarios",
        "hiccup",
        "--tools",
        "ghz",
        "--duration",
        "3s",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("suite.json")).unwrap()).unwrap();
    let hiccup = rows(&summary, "hiccup");
    let ghz = row(hiccup, "ghz");
    assert_eq!(ghz["tool"], "ghz", "{stdout}");
    assert_eq!(ghz["mode"], "paced", "{stdout}");
    assert_eq!(
        ghz["detail"], "per_request",
        "imported call by call\n{stdout}"
    );
    assert_eq!(ghz["verdict"], "hides_the_stall", "{stdout}");
    // It was served the stall (its slowest call waited it out) and still hid it at p99.
    let max = ghz["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p[0] == "max")
        .and_then(|p| p[1].as_f64())
        .unwrap();
    assert!(max > 500e6, "ghz's slowest call: {max} ns\n{stdout}");
    assert!(p99(ghz) * 3.0 < p99(row(hiccup, "model")), "{stdout}");
    // The row says which server it measured, in the table and in the summary.
    assert!(
        stdout.contains("ghz: against the suite's gRPC server: the same scenario as gRPC over h2c"),
        "{stdout}"
    );
    assert!(
        ghz["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("gRPC server")),
        "{ghz}"
    );
    assert!(dir.join("hiccup/ghz/suite.proto").is_file());
}
