//! `--dashboard` on the commands of several runs: `compare` (both loops at once), `sweep` (its
//! steps one after another, each finished step a `step` event) and `demo` (the closed loop,
//! then the open loop, the URL printed before anything else). Every event names its run as its
//! result does, the history replays them all, and at the end `/report.html` is the page the
//! command wrote, byte for byte.
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{serial, temp_dir};
use serde_json::Value;

/// A child process killed (by its own handle) when the test lets go of it, pass or fail.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `sojourn serve --scenario hiccup` with its stall past the tests' runs, on a free port.
fn server() -> (Killed, String) {
    let mut server = Killed(
        Command::new(env!("CARGO_BIN_EXE_sojourn"))
            .args(["serve", "--listen", "127.0.0.1:0", "--scenario", "hiccup"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let addr = common::listening_addr(&mut server.0);
    (server, format!("http://{addr}/api"))
}

/// `sojourn ARGS… --dashboard 127.0.0.1:0 --dashboard-linger 20s`, with stdout and stderr to
/// one file (so what came first is seen); returns it, the file, and the dashboard's address
/// from the first line that names it.
fn with_dashboard(args: &[&str], out: &Path) -> (Killed, SocketAddr) {
    let file = std::fs::File::create(out).unwrap();
    let child = Killed(
        Command::new(env!("CARGO_BIN_EXE_sojourn"))
            .args(args)
            .args(["--dashboard", "127.0.0.1:0", "--dashboard-linger", "20s"])
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let text = std::fs::read_to_string(out).unwrap();
        let found = text
            .lines()
            .find_map(|l| l.strip_prefix("dashboard: http://"));
        if let Some(rest) = found {
            return (child, rest.trim_end_matches('/').parse().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!(
        "no dashboard address printed: {}",
        std::fs::read_to_string(out).unwrap()
    );
}

/// One GET on a fresh connection; the body (the server closes it).
fn get(addr: SocketAddr, path: &str) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let at = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    out.split_off(at)
}

/// Reads `/events` until the end event (or 60 s): each event's JSON.
fn events_until_end(addr: SocketAddr) -> Vec<Value> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(s, "GET /events HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut events = Vec::new();
    for line in BufReader::new(s).lines() {
        let Ok(line) = line else { break };
        let Some(json) = line.strip_prefix("data: ") else {
            continue;
        };
        let event: Value = serde_json::from_str(json).unwrap();
        let end = event["type"] == "end";
        events.push(event);
        if end {
            return events;
        }
    }
    panic!("the event stream ended without an end event: {events:?}");
}

fn history(addr: SocketAddr) -> Vec<Value> {
    serde_json::from_slice(&get(addr, "/history")).unwrap()
}

/// The runs named by the events of `kind`, each once, in the order first seen.
fn runs_of(events: &[Value], kind: &str) -> Vec<String> {
    let mut runs: Vec<String> = Vec::new();
    for e in events.iter().filter(|e| e["type"] == kind) {
        let run = e["run"]
            .as_str()
            .expect("every event names its run")
            .to_string();
        if !runs.contains(&run) {
            runs.push(run);
        }
    }
    runs
}

/// At the end the page serves the report the command wrote, the same bytes.
fn report_is_the_file(addr: SocketAddr, file: &Path) {
    let served = get(addr, "/report.html");
    let written = std::fs::read(file).unwrap();
    assert!(!written.is_empty(), "{} is empty", file.display());
    assert!(
        served == written,
        "/report.html ({} bytes) is not {} ({} bytes)",
        served.len(),
        file.display(),
        written.len()
    );
}

#[test]
fn compare_feeds_both_loops_and_ends_with_its_report() {
    let _guard = serial();
    let dir = temp_dir("dashboard-compare");
    let (_server, url) = server();
    let report = dir.join("compare.html");
    let json = dir.join("compare.json");
    let args = [
        "compare",
        &url,
        "--rate",
        "200",
        "--duration",
        "2s",
        "-c",
        "4",
        "--report",
        report.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    let (mut child, addr) = with_dashboard(&args, &dir.join("out.txt"));
    let events = events_until_end(addr);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let labels = [&doc["closed"]["label"], &doc["open"]["label"]].map(|l| l.as_str().unwrap());
    let history = history(addr);
    for seen in [&events, &history] {
        let mut runs = runs_of(seen, "interval");
        runs.sort();
        let mut want = labels.map(String::from).to_vec();
        want.sort();
        assert_eq!(
            runs, want,
            "interval events of both loops, named as their results"
        );
        assert_eq!(runs_of(seen, "start").len(), 2, "a start per loop");
    }
    report_is_the_file(addr, &report);
    child.0.kill().unwrap();
}

#[test]
fn a_sweep_sends_a_step_event_per_finished_step_in_order() {
    let _guard = serial();
    let dir = temp_dir("dashboard-sweep");
    let (_server, url) = server();
    let report = dir.join("sweep.html");
    let json = dir.join("sweep.json");
    let args = [
        "sweep",
        &url,
        "--rates",
        "40,80",
        "--step",
        "1500ms",
        "--settle",
        "0s",
        "--report",
        report.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    let (mut child, addr) = with_dashboard(&args, &dir.join("out.txt"));
    let events = events_until_end(addr);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    for seen in [&events, &history(addr)] {
        let step_events: Vec<&Value> = seen.iter().filter(|e| e["type"] == "step").collect();
        assert_eq!(
            step_events.len(),
            2,
            "a step event per step: {step_events:?}"
        );
        for (e, s) in step_events.iter().zip(steps) {
            assert_eq!(e["target"], s["step"]["target"]);
            assert_eq!(e["achieved"], s["step"]["achieved"]);
            assert_eq!(e["p99_ns"], s["step"]["response_p99_ns"]);
            assert_eq!(e["run"], s["result"]["label"]);
        }
        // Each step's intervals come before its step event, and the next step's after it.
        let order: Vec<String> = seen
            .iter()
            .filter(|e| e["type"] == "interval" || e["type"] == "step")
            .map(|e| {
                format!(
                    "{} {}",
                    e["type"].as_str().unwrap(),
                    e["run"].as_str().unwrap()
                )
            })
            .collect();
        let first_step = order.iter().position(|o| o.starts_with("step")).unwrap();
        let label = |i: usize| steps[i]["result"]["label"].as_str().unwrap().to_string();
        assert!(
            order[..first_step]
                .iter()
                .all(|o| *o == format!("interval {}", label(0))),
            "{order:?}"
        );
        assert!(first_step > 0, "the first step's intervals: {order:?}");
        assert!(
            order.contains(&format!("interval {}", label(1))),
            "{order:?}"
        );
        assert_eq!(order.last().unwrap(), &format!("step {}", label(1)));
    }
    report_is_the_file(addr, &report);
    child.0.kill().unwrap();
}

#[test]
fn the_demo_prints_its_url_first_and_ends_with_demo_html() {
    let _guard = serial();
    let dir = temp_dir("dashboard-demo");
    let report = dir.join("demo.html");
    let out = dir.join("out.txt");
    let args = [
        "demo",
        "--scenario",
        "healthy",
        "--rate",
        "100",
        "--duration",
        "2s",
        "--report",
        report.to_str().unwrap(),
    ];
    let (mut child, addr) = with_dashboard(&args, &out);
    let events = events_until_end(addr);
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        text.lines().next().unwrap(),
        format!("dashboard: http://{addr}/"),
        "the URL before anything else the demo prints"
    );
    assert_eq!(runs_of(&events, "interval"), ["paced", "open"]);
    assert_eq!(runs_of(&history(addr), "interval"), ["paced", "open"]);
    report_is_the_file(addr, &report);
    child.0.kill().unwrap();
}

/// The compare page in headless Chromium while both loops run: a set of lines per loop on the
/// response chart, a legend naming each, and no console error.
#[test]
fn a_real_browser_draws_a_line_set_per_loop() {
    let Some(chromium) = sojourn_testkit::chromium() else {
        sojourn_testkit::skip("the dashboard in a browser: no chromium on PATH");
        return;
    };
    let _guard = serial();
    let dir = temp_dir("dashboard-compare-browser");
    let (_server, url) = server();
    let report = dir.join("compare.html");
    let mut browser = common::cdp::Browser::start(&chromium, &dir.join("profile"), (1280, 900));
    let args = [
        "compare",
        &url,
        "--rate",
        "200",
        "--duration",
        "4s",
        "-c",
        "4",
        "--report",
        report.to_str().unwrap(),
    ];
    let (mut child, addr) = with_dashboard(&args, &dir.join("out.txt"));
    browser.open(&format!("http://{addr}/"));
    let both =
        "runs.size === 2 && [...runs.values()].every(r => r.points.some(p => p.answers > 0))";
    assert!(
        browser.wait_for(both, Duration::from_secs(10)),
        "the page never had intervals of both loops"
    );
    let drawn = browser.eval(
        "[...new Set([...document.querySelectorAll('#chart polyline')].map(p => p.dataset.run))].sort()",
    );
    let legend =
        browser.eval("[...document.querySelectorAll('#runs span')].map(s => s.textContent).sort()");
    let dashes = browser.eval(
        "[...new Set([...document.querySelectorAll('#chart polyline[stroke=\"#1b9e77\"]')].map(p => p.getAttribute('stroke-dasharray') || ''))].length",
    );
    let want = serde_json::json!(["open loop", "paced"]);
    assert_eq!(drawn, want, "a line set per loop on the response chart");
    assert_eq!(legend, want, "the legend names both loops");
    assert_eq!(dashes, 2, "each loop's p50 in its own dash");
    assert!(
        browser.errors.is_empty(),
        "console errors: {:?}",
        browser.errors
    );
    child.0.kill().unwrap();
}

/// A taken port is one line naming `--dashboard`, exit 2, before anything runs or is written:
/// the port is bound before the first run of each command.
#[test]
fn a_taken_port_is_refused_before_any_run() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let dir = temp_dir("dashboard-taken");
    let report = dir.join("page.html");
    let report = report.to_str().unwrap();
    for args in [
        &[
            "compare",
            "http://127.0.0.1:9/",
            "--rate",
            "10",
            "--duration",
            "1s",
            "--report",
            report,
        ][..],
        &[
            "sweep",
            "http://127.0.0.1:9/",
            "--rates",
            "10",
            "--step",
            "2s",
            "--report",
            report,
        ],
        &["demo", "--duration", "1s", "--report", report],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_sojourn"))
            .args(args)
            .args(["--dashboard", &port])
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{}: {err}", args[0]);
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{}: one line: {err}", args[0]);
        assert!(
            lines[0].starts_with(&format!(
                "error: --dashboard: cannot listen on 127.0.0.1:{port}"
            )),
            "{}: {err}",
            args[0]
        );
        assert!(!Path::new(report).exists(), "{}: nothing ran", args[0]);
    }
}

/// A sweep's page in headless Chromium: the table of finished steps has a row per step, in
/// order, with its rate asked and verdict, and a reload replays it; no console error.
#[test]
fn a_real_browser_shows_a_sweeps_steps_as_they_finish() {
    let Some(chromium) = sojourn_testkit::chromium() else {
        sojourn_testkit::skip("the dashboard in a browser: no chromium on PATH");
        return;
    };
    let _guard = serial();
    let dir = temp_dir("dashboard-sweep-browser");
    let (_server, url) = server();
    let json = dir.join("sweep.json");
    let mut browser = common::cdp::Browser::start(&chromium, &dir.join("profile"), (1280, 900));
    let args = [
        "sweep",
        &url,
        "--rates",
        "40,80",
        "--step",
        "1500ms",
        "--settle",
        "0s",
        "--json",
        json.to_str().unwrap(),
    ];
    let (mut child, addr) = with_dashboard(&args, &dir.join("out.txt"));
    browser.open(&format!("http://{addr}/"));
    let rows = "[...document.querySelectorAll('#steps tr')].slice(1).map(r => [...r.children].map(c => c.textContent))";
    let one = "document.querySelectorAll('#steps tr').length === 2";
    assert!(
        browser.wait_for(one, Duration::from_secs(10)),
        "the first step's row never showed"
    );
    let first = browser.eval(rows);
    let two = "document.querySelectorAll('#steps tr').length === 3 || !document.getElementById('final').hidden";
    assert!(
        browser.wait_for(two, Duration::from_secs(10)),
        "the second step's row never showed"
    );
    browser.call("Page.reload", serde_json::json!({}));
    assert!(
        browser.wait_for(
            "document.querySelectorAll('#steps tr').length === 3",
            Duration::from_secs(5)
        ),
        "after a reload the page did not replay both steps"
    );
    let after = browser.eval(rows);
    // The page turns to the report after the sweep wrote its JSON.
    assert!(
        browser.wait_for(
            "!document.getElementById('final').hidden",
            Duration::from_secs(10)
        ),
        "the page never showed the sweep's report"
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(
        after[0], first[0],
        "the replayed first row is the one shown live"
    );
    for (row, s) in after.as_array().unwrap().iter().zip(steps) {
        assert_eq!(row[0], s["result"]["label"], "{row}");
        let rate = format!("{}/s", s["step"]["target"].as_f64().unwrap());
        assert_eq!(row[1], rate.as_str(), "{row}");
        // The JSON's status in the table's words; with no --slo the verdict is that alone.
        let status = s["step"]["status"].as_str().unwrap();
        let words = status.to_uppercase().replace('_', "-");
        assert_eq!(row[5], words.as_str(), "{row}");
    }
    assert!(
        browser.errors.is_empty(),
        "console errors: {:?}",
        browser.errors
    );
    child.0.kill().unwrap();
}
