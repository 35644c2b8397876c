//! Hostile peer-tool output: every importer, fed damaged copies of its real fixtures and random
//! bytes, never panics; it refuses with a message naming the file, or gives a result that is
//! schema-valid, round-trips and accounts for every request.
//!
//! Short under `cargo test`; `PROPTEST_CASES=1000000 cargo test --release -p sojourn-peers
//! --test fuzz` is the long campaign.
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;
use sojourn_core::{Mode, RunConfig, RunResult};
use sojourn_peers::{import, ImportContext, ImportError, PeerTool};
use sojourn_testkit::fuzz::{bytes, config, damaged, damaged_json};

/// Valid inputs of each tool: the fixture sets its importer takes (see tests/import.rs).
fn sets(tool: PeerTool) -> &'static [&'static [&'static str]] {
    match tool {
        PeerTool::Wrk => &[
            &["wrk/healthy.txt"],
            &["wrk/hiccup.txt"],
            &["wrk/not-found.txt"],
        ],
        PeerTool::Wrk2 => &[&["wrk2/healthy.txt"], &["wrk2/calibrating.txt"]],
        PeerTool::Ab => &[
            &["ab/healthy.csv", "ab/healthy.txt"],
            &["ab/healthy.txt"],
            &["ab/healthy.csv"],
        ],
        PeerTool::Hey => &[
            &["hey/healthy.csv"],
            &["hey/hiccup.csv"],
            &["hey/not-found.csv"],
            &["hey/healthy.txt"],
            &["hey/refused.csv", "hey/refused.txt"],
        ],
        PeerTool::Vegeta => &[
            &["vegeta/hiccup.csv"],
            &["vegeta/mixed.csv"],
            &["vegeta/hiccup.json"],
            &["vegeta/mixed.json"],
        ],
        PeerTool::K6 => &[
            &["k6/constant-vus.csv"],
            &["k6/dropped.csv"],
            &["k6/arrival-rate-ms.csv"],
            &["k6/dropped.summary.json"],
            &["k6/arrival-rate.summary.json"],
        ],
        PeerTool::Oha => &[
            &["oha/closed.csv"],
            &["oha/rate.csv"],
            &["oha/rate-corrected.csv", "oha/rate-corrected.json"],
            &["oha/rate.json"],
            &["oha/rate-corrected.json"],
        ],
        PeerTool::Fortio => &[
            &["fortio/hiccup.json"],
            &["fortio/healthy.access.jsonl", "fortio/healthy.json"],
        ],
        PeerTool::Locust => &[
            &["locust/healthy_stats.csv"],
            &[
                "locust/healthy_stats.csv",
                "locust/healthy.txt",
                "locust/healthy_stats_history.csv",
            ],
            &[
                "locust/not-found_stats.csv",
                "locust/not-found_failures.csv",
            ],
        ],
        PeerTool::H2load => &[
            &["h2load/healthy.log", "h2load/healthy.txt"],
            &["h2load/mixed.log", "h2load/mixed.txt"],
            &["h2load/lost.log"],
            &["h2load/hiccup-streams.txt"],
            &["h2load/conn-rate.txt"],
            &["h2load/not-h2.log", "h2load/not-h2.txt"],
        ],
        PeerTool::Ghz => &[
            &["ghz/ok.json"],
            &["ghz/deadline.json"],
            &["ghz/refused.json"],
        ],
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn ctx(mode: Mode) -> ImportContext {
    ImportContext {
        label: "fuzz".into(),
        mode,
        version: "test".into(),
        config: RunConfig {
            connections: 2,
            interval_ns: 1_000_000_000,
            ..RunConfig::default()
        },
    }
}

/// Input files: a name (kept from the fixture, for the error to name) and the bytes.
type Files = Vec<(String, Bytes)>;

/// File contents that a failing case prints as text, not as a list of numbers.
#[derive(Clone)]
struct Bytes(Vec<u8>);

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(&self.0))
    }
}

/// One fixture set of `tool` with one of its files damaged: JSON structurally (fields removed
/// or given values of the wrong kind) or as text, anything else as text.
fn damaged_set(tool: PeerTool) -> impl Strategy<Value = Files> {
    (
        proptest::sample::select(sets(tool)),
        any::<proptest::sample::Index>(),
    )
        .prop_flat_map(|(set, which)| {
            let files: Files = set
                .iter()
                .map(|name| (base_name(name), Bytes(fixture(name))))
                .collect();
            let at = which.index(files.len());
            let original = files[at].1 .0.clone();
            let json: Option<serde_json::Value> = serde_json::from_slice(&original).ok();
            let damage = match json {
                Some(doc) => prop_oneof![
                    damaged_json(doc).prop_map(String::into_bytes),
                    damaged(original),
                ]
                .boxed(),
                None => damaged(original).boxed(),
            };
            damage.prop_map(move |bytes| {
                let mut files = files.clone();
                files[at].1 = Bytes(bytes);
                files
            })
        })
}

