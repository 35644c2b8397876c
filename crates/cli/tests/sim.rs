//! `sojourn sim` as a user runs it: the side-by-side table, the stall report, the result files,
//! and bad input.
mod common;

use common::{assert_nothing_lost, read_result, sojourn, temp_dir};
use sojourn_core::Mode;

#[test]
fn both_clients_print_the_seeds_table_and_write_two_result_files() {
    let dir = temp_dir("sim-both");
    let json = dir.join("out.json");
    let out = sojourn(&[
        "sim",
        "--scenario",
        "hiccup",
        "--set",
        "hiccup.at=2s",
        "--rate",
        "500",
        "--duration",
        "4s",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("metric        closed"), "{stdout}");
    assert!(stdout.contains("Ratios computed from raw data before rounding."));
    // 10 closed connections each meet the stall once; the open loop offers 500 during it.
    assert!(
        stdout.contains(
            "stall 2.000 s – 3.000 s: closed 10, open 500, omitted by the closed loop 490"
        ),
        "{stdout}"
    );
    let closed = read_result(&dir.join("out.closed.json"));
    let open = read_result(&dir.join("out.open.json"));
    assert!(
        !json.exists(),
        "with two clients, FILE itself is not written"
    );
    assert_eq!((closed.mode, open.mode), (Mode::Closed, Mode::Open));
    assert_nothing_lost(&closed);
    assert_nothing_lost(&open);
    assert_eq!(open.counts.scheduled, 2_000);
    assert_eq!(open.config.connections, 2048, "run's default pool");
    assert_eq!(closed.config.connections, 10);
    assert!(open.scenario.as_ref().unwrap()["faults"][0]["at"] == "2s");
}

#[test]
fn one_client_writes_the_file_it_was_given() {
    let dir = temp_dir("sim-one");
    let json = dir.join("t.json");
    let out = sojourn(&[
        "sim",
        "--scenario",
        "every-nth",
        "--client",
        "tracking",
        "--rate",
        "450",
        "--requests",
        "1000",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let r = read_result(&json);
    assert_eq!(r.mode, Mode::Tracking);
    assert_eq!(r.counts.completed, 1000);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("or queued behind one: tracking"),
        "{stdout}"
    );
}

#[test]
fn bad_input_is_one_line_naming_the_flag_and_exits_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["--rate", "0"], "--rate"),
        (&["--set", "hiccup.at=soon"], "--set"),
        (&["--scenario", "hiccups"], "--scenario"),
        (&["--connections", "0"], "--connections"),
        (
            &["--client", "tracking", "--connections", "3"],
            "--connections",
        ),
        (&["--client", "closed", "--rate", "5"], "--rate"),
        (
            &["--arrival", "poisson", "--closed-until", "count"],
            "--closed-until",
        ),
        (&["--requests", "0"], "--requests"),
        (&["--seed", "3"], "--seed"),
    ];
    for (args, flag) in cases {
        let mut all = vec!["sim"];
        all.extend_from_slice(args);
        let out = sojourn(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!("error: {flag}")),
            "{args:?}: {stderr}"
        );
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    }
}

/// `--hgrm` and `--hlog` come from `sim` as from `run`, one set per client.
#[test]
fn hgrm_and_hlog_per_client() {
    let dir = common::temp_dir("sim-hdr");
    let (prefix, hlog, json) = (dir.join("s"), dir.join("s.hlog"), dir.join("s.json"));
    let out = common::sojourn(&[
        "sim",
        "--scenario",
        "every-nth",
        "--rate",
        "450",
        "--duration",
        "30s",
        "--hgrm",
        prefix.to_str().unwrap(),
        "--hlog",
        hlog.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for client in ["closed", "open"] {
        let r = common::read_result(&dir.join(format!("s.{client}.json")));
        let hgrm = std::fs::read_to_string(dir.join(format!("s.{client}.response.hgrm"))).unwrap();
        assert!(
            hgrm.contains(&format!("Total count    = {:>12}]", r.counts.completed)),
            "{client}: {hgrm}"
        );
        let log = std::fs::read_to_string(dir.join(format!("s.{client}.hlog"))).unwrap();
        let intervals = log
            .lines()
            .filter(|l| l.contains(",response,") || l.starts_with("Tag=response"))
            .count();
        assert_eq!(
            intervals,
            r.intervals.len(),
            "{client}: one response histogram per interval"
        );
    }
}
