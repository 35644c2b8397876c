//! `--repeat N`: repetitions of `sim` and of `run` against `sojourn serve`, and the readers of
//! the document they write (`report`, `diff`, `--slo`).
mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{assert_nothing_lost, listening_addr, read_result, sojourn, spawn, temp_dir};

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// M/M/1 at ρ = 0.8 (one worker, exponential service of 8 ms mean, Poisson arrivals at 100/s)
/// for 20 s of virtual time, five times.
fn mm1(json: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let scenario = json.with_extension("toml");
    std::fs::write(
        &scenario,
        "name = \"mm1\"\nworkers = 1\n[law]\nkind = \"exponential\"\nmean = \"8ms\"\n",
    )
    .unwrap();
    let mut args = vec![
        "sim",
        "--client",
        "open",
        "--scenario",
        scenario.to_str().unwrap(),
        "--rate",
        "100",
        "--arrival",
        "poisson",
        "--seed",
        "11",
        "--duration",
        "20s",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend(extra);
    sojourn(&args)
}

#[test]
fn sim_repeat_5_keeps_five_runs_with_their_own_seeds_and_an_interval_between_them() {
    let dir = temp_dir("repeat-sim");
    let json = dir.join("mm1.json");
    let out = mm1(&json, &["--repeat", "5"]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("repetitions: 5 of 5 asked"), "{shown}");
    assert!(shown.contains("between runs, 95%"), "{shown}");
    let doc = read_result(&json);
    assert_nothing_lost(&doc);
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../schema/result.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&written)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let reps = doc.repetitions.as_ref().expect("a repetitions section");
    assert_eq!(reps.runs.len(), 5);
    // Fresh seeds for both the arrivals and the scenario; the first are the ones given.
    assert_eq!(reps.runs[0].seed, Some(11));
    assert_eq!(reps.runs[0].scenario_seed, Some(1));
    let arrivals: BTreeSet<_> = reps.runs.iter().map(|r| r.seed).collect();
    let scenarios: BTreeSet<_> = reps.runs.iter().map(|r| r.scenario_seed).collect();
    assert_eq!(
        (arrivals.len(), scenarios.len()),
        (5, 5),
        "{arrivals:?} {scenarios:?}"
    );
    // The merged counts are the repetitions' sums.
    let sum =
        |f: fn(&sojourn_core::repeat::Repetition) -> u64| reps.runs.iter().map(f).sum::<u64>();
    assert_eq!(doc.counts.scheduled, sum(|r| r.counts.scheduled));
    assert_eq!(doc.counts.completed, sum(|r| r.counts.completed));
    assert_eq!(doc.histograms.response.count, sum(|r| r.response.count));
    // Different seeds, different runs.
    let p50s: BTreeSet<u64> = reps
        .runs
        .iter()
        .map(|r| r.response.percentiles.get(50.0).unwrap())
        .collect();
    assert!(p50s.len() > 1, "{p50s:?}");
    // The between-run interval is read through the runs pooled: its estimate is the merged
    // p50, strictly inside it.
    let between = reps.between.as_ref().expect("five runs give an interval");
    let p50 = between.response["50"];
    let merged = doc.histograms.response.percentiles.get(50.0).unwrap() as f64;
    assert_eq!(p50.estimate, merged);
    assert!(p50.lo < merged && merged < p50.hi, "{p50:?} vs {merged}");
}

