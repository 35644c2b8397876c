//! `sojourn run --dashboard` at the HTTP level, against `sojourn serve --scenario hiccup`: the
//! event stream carries one event per interval with that interval's figures as the final
//! result has them, the stall shows on p99 while it happens, `/history` replays the intervals
//! so far, only GET is served, viewers that never read do not slow the run, and
//! `--dashboard-linger` keeps the report up after it.
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{peak_rss_kib, serial, shared, temp_dir};
use serde_json::Value;
use sojourn_testkit::control::{on_a_quiet_machine_with_floor, Floor};

/// The stall the target is told to have: from `AT` after its first request, for `FOR`. It ends
/// mid-interval: the burst of answers at its end then lands clear of a boundary, where the
/// live and the final timelines may split a request differently (see below).
const AT: Duration = Duration::from_millis(1250);
const FOR: Duration = Duration::from_millis(1000);
const WIDTH: Duration = Duration::from_millis(500);

/// A child process killed (by its own handle) when the test lets go of it, pass or fail.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn hiccup_server() -> (Killed, String) {
    serve(&hiccup_args())
}

fn hiccup_args() -> Vec<String> {
    vec![
        "--scenario".into(),
        "hiccup".into(),
        format!("--set=hiccup.at={}ms", AT.as_millis()),
        format!("--set=hiccup.duration={}ms", FOR.as_millis()),
    ]
}

/// Stops `sojourn serve` as Ctrl-C would (SIGTERM), so that it writes out the rest of its
/// truth log, and waits for it. A killed server leaves the log cut where its buffer last
/// filled, often mid-line (a CI run read `218,218,` as its last line).
fn stop_for_its_truth_log(mut server: Killed) {
    common::signal(&server.0, common::Signal::TERM);
    let status = server.0.wait().unwrap();
    assert!(status.success(), "sojourn serve exited {status} on SIGTERM");
}

/// When the stall ended by the server's truth log (`serve --truth`): the first departure after
/// the longest gap between departures, on the server's clock (from its first request, which
/// the run sent at its start, so within a send lag of the run's own clock).
fn stall_end_in_truth(truth: &std::path::Path) -> Duration {
    let text = std::fs::read_to_string(truth).unwrap();
    let mut departures: Vec<u64> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(3).unwrap().parse().unwrap())
        .collect();
    departures.sort_unstable();
    let (_, end) = departures
        .windows(2)
        .map(|w| (w[1] - w[0], w[1]))
        .max()
        .expect("the server answered");
    Duration::from_nanos(end)
}

