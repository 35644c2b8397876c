//! sojourn's `.hgrm` and `.hlog` writers against files the HdrHistogram reference
//! implementation (Java) wrote for the same histograms. See tests/fixtures/reference/README.md.
use std::io::Cursor;
use std::time::{Duration, UNIX_EPOCH};

use base64::Engine as _;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use sojourn_report::hgrm::{self, HgrmOptions};
use sojourn_report::hlog::{HlogHeader, HlogWriter};

fn reference(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/reference/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn histogram(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
    let mut h = Histogram::new(3).unwrap();
    for v in values {
        h.record(v).unwrap();
    }
    h
}

// The datasets of GoldenWriter.java, formula for formula.
fn latency() -> Histogram<u64> {
    let body = (0..20_000u64).map(|i| {
        if i % 97 == 0 {
            40_000_000 + (i % 1000) * 160_000
        } else {
            1_000_000 + ((i * 7919) % 5000) * 200
        }
    });
    histogram(body.chain([0, 1500]))
}

fn interval(k: u64, send_lag: bool) -> Histogram<u64> {
    histogram((0..1000u64).map(|i| {
        if send_lag {
            (i % 10) * 1_000 * (k + 1)
        } else {
            1_000_000 + (i * 31 % 1000) * 1_000 * (k + 1)
        }
    }))
}

fn hgrm_text(h: &Histogram<u64>, unit_ratio: f64) -> String {
    let mut out = Vec::new();
    hgrm::write(
        &mut out,
        h,
        &HgrmOptions {
            unit_ratio,
            ..HgrmOptions::default()
        },
    )
    .unwrap();
    String::from_utf8(out).unwrap()
}

#[track_caller]
fn assert_same_text(ours: &str, reference: &str, what: &str) {
    for (n, (a, b)) in ours.lines().zip(reference.lines()).enumerate() {
        assert_eq!(a, b, "{what}: line {} differs from the reference", n + 1);
    }
    assert_eq!(
        ours, reference,
        "{what}: same lines, but not the same bytes (line count or line ends)"
    );
}

#[test]
fn hgrm_matches_the_reference_byte_for_byte() {
    let cases: [(&str, Histogram<u64>, f64); 5] = [
        ("latency-ms.hgrm", latency(), 1e6),
        ("ties.hgrm", histogram(1..2048), 1e4),
        ("small.hgrm", histogram([25, 50, 75]), 1.0),
        ("empty.hgrm", histogram([]), 1e6),
        ("single.hgrm", histogram([1_000_000_000]), 1e6),
    ];
    for (file, h, ratio) in cases {
        assert_same_text(&hgrm_text(&h, ratio), &reference(file), file);
    }
}

fn decode(payload: &str) -> Histogram<u64> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .unwrap();
    Deserializer::new()
        .deserialize(&mut Cursor::new(bytes))
        .unwrap()
}

#[test]
fn hlog_matches_the_reference_line_for_line() {
    let header = HlogHeader {
        comments: vec![],
        start: UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
        max_value_ratio: 1e6,
    };
    let mut log = HlogWriter::begin(Vec::new(), &header).unwrap();
    for k in 0..3u64 {
        for tag in ["response", "send_lag"] {
            let at = Duration::from_secs(k);
            log.interval(
                tag,
                at,
                Duration::from_secs(1),
                &interval(k, tag == "send_lag"),
            )
            .unwrap();
        }
    }
    let ours = String::from_utf8(log.into_inner()).unwrap();
    let theirs = reference("intervals.hlog");
    assert_eq!(ours.lines().count(), theirs.lines().count());
    let mut intervals = 0;
    for (a, b) in ours.lines().zip(theirs.lines()) {
        if !a.starts_with("Tag=") {
            assert_eq!(a, b, "header lines are the reference's");
            continue;
        }
        // DEFLATE output differs between zlib builds, so compare the payloads decoded.
        let (a_fields, a_payload) = a.rsplit_once(',').unwrap();
        let (b_fields, b_payload) = b.rsplit_once(',').unwrap();
        assert_eq!(a_fields, b_fields, "tag, start, length and max columns");
        assert_eq!(
            decode(a_payload),
            decode(b_payload),
            "the histogram in {a_fields}"
        );
        intervals += 1;
    }
    assert_eq!(intervals, 6);
}

#[path = "common/mod.rs"]
mod common;

#[test]
fn result_files_state_what_and_which_unit() {
    let (r, _) = common::open_run();
    let dir = std::env::temp_dir().join(format!("sojourn-hgrm-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let paths = hgrm::write_result_files(&dir.join("run1"), &r).unwrap();
    let names: Vec<String> = paths
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "run1.response.hgrm",
            "run1.service.hgrm",
            "run1.send_lag.hgrm"
        ]
    );
    let response = std::fs::read_to_string(&paths[0]).unwrap();
    let comments: Vec<&str> = response
        .lines()
        .take_while(|l| l.starts_with('#'))
        .collect();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        comments,
        [
            format!("#[sojourn {version}: response time (done - intended): what a user waits of run \"open\" (open loop)]"),
            "#[Values in milliseconds (recorded in nanoseconds, divided by 1000000)]".to_string(),
        ]
    );
    let send_lag = std::fs::read_to_string(&paths[2]).unwrap();
    assert!(send_lag.starts_with(&format!("#[sojourn {version}: send lag (sent - intended)")));
    // Below the comments, each file is exactly the reference layout of that histogram.
    let h = r.histograms.send_lag.histogram().unwrap();
    let body = &send_lag[send_lag.find("       Value").unwrap()..];
    assert_eq!(body, hgrm_text(&h, 1e6));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn censored_percentiles_are_named_in_the_response_file() {
    let (mut r, _) = common::open_run();
    r.histograms.response.lower_bounds = vec!["99.99".into(), "100".into()];
    let comments = hgrm::result_comments(&r, hgrm::Which::Response);
    assert!(
        comments[2].contains("p99.99, p100 are only lower bounds"),
        "{comments:?}"
    );
    assert_eq!(
        hgrm::result_comments(&r, hgrm::Which::Service).len(),
        2,
        "no service time is censored in this run"
    );
    // A request sent and unanswered at the end bounds its service time too.
    r.histograms.service.lower_bounds = vec!["100".into()];
    let comments = hgrm::result_comments(&r, hgrm::Which::Service);
    assert!(
        comments.len() == 3 && comments[2].contains("p100 are only lower bounds"),
        "{comments:?}"
    );
    assert_eq!(hgrm::result_comments(&r, hgrm::Which::SendLag).len(), 2);
}