#[test]
fn sim_repeat_1_has_no_between_run_interval_and_repeat_0_is_refused() {
    let dir = temp_dir("repeat-one");
    let json = dir.join("one.json");
    let out = mm1(&json, &["--repeat", "1"]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("between runs: no interval"), "{shown}");
    let doc = read_result(&json);
    assert_eq!(doc.repetitions.as_ref().unwrap().between, None);

    let out = mm1(&json, &["--repeat", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--repeat: expected a whole number from 1 to"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn repeat_with_a_shard_is_refused_saying_why() {
    let out = sojourn(&[
        "run",
        "http://127.0.0.1:9/",
        "--rate",
        "10",
        "--shard",
        "0/2",
        "--repeat",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--repeat: not with --shard"), "{err}");
}

/// A repeated run is gated on the between-run interval: the merged p99 over 5 × 3,000
/// requests has a narrow interval, the five runs' own p99s spread far wider.
#[test]
fn slo_on_a_repeated_sim_is_judged_between_runs() {
    let dir = temp_dir("repeat-slo");
    let json = dir.join("mm1.json");
    let out = mm1(&json, &["--repeat", "5"]);
    assert!(out.status.success(), "{}", text(&out));
    let doc = read_result(&json);
    let p99 = doc
        .repetitions
        .as_ref()
        .unwrap()
        .between
        .as_ref()
        .unwrap()
        .response["99"];
    let merged = doc.histograms.response.ci_at(99.0).unwrap();
    // A limit above the merged interval but inside the between-run one.
    let limit_ns = (merged.hi as f64 * 1.02).max(p99.estimate * 1.01);
    assert!(limit_ns < p99.hi, "{p99:?} vs merged {merged:?}");
    let slo = format!("p99<{:.3}ms", limit_ns / 1e6);
    let html = dir.join("r.html");
    let out = sojourn(&[
        "report",
        json.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
        "--slo",
        &slo,
    ]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    let row = shown.lines().find(|l| l.contains(&slo)).unwrap_or_default();
    assert!(row.contains("between runs"), "{shown}");
    assert!(row.contains("not significant"), "{shown}");
    // The same document without its repetitions is judged on the merged run's own timeline:
    // its order-statistics interval lies wholly below the limit (the old gate's "met,
    // significant"), but the batch means find too few independent stretches beyond p99.
    assert!((merged.hi as f64) < limit_ns, "{merged:?}");
    let mut single = doc.clone();
    single.repetitions = None;
    let single_json = dir.join("single.json");
    std::fs::write(&single_json, serde_json::to_string(&single).unwrap()).unwrap();
    let out = sojourn(&[
        "report",
        single_json.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
        "--slo",
        &slo,
    ]);
    let shown = text(&out);
    let row = shown.lines().find(|l| l.contains(&slo)).unwrap_or_default();
    assert!(row.contains("TOO FEW SAMPLES"), "{shown}");
    assert!(shown.contains("too few independent stretches"), "{shown}");
    assert!(!shown.contains(" significant"), "{shown}");
}

/// Two repetitions of 1 s against `sojourn serve`, 700 ms apart; read back by `report` and
/// compared by `diff`.
#[test]
fn run_repeat_2_against_serve_pauses_between_and_reads_back() {
    let _serial = common::serial();
    let dir = temp_dir("repeat-run");
    let mut server = spawn(&["serve", "--scenario", "healthy", "--listen", "127.0.0.1:0"]);
    let url = format!("http://{}/api", listening_addr(&mut server));
    let run = |name: &str| {
        let json = dir.join(name);
        let out = sojourn(&[
            "run",
            &url,
            "--rate",
            "200",
            "--arrival",
            "poisson",
            "--duration",
            "1s",
            "--repeat",
            "2",
            "--repeat-pause",
            "700ms",
            "--no-hiccup-meter",
            "--json",
            json.to_str().unwrap(),
        ]);
        (json, out)
    };
    let (a, out) = run("a.json");
    let (b, out_b) = run("b.json");
    let _ = server.kill();
    let _ = server.wait();
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(out_b.status.success(), "{}", text(&out_b));
    assert!(
        shown.contains("repetitions: 2 of 2 asked, 700.00 ms apart"),
        "{shown}"
    );
    let doc = read_result(&a);
    assert_nothing_lost(&doc);
    let reps = doc.repetitions.as_ref().unwrap();
    assert_eq!(reps.runs.len(), 2);
    assert_ne!(reps.runs[0].seed, reps.runs[1].seed);
    assert!(reps.between.is_some());
    // The second started no sooner than the first ended plus the pause.
    let (first, second) = (&reps.runs[0], &reps.runs[1]);
    let gap = second.started_unix_ns.unwrap() - first.started_unix_ns.unwrap();
    let least = first.elapsed_ns + Duration::from_millis(700).as_nanos() as u64;
    assert!(gap >= least, "started {gap} ns apart, want ≥ {least}");
    assert_eq!(
        doc.counts.scheduled,
        first.counts.scheduled + second.counts.scheduled
    );

    let html = dir.join("r.html");
    let out = sojourn(&["report", a.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("id=\"repetitions\""),
        "no repetitions section"
    );

    let out = sojourn(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains("Welch's t on the repetitions' own estimates"),
        "{shown}"
    );
}
