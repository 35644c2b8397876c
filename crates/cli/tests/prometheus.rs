//! `sojourn run --metrics-listen` scraped by a real Prometheus server (Debian's `prometheus`,
//! installed by `.ci/run`) while the target stalls; Prometheus's own query API then has to
//! show the stall: the p99 gauge rose to the stall's length, requests piled up in flight, and
//! the oldest of them aged with it.
//! A scraped body also passes `promtool check metrics`.
mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{interrupt, listening_addr, metrics_addr, promtool_accepts, serial, temp_dir};
use serde_json::Value;

/// A child process killed (by its own handle) when the test lets go of it, pass or fail.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn prometheus_scrapes_the_stall_while_the_run_goes_on() {
    let (Some(prometheus), Some(promtool)) = (
        sojourn_testkit::on_path("prometheus"),
        sojourn_testkit::on_path("promtool"),
    ) else {
        sojourn_testkit::skip("prometheus scrape: `prometheus` and `promtool` are not on PATH");
        return;
    };
    let _guard = serial();
    let dir = temp_dir("prometheus");
    // The target: a 20 ms server that stalls when told to (its built-in stalls run on a clock
    // from the first request, and Prometheus takes a few seconds to begin scraping).
    let mut server = Killed(
        Command::new(env!("CARGO_BIN_EXE_sojourn"))
            .args([
                "serve",
                "--scenario",
                "healthy",
                "--set",
                "healthy.baseline=20ms",
            ])
            .args(["--control", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let target = listening_addr(&mut server.0);
    let url = format!("http://{target}/api");
    // Long enough for anything below; it is interrupted (Ctrl-C) once the stall is seen.
    let mut run = Killed(
        Command::new(env!("CARGO_BIN_EXE_sojourn"))
            .args(["run", &url, "--rate", "100", "--duration", "60s"])
            .args(["--interval", "400ms", "--metrics-listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let metrics = metrics_addr(&mut run.0);
    let (_prom, prom) = start_prometheus(&prometheus, &dir, metrics);
    let scraped = "count_over_time(sojourn_elapsed_seconds[5m])";
    assert!(
        poll(Duration::from_secs(30), || try_query(prom, scraped)
            .is_some_and(|n| n >= 5.0)),
        "prometheus never scraped sojourn"
    );

    let body = http_get(metrics, "/metrics").expect("a scrape mid-run");
    promtool_accepts(&promtool, &dir, body_of(&body));
    let before = query(prom, scraped);
    // 1.5 s of stall at 100 req/s, then time for the interval that saw it end to be scraped.
    let stalled = http_post(metrics_target(&target), "/control/stall?for=1500ms").unwrap();
    assert!(stalled.starts_with("HTTP/1.1 2"), "{stalled}");
    std::thread::sleep(Duration::from_millis(3000));
    interrupt(&run.0);
    assert!(
        wait_for(&mut run.0, Duration::from_secs(30)),
        "the run ends"
    );

    let p99 = r#"sojourn_interval_response_seconds{percentile="99"}"#;
    let highest = query(prom, &format!("max_over_time({p99}[5m])"));
    let lowest = query(prom, &format!("min_over_time({p99}[5m])"));
    let peak_in_flight = query(prom, "max_over_time(sojourn_requests_in_flight[5m])");
    let oldest = query(prom, "max_over_time(sojourn_oldest_in_flight_seconds[5m])");
    let scrapes = query(prom, scraped) - before;
    println!(
        "prometheus scraped {scrapes} times over the stall: p99 {lowest:.3} s to {highest:.3} s, \
         in flight up to {peak_in_flight}"
    );
    assert!(scrapes >= 10.0, "scraped every 200 ms: {scrapes}");
    assert!(
        lowest < 0.1,
        "before the stall p99 is the 20 ms baseline: {lowest}"
    );
    assert!(
        (1.2..2.0).contains(&highest),
        "p99 rose to the 1.5 s stall: {highest}"
    );
    assert!(
        peak_in_flight >= 60.0,
        "requests piled up in flight during the stall (100/s for 1.5 s): {peak_in_flight}"
    );
    assert!(
        (1.2..2.0).contains(&oldest),
        "the oldest in flight aged with the 1.5 s stall, seen while it lasted: {oldest}"
    );
}

fn metrics_target(addr: &str) -> SocketAddr {
    addr.parse().unwrap()
}

/// Starts Prometheus on a free port, scraping `target` every 200 ms, and waits until it is
/// ready. Prometheus cannot listen on port 0, so a free port is picked and the start retried
/// if another process takes it first.
fn start_prometheus(prometheus: &Path, dir: &Path, target: SocketAddr) -> (Killed, SocketAddr) {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\n\
             scrape_configs:\n  - job_name: sojourn\n    static_configs:\n      \
             - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    for attempt in 0..5 {
        let addr = free_port();
        let log = dir.join(format!("prometheus-{attempt}.log"));
        let child = Command::new(prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join(format!("tsdb-{attempt}")).display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("starting prometheus");
        let mut prom = Killed(child);
        if ready(&mut prom.0, addr, Duration::from_secs(30)) {
            return (prom, addr);
        }
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            said.contains("address already in use"),
            "prometheus did not start: {said}"
        );
    }
    panic!("no free port for prometheus after 5 tries");
}

fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// Whether Prometheus answers `/-/ready` before `within`, while it still runs.
fn ready(prom: &mut Child, addr: SocketAddr, within: Duration) -> bool {
    poll(within, || {
        prom.try_wait().unwrap().is_none()
            && http_get(addr, "/-/ready").is_ok_and(|r| r.starts_with("HTTP/1.1 200"))
    }) && prom.try_wait().unwrap().is_none()
}

fn wait_for(child: &mut Child, within: Duration) -> bool {
    poll(within, || child.try_wait().unwrap().is_some())
}

/// Whether `done` comes true within `within`, asking every 100 ms.
fn poll(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// One GET on its own connection: the whole reply, head and body.
fn http_get(addr: SocketAddr, path: &str) -> std::io::Result<String> {
    exchange(addr, &format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\n"))
}

fn http_post(addr: SocketAddr, path: &str) -> std::io::Result<String> {
    let head = format!("POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-length: 0\r\n");
    exchange(addr, &head)
}

/// Sends `head` (request line and headers) on a fresh connection and reads the whole reply.
fn exchange(addr: SocketAddr, head: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "{head}connection: close\r\n\r\n")?;
    let mut reply = String::new();
    s.read_to_string(&mut reply)?;
    Ok(reply)
}

fn body_of(reply: &str) -> &str {
    reply.split_once("\r\n\r\n").map_or("", |(_, body)| body)
}

/// An instant query through Prometheus's HTTP API; the single result's value.
fn query(prom: SocketAddr, promql: &str) -> f64 {
    try_query(prom, promql).unwrap_or_else(|| panic!("{promql}: no value"))
}

fn try_query(prom: SocketAddr, promql: &str) -> Option<f64> {
    let reply = http_get(prom, &format!("/api/v1/query?query={}", encode(promql))).ok()?;
    let json: Value = serde_json::from_str(body_of(&reply)).ok()?;
    json["data"]["result"][0]["value"][1].as_str()?.parse().ok()
}

/// Percent-encodes everything but letters and digits, for a query string.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
