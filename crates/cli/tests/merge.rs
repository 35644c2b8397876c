//! `sojourn merge` and `sojourn report` on small real runs: what a user reads when results do
//! not make one plan, and when a merge lacks a shard. (The full sharded deployment is tested in
//! `distributed.rs`.)
mod common;

use std::path::{Path, PathBuf};

use common::{read_result, sojourn, temp_dir, TestServer};

/// `sojourn run` against `url` for half a second at 200 req/s, with `extra` flags, into
/// `dir/name.json`.
fn run(dir: &Path, name: &str, url: &str, extra: &[&str]) -> PathBuf {
    let json = dir.join(format!("{name}.json"));
    let mut args = vec![
        "run",
        url,
        "--duration",
        "500ms",
        "--threads",
        "1",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = sojourn(&args);
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Results that are not shards of one plan are refused with exit 2 and one line that says why
/// in the terms the runs were made with.
#[test]
fn merge_refuses_what_is_not_one_plan_in_the_users_terms() {
    let server = TestServer::start(false);
    let url = server.url("http");
    let dir = temp_dir("merge-refusals");
    let open = ["--rate", "200"];
    let a = run(&dir, "a", &url, &open);
    let b = run(&dir, "b", &url, &open);
    let closed = run(&dir, "closed", &url, &["--closed", "-c", "2"]);
    let s0 = run(&dir, "shard-0", &url, &["--rate", "200", "--shard", "0/2"]);
    let paced = ["--closed", "--rate", "200", "-c", "2", "--shard", "1/2"];
    let paced = run(&dir, "paced-1", &url, &paced);
    let out = dir.join("m.json");
    let whole = |file: &Path, other: &Path| {
        format!(
            "{} is a whole run, not a shard (it was not run with --shard K/N), so there is nothing to merge it with {}",
            file.display(),
            other.display()
        )
    };
    let cases = [
        (
            "two ordinary runs are whole runs, not shard 0 given twice",
            [&a, &b],
            whole(&a, &b),
        ),
        (
            "an ordinary closed and open loop: whole runs, not a null arrival",
            [&closed, &a],
            whole(&closed, &a),
        ),
        (
            "shards of a paced closed and an open loop differ in their mode",
            [&s0, &paced],
            format!(
                "{}: its plan differs in mode: paced closed loop here, open loop in {}",
                paced.display(),
                s0.display()
            ),
        ),
    ];
    for (why, inputs, want) in cases {
        let o = sojourn(&[
            "merge",
            inputs[0].to_str().unwrap(),
            inputs[1].to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{why}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{why}: one line: {err}");
        assert!(err.contains(&want), "{why}: {err}");
        assert!(
            !err.contains("given twice") && !err.contains("null"),
            "{why}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A merge of one shard of two: `merge` says what is missing and exits 5, and `report` on the
/// merged file says it again and puts the not-measured count, the warning and the shard table
/// on the page.
#[test]
fn a_partial_merge_is_named_by_merge_and_by_report() {
    let server = TestServer::start(false);
    let url = server.url("http");
    let dir = temp_dir("merge-partial");
    let s0 = run(&dir, "shard-0", &url, &["--rate", "200", "--shard", "0/2"]);
    let merged = dir.join("m.json");
    let o = sojourn(&[
        "merge",
        s0.to_str().unwrap(),
        "-o",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(5), "{}", text(&o.stderr));
    let r = read_result(&merged);
    let (due, missing) = (r.counts.scheduled, r.counts.not_measured);
    assert!(missing > 0 && missing < due, "{:?}", r.counts);
    let stdout = text(&o.stdout);
    assert!(
        stdout.contains(&format!(
            "NOT MEASURED {missing} (shards missing or cut short)"
        )),
        "{stdout}"
    );
    let partial = format!(
        "PARTIAL MERGE: shard 1 missing; {missing} of {due} scheduled requests not measured"
    );
    assert!(stdout.contains(&partial), "{stdout}");
    let html = dir.join("r.html");
    let o = sojourn(&[
        "report",
        merged.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains(&format!("m.json: {partial}")), "{err}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<th>not measured (shards missing or cut short)</th>"));
    assert!(page.contains("<p class=\"bad partial\">"));
    assert!(page.contains("<section id=\"shards\">"));
    let _ = std::fs::remove_dir_all(&dir);
}
