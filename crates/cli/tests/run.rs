//! `sojourn run` against a real HTTP server on real sockets.
mod common;

use std::time::Duration;

use common::*;

/// Starts `sojourn run` and stalls the server for 1 s, 1 s into the run.
fn run_through_a_stall(
    server: &TestServer,
    args: &[&str],
    json: &std::path::Path,
) -> sojourn_core::RunResult {
    let url = server.url("http");
    let mut all = vec!["run", url.as_str(), "--json", json.to_str().unwrap()];
    all.extend_from_slice(args);
    let child = spawn(&all);
    std::thread::sleep(Duration::from_millis(1000));
    server.stall_for(Duration::from_secs(1));
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "sojourn failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    read_result(json)
}

#[test]
fn open_loop_records_every_request_the_stall_delayed() {
    let _guard = shared();
    let server = TestServer::start(false);
    let dir = temp_dir("open-stall");
    let r = run_through_a_stall(
        &server,
        &["--rate", "1000", "--duration", "3s"],
        &dir.join("open.json"),
    );
    assert_nothing_lost(&r);
    assert_eq!(r.counts.scheduled, 3000);
    assert_eq!(r.counts.completed, 3000);
    // About 1,000 requests were due during the 1 s stall; each waited for its end.
    let late = slower_than(&r, Duration::from_millis(100));
    assert!(
        (800..=1200).contains(&late),
        "requests delayed by the stall: {late}"
    );
    let p99 = r.histograms.response.percentiles.get(99.0).unwrap();
    assert!(
        p99 > 500_000_000,
        "open-loop p99 must show the stall: {p99} ns"
    );
    assert_eq!(
        server.requests.load(std::sync::atomic::Ordering::Relaxed),
        3000,
        "the server saw every request"
    );
}

#[test]
fn closed_loop_with_ten_connections_does_not() {
    let _guard = shared();
    let server = TestServer::start(false);
    let dir = temp_dir("closed-stall");
    let r = run_through_a_stall(
        &server,
        &["--closed", "--connections", "10", "--duration", "3s"],
        &dir.join("closed.json"),
    );
    assert_nothing_lost(&r);
    assert_eq!(r.mode, sojourn_core::Mode::Closed);
    // Each connection meets the stall once, and then waits: ten slow samples, no wedge.
    let late = slower_than(&r, Duration::from_millis(100));
    assert!(
        (1..=20).contains(&late),
        "closed loop sees only a handful of slow requests: {late}"
    );
    let p99 = r.histograms.response.percentiles.get(99.0).unwrap();
    assert!(
        p99 < 100_000_000,
        "closed-loop p99 hides the stall: {p99} ns"
    );
    assert!(
        r.histograms.backfilled.is_some(),
        "the back-filled estimate is reported separately"
    );
}