/// `sojourn serve` with `args` on a free loopback port, and its URL.
fn serve(args: &[impl AsRef<std::ffi::OsStr>]) -> (Killed, String) {
    let mut server = Killed(
        Command::new(env!("CARGO_BIN_EXE_sojourn"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let addr = common::listening_addr(&mut server.0);
    (server, format!("http://{addr}/api"))
}

/// Starts `sojourn run URL --rate RATE --duration SECS` with a dashboard on a free port and
/// `extra` flags; returns the run and the dashboard's address, read from its stderr.
fn dashboard_run(url: &str, rate: &str, secs: &str, extra: &[&str]) -> (Killed, SocketAddr) {
    dashboard_with(&[url], &["--rate", rate, "--duration", secs], extra)
}

/// `sojourn run TARGET… LOAD… --interval 500ms --dashboard 127.0.0.1:0 EXTRA…`, where the
/// target is a URL or `--targets FILE`.
fn dashboard_with(target: &[&str], load: &[&str], extra: &[&str]) -> (Killed, SocketAddr) {
    let mut run = Killed(
        Command::new(env!("CARGO_BIN_EXE_sojourn"))
            .arg("run")
            .args(target)
            .args(load)
            .args(["--interval", "500ms", "--dashboard", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stderr = BufReader::new(run.0.stderr.take().unwrap());
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        if let Some(rest) = line.trim_end().strip_prefix("dashboard: http://") {
            let addr = rest.trim_end_matches('/').parse().unwrap();
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            return (run, addr);
        }
        line.clear();
    }
    panic!("sojourn run ended without printing the dashboard's address");
}

/// One request on a fresh connection; the whole response (the server closes it).
fn request(addr: SocketAddr, method: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

fn body(response: &str) -> &str {
    response.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

/// Reads `/events` until the end event (or 30 s): each event's JSON.
fn read_events(addr: SocketAddr) -> std::thread::JoinHandle<Vec<Value>> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET /events HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    std::thread::spawn(move || {
        let mut events = Vec::new();
        for line in BufReader::new(s).lines() {
            let Ok(line) = line else { break };
            // Chunked framing puts sizes on lines of their own; events are the `data:` lines.
            let Some(json) = line.strip_prefix("data: ") else {
                continue;
            };
            let event: Value = serde_json::from_str(json).unwrap();
            let end = event["type"] == "end";
            events.push(event);
            if end {
                break;
            }
        }
        events
    })
}

fn intervals(events: &[Value]) -> Vec<&Value> {
    events.iter().filter(|e| e["type"] == "interval").collect()
}

#[test]
fn each_interval_event_has_the_results_figures_and_the_stall_shows_in_time() {
    let _guard = serial();
    let dir = temp_dir("dashboard-events");
    let json = dir.join("r.json");
    let truth = dir.join("truth.csv");
    let (server, url) = serve(
        &[
            &hiccup_args()[..],
            &["--truth".into(), truth.display().to_string()],
        ]
        .concat(),
    );
    let (mut run, addr) = dashboard_run(&url, "100", "4s", &["--json", json.to_str().unwrap()]);
    let reader = read_events(addr);
    std::thread::sleep(Duration::from_millis(2200));
    let history: Value = serde_json::from_str(body(&request(addr, "GET", "/history"))).unwrap();
    let post = request(addr, "POST", "/events");
    assert!(post.starts_with("HTTP/1.1 405"), "{post}");
    assert!(run.0.wait().unwrap().success());
    let events = reader.join().unwrap();
    assert_eq!(
        events.last().unwrap()["type"],
        "end",
        "the page is told the run is over"
    );

    let seen = intervals(&events);
    let indexes: Vec<u64> = seen.iter().map(|e| e["index"].as_u64().unwrap()).collect();
    assert_eq!(
        indexes,
        (0..indexes.len() as u64).collect::<Vec<_>>(),
        "one per interval"
    );
    // 4 s at 500 ms is 8 intervals: the last closes with the run, so is usually left to the
    // report; a look that falls after its boundary but before the end sends it too.
    assert!((7..=8).contains(&indexes.len()), "{indexes:?}");

    let history = history.as_array().unwrap();
    assert_eq!(history[0]["type"], "start", "the run's start comes first");
    assert_eq!(history[0]["interval_ns"], 500_000_000u64);
    assert_eq!(events[0], history[0], "and the stream replays it first");
    let kept = intervals(history);
    assert!(
        kept.len() >= 3,
        "after 2.2 s the history holds {} intervals",
        kept.len()
    );
    for (h, e) in kept.iter().zip(&seen) {
        assert_eq!(h, e, "the history replays the events as sent");
    }

    let result: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    same_figures_as_the_result(&seen, &result);
    stop_for_its_truth_log(server);
    let ended = stall_end_in_truth(&truth);
    assert!(
        ended.abs_diff(AT + FOR) < WIDTH,
        "the truth log's stall ended at {ended:?}"
    );
    stall_on_time(&seen, ended);
}

/// The machine's floor and the self-check as they form: against a healthy server, every
/// interval after the control meter's first report carries its floor (ticks counted, p99 no
/// more than max, the run's so far at least the last period's), every interval something
/// finished in carries the self-check's verdict in the final check's words, and the result
/// still has the control meter's histogram.
#[test]
fn intervals_carry_the_machines_floor_and_the_self_check_as_it_forms() {
    let _guard = serial();
    let dir = temp_dir("dashboard-floor");
    let json = dir.join("r.json");
    let (_server, url) = serve(&["--scenario", "healthy"]);
    let (mut run, addr) = dashboard_run(&url, "100", "4s", &["--json", json.to_str().unwrap()]);
    std::thread::sleep(Duration::from_millis(3300));
    let history: Value = serde_json::from_str(body(&request(addr, "GET", "/history"))).unwrap();
    assert!(run.0.wait().unwrap().success());
    let seen = intervals(history.as_array().unwrap());
    // The meter reports once a second: from 1.5 s on (interval 3) a report has come.
    let late: Vec<&&Value> = seen
        .iter()
        .filter(|e| e["index"].as_u64() >= Some(3))
        .collect();
    assert!(late.len() >= 2, "{} intervals after 1.5 s", late.len());
    for e in &late {
        let f = &e["floor"];
        let (period, so_far) = (&f["period"], &f["so_far"]);
        for fig in [period, so_far] {
            assert!(fig["ticks"].as_u64() > Some(0), "{f}");
            assert!(fig["p99"].as_u64() <= fig["max"].as_u64(), "{f}");
        }
        assert!(so_far["ticks"].as_u64() >= period["ticks"].as_u64(), "{f}");
        assert!(so_far["max"].as_u64() >= period["max"].as_u64(), "{f}");
        assert!(f["periods"].as_u64() >= Some(1), "{f}");
    }
    for e in &seen {
        let check = &e["check"];
        let line = check["line"].as_str().unwrap_or_default();
        match check["verdict"].as_str() {
            Some("ok") => assert!(line.starts_with("ok so far: send lag p99"), "{check}"),
            Some("behind") => assert!(line.starts_with("GENERATOR BEHIND so far"), "{check}"),
            _ => panic!("an open loop with answers has a verdict: {check}"),
        }
        if !e["floor"].is_null() {
            assert!(line.contains("the machine's own hiccups p99"), "{check}");
        }
        assert!(
            check["behind"].as_u64() <= check["intervals"].as_u64(),
            "{check}"
        );
    }
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let control = &result["histograms"]["control_hiccup"];
    assert!(control["count"].as_u64() > Some(1_000), "{control}");
}

/// Each interval event is the result's interval that starts where it does, exactly: both key a
/// request by when it finished, so the counts are equal, and so is every figure the event
/// carries for response time and send lag (p50, p90, p99, p99.9, max), read from the result's
/// own histograms of the interval. An interval nothing finished in has no entry in the result.
/// No request missed its live interval.
fn same_figures_as_the_result(seen: &[&Value], result: &Value) {
    let timeline = result["intervals"].as_array().unwrap();
    for e in seen {
        assert_eq!(e["missed"], 0, "{e}");
        let answers = e["answers"].as_u64().unwrap();
        let Some(j) = timeline.iter().find(|j| j["start_ns"] == e["start_ns"]) else {
            assert_eq!(answers, 0, "an interval the result does not have: {e}");
            continue;
        };
        let finished = j["completed"].as_u64().unwrap() + j["failed"].as_u64().unwrap();
        assert_eq!(
            answers, finished,
            "interval {}: {e} against {j}",
            e["index"]
        );
        assert_eq!(e["answers_failed"], j["failed"], "interval {}", e["index"]);
        let hdr =
            |key: &str| sojourn_core::result::decode_base64(j[key].as_str().unwrap()).unwrap();
        let (response, send_lag) = (hdr("response_hdr"), hdr("send_lag_hdr"));
        let figures = |h: &hdrhistogram::Histogram<u64>| {
            let at = |q: f64| h.value_at_quantile(q);
            [at(0.5), at(0.9), at(0.99), at(0.999), h.max()]
        };
        let live = |v: &Value| ["p50", "p90", "p99", "p999", "max"].map(|k| v[k].as_u64().unwrap());
        assert_eq!(
            live(e),
            figures(&response),
            "response, interval {}: {e}",
            e["index"]
        );
        assert_eq!(
            live(&e["send_lag"]),
            figures(&send_lag),
            "send lag, interval {}: {e}",
            e["index"]
        );
        assert_eq!(e["send_lag"]["count"].as_u64(), Some(send_lag.len()));
    }
}

/// The first event whose p99 is the stall's (about its length) was seen within two intervals
/// of when the stall ended by the server's truth log, on the run's own clock.
fn stall_on_time(seen: &[&Value], ended: Duration) {
    let stalled = seen
        .iter()
        .find(|e| e["p99"].as_u64().unwrap() >= (FOR.as_nanos() as u64) * 8 / 10)
        .unwrap_or_else(|| panic!("no interval shows the stall: {seen:?}"));
    let seen_at = Duration::from_nanos(stalled["elapsed_ns"].as_u64().unwrap());
    assert!(
        seen_at <= ended + 2 * WIDTH,
        "the stall ended at {ended:?} and showed at {seen_at:?}"
    );
    assert!(
        seen_at >= ended,
        "the stall showed before it ended: {seen_at:?}"
    );
}

/// A staged run with objectives, against the stall (1.25 s to 2.25 s, in the second stage)
/// on five connections: the start event places both stages; while the stall holds, before
/// anything has finished, the stalled stage's p99 so far is already the held requests' lower
/// bound, over half a second, and its objective is not met (breached, or too few independent
/// stretches yet to call, as the gate rules on one stall), while requests due pile up waiting
/// for a connection; the calm stage's p50 is its answers' own, and the error budget stays met;
/// at the end the gate fails (exit 4) and nothing was left unsent.
#[test]
fn stages_objectives_and_waiting_requests_show_as_they_happen() {
    let _guard = shared();
    let dir = temp_dir("dashboard-slo");
    let json = dir.join("r.json");
    let (_server, url) = hiccup_server();
    let load = ["--stages", "calm=1s@100,hold=3s@100", "-c", "5"];
    let slo = [
        "--slo",
        "errors<5%",
        "--slo",
        "hold:p99<50ms",
        "--slo",
        "calm:p50<50ms",
    ];
    let extra = [&slo[..], &["--json", json.to_str().unwrap()]].concat();
    let (mut run, addr) = dashboard_with(&[&url], &load, &extra);
    let reader = read_events(addr);
    assert_eq!(
        run.0.wait().unwrap().code(),
        Some(4),
        "the gate fails on hold"
    );
    let events = reader.join().unwrap();
    let start = &events[0];
    assert_eq!(start["type"], "start");
    let stages: Vec<(String, u64, u64)> = start["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let ns = |k: &str| s[k].as_u64().unwrap();
            (
                s["title"].as_str().unwrap().to_string(),
                ns("start_ns"),
                ns("end_ns"),
            )
        })
        .collect();
    assert_eq!(
        stages,
        [
            ("calm".into(), 0, 1_000_000_000),
            ("hold".into(), 1_000_000_000, 4_000_000_000)
        ]
    );
    let seen = intervals(&events);
    let verdict = |e: &Value, i: usize| e["slo"][i]["verdict"].as_str().unwrap().to_string();
    let stalled = seen
        .iter()
        .find(|e| e["answers"] == 0 && e["in_flight"].as_u64().unwrap() > 0)
        .unwrap_or_else(|| panic!("no interval without answers: {seen:?}"));
    assert_ne!(verdict(stalled, 1), "met so far", "{stalled}");
    let held = stalled["slo"][1]["value"].as_str().unwrap();
    let bound = held
        .strip_prefix('≥')
        .unwrap_or_else(|| panic!("not a lower bound: {held}"));
    let held_ms = match bound.split_once(' ') {
        Some((v, "ms")) => v.parse::<f64>().unwrap(),
        Some((v, "s")) => v.parse::<f64>().unwrap() * 1e3,
        _ => panic!("{held}"),
    };
    assert!(held_ms >= 500.0, "{stalled}");
    assert_eq!(verdict(stalled, 0), "met so far", "{stalled}");
    let calm = stalled["slo"][2]["value"].as_str().unwrap();
    assert!(calm.ends_with(" ms") && !calm.starts_with('≥'), "{stalled}");
    assert_eq!(stalled["slo"][2]["window"], "stage calm");
    let waiting = seen
        .iter()
        .map(|e| e["waiting"].as_u64().unwrap())
        .max()
        .unwrap();
    assert!(waiting >= 30, "at most {waiting} waited for a connection");
    let last = seen.last().unwrap();
    assert_eq!(verdict(last, 0), "met so far", "{last}");
    assert_ne!(verdict(last, 1), "met so far", "{last}");
    assert_eq!(last["slo"][1]["window"], "stage hold");
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(result["counts"]["never_sent"], 0);
    let due: Vec<u64> = seen.iter().map(|e| e["due"].as_u64().unwrap()).collect();
    let scheduled = result["counts"]["scheduled"].as_u64().unwrap();
    assert!(
        due.windows(2).all(|w| w[0] <= w[1]) && due.iter().all(|&d| d <= scheduled),
        "due so far {due:?} of {scheduled}"
    );
    same_figures_as_the_result(&seen, &result);
}

/// A run of a targets file shows a row per label of the file, in its order, named as the
/// result names them, none counting more than the result's label finished.
#[test]
fn a_targets_run_shows_a_row_per_label() {
    let _guard = shared();
    let dir = temp_dir("dashboard-targets");
    let (_server, url) = serve(&["--scenario", "healthy"]);
    let file = dir.join("targets.txt");
    std::fs::write(
        &file,
        format!(
            "# label: items\n# weight: 3\nGET {url}?items\n\n# label: create\nGET {url}?create\n"
        ),
    )
    .unwrap();
    let json = dir.join("r.json");
    let targets = ["--targets", file.to_str().unwrap()];
    let load = ["--rate", "200", "--duration", "2s"];
    let (mut run, addr) = dashboard_with(&targets, &load, &["--json", json.to_str().unwrap()]);
    let reader = read_events(addr);
    assert!(run.0.wait().unwrap().success());
    let events = reader.join().unwrap();
    let last = *intervals(&events).last().expect("an interval");
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let labels: Vec<&str> = result["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["items", "create"]);
    let rows = last["labels"]
        .as_array()
        .unwrap_or_else(|| panic!("{last}"));
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, labels);
    for (row, target) in rows.iter().zip(result["targets"].as_array().unwrap()) {
        let finished = row["finished"].as_u64().unwrap();
        assert!(
            finished > 0 && finished <= target["counts"]["completed"].as_u64().unwrap(),
            "{row} against {target}"
        );
    }
}

/// A journey run's objectives on a step and on its journeys are judged as it goes, each on
/// its own row's times (a window of its own, with a value), never left to the end.
#[test]
fn a_journey_runs_step_and_journey_objectives_are_judged_live() {
    let _guard = shared();
    let dir = temp_dir("dashboard-journey-slo");
    let (_server, url) = serve(&["--scenario", "healthy"]);
    let origin = url.trim_end_matches("/api");
    let file = dir.join("shop.toml");
    let step = |name: &str| {
        format!("  [[journey.step]]\n  name = \"{name}\"\n  url = \"/api?step={name}\"\n  think = \"0s\"\n\n")
    };
    std::fs::write(
        &file,
        format!(
            "base_url = \"{origin}\"\n\n[[journey]]\nname = \"shop\"\nweight = 1\n\n{}{}",
            step("login"),
            step("list")
        ),
    )
    .unwrap();
    let journey = ["--journey", file.to_str().unwrap()];
    let load = ["--rate", "50", "--duration", "3s"];
    let slo = ["--slo", "step:login:p50<50ms", "--slo", "journey:p50<100ms"];
    let (mut run, addr) = dashboard_with(&journey, &load, &slo);
    let reader = read_events(addr);
    // Three seconds hold too few independent stretches for the gate to call either: exit 4.
    assert!(matches!(run.0.wait().unwrap().code(), Some(0 | 4)));
    let events = reader.join().unwrap();
    let last = *intervals(&events).last().expect("an interval");
    let slo = last["slo"].as_array().unwrap_or_else(|| panic!("{last}"));
    let windows: Vec<&str> = slo.iter().map(|o| o["window"].as_str().unwrap()).collect();
    assert_eq!(windows, ["step shop/login", "journeys"], "{last}");
    for o in slo {
        assert_ne!(o["verdict"], "judged at the end", "{o}");
        assert!(o["value"].as_str().unwrap().ends_with(" ms"), "{o}");
    }
}

#[test]
fn only_get_is_served_and_the_page_asks_nothing_of_elsewhere() {
    let _guard = shared();
    let (_server, url) = hiccup_server();
    let (mut run, addr) = dashboard_run(&url, "50", "2s", &[]);
    for path in ["/", "/events", "/history", "/report.html"] {
        for method in ["POST", "PUT", "DELETE"] {
            let r = request(addr, method, path);
            assert!(r.starts_with("HTTP/1.1 405"), "{method} {path}: {r}");
        }
    }
    let page = request(addr, "GET", "/");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    let page = body(&page);
    assert!(
        page.contains("new EventSource(\"/events\")"),
        "the page streams"
    );
    // No CDN, no external request: the only absolute URL is the SVG namespace's name.
    let urls = page.matches("http").count();
    let svg_ns = page.matches("\"http://www.w3.org/2000/svg\"").count();
    assert_eq!(urls, svg_ns, "an external URL in the page");
    assert!(svg_ns >= 1);
    // Server data is never parsed as markup.
    for markup in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
    ] {
        assert!(!page.contains(markup), "the page uses {markup}");
    }
    assert!(run.0.wait().unwrap().success());
}

#[test]
fn twenty_viewers_that_never_read_do_not_slow_the_run() {
    let _guard = serial();
    let dir = temp_dir("dashboard-slow");
    // A healthy server: both runs see the same server. (Against one hiccup server, only the
    // first run met its stall, whose connects put milliseconds of send lag in the run without
    // viewers and none in the run with them: the comparison could not fail.)
    let (_server, url) = serve(&["--scenario", "healthy"]);
    let measure = |viewers: usize| {
        let json = dir.join(format!("r{viewers}.json"));
        let (mut run, addr) =
            dashboard_run(&url, "1000", "4s", &["--json", json.to_str().unwrap()]);
        // Each asks for the stream and never reads a byte of it.
        let stalled: Vec<TcpStream> = (0..viewers)
            .map(|_| {
                let mut s = TcpStream::connect(addr).unwrap();
                write!(s, "GET /events HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
                s
            })
            .collect();
        let pid = run.0.id();
        let mut rss = 0;
        let started = Instant::now();
        while run.0.try_wait().unwrap().is_none() {
            rss = peak_rss_kib(pid).unwrap_or(rss).max(rss);
            std::thread::sleep(Duration::from_millis(50));
        }
        let took = started.elapsed();
        drop(stalled);
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let lag = r["histograms"]["send_lag"]["percentiles"]["99"]
            .as_u64()
            .unwrap();
        let control = |p: &str| {
            r["histograms"]["control_hiccup"]["percentiles"][p]
                .as_u64()
                .map(|ns| ns as f64 / 1e6)
        };
        let floor = Floor {
            p99: control("99"),
            max: control("100"),
        };
        ((lag, rss, took), floor)
    };
    // Both runs rest on the 40 slowest sends of 4,000: a pause of the machine in either
    // (CI met 35 ms ones) puts a fifth of that in one run's p99 and not the other's.
    let ((lag_alone, rss_alone, took_alone), (lag_watched, rss_watched, took_watched)) =
        on_a_quiet_machine_with_floor("twenty stalled viewers", || {
            let ((alone, a), (watched, w)) = (measure(0), measure(20));
            ((alone, watched), a.worst(w))
        });
    eprintln!(
        "send-lag p99 {lag_alone} ns alone, {lag_watched} ns with 20 stalled viewers; peak RSS \
         {rss_alone} and {rss_watched} KiB; {took_alone:?} and {took_watched:?}"
    );
    // 1 ms (the control meter's limit for a machine quiet enough to judge): below it, send
    // lag is the machine's scheduler, not the viewers. A debug build at 1000 req/s against the
    // healthy server measured 0.10–0.24 ms here, with viewers and without, three times.
    let floor = 1_000_000;
    assert!(
        lag_watched <= floor || lag_watched as f64 <= 1.5 * lag_alone as f64,
        "send-lag p99 {lag_watched} ns with 20 stalled viewers against {lag_alone} ns without"
    );
    assert!(
        rss_watched <= rss_alone + 16 * 1024,
        "peak RSS {rss_watched} KiB with 20 stalled viewers against {rss_alone} KiB without"
    );
    assert!(
        took_watched <= took_alone + Duration::from_secs(2),
        "the run took {took_watched:?} with 20 stalled viewers against {took_alone:?}"
    );
}

#[test]
fn linger_keeps_the_report_up_after_the_run_then_exits() {
    let _guard = shared();
    let (_server, url) = hiccup_server();
    let (mut run, addr) = dashboard_run(&url, "50", "1s", &["--dashboard-linger", "2s"]);
    let early = request(addr, "GET", "/report.html");
    assert!(
        early.starts_with("HTTP/1.1 404"),
        "no report before the end: {early}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let report = loop {
        let r = request(addr, "GET", "/report.html");
        if r.starts_with("HTTP/1.1 200") {
            break r;
        }
        assert!(Instant::now() < deadline, "the report never appeared");
        std::thread::sleep(Duration::from_millis(100));
    };
    let appeared = Instant::now();
    let html = body(&report);
    assert!(
        html.starts_with("<!DOCTYPE html>"),
        "{}",
        &html[..html.len().min(200)]
    );
    assert!(
        html.contains("<svg id=\"spectrum\""),
        "the report's own charts"
    );
    // A viewer that comes now is told at once where the report is.
    let late = read_events(addr).join().unwrap();
    assert_eq!(late.last().unwrap()["type"], "end");
    assert_eq!(late.last().unwrap()["report"], "/report.html");
    std::thread::sleep(Duration::from_millis(1000));
    assert!(
        run.0.try_wait().unwrap().is_none(),
        "it still serves within the linger"
    );
    let status = run.0.wait().unwrap();
    assert!(status.success());
    let lingered = appeared.elapsed();
    assert!(
        lingered < Duration::from_secs(4),
        "it lingered {lingered:?} for 2 s"
    );
}

#[test]
fn a_bad_dashboard_value_is_one_line_naming_the_flag() {
    let out = Command::new(env!("CARGO_BIN_EXE_sojourn"))
        .args([
            "run",
            "http://127.0.0.1:9/",
            "--rate",
            "1",
            "--duration",
            "1s",
        ])
        .args(["--dashboard", "abc"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(
        lines[0].contains("--dashboard") && lines[0].contains("127.0.0.1:5665"),
        "{err}"
    );
    let linger = Command::new(env!("CARGO_BIN_EXE_sojourn"))
        .args([
            "run",
            "http://127.0.0.1:9/",
            "--rate",
            "1",
            "--duration",
            "1s",
        ])
        .args(["--dashboard-linger", "2s"])
        .output()
        .unwrap();
    assert_eq!(linger.status.code(), Some(2), "--dashboard-linger alone");
}

/// The page in headless Chromium, driven over the DevTools protocol: its numbers change as
/// the run goes, with no console error and no horizontal scroll at 1280 px; a reload mid-run
/// shows the intervals so far at once; the page's intervals are the final result's; at the
/// end it shows the report.
#[test]
fn a_real_browser_shows_the_run_live_then_its_report() {
    let Some(chromium) = sojourn_testkit::chromium() else {
        sojourn_testkit::skip("the dashboard in a browser: no chromium on PATH");
        return;
    };
    let _guard = serial();
    let dir = temp_dir("dashboard-browser");
    let json = dir.join("r.json");
    let (_server, url) = hiccup_server();
    let extra = ["--json", json.to_str().unwrap(), "--dashboard-linger", "3s"];
    let mut browser = common::cdp::Browser::start(&chromium, &dir.join("profile"), (1280, 900));
    let (mut run, addr) = dashboard_run(&url, "100", "4s", &extra);
    let page = format!("http://{addr}/");
    browser.open(&page);
    let limit = Duration::from_secs(15);

    // The status line names each interval as it comes: it changes over time.
    let status = "document.getElementById('status').textContent";
    let mut seen = std::collections::BTreeSet::new();
    let deadline = Instant::now() + limit;
    while seen.len() < 3 && Instant::now() < deadline {
        seen.insert(browser.eval(status).as_str().unwrap().to_string());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(seen.len() >= 3, "the page did not change: {seen:?}");
    let wide = "[document.documentElement.scrollWidth, window.innerWidth]";
    let [scroll, inner] = [0, 1].map(|i| browser.eval(wide)[i].as_f64().unwrap());
    assert!(
        inner == 1280.0 && scroll <= inner,
        "scroll width {scroll} at {inner} px"
    );

    // A reload mid-run: the intervals so far are drawn from the replay, before the next one.
    let before = browser.eval("points.length").as_u64().unwrap();
    browser.call("Page.reload", serde_json::json!({}));
    assert!(
        browser.wait_for(
            &format!("typeof points === 'object' && points.length >= {before}"),
            Duration::from_millis(400)
        ),
        "after a reload the page did not show the {before} intervals it had"
    );
    // The p50 line (drawn first, in its own colour) has a vertex per interval with answers.
    let drawn = "[...document.querySelectorAll('#chart polyline[stroke=\"#1b9e77\"]')]\
                 .map(p => p.getAttribute('points').split(' ').length).reduce((a, b) => a + b, 0)";
    let answered = "points.filter(p => p.answers > 0).length";
    let both = browser.eval(&format!("[{drawn}, {answered}]"));
    let vertices = both[0].as_u64().unwrap();
    assert!(vertices >= 2, "the chart drew {vertices} vertices");
    assert_eq!(both[0], both[1], "a vertex per interval with answers");

    let report = "(() => { const f = document.querySelector('#final iframe'); \
                  return !!f && !document.getElementById('final').hidden && \
                  !!f.contentDocument && !!f.contentDocument.querySelector('svg#spectrum'); })()";
    assert!(
        browser.wait_for(report, limit),
        "the page never showed the report"
    );
    let link = "document.querySelector('#final a[download]').getAttribute('href')";
    assert_eq!(browser.eval(link), "/report.html");
    let [scroll, inner] = [0, 1].map(|i| browser.eval(wide)[i].as_f64().unwrap());
    assert!(
        scroll <= inner,
        "the report page scrolls sideways: {scroll} at {inner} px"
    );

    let kept: Vec<Value> = serde_json::from_value(browser.eval("points")).unwrap();
    assert!(run.0.wait().unwrap().success());
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    same_figures_as_the_result(&kept.iter().collect::<Vec<_>>(), &result);
    assert!(
        browser.errors.is_empty(),
        "console errors: {:?}",
        browser.errors
    );
}

/// The page in headless Chromium while a 3 s stall holds (from 1.25 s, in the second of two
/// stages, on five connections, with objectives): it shows the stall under way before it ends,
/// the stalled stage's objective not met, the error budget met, requests waiting, the oldest
/// in flight over a second, a marker per stage on every chart, and a line per percentile on
/// the response, service and send-lag charts. With `SOJOURN_DASHBOARD_SCREENSHOT=FILE` it saves
/// that moment (docs/img/dashboard.png is one).
#[test]
fn a_real_browser_shows_a_stall_while_it_holds() {
    let Some(chromium) = sojourn_testkit::chromium() else {
        sojourn_testkit::skip("the dashboard in a browser: no chromium on PATH");
        return;
    };
    let _guard = serial();
    let dir = temp_dir("dashboard-midstall");
    let (_server, url) = serve(&[
        "--scenario",
        "hiccup",
        &format!("--set=hiccup.at={}ms", AT.as_millis()),
        "--set=hiccup.duration=3s",
    ]);
    let mut browser = common::cdp::Browser::start(&chromium, &dir.join("profile"), (1280, 1000));
    let load = ["--stages", "calm=1s@100,hold=5s@100", "-c", "5"];
    let slo = ["--slo", "errors<5%", "--slo", "hold:p99<50ms"];
    let (_run, addr) = dashboard_with(&[&url], &load, &slo);
    let started = Instant::now();
    browser.open(&format!("http://{addr}/"));
    // Mid-stall: an interval with no answers has reached the page, and the stall (which ends
    // 4.25 s into the run) is still holding.
    let stalled = "points.length > 0 && points[points.length - 1].answers === 0";
    assert!(
        browser.wait_for(stalled, Duration::from_secs(10)),
        "no interval without answers reached the page"
    );
    let tile = |name: &str| {
        format!("document.querySelector('#tiles .tile[data-name=\"{name}\"] b').textContent")
    };
    let oldest = browser.eval(&tile("oldest in flight"));
    let waiting: u64 = browser
        .eval(&tile("due, not yet sent"))
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let verdicts = browser.eval(
        "[...document.querySelectorAll('#slo tr')].slice(1).map(r => r.children[2].textContent)",
    );
    let markers = browser.eval("['chart', 'service', 'lag', 'rates'].map(id => document.querySelectorAll('#' + id + ' line.stage').length)");
    let lines = browser.eval("['chart', 'service', 'lag'].map(id => new Set([...document.querySelectorAll('#' + id + ' polyline')].map(p => p.getAttribute('stroke'))).size)");
    if let Some(shot) = std::env::var_os("SOJOURN_DASHBOARD_SCREENSHOT") {
        std::fs::write(shot, browser.screenshot()).unwrap();
    }
    // The run's clock started after `started`, so this is an upper bound on its time.
    let at = started.elapsed();
    assert!(
        at < AT + Duration::from_secs(3),
        "the page was looked at {at:?} into the run, not while the stall held"
    );
    let oldest_ms: f64 = oldest
        .as_str()
        .unwrap()
        .trim_end_matches(" ms")
        .parse()
        .unwrap();
    assert!(oldest_ms >= 500.0, "oldest in flight {oldest}");
    assert!(waiting >= 20, "{waiting} waiting for a connection");
    assert_eq!(verdicts[0], "met so far", "{verdicts}");
    assert!(
        ["breached so far", "too few samples yet"].contains(&verdicts[1].as_str().unwrap()),
        "{verdicts}"
    );
    assert_eq!(
        markers,
        serde_json::json!([2, 2, 2, 2]),
        "a marker per stage"
    );
    assert_eq!(
        lines,
        serde_json::json!([6, 5, 5]),
        "p50, p90, p99, p99.9 and max, and the oldest in flight on the response chart"
    );
    assert!(
        browser.errors.is_empty(),
        "console errors: {:?}",
        browser.errors
    );
}
