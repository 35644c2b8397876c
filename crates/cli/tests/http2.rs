//! HTTP/2 and targets files against a server no one here wrote: nginx (Debian nginx-light, with
//! its http_v2 module) serving h2c and h2 over TLS with a self-signed certificate. nginx's own
//! access log (`$server_protocol $request_uri`) is the witness that requests arrived as HTTP/2
//! and that every target was hit in its share.
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{assert_nothing_lost, read_result, serial, sojourn, temp_dir, Signal};

/// nginx on three free loopback ports: h2c, h2 over TLS, and h2c allowing only 4 streams.
struct Nginx {
    nginx: common::nginx::Nginx,
    dir: PathBuf,
    h2c: u16,
    tls: u16,
    narrow: u16,
}

impl Nginx {
    fn start(name: &str) -> Option<Nginx> {
        let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
        let nginx = common::nginx::Nginx::start(name, 3, |dir, ports| {
            std::fs::write(dir.join("cert.pem"), cert.cert.pem()).unwrap();
            std::fs::write(dir.join("key.pem"), cert.signing_key.serialize_pem()).unwrap();
            let d = dir.display();
            let [h2c, tls, narrow] = ports[..] else {
                unreachable!("three ports asked for")
            };
            format!(
                r#"  log_format proto '$server_protocol $request_method $request_uri $status';
  access_log {d}/access.log proto;
  server {{
    listen 127.0.0.1:{h2c} http2;
    listen 127.0.0.1:{tls} ssl http2;
    ssl_certificate {d}/cert.pem;
    ssl_certificate_key {d}/key.pem;
    location / {{ return 200 "ok\n"; }}
    location /missing {{ return 404; }}
  }}
  server {{
    listen 127.0.0.1:{narrow} http2;
    http2_max_concurrent_streams 4;
    location / {{ return 200 "ok\n"; }}
  }}"#
            )
        })?;
        let [h2c, tls, narrow] = nginx.ports[..] else {
            unreachable!("three ports asked for")
        };
        Some(Nginx {
            dir: nginx.dir.to_path_buf(),
            nginx,
            h2c,
            tls,
            narrow,
        })
    }