#[test]
fn counts_add_up_when_the_run_ends_mid_stall() {
    let _guard = shared();
    let server = TestServer::start(false);
    let dir = temp_dir("censored");
    let json = dir.join("r.json");
    let url = server.url("http");
    server.stall_for(Duration::from_secs(30));
    // Timeout 500 ms: everything sent in the last 0.5 s is still out at the end of the drain.
    let out = sojourn(&[
        "run",
        &url,
        "--rate",
        "200",
        "--duration",
        "1s",
        "--timeout",
        "500ms",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read_result(&json);
    assert_nothing_lost(&r);
    assert_eq!(r.counts.scheduled, 200);
    assert_eq!(r.counts.completed, 0);
    assert_eq!(
        r.counts.failed.get(sojourn_core::FailureClass::Timeout) + r.counts.censored,
        200,
        "{:?}",
        r.counts
    );
    assert!(
        r.histograms
            .response
            .lower_bounds
            .contains(&"99".to_string()),
        "p99 is only a lower bound"
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains('≥'), "lower bounds print as ≥: {stdout}");
}

/// Starts a minute-long run at 500 req/s with `extra` flags, sends it `signal` after 1.5 s,
/// and returns its output and result file.
fn stopped_by(
    signal: &str,
    name: &str,
    extra: &[&str],
) -> (std::process::Output, std::path::PathBuf, common::TestDir) {
    let server = TestServer::start(false);
    let dir = temp_dir(name);
    let json = dir.join("r.json");
    let url = server.url("http");
    let mut args = vec![
        "run",
        &url,
        "--rate",
        "500",
        "--duration",
        "60s",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let child = spawn(&args);
    std::thread::sleep(Duration::from_millis(1500));
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // The directory goes with the path, so the result is still there to read.
    (child.wait_with_output().unwrap(), json, dir)
}

/// A run cut short exits 6, so CI can tell it from a complete one, and still writes all it
/// gathered.
#[test]
fn ctrl_c_still_writes_what_was_gathered() {
    let _guard = shared();
    let (out, json, _dir) = stopped_by("INT", "sigint", &[]);
    assert_eq!(out.status.code(), Some(6), "exit {:?}", out.status);
    let r = read_result(&json);
    assert!(r.interrupted);
    assert_nothing_lost(&r);
    // Exactly the requests due by the moment it stopped, one every 2 ms, and not the minute's.
    let due_by_end = r.elapsed_ns / 2_000_000 + 1;
    assert!(
        r.counts.scheduled.abs_diff(due_by_end) <= 1,
        "scheduled {} by {} ns",
        r.counts.scheduled,
        r.elapsed_ns
    );
    assert!(r.elapsed_ns < 30_000_000_000, "stopped long before the end");
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("INTERRUPTED"));
}

/// SIGTERM (how Kubernetes stops a pod) is an interruption like Ctrl-C: exit 6, the result
/// written. 6 wins over a failed objective (4): it was judged on a run cut short.
#[test]
fn sigterm_exits_6_over_a_failed_objective_and_writes_the_result() {
    let _guard = shared();
    let (out, json, _dir) = stopped_by("TERM", "sigterm", &["--slo", "p50<1ns"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(6),
        "exit {:?}: {stdout}",
        out.status
    );
    // The objective fails (4): breached where the order statistics pin p50 to one bucket, too
    // few independent stretches otherwise in a second and a half; and 6 wins.
    let row = stdout.lines().find(|l| l.starts_with("p50<1ns"));
    assert!(
        row.is_some_and(|l| l.contains("BREACHED") || l.contains("TOO FEW SAMPLES")),
        "the objective was judged: {stdout}"
    );
    let r = read_result(&json);
    assert!(r.interrupted);
    assert!(r.counts.completed > 0, "{:?}", r.counts);
    assert_nothing_lost(&r);
    assert!(r.elapsed_ns < 30_000_000_000, "stopped long before the end");
}

#[test]
fn https_with_keep_alive() {
    let _guard = shared();
    let server = TestServer::start(true);
    let dir = temp_dir("https");
    let json = dir.join("r.json");
    let url = server.url("https");
    let out = sojourn(&[
        "run",
        &url,
        "--insecure",
        "--rate",
        "200",
        "--duration",
        "1s",
        "--connections",
        "4",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read_result(&json);
    assert_eq!(r.counts.completed, 200);
    // Keep-alive: 200 requests over at most the pool's 4 connections, plus the one sojourn
    // opens before the run to check that the target answers.
    let connections = server
        .connections
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        (1..=5).contains(&connections),
        "{connections} TLS connections for 200 requests"
    );
    // Without --insecure the self-signed certificate is refused before the run starts.
    let refused = sojourn(&["run", &url, "--rate", "10", "--duration", "1s"]);
    assert_eq!(refused.status.code(), Some(2));
}

#[test]
fn results_match_the_schema() {
    let _guard = shared();
    let server = TestServer::start(false);
    let dir = temp_dir("schema");
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../schema/result.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let url = server.url("http");
    for (name, extra) in [
        (
            "open",
            vec!["--rate", "100", "--arrival", "poisson", "--seed", "3"],
        ),
        ("closed", vec!["--closed", "--requests", "50"]),
    ] {
        let json = dir.join(format!("{name}.json"));
        let mut args = vec![
            "run",
            url.as_str(),
            "--duration",
            "1s",
            "--json",
            json.to_str().unwrap(),
        ];
        if name == "closed" {
            args.retain(|a| *a != "--duration" && *a != "1s");
        }
        args.extend(extra);
        let out = sojourn(&args);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
    assert_eq!(read_result(&dir.join("closed.json")).counts.scheduled, 50);
}

/// Each bad input: exit 2, and the message names the flag.
#[test]
fn bad_input_names_the_flag_and_exits_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "not a url", "--rate", "10"], "URL"),
        (&["run", "ftp://127.0.0.1/", "--rate", "10"], "URL"),
        (&["run", "http://127.0.0.1:9/", "--rate", "0"], "--rate"),
        (&["run", "http://127.0.0.1:9/", "--rate=-5"], "--rate"),
        // Negative values after a space reach the flag's parser, not clap's "unexpected
        // argument".
        (&["run", "http://127.0.0.1:9/", "--rate", "-5"], "--rate"),
        (
            &[
                "run",
                "http://127.0.0.1:9/",
                "--rate",
                "10",
                "--timeout",
                "-1s",
            ],
            "--timeout",
        ),
        (
            &["sweep", "http://127.0.0.1:9/", "--rates", "5,-1"],
            "--rates",
        ),
        (
            &[
                "run",
                "https://127.0.0.1:9/",
                "--rate",
                "10",
                "--cacert",
                "/nonexistent.pem",
            ],
            "--cacert",
        ),
        (
            &[
                "run",
                "https://127.0.0.1:9/",
                "--rate",
                "10",
                "--cacert",
                "/dev/null",
            ],
            "no PEM certificate",
        ),
        (&["run", "http://127.0.0.1:9/"], "--rate"),
        (
            &[
                "run",
                "http://127.0.0.1:9/",
                "--rate",
                "10",
                "--duration",
                "ten",
            ],
            "--duration",
        ),
        (
            &[
                "run",
                "http://127.0.0.1:9/",
                "--rate",
                "10",
                "--duration",
                "1s",
                "--requests",
                "5",
            ],
            "--requests",
        ),
        (
            &[
                "run",
                "http://127.0.0.1:9/",
                "--closed",
                "--arrival",
                "poisson",
            ],
            "--arrival",
        ),
        (
            &[
                "run",
                "http://127.0.0.1:9/",
                "--rate",
                "10",
                "--arrival",
                "ramp",
            ],
            "--ramp-to",
        ),
        (
            &[
                "run",
                "http://127.0.0.1:9/",
                "--rate",
                "10",
                "--connections",
                "0",
            ],
            "--connections",
        ),
        (
            &[
                "run",
                "http://127.0.0.1:9/",
                "--rate",
                "10",
                "--header",
                "nocolon",
            ],
            "--header",
        ),
    ];
    for (args, flag) in cases {
        let out = sojourn(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(flag),
            "{args:?} should name {flag}: {stderr}"
        );
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }
}

#[test]
fn an_unreachable_host_is_bad_input_before_the_run() {
    // Bind then drop a listener: the port is now (almost certainly) closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = sojourn(&[
        "run",
        &format!("http://127.0.0.1:{port}/"),
        "--rate",
        "10",
        "--duration",
        "1s",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("URL") && stderr.contains("cannot connect"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
}

#[test]
fn hgrm_hlog_and_samples_files() {
    let _guard = shared();
    let server = TestServer::start(false);
    let dir = temp_dir("files");
    let (json, hlog, samples, prefix) = (
        dir.join("r.json"),
        dir.join("r.hlog"),
        dir.join("r.samples.csv"),
        dir.join("r"),
    );
    let url = server.url("http");
    let out = sojourn(&[
        "run",
        &url,
        "--rate",
        "300",
        "--duration",
        "2s",
        "--json",
        json.to_str().unwrap(),
        "--hlog",
        hlog.to_str().unwrap(),
        "--samples",
        samples.to_str().unwrap(),
        "--hgrm",
        prefix.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read_result(&json);
    assert!(
        r.started_unix_ns.is_some(),
        "a real run knows its wall-clock start"
    );
    // Every finished request is one sample line, with its own response time.
    let rows: Vec<sojourn_report::samples::Sample> =
        sojourn_report::samples::SampleReader::open(&samples)
            .unwrap()
            .map(|s| s.unwrap())
            .collect();
    assert_eq!(rows.len() as u64, r.counts.completed);
    assert!(rows
        .windows(2)
        .all(|w| w[0].intended_offset != w[1].intended_offset || w[0].response != w[1].response));
    // The interval log's response histograms add up to the run's.
    let text = std::fs::read(&hlog).unwrap();
    let mut total = 0u64;
    for entry in hdrhistogram::serialization::interval_log::IntervalLogIterator::new(&text) {
        if let Ok(hdrhistogram::serialization::interval_log::LogEntry::Interval(i)) = entry {
            if i.tag().map(|t| t.as_str()) == Some("response") {
                let bytes = base64::Engine::decode(
                    &base64::engine::general_purpose::STANDARD,
                    i.encoded_histogram(),
                )
                .unwrap();
                let h: hdrhistogram::Histogram<u64> =
                    hdrhistogram::serialization::Deserializer::new()
                        .deserialize(&mut bytes.as_slice())
                        .unwrap();
                total += h.len();
            }
        }
    }
    assert_eq!(total, r.counts.completed);
    for which in ["response", "service", "send_lag"] {
        let text = std::fs::read_to_string(dir.join(format!("r.{which}.hgrm"))).unwrap();
        assert!(
            text.contains("Value     Percentile TotalCount 1/(1-Percentile)"),
            "{which}: {text}"
        );
        assert!(
            text.contains("Values in milliseconds"),
            "{which} states its unit"
        );
        let total = format!("Total count    = {:>12}]", r.counts.completed);
        assert!(
            text.contains(&total),
            "{which} counts every completed request: {text}"
        );
    }
}

/// compare runs both loops at once, so a one-shot stall meets both: it is never called
/// agreement, the same schedule is never called another rate, and the page says what the
/// terminal says.
#[test]
fn compare_runs_both_loops_at_once_and_gives_a_verdict() {
    let _guard = serial();
    let server = TestServer::start(false);
    let dir = temp_dir("compare");
    let url = server.url("http");
    let report = dir.join("compare.html");
    let child = spawn(&[
        "compare",
        &url,
        "--rate",
        "500",
        "--duration",
        "4s",
        "--json-dir",
        dir.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    // One stall of 1 s, once: run one loop after the other and it would fall in one only.
    std::thread::sleep(Duration::from_millis(1500));
    server.stall_for(Duration::from_secs(1));
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let (closed, open) = (
        read_result(&dir.join("closed.json")),
        read_result(&dir.join("open.json")),
    );
    // By default the closed loop is paced, each loop at half the rate: the same schedule.
    assert_eq!(closed.mode, sojourn_core::Mode::Paced);
    assert_eq!(open.mode, sojourn_core::Mode::Open);
    assert_eq!(closed.config.rate, Some(250.0));
    assert_eq!(closed.counts.scheduled, open.counts.scheduled);
    assert_eq!(closed.counts.scheduled, 1000);
    // Both met the stall: each loop's slowest answer from the server took most of it.
    for r in [&closed, &open] {
        assert!(
            r.histograms.service.max >= 800_000_000,
            "{}: slowest answer {} ns",
            r.label,
            r.histograms.service.max
        );
    }
    assert!(!stdout.contains("NOT THE SAME RATE"), "{stdout}");
    assert!(
        !stdout.contains("agree"),
        "a one-shot stall is never agreement: {stdout}"
    );
    assert!(
        stdout.contains("the paced closed loop's p99 from the send understates open-loop p99 by"),
        "{stdout}"
    );
    assert!(
        stdout.contains("open loop/paced, from send") && stdout.contains("never sent"),
        "the table has the ratio column and the counts: {stdout}"
    );
    common::verdict_page::assert_page_agrees(
        &report,
        &dir,
        &stdout,
        "open loop",
        2,
        common::verdict_page::Expect::HidesTheStall,
    );
    // Unpaced, the closed loop runs as fast as the server answers: a different load, and the
    // verdict says so before any ratio.
    let out = sojourn(&[
        "compare",
        &url,
        "--rate",
        "200",
        "--duration",
        "1s",
        "--closed-mode",
        "unpaced",
        "--json-dir",
        dir.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert_eq!(
        read_result(&dir.join("closed.json")).mode,
        sojourn_core::Mode::Closed
    );
    assert!(
        stdout.contains("verdict: NOT THE SAME RATE: the closed loop sent"),
        "{stdout}"
    );
}

/// A process that starts after `--start-at` sends what fell due meanwhile at once, and every
/// one of those requests is measured from its due time: the lateness is send lag, and the
/// result says how late the process was.
#[test]
fn a_late_start_is_send_lag_never_hidden() {
    let _guard = serial();
    let server = TestServer::start(false);
    let dir = temp_dir("late-start");
    let json = dir.join("late.json");
    let start = std::time::SystemTime::now() - Duration::from_millis(800);
    let start = start
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let out = sojourn(&[
        "run",
        &server.url("http"),
        "--rate",
        "200",
        "--duration",
        "2s",
        "--start-at",
        &format!("{start:.3}"),
        "--json",
        json.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // "--start-at was 0.8 s ago" (or a little more, by the time it connected).
    assert!(
        err.contains("--start-at was 0.")
            && err.contains(
                " s ago: requests due since then are sent at once and timed from their due time"
            ),
        "{err}"
    );
    let r = read_result(&json);
    assert_nothing_lost(&r);
    assert_eq!(
        r.counts.scheduled, 400,
        "the whole schedule, the missed part included"
    );
    let skew = r.placement.as_ref().unwrap().start_skew_ns.unwrap();
    assert!(skew >= 800_000_000, "ready {skew} ns after the start");
    // About 160 requests fell due before the process was ready: their send lag is at least
    // what they waited, so the send-lag tail shows the late start.
    let lag = r.histograms.send_lag.histogram().unwrap();
    let late = lag.count_between(100_000_000, u64::MAX);
    assert!(
        (120..=250).contains(&late),
        "requests sent late by the start: {late}"
    );
    let zero = r.started_unix_ns.unwrap() as f64 / 1e9;
    let given: f64 = format!("{start:.3}").parse().unwrap();
    assert!(
        (zero - given).abs() < 1e-6,
        "the schedule's zero is the plan's start: {zero} vs {given}"
    );
}

/// A shard names its place and its plan before it runs, with the fingerprint its result then
/// carries, and says how long it waits for --start-at.
#[test]
fn a_shard_says_where_it_stands_and_waits_for_start_at() {
    let _guard = serial();
    let server = TestServer::start(false);
    let dir = temp_dir("shard-announce");
    let json = dir.join("r.json");
    let url = server.url("http");
    let at = std::time::SystemTime::now() + Duration::from_millis(2500);
    let at = humantime::format_rfc3339_millis(at).to_string();
    let out = sojourn(&[
        "run",
        &url,
        "--rate",
        "200",
        "--duration",
        "1s",
        "--shard",
        "1/2",
        "--start-at",
        &at,
        "--json",
        json.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let r = read_result(&json);
    let fingerprint = &r.placement.as_ref().unwrap().fingerprint;
    let said = format!(
        "shard 1/2 of plan {}… at 200 req/s (this shard: 100 req/s); waiting ",
        &fingerprint[..8]
    );
    let line = stderr
        .lines()
        .find(|l| l.starts_with("shard "))
        .unwrap_or_else(|| panic!("no shard line: {stderr}"));
    assert!(line.starts_with(&said), "{line}\nwanted {said}…");
    assert!(line.ends_with(&format!(" s for --start-at {at}")), "{line}");
    let waited: f64 = line[said.len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1.0..2.6).contains(&waited), "{line}");
    assert_eq!(r.counts.scheduled, 100, "its half of 200");
}
