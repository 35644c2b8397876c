//! Hostile result files, the input of `sojourn report` and `sojourn diff`: the loader never
//! panics and names the file it refuses; what it accepts reads back to itself and can be
//! rendered, diffed, summarised and written as an `.hlog` without a panic. Per-request samples
//! files, which `report` loads beside a result, get the same treatment.
//!
//! Short under `cargo test`; `PROPTEST_CASES=1000000 cargo test --release -p sojourn-report
//! --test fuzz` is the long campaign.
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use sojourn_core::diff::{diff, DiffOptions};
use sojourn_core::RunResult;
use sojourn_report::html::{render, HtmlOptions, ReportRun};
use sojourn_report::load::parse_result;
use sojourn_report::samples::{read_downsampled, SampleReader};
use sojourn_testkit::fuzz::{bytes, config, damaged, damaged_json, damaged_text};

/// Real results, from `run` against the hiccup scenario (see tests/common).
const RESULTS: [&str; 2] = ["hiccup-open.json", "hiccup-closed.json"];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn text(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

/// The name every refusal must give.
const NAME: &str = "damaged.json";

/// Loads `text` as the file [`NAME`]. A refusal must name it; what is accepted must write out
/// and load back to the same result.
fn load(text: &str) -> Result<Option<RunResult>, TestCaseError> {
    match parse_result(Path::new(NAME), text) {
        Ok(r) => {
            let written = serde_json::to_string(&r)
                .map_err(|e| TestCaseError::fail(format!("cannot be written back: {e}")))?;
            let back = parse_result(Path::new(NAME), &written)
                .map_err(|e| TestCaseError::fail(format!("its own output is refused: {e}")))?;
            prop_assert_eq!(&back, &r);
            // The cheap things every reader of a result does (the report's board, `diff`'s
            // header); rendering and diffing are in their own, slower property.
            let _ = r.counts.unaccounted();
            let _ = sojourn_report::text::describe(&r);
            Ok(Some(r))
        }
        Err(e) => {
            let message = e.to_string();
            prop_assert!(message.contains(NAME), "names no file: {message}");
            Ok(None)
        }
    }
}

fn damaged_result_text() -> impl Strategy<Value = String> {
    proptest::sample::select(&RESULTS[..]).prop_flat_map(|name| damaged_text(&text(name)))
}

fn damaged_result_json() -> impl Strategy<Value = String> {
    proptest::sample::select(&RESULTS[..])
        .prop_flat_map(|name| damaged_json(serde_json::from_str(&text(name)).unwrap()))
}

/// Everything `report` and `diff` do with a loaded result. Each may refuse (a damaged `hdr`),
/// none may panic.
fn use_result(r: RunResult) {
    let original = parse_result(Path::new(NAME), &text(RESULTS[0])).unwrap();
    let options = DiffOptions {
        level: 0.95,
        draws: 100,
        seed: 1,
    };
    let _ = diff(&r, &original, options);
    let _ = diff(&original, &r, options);
    let _ = sojourn_report::text::summary(&r);
    let _ = sojourn_report::text::statistics(&r);
    let _ = sojourn_report::hlog::write(Vec::new(), &r, None);
    let runs = [
        ReportRun {
            source: NAME.into(),
            result: r,
            samples: Vec::new(),
        },
        ReportRun {
            source: "original.json".into(),
            result: original,
            samples: Vec::new(),
        },
    ];
    let _ = render(&runs, &HtmlOptions::default());
}

/// A samples file of each format, as `run --samples` writes them: the binary fixture and the
/// first 200 of its records as CSV.
fn samples_files() -> [(&'static str, Vec<u8>); 2] {
    let bin = std::fs::read(fixture("hiccup-open.samples.bin")).unwrap();
    let mut csv = "# sojourn samples v1, sampling ratio 1\n\
                   intended_offset_ns,response_ns,service_ns,outcome\n"
        .to_string();
    for s in SampleReader::open(&fixture("hiccup-open.samples.bin"))
        .unwrap()
        .take(200)
    {
        let s = s.unwrap();
        let outcome = match s.outcome {
            sojourn_core::Outcome::Ok => "ok",
            sojourn_core::Outcome::Failed(c) => c.name(),
        };
        csv.push_str(&format!(
            "{},{},{},{outcome}\n",
            s.intended_offset.as_nanos(),
            s.response.as_nanos(),
            s.service.as_nanos()
        ));
    }
    [
        ("damaged.samples.bin", bin),
        ("damaged.samples.csv", csv.into_bytes()),
    ]
}

proptest! {
    // Loading takes a fraction of a millisecond: many cases, so that damage reaches each of
    // the document's fields under plain `cargo test`.
    #![proptest_config(config(2048))]

    #[test]
    fn any_text_is_refused_by_name(text in any::<String>()) {
        prop_assert!(load(&text)?.is_none());
    }

    #[test]
    fn damaged_text_is_refused_by_name_or_reads_back(text in damaged_result_text()) {
        load(&text)?;
    }

    #[test]
    fn damaged_fields_are_refused_by_name_or_read_back(text in damaged_result_json()) {
        load(&text)?;
    }
}

proptest! {
    // Rendering a report is the slow part (charts): fewer cases by default.
    #![proptest_config(config(32))]

    #[test]
    fn accepted_results_can_be_reported_and_diffed(text in damaged_result_json()) {
        if let Some(r) = load(&text)? {
            use_result(r);
        }
    }
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn samples_files_are_refused_by_name_or_read(
        (name, content) in proptest::sample::select(samples_files().to_vec())
            .prop_flat_map(|(name, b)| (Just(name), prop_oneof![damaged(b), bytes(600)])),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, &content).unwrap();
        match read_downsampled(&path, 100) {
            Ok(kept) => {
                prop_assert!(kept.len() <= 100);
                prop_assert!(kept.windows(2).all(|w| w[0].intended_offset <= w[1].intended_offset));
            }
            Err(e) => {
                let message = e.to_string();
                prop_assert!(message.contains(name), "names no file: {message}");
            }
        }
    }
}

// ---- inputs that once crashed ------------------------------------------------------------------

/// The open-loop fixture with the first `from` replaced by `to`.
fn edited(from: &str, to: &str) -> String {
    let text = text(RESULTS[0]);
    assert!(text.contains(from), "{from}");
    text.replacen(from, to, 1)
}

fn refusal(text: &str) -> String {
    parse_result(Path::new(NAME), text).unwrap_err().to_string()
}

/// A percentile key "NaN" loaded (and then did not equal itself); "99." beside "99" loaded as
/// two 99th percentiles, written back as one.
#[test]
fn percentile_keys_that_are_no_percentile_or_a_second_one_are_refused() {
    let e = refusal(&edited(
        "\"50\": 10002431,\n        \"90\"",
        "\"NaN\": 10002431,\n        \"90\"",
    ));
    assert!(
        e.contains(NAME) && e.contains("\"NaN\" is not a percentile"),
        "{e}"
    );
    let e = refusal(&edited(
        "\"50\": 10002431,\n        \"90\"",
        "\"99.\": 10002431,\n        \"90\"",
    ));
    assert!(
        e.contains("percentile 99 is given twice") && e.contains("line"),
        "{e}"
    );
}

/// A target rate of i64::MIN drew the throughput chart's reference line at -9 × 10^18 req/s:
/// an overflow inside plotters (a panic in a debug build).
#[test]
fn a_negative_target_rate_draws_no_line() {
    let r = parse_result(
        Path::new(NAME),
        &edited("\"target\": 200.0,", "\"target\": -9223372036854775808,"),
    )
    .unwrap();
    use_result(r);
}

/// The last interval moved to u64::MAX: `start_ns + duration_ns` overflowed in the charts, and
/// `diff`'s block bootstrap asked for a histogram per second up to there.
#[test]
fn an_interval_at_the_end_of_time_is_drawn_and_diffed() {
    let r = parse_result(
        Path::new(NAME),
        &edited(
            "\"start_ns\": 11000000000",
            "\"start_ns\": 18446744073709551615",
        ),
    )
    .unwrap();
    use_result(r);
}

/// An interval moved before its predecessors: the block bootstrap indexed past its timeline.
#[test]
fn a_timeline_out_of_order_is_diffed() {
    let r = parse_result(
        Path::new(NAME),
        &edited("\"start_ns\": 11000000000", "\"start_ns\": 0"),
    )
    .unwrap();
    use_result(r);
}

/// A p50 of 2^63 ns: `diff` took b − a as `i64`s, and the subtraction overflowed.
#[test]
fn a_percentile_beyond_i64_is_diffed() {
    let r = parse_result(
        Path::new(NAME),
        &edited("\"50\": 10002431,", "\"50\": 9223372036854775808,"),
    )
    .unwrap();
    use_result(r);
}
