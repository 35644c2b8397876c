//! Our interval logs read back by independent decoders: the `hdrhistogram` crate's log parser
//! and V2 deserializer (our writer is our own code), and the reference implementation's
//! `HistogramLogProcessor` (Java), which must produce the same distribution as our `.hgrm`.
mod common;

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, UNIX_EPOCH};

use base64::Engine as _;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use sojourn_core::result::{decode_base64, RunResult};
use sojourn_report::hgrm::{self, HgrmOptions};
use sojourn_report::hlog;

const START_MS: u64 = 1_763_700_000_250;

fn log_of(r: &RunResult) -> String {
    let bytes = hlog::write(
        Vec::new(),
        r,
        Some(UNIX_EPOCH + Duration::from_millis(START_MS)),
    )
    .unwrap();
    String::from_utf8(bytes).unwrap()
}

/// The sum of a result's interval histograms for one tag, as the result itself carries them.
fn summed(r: &RunResult, tag: &str) -> Histogram<u64> {
    let mut sum = sojourn_core::record::new_histogram();
    for i in &r.intervals {
        let hdr = if tag == hlog::TAG_RESPONSE {
            &i.response_hdr
        } else {
            &i.send_lag_hdr
        };
        sum.add(decode_base64(hdr).unwrap()).unwrap();
    }
    sum
}

#[test]
fn the_crate_decoder_reads_back_every_interval() {
    let (r, _) = common::open_run();
    let text = log_of(&r);
    let mut starts = Vec::new();
    let mut bases = Vec::new();
    let mut response = sojourn_core::record::new_histogram();
    let mut per_interval = Vec::new();
    for entry in IntervalLogIterator::new(text.as_bytes()) {
        match entry.unwrap() {
            LogEntry::StartTime(t) => starts.push(t),
            LogEntry::BaseTime(t) => bases.push(t),
            LogEntry::Interval(i) if i.tag().unwrap().as_str() == hlog::TAG_RESPONSE => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(i.encoded_histogram())
                    .unwrap();
                let h: Histogram<u64> = Deserializer::new()
                    .deserialize(&mut Cursor::new(bytes))
                    .unwrap();
                assert!(
                    (i.max() - h.max() as f64 / 1e6).abs() < 0.0005,
                    "Interval_Max is the max in ms"
                );
                per_interval.push((i.start_timestamp(), i.duration(), h.len()));
                response.add(&h).unwrap();
            }
            LogEntry::Interval(i) => assert_eq!(i.tag().unwrap().as_str(), hlog::TAG_SEND_LAG),
        }
    }
    assert_eq!(starts, vec![Duration::from_millis(START_MS)]);
    assert_eq!(
        bases, starts,
        "BaseTime is the start, so timestamps are offsets into the run"
    );
    let want: Vec<(Duration, Duration, u64)> = r
        .intervals
        .iter()
        .map(|i| {
            (
                Duration::from_nanos(i.start_ns),
                Duration::from_nanos(i.duration_ns),
                i.completed + i.failed,
            )
        })
        .collect();
    assert_eq!(
        per_interval, want,
        "one response histogram per interval, at its offset, with its count"
    );
    assert_eq!(response, summed(&r, hlog::TAG_RESPONSE));
    assert_eq!(
        r.counts.censored + r.counts.never_sent,
        0,
        "the fixture run has no censored requests, so…"
    );
    assert_eq!(
        response,
        r.histograms.response.histogram().unwrap(),
        "…the intervals add up to the whole run"
    );
    for p in [50.0, 99.0, 99.9, 100.0] {
        assert_eq!(
            response.value_at_percentile(p),
            r.histograms
                .response
                .histogram()
                .unwrap()
                .value_at_percentile(p)
        );
    }
}

#[test]
fn censored_requests_are_named_in_the_log_header() {
    let (mut r, _) = common::open_run();
    r.counts.censored = 3;
    assert!(log_of(&r)
        .lines()
        .any(|l| l.starts_with('#') && l.contains("3 censored requests")));
    assert!(hlog::write(Vec::new(), &r, None)
        .map(|b| String::from_utf8(b).unwrap())
        .unwrap()
        .contains("StartTime is the epoch"));
}

fn reference_jar() -> Option<PathBuf> {
    let jar = std::env::var_os("HDRHISTOGRAM_JAR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_default();
            Path::new(&home)
                .join(".m2/repository/org/hdrhistogram/HdrHistogram/2.2.2/HdrHistogram-2.2.2.jar")
        });
    let java = Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if java && jar.is_file() {
        return Some(jar);
    }
    sojourn_testkit::skip(&format!(
        "the HdrHistogram reference implementation (Java): java found: {java}, jar: {} \
         (.ci/run installs java and fetches the jar with mvn dependency:get)",
        jar.display()
    ));
    None
}

/// The table and footer of an .hgrm (everything from the header line on).
fn table(text: &str) -> &str {
    &text[text.find("       Value").expect("an .hgrm header")..]
}

#[test]
fn the_reference_log_processor_reads_our_log() {
    let Some(jar) = reference_jar() else { return };
    let dir = std::env::temp_dir().join(format!("sojourn-hlog-interop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, (r, _)) in [
        ("open", common::open_run()),
        ("closed", common::closed_run()),
    ] {
        let log = dir.join(format!("{name}.hlog"));
        std::fs::write(&log, log_of(&r)).unwrap();
        for tag in [hlog::TAG_RESPONSE, hlog::TAG_SEND_LAG] {
            let out = dir.join(format!("{name}.{tag}"));
            let status = Command::new("java")
                .args([
                    "-cp",
                    &jar.to_string_lossy(),
                    "org.HdrHistogram.HistogramLogProcessor",
                ])
                .args([
                    "-i",
                    &log.to_string_lossy(),
                    "-o",
                    &out.to_string_lossy(),
                    "-tag",
                    tag,
                ])
                .status()
                .unwrap();
            assert!(status.success(), "HistogramLogProcessor on {name} {tag}");
            let theirs = std::fs::read_to_string(dir.join(format!("{name}.{tag}.hgrm"))).unwrap();
            let mut ours = Vec::new();
            hgrm::write(&mut ours, &summed(&r, tag), &HgrmOptions::default()).unwrap();
            let ours = String::from_utf8(ours).unwrap();
            assert_eq!(
                table(&ours),
                table(&theirs),
                "{name} {tag}: the reference's distribution of our log is ours"
            );
            let intervals = std::fs::read_to_string(&out).unwrap();
            let rows = intervals.lines().filter(|l| l.contains(": I:")).count();
            assert_eq!(
                rows,
                r.intervals.len(),
                "{name} {tag}: the reference saw every interval"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