fn base_name(name: &str) -> String {
    name.rsplit('/').next().unwrap_or(name).to_string()
}

/// Writes the files to a fresh directory and imports them.
fn import_files(tool: PeerTool, files: &Files) -> (Result<RunResult, ImportError>, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = files
        .iter()
        .map(|(name, bytes)| {
            let path = dir.path().join(name);
            std::fs::write(&path, &bytes.0).unwrap();
            path
        })
        .collect();
    let mode = if matches!(tool, PeerTool::Wrk2 | PeerTool::Vegeta) {
        Mode::Open
    } else {
        Mode::Closed
    };
    (import(tool, &paths, &ctx(mode)), paths)
}

fn validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../schema/result.schema.json")).unwrap();
        jsonschema::validator_for(&schema).unwrap()
    })
}

/// What any accepted input must give: a document the schema accepts and that reads back to
/// itself, every request accounted for, and nothing negative or not a number.
fn check_result(r: &RunResult) -> Result<(), TestCaseError> {
    let doc = serde_json::to_value(r).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let errors: Vec<String> = validator()
        .iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    prop_assert!(errors.is_empty(), "not schema-valid: {errors:#?}");
    let back: RunResult =
        serde_json::from_value(doc).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&back, r, "the document does not read back to itself");
    prop_assert_eq!(r.counts.unaccounted(), 0, "{:?}", r.counts);
    prop_assert!(
        r.rate.achieved.is_finite() && r.rate.achieved >= 0.0,
        "{:?}",
        r.rate
    );
    prop_assert!(
        r.rate.sent.is_finite() && r.rate.sent >= 0.0,
        "{:?}",
        r.rate
    );
    let p = &r.histograms.response.percentiles.0;
    prop_assert!(
        p.iter().all(|(q, _)| (0.0..=100.0).contains(q)),
        "percentiles outside 0-100: {p:?}"
    );
    Ok(())
}

/// A refusal names one of the files, or (for a wrong set of files) the tool.
fn check_error(tool: PeerTool, e: &ImportError, paths: &[PathBuf]) -> Result<(), TestCaseError> {
    let message = e.to_string();
    prop_assert!(!message.trim().is_empty());
    let names_a_file = paths
        .iter()
        .any(|p| message.contains(&p.display().to_string()));
    match e {
        ImportError::Files { .. } => prop_assert!(message.contains(tool.name()), "{message}"),
        _ => prop_assert!(names_a_file, "names no file: {message}"),
    }
    Ok(())
}

fn check(tool: PeerTool, files: &Files) -> Result<(), TestCaseError> {
    let (result, paths) = import_files(tool, files);
    match result {
        Ok(r) => check_result(&r),
        Err(e) => check_error(tool, &e, &paths),
    }
}

/// The result without where it came from (the scratch directory differs between imports).
fn without_source(r: RunResult) -> serde_json::Value {
    let mut doc = serde_json::to_value(r).unwrap();
    doc["import"]["source"] = serde_json::Value::Null;
    doc
}

/// One property per tool, so a campaign's figures and a failure's name say which importer.
macro_rules! importer {
    ($name:ident, $tool:expr) => {
        mod $name {
            use super::*;

            proptest! {
                #![proptest_config(config(192))]

                #[test]
                fn damaged_output_is_refused_by_name_or_sound(files in damaged_set($tool)) {
                    check($tool, &files)?;
                }

                #[test]
                fn random_bytes_are_refused_by_name(
                    files in proptest::collection::vec(bytes(2048), 1..=2),
                ) {
                    let files: Files = files
                        .into_iter()
                        .enumerate()
                        .map(|(i, b)| (format!("random-{i}.txt"), Bytes(b)))
                        .collect();
                    check($tool, &files)?;
                }
            }

            proptest! {
                // A handful of fixture sets, two line ends: few cases cover them.
                #![proptest_config(config(8))]

                /// CRLF line ends and a trailing blank line change nothing.
                #[test]
                fn line_ends_change_nothing(
                    set in proptest::sample::select(sets($tool)),
                    crlf in any::<bool>(),
                ) {
                    let files: Files =
                        set.iter().map(|n| (base_name(n), Bytes(fixture(n)))).collect();
                    let want = import_files($tool, &files).0.ok().map(without_source);
                    let relaid: Files = files
                        .into_iter()
                        .map(|(name, b)| {
                            let text = String::from_utf8(b.0).unwrap();
                            let text = if crlf { text.replace('\n', "\r\n") } else { text };
                            (name, Bytes(format!("{text}\n").into_bytes()))
                        })
                        .collect();
                    let got = import_files($tool, &relaid).0.ok().map(without_source);
                    prop_assert_eq!(got, want);
                }
            }
        }
    };
}

