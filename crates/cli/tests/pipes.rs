//! Pipes: `--json -` writes the document to standard output and everything else to standard
//! error, on every command that writes one; `report -`, `diff - B` (and `diff A -`) and
//! `merge -` read a document from standard input. The commands are spawned as a shell would,
//! with real pipes between them, and standard output is parsed whole: one JSON document and
//! nothing else.
mod common;

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use common::{temp_dir, TestServer};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sojourn"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// All of standard output as one JSON document: anything before or after it fails.
fn only_document(out: &Output, what: &str) -> Value {
    assert!(
        out.status.success(),
        "{what}: {:?}\n{}",
        out.status,
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: standard output is not one JSON document ({e}):\n{}",
            text(&out.stdout)
        )
    })
}

/// `sojourn ARGS` with standard input from `stdin` (nothing when `None`).
fn sojourn_with_input(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = bin()
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(bytes) = stdin {
        // A command that refuses its arguments exits before reading: a closed pipe is its answer,
        // judged from its exit status and output, not a failure to write.
        let _ = child.stdin.take().unwrap().write_all(bytes);
    }
    child.wait_with_output().unwrap()
}

/// `sojourn run URL … --json - | tee COPY | sojourn report - -o r.html`, three processes and two
/// real pipes: the report reads the run from its standard input, and the copy `tee` passed on
/// is exactly one JSON document, the run's.
#[test]
fn run_json_stdout_pipes_into_report() {
    let server = TestServer::start(false);
    let dir = temp_dir("pipe-run-report");
    let copy = dir.join("copy.json");
    let page = dir.join("r.html");
    let mut run = bin()
        .args([
            "run",
            &server.url("http"),
            "--rate",
            "100",
            "--duration",
            "1s",
        ])
        .args(["--threads", "1", "--label", "piped run", "--json", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut tee = Command::new("tee")
        .arg(&copy)
        .stdin(run.stdout.take().unwrap())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let report = bin()
        .args(["report", "-", "-o", arg(&page)])
        .stdin(tee.stdout.take().unwrap())
        .output()
        .unwrap();
    let run = run.wait_with_output().unwrap();
    assert!(tee.wait().unwrap().success());
    assert!(run.status.success(), "run: {}", text(&run.stderr));
    assert!(report.status.success(), "report: {}", text(&report.stderr));
    // The summary went to standard error, whole.
    let summary = text(&run.stderr);
    assert!(summary.contains("requests  scheduled 100"), "{summary}");
    let doc: Value = serde_json::from_slice(&std::fs::read(&copy).unwrap())
        .unwrap_or_else(|e| panic!("the run's standard output is not one document: {e}"));
    assert_eq!(doc["schema"], "sojourn.result/5");
    assert_eq!(doc["counts"]["scheduled"], 100);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("piped run"), "the page shows the piped run");
    assert!(
        text(&report.stderr).contains("wrote") && report.stdout.is_empty(),
        "{}",
        text(&report.stderr)
    );
}

/// `sojourn sim … --json - | sojourn diff - B.json`: the baseline from standard input through a
/// real pipe; and `diff A.json -` from a file on standard input. Both print what the two files
/// given by name print.
#[test]
fn diff_reads_either_side_from_standard_input() {
    let dir = temp_dir("pipe-diff");
    let (a, b) = common::healthy_and_hiccup_runs(&dir);
    let by_name = sojourn_with_input(&["diff", arg(&a), arg(&b), "--draws", "200"], None);
    assert!(by_name.status.success(), "{}", text(&by_name.stderr));
    let table = |out: &Output| -> String {
        // The lines after "A = …" and "B = …", which name the files.
        text(&out.stdout)
            .lines()
            .skip(2)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut sim = bin()
        .args([
            "sim",
            "--scenario",
            "healthy",
            "--client",
            "open",
            "--rate",
            "200",
        ])
        .args(["--duration", "5s", "--json", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let piped = bin()
        .args(["diff", "-", arg(&b), "--draws", "200"])
        .stdin(sim.stdout.take().unwrap())
        .output()
        .unwrap();
    assert!(sim.wait().unwrap().success());
    assert!(piped.status.success(), "{}", text(&piped.stderr));
    assert!(text(&piped.stdout).starts_with("A = - (standard input) (open)\n"));
    assert_eq!(table(&piped), table(&by_name));
    let b_in = sojourn_with_input(
        &["diff", arg(&a), "-", "--draws", "200"],
        Some(&std::fs::read(&b).unwrap()),
    );
    assert!(b_in.status.success(), "{}", text(&b_in.stderr));
    assert_eq!(table(&b_in), table(&by_name));
}

/// `sojourn run --shard` twice; `merge - shard-1.json -o -` reads shard 0 from standard input
/// and writes the merged result, alone, to standard output.
#[test]
fn merge_reads_a_shard_from_standard_input() {
    let server = TestServer::start(false);
    let url = server.url("http");
    let dir = temp_dir("pipe-merge");
    let shards = common::shard_runs(&url, "200", 2, &dir, "shard-");
    let out = sojourn_with_input(
        &["merge", "-", arg(&shards[1]), "-o", "-"],
        Some(&std::fs::read(&shards[0]).unwrap()),
    );
    let merged = only_document(&out, "merge - shard-1.json -o -");
    assert_eq!(merged["counts"]["scheduled"], 100);
    assert_eq!(merged["counts"]["completed"], 100);
    assert_eq!(merged["counts"]["not_measured"].as_u64().unwrap_or(0), 0);
    assert_eq!(merged["merged"]["partial"], false);
    let sources: Vec<&str> = merged["merged"]["shards"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["source"].as_str())
        .collect();
    assert!(sources.contains(&"- (standard input)"), "{sources:?}");
    let summary = text(&out.stderr);
    assert!(summary.contains("merged: standard output"), "{summary}");
}

/// Every command that writes a JSON document, with `--json -` (merge: `-o -` and `--json -`):
/// standard output is that document and nothing else, of the command's schema, and what the
/// command prints besides (its summary or table) is on standard error.
#[test]
fn every_document_alone_on_standard_output() {
    let server = TestServer::start(false);
    let url = server.url("http");
    let dir = temp_dir("pipe-every");
    let (a, b) = common::healthy_and_hiccup_runs(&dir);
    let shards = common::shard_runs(&url, "100", 2, &dir, "s");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let suite_out = dir.join("suite");
    let html = dir.join("page.html");
    let (s0, s1) = (arg(&shards[0]), arg(&shards[1]));
    // (command line, the document's schema, a line of what the command prints besides)
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (
            vec![
                "run",
                &url,
                "--rate",
                "100",
                "--duration",
                "500ms",
                "--threads",
                "1",
                "--json",
                "-",
            ],
            "sojourn.result/5",
            "requests  scheduled 50",
        ),
        (
            vec![
                "sim",
                "--client",
                "open",
                "--rate",
                "100",
                "--duration",
                "1s",
                "--json",
                "-",
            ],
            "sojourn.result/5",
            "requests  scheduled 100",
        ),
        (
            vec![
                "sim",
                "--scenario",
                "bimodal",
                "--sweep",
                "--rates",
                "10,20",
                "--step",
                "2s",
                "--json",
                "-",
            ],
            "sojourn.sweep/1",
            "simulated sweep",
        ),
        (
            vec![
                "sweep",
                &url,
                "--rates",
                "50",
                "--step",
                "1s",
                "--settle",
                "0s",
                "--threads",
                "1",
                "--json",
                "-",
            ],
            "sojourn.sweep/1",
            "service p99",
        ),
        (
            vec!["diff", arg(&a), arg(&b), "--draws", "200", "--json", "-"],
            "sojourn.diff/1",
            "Intervals: ",
        ),
        (
            vec!["merge", s0, s1, "-o", "-"],
            "sojourn.result/5",
            "merged: standard output",
        ),
        (
            vec!["merge", s0, s1, "--json", "-"],
            "sojourn.result/5",
            "shards (2 of 2)",
        ),
        (
            vec![
                "compare",
                &url,
                "--rate",
                "100",
                "--duration",
                "500ms",
                "--threads",
                "1",
                "--report",
                arg(&html),
                "--json",
                "-",
            ],
            "sojourn.compare/1",
            "verdict: ",
        ),
        (
            vec![
                "suite",
                "--scenarios",
                "healthy",
                "--tools",
                "wrk",
                "--duration",
                "500ms",
                "--rate",
                "100",
                "--out",
                arg(&suite_out),
                "--json",
                "-",
            ],
            "sojourn.suite/1",
            "wrk: skipped: not installed",
        ),
    ];
    for (args, schema, printed) in cases {
        let what = format!("sojourn {}", args.join(" "));
        let out = bin()
            .args(&args)
            .env("PATH", "/nonexistent")
            .env("HOME", &home)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let doc = only_document(&out, &what);
        assert_eq!(doc["schema"], schema, "{what}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(printed),
            "{what}: {printed:?} not on stderr:\n{stderr}"
        );
    }
}

/// Standard input holds one document: `-` twice is bad input (exit 2, one line saying so),
/// and so is `sim --client both --json -`, whose two documents cannot share standard output.
#[test]
fn standard_input_twice_and_two_documents_on_standard_output_are_refused() {
    let dir = temp_dir("pipe-twice");
    let (a, _) = common::healthy_and_hiccup_runs(&dir);
    let doc = std::fs::read(&a).unwrap();
    let page = dir.join("r.html");
    for (args, says) in [
        (
            vec!["report", "-", "-", "-o", arg(&page)],
            "error: - (standard input) is given 2 times: it holds one document",
        ),
        (
            vec!["diff", "-", "-"],
            "error: A, B: - (standard input) is given 2 times",
        ),
        (
            vec!["merge", "-", arg(&a), "-", "-o", "-"],
            "error: RESULT: - (standard input) is given 2 times",
        ),
        (
            vec!["sim", "--client", "both", "--duration", "1s", "--json", "-"],
            "error: --json: - (standard output) holds one document and --client both writes two",
        ),
    ] {
        let out = sojourn_with_input(&args, Some(&doc));
        let what = args.join(" ");
        assert_eq!(out.status.code(), Some(2), "{what}: {}", text(&out.stderr));
        let err = text(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(err.starts_with(says), "{what}: {err}");
        assert!(out.stdout.is_empty(), "{what}: {}", text(&out.stdout));
    }
    assert!(!page.exists());
}
