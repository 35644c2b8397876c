//! `sojourn serve` as a user runs it: the address line, a truth log, SIGTERM, and bad input.
mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

fn sojourn() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sojourn"))
}

/// One request on its own connection; returns the status code.
fn get(addr: &str, path: &str) -> u16 {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    reply.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn serves_on_the_printed_address_logs_truth_and_stops_on_sigterm() {
    let truth = std::env::temp_dir().join(format!("sojourn-serve-{}.csv", std::process::id()));
    let mut child = sojourn()
        .args([
            "serve",
            "--scenario",
            "every-nth",
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--set", "every-nth.n=2", "--set", "every-nth.slow=50ms"])
        .arg("--truth")
        .arg(&truth)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let addr = common::listening_addr(&mut child);
    assert!(
        addr.starts_with("127.0.0.1:") && !addr.ends_with(":0"),
        "{addr}"
    );

    for _ in 0..4 {
        assert_eq!(get(&addr, "/api"), 200);
    }
    assert_eq!(get(&addr, "/healthy"), 200);
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("serving every-nth: service fixed 1ms"),
        "{stderr}"
    );
    assert!(
        stderr.contains("stopped: 4 /api requests (4 ok"),
        "{stderr}"
    );

    let text = std::fs::read_to_string(&truth).unwrap();
    std::fs::remove_file(&truth).unwrap();
    let mut slow: Vec<u64> = text
        .lines()
        .skip(1)
        .map(|l| {
            l.split(',')
                .map(|c| c.parse::<u64>().unwrap_or(0))
                .collect::<Vec<_>>()
        })
        .filter(|c| c[3] - c[2] >= 50_000_000)
        .map(|c| c[0])
        .collect();
    slow.sort();
    assert_eq!(
        slow,
        vec![1, 3],
        "the 2nd and 4th requests are slow:\n{text}"
    );
}

/// Each row: arguments after `serve`, and what the one-line error must say.
#[test]
fn bad_input_names_the_flag_and_exits_2() {
    let rows: &[(&[&str], &str)] = &[
        (
            &["--scenario", "hiccups"],
            "error: --scenario: unknown scenario \"hiccups\"; built-ins are healthy",
        ),
        (
            &["--scenario", "hiccup", "--set", "hiccup.at=soon"],
            "error: --set: hiccup.at: expected a duration",
        ),
        (
            &["--scenario", "hiccup", "--set", "at=5s"],
            "error: --set: \"at=5s\": expected NAME.PARAM=VALUE",
        ),
        (
            &["--scenario", "hiccup", "--set", "hiccup.when=5s"],
            "error: --set: hiccup.when: unknown field; accepted: hiccup.baseline",
        ),
        (
            &["--listen", "localhost"],
            "error: --listen: expected an address like 127.0.0.1:8080",
        ),
        (
            &["--header-timeout", "soon"],
            "error: --header-timeout: expected a duration longer than zero like 10s, 500ms or 2m, at most 30 days; got \"soon\"",
        ),
        (
            &["--header-timeout", "0s"],
            "error: --header-timeout: expected a duration longer than zero like 10s, 500ms or 2m, at most 30 days; got \"0s\"",
        ),
    ];
    for (args, want) in rows {
        let out = sojourn().arg("serve").args(*args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(want),
            "{args:?}:\n got  {stderr}\n want {want}"
        );
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    }
}

#[test]
fn list_and_print_describe_the_builtins() {
    let out = sojourn().args(["serve", "--list"]).output().unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    for name in [
        "healthy",
        "hiccup",
        "ramp",
        "gc-pauses",
        "saturation",
        "every-nth",
        "bimodal",
        "spike",
    ] {
        assert!(
            list.lines().any(|l| l.starts_with(name)),
            "{name} in:\n{list}"
        );
    }
    assert!(list.contains("--set hiccup.at=30s"));
    let out = sojourn()
        .args([
            "serve",
            "--scenario",
            "spike",
            "--set",
            "spike.at=3s",
            "--print",
        ])
        .output()
        .unwrap();
    let toml = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        toml.contains("kind = \"stall\"") && toml.contains("at = \"3s\""),
        "{toml}"
    );
}

/// `sojourn serve --grpc` under a hiccup, measured by `sojourn run grpc://` with a proto of the
/// test's own: every call completes, the open loop sees the stall, and the truth log has a line
/// for each call.
#[test]
fn a_grpc_run_against_serve_grpc_sees_the_hiccup_and_every_call_is_in_the_truth_log() {
    let dir = common::temp_dir("serve-grpc");
    let proto = common::empty_call_proto(&dir);
    let truth = dir.join("truth.csv");
    let mut server = sojourn()
        .args([
            "serve",
            "--grpc",
            "--scenario",
            "hiccup",
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--set", "hiccup.at=500ms", "--set", "hiccup.duration=500ms"])
        .arg("--truth")
        .arg(&truth)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();
    assert!(url.starts_with("grpc://127.0.0.1:"), "{line}");
    let json = dir.join("run.json");
    let run = common::sojourn(&[
        "run",
        &url,
        "--proto",
        proto.to_str().unwrap(),
        "--call",
        "sojourn.test.Scenario/Call",
        "-d",
        "{}",
        "--rate",
        "200",
        "--duration",
        "1500ms",
        "--json",
        json.to_str().unwrap(),
    ]);
    let killed = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let served = server.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&served.stderr);
    assert!(
        run.status.success(),
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let r = common::read_result(&json);
    common::assert_nothing_lost(&r);
    assert_eq!(r.counts.scheduled, 300);
    assert_eq!(r.counts.completed, 300, "every call OK: {:?}", r.counts);
    // A 500 ms stall in 1.5 s: the calls due in it wait for its end, so p99 is about
    // 500 ms − 1% of the run (485 ms); a server that answered at once would give ~10 ms.
    let p99 = r.histograms.response.percentiles.get(99.0).unwrap();
    assert!(
        (400_000_000..600_000_000).contains(&p99),
        "p99 {p99} ns\n{stderr}"
    );
    assert!(
        stderr.contains("stopped: 300 /api requests (300 ok"),
        "{stderr}"
    );
    let text = std::fs::read_to_string(&truth).unwrap();
    assert_eq!(text.lines().skip(1).count(), 300, "one line per call");
}