    /// `(protocol, uri) → count` from the access log, read from the start.
    fn access(&self) -> BTreeMap<(String, String), u64> {
        let log = std::fs::read_to_string(self.dir.join("access.log")).unwrap_or_default();
        let mut seen = BTreeMap::new();
        for line in log.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            *seen
                .entry((f[0].to_string(), f[2].to_string()))
                .or_default() += 1;
        }
        seen
    }

    fn clear_log(&self) {
        std::fs::write(self.dir.join("access.log"), "").unwrap();
    }

    fn signal(&self, sig: Signal) {
        self.nginx.signal(sig);
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// 400 requests at 400 req/s over HTTP/2.
const H2_400: [&str; 6] = [
    "--http2",
    "--rate",
    "400",
    "--requests",
    "400",
    "--no-hiccup-meter",
];

/// `sojourn ARGS`, which must succeed; its output.
fn run_ok(args: &[&str]) -> std::process::Output {
    let out = sojourn(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn by_uri(seen: &BTreeMap<(String, String), u64>, protocol: &str) -> BTreeMap<String, u64> {
    seen.iter()
        .filter(|((p, _), _)| p == protocol)
        .map(|((_, u), n)| (u.clone(), *n))
        .collect()
}

fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(u, n)| (u.to_string(), *n)).collect()
}

/// The by-target table of a run's summary, row by row: label, requests, completed, failed.
/// Empty unless the table's title and column header are there, so no other line that happens
/// to name a label can stand in for a row.
fn target_table(summary: &str) -> Vec<(String, u64, u64, u64)> {
    let mut lines = summary
        .lines()
        .skip_while(|l| !l.starts_with("by target (share: expected / actual"));
    let header = lines.nth(1).unwrap_or_default();
    let columns: Vec<&str> = header.split_whitespace().collect();
    if columns[..columns.len().min(5)] != ["label", "requests", "share", "completed", "failed"] {
        return Vec::new();
    }
    // A row: the label (which may hold spaces) padded to the label column, then requests
    // right-aligned in ten columns, "expected% / actual%", completed, failed and the times.
    let width = (header.find("requests").unwrap_or(0) + "requests".len()).saturating_sub(10);
    let row = |line: &str| {
        let (label, rest) = line.split_at(width.min(line.len()));
        let cells: Vec<&str> = rest.split_whitespace().collect();
        let n = |i: usize| {
            cells
                .get(i)
                .and_then(|c| c.parse().ok())
                .unwrap_or(u64::MAX)
        };
        (label.trim_end().to_string(), n(0), n(4), n(5))
    };
    lines
        .take_while(|l| !l.trim().is_empty())
        .map(row)
        .collect()
}

#[test]
fn h2c_and_h2_over_tls_arrive_as_http2_with_every_target_in_its_share() {
    let _serial = serial();
    let Some(nginx) = Nginx::start("http2-targets") else {
        return;
    };
    let dir = &nginx.dir;
    // JSON Lines over h2c: weights 1:2:1, one target a 404, one POST with a body.
    let body = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, b"{\"x\":1}");
    let jsonl = format!(
        "{{\"method\":\"GET\",\"url\":\"http://127.0.0.1:{p}/a?id=1\",\"label\":\"read\"}}\n\
         {{\"method\":\"POST\",\"url\":\"http://127.0.0.1:{p}/b\",\"body\":\"{body}\",\"weight\":2,\"header\":{{\"Content-Type\":[\"application/json\"]}}}}\n\
         {{\"method\":\"GET\",\"url\":\"http://127.0.0.1:{p}/missing\"}}\n",
        p = nginx.h2c
    );
    let targets = write(dir, "t.jsonl", &jsonl);
    let json = dir.join("h2c.json");
    let out = run_ok(
        &[
            &["run", "--targets", s(&targets)][..],
            &H2_400,
            &["--json", s(&json)],
        ]
        .concat(),
    );
    let seen = nginx.access();
    assert_eq!(
        by_uri(&seen, "HTTP/2.0"),
        counts(&[("/a?id=1", 100), ("/b", 200), ("/missing", 100)]),
        "every request arrived as HTTP/2, in the weights' proportion: {seen:?}"
    );
    assert_eq!(
        seen.values().sum::<u64>(),
        400,
        "and nothing else: {seen:?}"
    );
    let r = read_result(&json);
    assert_nothing_lost(&r);
    assert_eq!(r.config.protocol.as_deref(), Some("h2c"));
    assert_eq!(r.statuses, [(200, 300), (404, 100)].into_iter().collect());
    let labels: Vec<(&str, u64, u64)> = r
        .targets
        .iter()
        .map(|t| {
            (
                t.label.as_str(),
                t.counts.completed,
                t.counts.failed.total(),
            )
        })
        .collect();
    assert_eq!(
        labels,
        vec![
            ("read", 100, 0),
            ("POST /b", 200, 0),
            ("GET /missing", 0, 100)
        ]
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        target_table(&summary),
        [
            ("read", 100, 100, 0),
            ("POST /b", 200, 200, 0),
            ("GET /missing", 100, 0, 100)
        ]
        .map(|(l, n, ok, failed)| (l.to_string(), n, ok, failed)),
        "a row per target, under the table's header:\n{summary}"
    );

    // vegeta's HTTP format over TLS (ALPN h2), random order from a seed.
    nginx.clear_log();
    let http = format!(
        "GET https://127.0.0.1:{p}/x\nX-Trace: 1\n\n# label: y\nGET https://127.0.0.1:{p}/y\n",
        p = nginx.tls
    );
    let targets = write(dir, "t.http", &http);
    let json = dir.join("h2.json");
    run_ok(
        &[
            &[
                "run",
                "--targets",
                s(&targets),
                "--targets-order",
                "random",
                "--seed",
                "7",
            ][..],
            &["--insecure"],
            &H2_400,
            &["--json", s(&json)],
        ]
        .concat(),
    );
    let seen = nginx.access();
    let tls = by_uri(&seen, "HTTP/2.0");
    assert_eq!(
        tls.values().sum::<u64>(),
        400,
        "all HTTP/2 over TLS: {seen:?}"
    );
    let r = read_result(&json);
    assert_eq!(r.config.protocol.as_deref(), Some("h2"));
    // The log and the result agree target by target; random halves stay within 5 sigma.
    assert_eq!(tls["/x"], r.targets[0].counts.completed);
    assert_eq!(tls["/y"], r.targets[1].counts.completed);
    let sigma = (400.0f64 * 0.25).sqrt();
    assert!((tls["/x"] as f64 - 200.0).abs() < 5.0 * sigma, "{tls:?}");
    assert_ne!(
        tls["/x"], 200,
        "random order is not round robin in disguise (seed 7)"
    );
}

