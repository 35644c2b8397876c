//! `--slo` and `diff` on a journey run's steps and journeys: each judged, and each compared, on
//! its own histogram and its own timeline. Simulated runs (virtual time, a second or two of
//! wall clock), so the verdicts rest on known truths: a 10 ms server with one 1 s stall in a
//! minute, and the same server at 20 ms.
use std::path::Path;

use crate::common::{read_result, sojourn, sojourn_ok, temp_dir};
use crate::model::journey_file;

/// A minute of journeys at 100 a second against a simulated server of `baseline` that stalls
/// once, for 1 s at 30 s.
fn simulate(dir: &Path, name: &str, baseline: &str) -> std::path::PathBuf {
    let file = journey_file(dir, "127.0.0.1:9");
    let out = dir.join(name);
    sojourn_ok(&[
        "sim",
        "--scenario",
        "hiccup",
        "--set",
        "hiccup.at=30s",
        "--set",
        "hiccup.duration=1s",
        "--set",
        &format!("hiccup.baseline={baseline}"),
        "--journey",
        file.to_str().unwrap(),
        "--rate",
        "100",
        "--duration",
        "60s",
        "--seed",
        "7",
        "--json",
        out.to_str().unwrap(),
    ]);
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The verdict table's row for `objective`.
fn row<'a>(table: &'a str, objective: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.starts_with(objective))
        .unwrap_or_else(|| panic!("no row for {objective} in\n{table}"))
}

/// A step's p50 is judged significantly met on its own timeline; its p99, which one stall in a
/// minute decides, is too few independent stretches to judge (exit 4); the journeys' error
/// rate is met; a step that is not in the file is bad input naming the steps.
#[test]
fn steps_and_journeys_are_gated_on_their_own_timelines() {
    let dir = temp_dir("journeys-gate");
    let a = simulate(&dir, "a.json", "10ms");
    let result = read_result(&a);
    assert!(
        result.steps.iter().all(|s| s.intervals.len() >= 55),
        "every step carries its timeline: {:?}",
        result
            .steps
            .iter()
            .map(|s| s.intervals.len())
            .collect::<Vec<_>>()
    );
    let html = dir.join("report.html");
    let out = sojourn(&[
        "report",
        a.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
        "--slo",
        "step:login:p50<50ms",
        "--slo",
        "step:shop/login:p99<50ms",
        "--slo",
        "journey:errors<1%",
        "--slo",
        "journey:shop:p50<1s",
    ]);
    let table = text(&out.stdout) + &text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{table}");
    let login = row(&table, "step:login:p50<50ms");
    assert!(login.contains("step shop/login"), "{login}");
    assert!(
        login.contains("met") && login.contains(" significant"),
        "{login}"
    );
    let held = row(&table, "step:shop/login:p99<50ms");
    assert!(held.contains("TOO FEW SAMPLES"), "{held}");
    assert!(table.contains("too few independent stretches"), "{table}");
    let errors = row(&table, "journey:errors<1%");
    assert!(
        errors.contains("journeys") && errors.contains("met"),
        "{errors}"
    );
    let shop = row(&table, "journey:shop:p50<1s");
    assert!(
        shop.contains("journey shop") && shop.contains("met"),
        "{shop}"
    );

    let out = sojourn(&[
        "report",
        a.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
        "--slo",
        "step:pay:p99<1s",
    ]);
    let message = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{message}");
    assert!(message.contains("--slo"), "{message}");
    assert!(
        message.contains("shop/login, shop/list, shop/open"),
        "{message}"
    );
}

/// The same journeys against a server twice as slow: every step and the journey are slower,
/// each on its own block bootstrap, and the JSON carries a comparison per label.
#[test]
fn diff_compares_each_step_and_journey() {
    let dir = temp_dir("journeys-diff");
    let a = simulate(&dir, "a.json", "10ms");
    let b = simulate(&dir, "b.json", "20ms");
    let json = dir.join("diff.json");
    let out = sojourn_ok(&[
        "diff",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let printed = text(&out.stdout);
    for label in [
        "step shop/login",
        "step shop/list",
        "step shop/open",
        "journey shop",
    ] {
        assert!(
            printed.contains(&format!("{label} (blocks of")),
            "{label}:\n{printed}"
        );
    }
    let d: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let labels = d["labels"].as_array().unwrap();
    assert_eq!(labels.len(), 4, "{labels:#?}");
    for l in labels {
        assert_eq!(l["method"], "block_bootstrap", "{l}");
        let p50 = l["percentiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["percentile"] == "50")
            .unwrap();
        assert_eq!(p50["verdict"], "slower", "{l}");
        let delta = p50["delta"].as_i64().unwrap();
        // Each step's p50 is its baseline, and the journey has three steps: the truths.
        let want: i64 = match l["kind"].as_str().unwrap() {
            "step" => 10_000_000,
            _ => 30_000_000,
        };
        assert!((delta - want).abs() <= want / 100, "{l}: {delta} vs {want}");
    }
}
