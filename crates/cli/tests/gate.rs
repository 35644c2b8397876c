//! `--slo` and `--junit` on `run` and `report`: the real binary against real servers on
//! 127.0.0.1, and its JUnit files checked against the schema CI systems validate with.
mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::tolerance::control_floor;
use common::*;
use sojourn_testkit::control::on_a_quiet_machine_with_floor;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Validates `xml` with xmllint against Jenkins' junit-10.xsd (fetched by `.ci/run`).
fn assert_valid_junit(xml: &Path) {
    let (Some(xsd), Some(xmllint)) = (
        sojourn_testkit::junit_schema(),
        sojourn_testkit::on_path("xmllint"),
    ) else {
        sojourn_testkit::skip("JUnit schema validation needs xmllint and junit-10.xsd");
        return;
    };
    let validate = |file: &Path| {
        Command::new(&xmllint)
            .args(["--noout", "--schema"])
            .arg(&xsd)
            .arg(file)
            .output()
            .expect("running xmllint")
    };
    let out = validate(xml);
    assert!(
        out.status.success(),
        "{} does not validate: {}",
        xml.display(),
        stderr(&out)
    );
    // The validator really validates: a test case without its required name is refused.
    let broken = xml.with_extension("broken.xml");
    let text = std::fs::read_to_string(xml).unwrap();
    std::fs::write(
        &broken,
        text.replacen("<testcase name=", "<testcase title=", 1),
    )
    .unwrap();
    assert!(
        !validate(&broken).status.success(),
        "the schema must refuse a nameless test case"
    );
}

#[test]
fn objectives_that_hold_exit_0_with_a_passing_junit_file() {
    let _guard = serial();
    let server = TestServer::start(false);
    let dir = temp_dir("gate-pass");
    let (junit, json) = (dir.join("pass.xml"), dir.join("pass.json"));
    let url = server.url("http");
    // The p99 objective rests on the eighty slowest requests spread over the run. A pause of
    // the whole machine bunches a score of them into one interval, and the run then cannot
    // bound p99 (a CI run met a 28 ms one: upper end open, TOO FEW SAMPLES, exit 4). That is
    // the gate being right about such a run, so a run that met one is run again under CI.
    let out = on_a_quiet_machine_with_floor("objectives that hold", || {
        let out = sojourn(&[
            "run",
            &url,
            "--rate",
            "1000",
            "--duration",
            "8s",
            // Eighty intervals and eighty requests beyond p99: enough independent stretches
            // for an interval on it, even when a few-millisecond hiccup of the machine bunches
            // a score of them into one interval (a 4 s run that met one gave TOO FEW SAMPLES).
            "--interval",
            "100ms",
            "--slo",
            "p99<500ms",
            "--slo",
            "errors<1%",
            "--slo",
            "rate>=99%",
            "--junit",
            junit.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ]);
        let floor = control_floor(&json);
        (out, floor)
    });
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("gate: PASS (3 objectives met)"), "{text}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 3, "{xml}");
    assert!(!xml.contains("<failure"), "{xml}");
    assert_valid_junit(&junit);
}

/// Runs 500 req/s for 2 s against `sojourn serve --scenario hiccup`, whose gate stalls from
/// 0.5 s to 1.5 s after the first request, with 250 ms intervals.
fn run_through_a_hiccup(dir: &Path, slos: &[&str]) -> Output {
    let mut server = spawn(&[
        "serve",
        "--scenario",
        "hiccup",
        "--listen",
        "127.0.0.1:0",
        "--set",
        "hiccup.at=500ms",
        "--set",
        "hiccup.duration=1s",
        "--set",
        "hiccup.baseline=1ms",
    ]);
    let url = format!("http://{}/api", listening_addr(&mut server));
    let (json, junit) = (dir.join("hiccup.json"), dir.join("hiccup.xml"));
    let mut args = vec![
        "run",
        &url,
        "--rate",
        "500",
        "--duration",
        "2s",
        "--interval",
        "250ms",
        "--json",
        json.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ];
    for s in slos {
        args.extend(["--slo", s]);
    }
    let out = sojourn(&args);
    let _ = server.kill();
    let _ = server.wait();
    out
}