#[test]
fn a_server_stream_limit_below_streams_is_noted_and_kept_to() {
    let _serial = serial();
    let Some(nginx) = Nginx::start("http2-narrow") else {
        return;
    };
    let url = format!("http://127.0.0.1:{}/", nginx.narrow);
    let json = nginx.dir.join("narrow.json");
    let out = run_ok(&[
        "run",
        &url,
        "--http2",
        "--streams",
        "64",
        "-c",
        "2",
        "--rate",
        "200",
        "--requests",
        "200",
        "--no-hiccup-meter",
        "--json",
        s(&json),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("allows 4 concurrent streams") && stderr.contains("--streams 64"),
        "{stderr}"
    );
    let r = read_result(&json);
    assert_eq!((r.config.streams, r.config.connections), (Some(4), 2));
    assert_eq!(r.counts.completed, 200);
}

/// Queueing theory for a server frozen for D in a run of T at rate λ (service time near zero):
/// a request due t into the freeze waits D − t, so P(response > x) = (D − x)/T, and the p99 is
/// D − 0.01·T. nginx then drains the queue in order, adding its service time per request
/// ahead; the 5% tolerance covers that.
#[test]
fn a_frozen_nginx_over_http2_matches_queueing_theory() {
    let _serial = serial();
    let Some(nginx) = Nginx::start("http2-stall") else {
        return;
    };
    let url = format!("http://127.0.0.1:{}/", nginx.h2c);
    let json = nginx.dir.join("stall.json");
    let run_for = Duration::from_secs(5);
    let mut child = Command::new(env!("CARGO_BIN_EXE_sojourn"))
        .args([
            "run",
            &url,
            "--http2",
            "--rate",
            "1000",
            "--duration",
            "5s",
            "--no-hiccup-meter",
            "--json",
            s(&json),
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1_500));
    nginx.signal(Signal::STOP);
    let frozen = Instant::now();
    std::thread::sleep(Duration::from_secs(1));
    nginx.signal(Signal::CONT);
    let stall = frozen.elapsed().as_secs_f64();
    assert!(child.wait().unwrap().success());
    let r = read_result(&json);
    assert_nothing_lost(&r);
    assert_eq!(r.counts.completed, 5_000, "{:?}", r.counts);
    let p99 = r.histograms.response.percentiles.get(99.0).unwrap() as f64 / 1e9;
    let theory = stall - 0.01 * run_for.as_secs_f64();
    println!("frozen nginx over h2c: p99 {p99:.4} s, theory {theory:.4} s (freeze {stall:.4} s)");
    assert!(
        (p99 - theory).abs() <= 0.05 * theory,
        "p99 {p99:.4} s against theory {theory:.4} s (freeze {stall:.4} s)"
    );
}

/// Each kind of mistake in a targets file: one line naming the file, the line and the
/// problem, and exit 2 before anything is sent.
#[test]
fn a_bad_targets_file_is_one_line_naming_file_and_line_and_exit_2() {
    let dir = temp_dir("targets-errors");
    let cases = [
        ("malformed.http", "GET http://127.0.0.1:1/a\nno colon here\n", 2, "header"),
        ("body.http", "POST http://127.0.0.1:1/a\n@/no/such/body.json\n", 2, "/no/such/body.json"),
        ("method.http", "\nFETCH http://127.0.0.1:1/a\n", 2, "FETCH"),
        ("url.http", "GET http://127.0.0.1:1/a\n\nGET not-a-url\n", 3, "URL"),
        ("url.jsonl", "{\"method\":\"GET\",\"url\":\"ftp://127.0.0.1/a\"}\n", 1, "ftp"),
        ("method.jsonl", "{\"method\":\"GET\",\"url\":\"http://127.0.0.1:1/\"}\n{\"method\":\"YANK\",\"url\":\"http://127.0.0.1:1/\"}\n", 2, "YANK"),
    ];
    for (name, text, line, words) in cases {
        let path = write(&dir, name, text);
        let out = sojourn(&[
            "run",
            "--targets",
            s(&path),
            "--rate",
            "10",
            "--duration",
            "1s",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "{name}: one line: {stderr}"
        );
        let at = format!("{}:{line}:", path.display());
        assert!(stderr.contains(&at), "{name}: names {at}: {stderr}");
        assert!(stderr.contains(words), "{name}: says {words:?}: {stderr}");
        assert!(
            stderr.contains("--targets"),
            "{name}: names the flag: {stderr}"
        );
    }
}

/// `--streams` without `--http2`, and `--targets-order` without targets, are mistakes the run
/// names (exit 2) rather than flags it quietly ignores.
#[test]
fn flags_without_their_partner_are_bad_input() {
    for (flag, value) in [("--streams", "4"), ("--targets-order", "random")] {
        let out = sojourn(&["run", "http://127.0.0.1:1/", "--rate", "1", flag, value]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {stderr}");
        assert!(
            stderr.starts_with(&format!("error: {flag}: only with")),
            "{stderr}"
        );
    }
}
