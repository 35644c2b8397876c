//! A journey run's live rows on `--metrics-listen`, scraped while it goes and once everything
//! that will finish has: each step's and each journey's series count what its result counts.
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{
    interrupt, listening_addr, metrics_addr, read_result, serial, spawn, temp_dir,
};
use sojourn_core::result::TargetResult;
use sojourn_core::FailureClass;

/// A child killed when the test lets go of it, pass or fail.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Three journeys: `browse` completes; `pay` fails its check at `card` (the server answers 200
/// to what expects 404), so `done` is never due; `idle` thinks a minute before `leave`, so it
/// is still running when the run is stopped, and `leave` never falls due. A step named with a
/// quote and a backslash, which the exposition format must escape.
fn journey_file(dir: &Path, addr: &str) -> std::path::PathBuf {
    let path = dir.join("live.toml");
    let text = format!(
        r#"base_url = "http://{addr}"

[[journey]]
name = "browse"
weight = 2
  [[journey.step]]
  name = "home"
  url = "/api?p=home"
  think = "20ms..40ms"
  [[journey.step]]
  name = 'item "7" \ x'
  url = "/api?p=item"

[[journey]]
name = "pay"
weight = 1
  [[journey.step]]
  name = "card"
  url = "/api?p=card"
  expect = {{ status = 404 }}
  [[journey.step]]
  name = "done"
  url = "/api?p=done"

[[journey]]
name = "idle"
weight = 1
  [[journey.step]]
  name = "look"
  url = "/api?p=look"
  think = "60s"
  [[journey.step]]
  name = "leave"
  url = "/api?p=leave"
"#
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn the_metrics_endpoint_has_a_row_per_step_and_journey_that_ends_as_the_result_counts() {
    let _guard = serial();
    let dir = temp_dir("journeys-live");
    let mut server = Killed(spawn(&[
        "serve",
        "--scenario",
        "healthy",
        "--listen",
        "127.0.0.1:0",
    ]));
    let addr = listening_addr(&mut server.0);
    let file = journey_file(&dir, &addr);
    let json = dir.join("live.json");
    // The drain (one timeout) outlasts the test: the run ends when it is interrupted.
    let mut run = Killed(
        Command::new(env!("CARGO_BIN_EXE_sojourn"))
            .args(["run", "--journey", file.to_str().unwrap()])
            .args(["--rate", "40", "--duration", "2s", "--seed", "7"])
            .args(["--timeout", "60s", "--max-journeys", "200"])
            .args(["--metrics-listen", "127.0.0.1:0"])
            .args(["--json", json.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let metrics = metrics_addr(&mut run.0);

    // Mid-run: every row is there, and journeys are running.
    std::thread::sleep(Duration::from_millis(1000));
    let mid = scrape(metrics);
    assert!(
        mid[r#"sojourn_journeys_running{journey="idle"}"#] >= 1.0,
        "{mid:#?}"
    );
    assert!(mid[r#"sojourn_steps_finished_total{step="browse/home",outcome="ok"}"#] >= 1.0);

    // The end: the schedule is over, every step that will finish has, and only the idle
    // journeys still run (thinking before a step that is a minute away).
    let settled = |s: &Series| {
        s["sojourn_elapsed_seconds"] > 2.5
            && s.iter()
                .filter(|(k, _)| k.starts_with("sojourn_steps_in_flight"))
                .all(|(_, v)| *v == 0.0)
            && ["browse", "pay"]
                .iter()
                .all(|j| s[&format!("sojourn_journeys_running{{journey=\"{j}\"}}")] == 0.0)
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let end = loop {
        let s = scrape(metrics);
        if settled(&s) {
            break s;
        }
        assert!(Instant::now() < deadline, "the run never settled: {s:#?}");
        std::thread::sleep(Duration::from_millis(200));
    };
    a_scrape_passes_promtool(&dir, metrics);
    interrupt(&run.0);
    let deadline = Instant::now() + Duration::from_secs(20);
    while run.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the run did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }

    let result = read_result(&json);
    let steps: Vec<&str> = result.steps.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(
        steps,
        [
            "browse/home",
            r#"browse/item "7" \ x"#,
            "pay/card",
            "pay/done",
            "idle/look",
            "idle/leave"
        ]
    );
    for step in &result.steps {
        assert_rows_count_as_the_result(&end, "steps", "step", "sojourn_steps_in_flight", step);
    }
    for journey in &result.journeys {
        let running = "sojourn_journeys_running";
        assert_rows_count_as_the_result(&end, "journeys", "journey", running, journey);
    }
    // Not vacuous: journeys completed, failed their check and were still running at the end.
    let by = |label: &str| result.journeys.iter().find(|j| j.label == label).unwrap();
    assert!(by("browse").counts.completed > 0);
    assert!(by("pay").counts.failed.get(FailureClass::Check) > 0);
    assert!(by("idle").counts.censored > 0);
    let answered =
        r#"sojourn_step_response_seconds{step="browse/item \"7\" \\ x",percentile="99"}"#;
    assert!(end[answered] > 0.0 && end[answered] < 5.0, "{end:#?}");
    let time = r#"sojourn_journey_time_seconds{journey="browse",percentile="50"}"#;
    assert!(
        end[time] >= 0.02,
        "a browse thinks 20 ms at least: {end:#?}"
    );
    assert!(
        !end.keys()
            .any(|k| k.starts_with(r#"sojourn_step_response_seconds{step="idle/leave""#)),
        "a step nobody answered has no percentiles"
    );
}

/// A row's final series against its entry in the result: completed and every failure class,
/// and what is in flight (a step) or running (a journey) against what the end censored.
fn assert_rows_count_as_the_result(
    end: &Series,
    family: &str,
    key: &str,
    in_flight: &str,
    row: &TargetResult,
) {
    let name = escaped(&row.label);
    let finished = |outcome: &str| {
        let series =
            format!("sojourn_{family}_finished_total{{{key}=\"{name}\",outcome=\"{outcome}\"}}");
        *end.get(&series)
            .unwrap_or_else(|| panic!("no {series} in {end:#?}"))
    };
    let c = &row.counts;
    assert_eq!(
        finished("ok"),
        c.completed as f64,
        "{} completed",
        row.label
    );
    for (class, failed) in c.failed.listed() {
        let failed = failed as f64;
        assert_eq!(
            finished(class.name()),
            failed,
            "{} {}",
            row.label,
            class.name()
        );
    }
    let live = end[&format!("{in_flight}{{{key}=\"{name}\"}}")];
    assert_eq!(
        live, c.censored as f64,
        "{} in flight at the end",
        row.label
    );
}

fn escaped(label: &str) -> String {
    label.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Series name with its labels (as written) → value.
type Series = BTreeMap<String, f64>;

/// One scrape, parsed.
fn scrape(addr: SocketAddr) -> Series {
    let reply = http_get(addr, "/metrics").expect("a scrape");
    let body = reply.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_string(), value.parse().ok()?))
        })
        .collect()
}

fn http_get(addr: SocketAddr, path: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    )?;
    let mut reply = String::new();
    s.read_to_string(&mut reply)?;
    Ok(reply)
}

/// `promtool check metrics` finds nothing to say about a journey run's scrape (the classic text
/// format, escaped label values and all), when promtool is installed.
fn a_scrape_passes_promtool(dir: &Path, addr: SocketAddr) {
    let Some(promtool) = sojourn_testkit::on_path("promtool") else {
        sojourn_testkit::skip("journey metrics: `promtool` is not on PATH");
        return;
    };
    let reply = http_get(addr, "/metrics").expect("a scrape");
    let body = reply.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    crate::common::promtool_accepts(&promtool, dir, body);
}
