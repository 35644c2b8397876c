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

use common::{peak_rss_kib, serial, temp_dir};
use serde_json::Value;

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
    serve(&[
        "--scenario",
        "hiccup",
        &format!("--set=hiccup.at={}ms", AT.as_millis()),
        &format!("--set=hiccup.duration={}ms", FOR.as_millis()),
    ])
}

/// `sojourn serve` with `args` on a free loopback port, and its URL.
fn serve(args: &[&str]) -> (Killed, String) {
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
    let mut run = Killed(
        Command::new(env!("CARGO_BIN_EXE_sojourn"))
            .args(["run", url, "--rate", rate, "--duration", secs])
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
    let (_server, url) = hiccup_server();
    let (mut run, addr) = dashboard_run(&url, "100", "4s", &["--json", json.to_str().unwrap()]);
    let reader = read_events(addr);
    std::thread::sleep(Duration::from_millis(1800));
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

    let kept = history.as_array().unwrap();
    assert!(
        kept.len() >= 3,
        "after 1.8 s the history holds {} intervals",
        kept.len()
    );
    for (h, e) in kept.iter().zip(&seen) {
        assert_eq!(&h, e, "the history replays the events as sent");
    }

    let result: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    same_figures_as_the_result(&seen, &result);
    stall_on_time(&seen);
}

/// Each interval event's count and percentiles equal the result's interval that starts where
/// it does. An interval nothing finished in has no entry in the result. The live intervals
/// are closed by the clock, the result's by when each request finished: a request finishing
/// within the collector's wake-up after a boundary is counted live in the interval before. So
/// an interval may differ by a request or two (its percentiles are then not compared), but
/// requests only move between neighbours: over all the intervals sent, none is lost or added
/// beyond the last boundary's.
fn same_figures_as_the_result(seen: &[&Value], result: &Value) {
    let timeline = result["intervals"].as_array().unwrap();
    let (mut live_total, mut kept_total, mut equal) = (0, 0, 0);
    for e in seen {
        let answers = e["answers"].as_u64().unwrap();
        live_total += answers;
        let Some(j) = timeline.iter().find(|j| j["start_ns"] == e["start_ns"]) else {
            assert_eq!(answers, 0, "an interval the result does not have: {e}");
            continue;
        };
        let finished = j["completed"].as_u64().unwrap() + j["failed"].as_u64().unwrap();
        kept_total += finished;
        if finished != answers {
            assert!(finished.abs_diff(answers) <= 2, "{e} against {j}");
            eprintln!("differs at a boundary: {answers} live, {finished} in the result");
            continue;
        }
        equal += 1;
        for key in ["p50", "p99", "send_lag_p99"] {
            assert_eq!(
                e[key], j[key],
                "{key} of interval {}: {e} against {j}",
                e["index"]
            );
        }
    }
    assert!(
        live_total.abs_diff(kept_total) <= 2,
        "{live_total} answers live against {kept_total} in the result's same intervals"
    );
    assert!(
        equal * 2 >= seen.len(),
        "{equal} of {} intervals equal",
        seen.len()
    );
}

/// The first event whose p99 is the stall's (about its length) was seen within two intervals
/// of when the stall ended, on the run's own clock.
fn stall_on_time(seen: &[&Value]) {
    let stalled = seen
        .iter()
        .find(|e| e["p99"].as_u64().unwrap() >= (FOR.as_nanos() as u64) * 8 / 10)
        .unwrap_or_else(|| panic!("no interval shows the stall: {seen:?}"));
    let seen_at = Duration::from_nanos(stalled["elapsed_ns"].as_u64().unwrap());
    let ended = AT + FOR;
    assert!(
        seen_at <= ended + 2 * WIDTH,
        "the stall ended at {ended:?} and showed at {seen_at:?}"
    );
    assert!(
        seen_at >= ended,
        "the stall showed before it ended: {seen_at:?}"
    );
}

#[test]
fn only_get_is_served_and_the_page_asks_nothing_of_elsewhere() {
    let _guard = serial();
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
        (lag, rss, took)
    };
    let (lag_alone, rss_alone, took_alone) = measure(0);
    let (lag_watched, rss_watched, took_watched) = measure(20);
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
    let _guard = serial();
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
/// end it shows the report. With `SOJOURN_DASHBOARD_SCREENSHOT=FILE` it also saves a
/// screenshot taken just after the stall (docs/img/dashboard.png is one).
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

    if let Some(shot) = std::env::var_os("SOJOURN_DASHBOARD_SCREENSHOT") {
        let stalled = "points.some(p => p.p99 > 8e8)";
        assert!(browser.wait_for(stalled, limit), "no stall on the page");
        std::thread::sleep(Duration::from_millis(700));
        std::fs::write(shot, browser.screenshot()).unwrap();
    }

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