#[test]
fn one_stall_is_too_few_stretches_to_judge_p99_and_report_judges_the_saved_result() {
    let _guard = serial();
    let dir = temp_dir("gate-stall");
    let out = run_through_a_hiccup(&dir, &["p99<200ms", "p50<5s"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(4), "{text}{}", stderr(&out));
    let p99 = text
        .lines()
        .find(|l| l.starts_with("p99<200ms"))
        .expect(&text);
    // One stall is one stretch beyond p99: however far over the limit, the run cannot
    // support an interval for p99 (the order statistics would have called it a significant
    // breach), and says what would.
    assert!(p99.contains("TOO FEW SAMPLES"), "{text}");
    assert!(
        text.contains("p99<200ms not judged: too few independent stretches"),
        "{text}"
    );
    assert!(
        text.contains("gate: FAIL (0 breached, 2 too few samples to judge)"),
        "{text}"
    );
    let junit = dir.join("hiccup.xml");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<failure").count(), 2, "{xml}");
    assert_eq!(xml.matches("type=\"too-few-samples\"").count(), 2, "{xml}");
    assert_valid_junit(&junit);

    let json = dir.join("hiccup.json");
    let html = dir.join("hiccup.html");
    let report = |slos: &[&str]| {
        let mut args = vec![
            "report",
            json.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ];
        for s in slos {
            args.extend(["--slo", s]);
        }
        sojourn(&args)
    };
    let few = report(&["p99<200ms"]);
    assert_eq!(few.status.code(), Some(4), "{}", stdout(&few));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<section id=\"gate\">") && page.contains("TOO FEW SAMPLES"));
    assert!(page.contains("too few independent stretches"));
    // What needs no interval is still judged: the sends are counted exactly.
    let pass = report(&["rate>=99%"]);
    assert_eq!(pass.status.code(), Some(0), "{}", stdout(&pass));
    assert!(stdout(&pass).contains("gate: PASS"));
    let staged = report(&["2:p99<1s"]);
    assert_eq!(staged.status.code(), Some(2));
    assert!(
        stderr(&staged).starts_with("error: --slo: 2:p99<1s: the run has no stages"),
        "{}",
        stderr(&staged)
    );
    judge_stages(&json, &dir);
}

/// The saved result with three stages written in: `calm` before the stall, `stall`, `tail`.
/// The stalled requests are all released at 1.5 s, so they finish in `tail`'s intervals.
fn judge_stages(json: &Path, dir: &Path) {
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let stage = |name: &str, start_ms: u64, ms: u64| serde_json::json!({"name": name, "start_ns": start_ms * 1_000_000, "duration_ns": ms * 1_000_000, "from": 500.0, "to": 500.0});
    doc["config"]["stages"] = serde_json::json!([
        stage("calm", 0, 500),
        stage("stall", 500, 1000),
        stage("tail", 1500, 500)
    ]);
    let staged = dir.join("staged.json");
    std::fs::write(&staged, doc.to_string()).unwrap();
    let html = dir.join("staged.html");
    let report = |slos: &[&str]| {
        let mut args = vec![
            "report",
            staged.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ];
        for s in slos {
            args.extend(["--slo", s]);
        }
        sojourn(&args)
    };
    let out = report(&[
        "calm:p90<200ms",
        "1:errors<5%",
        "stall:rate>=99%",
        "3:p90<200ms",
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(4), "{text}");
    let row = |prefix: &str| {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix}: {text}"))
            .to_string()
    };
    // Two intervals before the stall: too few stretches for an interval on their p90.
    assert!(row("calm:p90<200ms").contains("TOO FEW SAMPLES"), "{text}");
    assert!(row("1:errors<5%").contains(" calm "), "{text}");
    assert!(row("stall:rate>=99%").contains("BREACHED"), "{text}");
    assert!(
        row("3:p90<200ms").contains(" tail ") && row("3:p90<200ms").contains("TOO FEW SAMPLES"),
        "{text}"
    );
    let unknown = report(&["nope:p99<1s"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown)
            .contains("there is no stage nope; the run's stages are 1 (calm), 2 (stall), 3 (tail)"),
        "{}",
        stderr(&unknown)
    );
}

#[test]
fn bad_objectives_exit_2_naming_the_flag() {
    for args in [
        &[
            "run",
            "http://127.0.0.1:9/api",
            "--rate",
            "10",
            "--slo",
            "p99>1s",
        ][..],
        &[
            "run",
            "http://127.0.0.1:9/api",
            "--rate",
            "10",
            "--slo",
            "errors<5",
        ],
        &["report", "/nonexistent.json", "--slo", "rate>99%"],
        &["report", "/nonexistent.json", "--slo", "0:p99<1s"],
    ] {
        let out = sojourn(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("error: --slo: "), "{args:?}: {err}");
        assert!(
            err.contains("like") || err.contains("e.g."),
            "{args:?}: no example in {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    let out = sojourn(&[
        "run",
        "http://127.0.0.1:9/api",
        "--rate",
        "10",
        "--junit",
        "x.xml",
    ]);
    assert_eq!(out.status.code(), Some(2), "--junit needs --slo");
    assert!(stderr(&out).contains("--slo"), "{}", stderr(&out));
}