importer!(wrk, PeerTool::Wrk);
importer!(wrk2, PeerTool::Wrk2);
importer!(ab, PeerTool::Ab);
importer!(hey, PeerTool::Hey);
importer!(vegeta, PeerTool::Vegeta);
importer!(k6, PeerTool::K6);
importer!(oha, PeerTool::Oha);
importer!(fortio, PeerTool::Fortio);
importer!(locust, PeerTool::Locust);
importer!(h2load, PeerTool::H2load);
importer!(ghz, PeerTool::Ghz);

// ---- inputs that once crashed ------------------------------------------------------------------

/// Imports one file of `text`; the result or the error's message.
fn import_text(tool: PeerTool, name: &str, text: &str) -> Result<RunResult, String> {
    let files: Files = vec![(name.to_string(), Bytes(text.as_bytes().to_vec()))];
    import_files(tool, &files).0.map_err(|e| e.to_string())
}

const WRK: &str = "Running 1s test @ http://127.0.0.1:39765/nope
  1 threads and 2 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   187.72us   54.71us 349.00us   68.10%
  Latency Distribution
     50%  197.00us
     99%  306.00us
  210 requests in 1.11s, 31.17KB read
";

/// wrk counted socket errors one `add` at a time: 2^64 - 1 of them never finished.
#[test]
fn a_huge_socket_error_count_is_counted_at_once() {
    let text =
        format!("{WRK}  Socket errors: connect 18446744073709551615, read 0, write 0, timeout 0\n");
    let e = import_text(PeerTool::Wrk, "huge.txt", &text).unwrap_err();
    assert!(
        e.contains("huge.txt") && e.contains("request counts add up"),
        "{e}"
    );
    let text = format!("{WRK}  Socket errors: connect 4000000000, read 0, write 0, timeout 0\n");
    let r = import_text(PeerTool::Wrk, "large.txt", &text).unwrap();
    assert_eq!(r.counts.failed.total(), 4_000_000_000);
}

/// A percentile line of "1e308%" (wrk) or "-0%" (ab) became a key the schema refuses.
#[test]
fn a_percentile_beyond_0_to_100_is_refused_by_line() {
    let text = WRK.replace("     99%", "     1e308%");
    let e = import_text(PeerTool::Wrk, "p.txt", &text).unwrap_err();
    assert!(
        e.contains("p.txt:7: percentile: 1e308 is not a percentile"),
        "{e}"
    );
    let text = WRK.replace("     50%", "     -0%");
    let r = import_text(PeerTool::Wrk, "zero.txt", &text).unwrap();
    assert_eq!(r.histograms.response.percentiles.0[0].0.to_string(), "0");
}

/// locust's run time is count / rate: a rate of 1e-320 made `Duration::from_secs_f64` panic.
#[test]
fn a_vanishing_request_rate_is_refused_by_line() {
    let text = "Type,Name,Request Count,Failure Count,Median Response Time,Average Response Time,Min Response Time,Max Response Time,Average Content Size,Requests/s,Failures/s,50%,100%
,Aggregated,100,0,13,13.3,11.8,22.9,3.0,1e-320,0.0,13,23
";
    let e = import_text(PeerTool::Locust, "x_stats.csv", text).unwrap_err();
    assert!(
        e.contains("x_stats.csv:2: Request Count / Requests/s"),
        "{e}"
    );
}

/// k6 kept one timestamp per dropped iteration: a count of 10^15 asked for 8 PB of memory.
#[test]
fn a_huge_dropped_iterations_count_takes_no_memory() {
    let text = "metric_name,timestamp,metric_value,error_code,expected_response,method,scenario,status,extra_tags,metadata
http_req_duration,1795272006,10.5,,true,GET,open,200,,
dropped_iterations,1795272006,1e15,,,,open,,,
";
    let r = import_text(PeerTool::K6, "dropped.csv", text).unwrap();
    assert_eq!(r.counts.never_sent, 1_000_000_000_000_000);
    assert_eq!(r.counts.unaccounted(), 0);
}

/// A dropped_iterations count of 2^63 - 1 went into a histogram that could then not be
/// written (its counts are stored as i64): a panic.
#[test]
fn a_dropped_iterations_count_beyond_any_histogram_is_refused_by_line() {
    let text = "metric_name,timestamp,metric_value,error_code,expected_response,method,scenario,status,extra_tags,metadata
http_req_duration,1795272006,10.5,,true,GET,open,200,,
dropped_iterations,1795272006,9223372036854775807,,,,open,,,
";
    let e = import_text(PeerTool::K6, "dropped.csv", text).unwrap_err();
    assert!(e.contains("dropped.csv:3: dropped_iterations"), "{e}");
}
