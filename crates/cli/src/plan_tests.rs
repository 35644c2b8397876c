#![cfg(test)]
//! `run --plan FILE` from the command line: a flag given there wins over the file, and a bad
//! key is named with the file. (The file's format is `sojourn::plan_file`.)
use std::path::{Path, PathBuf};

use sojourn::plan_file::apply;
use sojourn::transport::TargetsOrder;
use sojourn::RunSettings;

/// A plan file alone in a directory of its own, removed with it.
struct Plan(PathBuf);

impl Drop for Plan {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

impl std::ops::Deref for Plan {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

/// A plan file holding `text`.
fn plan(name: &str, text: &str) -> Plan {
    let dir = std::env::temp_dir().join(format!("sojourn-plan-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    Plan(path)
}

/// `sojourn run --plan PATH FLAGS…` as the command line parses it, with the plan applied.
fn applied(path: &Path, flags: &[&str]) -> anyhow::Result<RunSettings> {
    let mut argv = vec!["sojourn", "run", "--plan", path.to_str().unwrap()];
    argv.extend(flags);
    let cli = crate::cli::parse_from(argv).expect("the flags parse");
    let crate::cli::Command::Run(a) = cli.command else {
        panic!("a run")
    };
    let mut a: RunSettings = (*a).into();
    apply(&mut a, path)?;
    Ok(a)
}

fn error(path: &Path, flags: &[&str]) -> String {
    match applied(path, flags) {
        Ok(a) => panic!("accepted: {a:?}"),
        Err(e) => e.to_string(),
    }
}

const MANY: &str = r#"
targets = "targets.txt"
targets_order = "random"
http2 = true
streams = 64
rate = 100
duration = "2s"
"#;

#[test]
fn targets_and_http2_come_from_the_plan_beside_it() {
    let path = plan("many", MANY);
    let a = applied(&path, &[]).unwrap();
    assert_eq!(
        a.workload.targets.as_deref(),
        Some(path.parent().unwrap().join("targets.txt").as_path()),
        "relative to the plan's directory, not the working one"
    );
    assert_eq!(a.workload.targets_order, TargetsOrder::Random);
    assert!(a.protocol.http2);
    assert_eq!(a.protocol.streams, Some(64));
    assert_eq!(a.workload.url, None);
    let absolute = std::env::temp_dir().join("elsewhere.txt");
    let text = MANY.replace("targets.txt", absolute.to_str().unwrap());
    let a = applied(&plan("absolute", &text), &[]).unwrap();
    assert_eq!(
        a.workload.targets,
        Some(absolute),
        "an absolute path as it is"
    );
    // Without the keys, HTTP/1.1 and one URL as before.
    let a = applied(&plan("plain", "url = \"http://127.0.0.1:1/\""), &[]).unwrap();
    assert!(!a.protocol.http2 && a.protocol.streams.is_none() && a.workload.targets.is_none());
    assert_eq!(a.workload.url.as_deref(), Some("http://127.0.0.1:1/"));
}

#[test]
fn flags_on_the_command_line_win_over_the_plan() {
    let path = plan("flags", MANY);
    let a = applied(
        &path,
        &["--targets", "mine.txt", "--targets-order", "round-robin"],
    )
    .unwrap();
    assert_eq!(
        a.workload.targets,
        Some(PathBuf::from("mine.txt")),
        "as typed"
    );
    assert_eq!(a.workload.targets_order, TargetsOrder::RoundRobin);
    let a = applied(&path, &["--targets", "mine.txt"]).unwrap();
    assert_eq!(
        a.workload.targets_order,
        TargetsOrder::Random,
        "the plan's order"
    );
    let a = applied(&path, &["--http2", "--streams", "8"]).unwrap();
    assert_eq!(a.protocol.streams, Some(8));
    // A URL on the command line sends that URL: the plan's targets and order stay out.
    let a = applied(&path, &["http://127.0.0.1:1/one"]).unwrap();
    assert_eq!(a.workload.targets, None);
    assert_eq!(a.workload.targets_order, TargetsOrder::RoundRobin);
    assert_eq!(a.workload.url.as_deref(), Some("http://127.0.0.1:1/one"));
    assert!(a.protocol.http2, "the protocol still comes from the plan");
    // The plan's single request stays out of a run of targets from the command line.
    let one = plan(
        "one",
        "url = \"http://127.0.0.1:1/\"\nmethod = \"POST\"\nbody = \"x\"",
    );
    let a = applied(&one, &["--targets", "mine.txt"]).unwrap();
    assert_eq!(
        (a.workload.url, a.workload.method, a.workload.body),
        (None, None, None)
    );
}

#[test]
fn bad_keys_name_the_plan_the_key_and_what_is_accepted() {
    let cases: [(&str, &[&str], &str); 7] = [
        (
            "url = \"http://127.0.0.1:1/\"\ntargets = \"t.txt\"",
            &[],
            "targets: give url or targets, not both",
        ),
        (
            "targets = \"t.txt\"\nmethod = \"POST\"",
            &[],
            "targets: each target gives its own method, headers and body; drop method",
        ),
        (
            "targets = \"t.txt\"",
            &["--body", "x"],
            "targets: each target gives its own method, headers and body; drop --body",
        ),
        (
            "targets = \"t.txt\"\ntargets_order = \"shuffled\"",
            &[],
            "targets_order: expected round-robin or random, got \"shuffled\"",
        ),
        (
            "url = \"http://127.0.0.1:1/\"\ntargets_order = \"random\"",
            &[],
            "targets_order: only with targets",
        ),
        (
            "url = \"http://127.0.0.1:1/\"\nstreams = 8",
            &[],
            "streams: streams are HTTP/2's: set http2 = true (or give --http2)",
        ),
        (
            "url = \"http://127.0.0.1:1/\"\nhttp2 = true\nstreams = 0",
            &[],
            "streams: expected a whole number from 1 to",
        ),
    ];
    for (i, (text, flags, want)) in cases.into_iter().enumerate() {
        let path = plan(&format!("bad{i}"), text);
        let e = error(&path, flags);
        let named = format!("--plan: {}: {want}", path.display());
        assert!(e.starts_with(&named), "{text:?} {flags:?}: {e}");
    }
    let path = plan("typo", "http_2 = true");
    assert!(error(&path, &[]).contains("unknown field `http_2`"));
}
