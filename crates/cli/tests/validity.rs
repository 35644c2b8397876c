//! The validity verdict on real runs against `sojourn serve`: a healthy run is valid, a queue
//! that never settles is not stationary, and Poisson sends from a starved generator fail the
//! arrival-law fit. Each run is short and on 127.0.0.1; `--strict` turns a verdict into exit 3.
mod common;

use std::path::Path;
use std::process::{Child, Output};

use common::*;
use sojourn_core::validity::{TestName, TestOutcome, Validity, ValidityTest};
use sojourn_core::RunResult;

/// `sojourn serve` on a free port, stopped when dropped (also when a test fails).
struct Served {
    child: Child,
    url: String,
}

impl Served {
    fn start(args: &[&str]) -> Served {
        let mut all = vec!["serve", "--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let mut child = spawn(&all);
        let url = format!("http://{}/api", listening_addr(&mut child));
        Served { child, url }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `sojourn run URL ARGS --strict --json DIR/run.json`: its output and result.
fn strict_run(dir: &Path, url: &str, args: &[&str]) -> (Output, RunResult) {
    let json = dir.join("run.json");
    let mut all = vec!["run", url, "--strict", "--json", json.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = sojourn(&all);
    let r = read_result(&json);
    assert_nothing_lost(&r);
    (out, r)
}

fn verdict(r: &RunResult) -> &Validity {
    r.statistics.validity.as_ref().expect("every run is judged")
}

fn test(r: &RunResult, name: TestName) -> &ValidityTest {
    let v = verdict(r);
    v.tests
        .iter()
        .find(|t| t.name == name)
        .expect("every test has an entry")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_healthy_server_at_a_modest_rate_gives_a_valid_run() {
    let _guard = serial();
    let server = Served::start(&["--scenario", "healthy"]);
    let dir = temp_dir("validity-healthy");
    // 200/s Poisson against 10 ms answers: two requests in service on average, far from any
    // limit. 40 intervals of 250 ms give the serial tests enough points.
    let args = ["--rate", "200", "--arrival", "poisson", "--duration", "10s"];
    let (out, r) = strict_run(
        &dir,
        &server.url,
        &[&args[..], &["--interval", "250ms"]].concat(),
    );
    let all = text(&out);
    let v = verdict(&r);
    assert!(v.valid, "{v:#?}");
    // A valid run adds nothing to --strict: it exits 3 only if the generator's own check
    // failed (a loaded machine can make it late; that check has its own tests).
    let conforms = r
        .statistics
        .conformance
        .as_ref()
        .is_some_and(|c| c.conforms);
    let strict = if r.checks.passed() && conforms { 0 } else { 3 };
    assert_eq!(out.status.code(), Some(strict), "{all}");
    for t in &v.tests {
        assert_eq!(
            t.outcome,
            TestOutcome::Pass,
            "every test applies and passes: {t:?}"
        );
    }
    // The arrival law was fitted (Anderson–Darling), not skipped.
    let law = test(&r, TestName::ArrivalLaw);
    assert!(
        law.p_value.unwrap() >= 0.01 && law.statistic.unwrap() < 3.857,
        "{law:?}"
    );
    assert!(all.contains("validity  VALID"), "{all}");
    assert!(
        all.contains("arrival law     pass  Anderson–Darling"),
        "{all}"
    );
}

#[test]
fn a_queue_that_keeps_growing_is_not_stationary() {
    let _guard = serial();
    // One worker at 10 ms serves 100/s; 130/s are due. The queue grows by 30 requests a
    // second to the end: the medians climb from 10 ms to about 2.5 s and never settle.
    let server = Served::start(&["--scenario", "saturation", "--set", "saturation.cap=1"]);
    let dir = temp_dir("validity-ramp");
    let args = ["--rate", "130", "--duration", "10s", "--interval", "100ms"];
    let (out, r) = strict_run(&dir, &server.url, &args);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(3), "--strict and not valid: {all}");
    assert!(!verdict(&r).valid);
    for name in [TestName::StationarityP50, TestName::StationarityP99] {
        let t = test(&r, name);
        assert_eq!(t.outcome, TestOutcome::Fail, "{t:?}");
        assert!(t.statistic.unwrap() > t.critical_value.unwrap(), "{t:?}");
        assert!(
            t.effect.unwrap() > 0.5,
            "the level more than doubled: {t:?}"
        );
    }
    assert!(all.contains("validity  NOT VALID"), "{all}");
    assert!(all.contains("stationary p99  FAIL"), "{all}");
}

#[test]
fn poisson_sends_from_a_starved_generator_fail_the_arrival_law() {
    let _guard = serial();
    let server = Served::start(&["--scenario", "healthy"]);
    let dir = temp_dir("validity-starved");
    // One connection and 10 ms answers: a request leaves only when the previous answer is in,
    // so no two sends are closer than 10 ms, half the 20 ms mean gap. Poisson would put 39%
    // of its gaps below that (1 − e^(−1/2)). The spacing is set by the server's fixed service
    // time, not by how busy the machine's two cores are, so the fit fails on any machine; at
    // 50% utilisation the connection still carries the whole rate, so the rate test passes
    // and the arrival law alone is what fails.
    let args = [
        "--rate",
        "50",
        "--arrival",
        "poisson",
        "--connections",
        "1",
        "--duration",
        "8s",
        "--interval",
        "250ms",
    ];
    let (out, r) = strict_run(&dir, &server.url, &args);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(3), "--strict and not valid: {all}");
    let law = test(&r, TestName::ArrivalLaw);
    assert_eq!(law.outcome, TestOutcome::Fail, "{law:?}");
    assert!(
        law.statistic.unwrap() > 3.857 && law.p_value.unwrap() < 0.01,
        "{law:?}"
    );
    assert!(law.effect.unwrap() > 0.001, "{law:?}");
    assert_eq!(test(&r, TestName::Rate).outcome, TestOutcome::Pass, "{all}");
    assert!(all.contains("arrival law     FAIL"), "{all}");
}
