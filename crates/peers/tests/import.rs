//! Every importer against real output of its tool (tests/fixtures, see its README), with values
//! read from the files by eye, and against broken input.
use std::path::{Path, PathBuf};

use sojourn_core::result::Detail;
use sojourn_core::{FailureClass, Mode, RunConfig, RunResult};
use sojourn_peers::{import, ImportContext, ImportError, PeerTool};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn ctx(mode: Mode) -> ImportContext {
    ImportContext {
        label: "peer".into(),
        mode,
        version: "test".into(),
        config: RunConfig {
            connections: 2,
            interval_ns: 1_000_000_000,
            ..RunConfig::default()
        },
    }
}

/// Imports, checks the document against the schema, and checks every request is accounted.
fn load(tool: PeerTool, mode: Mode, names: &[&str]) -> RunResult {
    let files: Vec<PathBuf> = names.iter().map(|n| fixture(n)).collect();
    let result = import(tool, &files, &ctx(mode)).unwrap_or_else(|e| panic!("{e}"));
    assert_valid(&result);
    assert_eq!(result.counts.unaccounted(), 0, "{:?}", result.counts);
    assert_eq!(result.tool.name, tool.to_string());
    result
}

fn assert_valid(result: &RunResult) {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../schema/result.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let doc = serde_json::to_value(result).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let back: RunResult = serde_json::from_value(doc).unwrap();
    assert_eq!(&back, result, "the document round-trips");
}

fn p(result: &RunResult, percentile: f64) -> u64 {
    result
        .histograms
        .response
        .percentiles
        .get(percentile)
        .unwrap_or_else(|| panic!("no p{percentile} in {:?}", result.histograms.response))
}

fn notes(result: &RunResult) -> String {
    result.import.as_ref().unwrap().notes.join("\n")
}

fn detail(result: &RunResult) -> Detail {
    result.import.as_ref().unwrap().detail
}

const MS: u64 = 1_000_000;

// ---- wrk --------------------------------------------------------------------------------------

#[test]
fn wrk_healthy_summary() {
    let r = load(PeerTool::Wrk, Mode::Closed, &["wrk/healthy.txt"]);
    assert_eq!(detail(&r), Detail::Summary);
    assert_eq!(r.counts.completed, 372);
    assert_eq!(r.counts.failed.total(), 0);
    let h = &r.histograms.response;
    assert_eq!(h.count, 372);
    assert_eq!(h.hdr, "");
    assert_eq!(p(&r, 50.0), 10_310_000);
    assert_eq!(p(&r, 99.0), 15_950_000);
    assert_eq!(h.max, 16_020_000);
    assert_eq!(h.mean, 10_760_000.0);
    assert_eq!(h.stdev, 1_200_000.0);
    assert_eq!(h.percentiles.0.len(), 4, "wrk prints 50, 75, 90 and 99");
    assert_eq!(r.elapsed_ns, 2_020_000_000);
    assert!(notes(&r).contains("corrected its latency after the fact"));
}

#[test]
fn wrk_hiccup_shows_the_stall_only_in_its_tail() {
    let r = load(PeerTool::Wrk, Mode::Closed, &["wrk/hiccup.txt"]);
    assert_eq!(r.counts.completed, 466);
    assert_eq!(p(&r, 50.0), 10_320_000);
    assert_eq!(p(&r, 99.0), 479_530_000);
    assert_eq!(r.histograms.response.max, 505_460_000);
}

#[test]
fn wrk_non_2xx_are_failures_of_unknown_status() {
    let r = load(PeerTool::Wrk, Mode::Closed, &["wrk/not-found.txt"]);
    assert_eq!(r.counts.completed, 0);
    assert_eq!(r.counts.failed.get(FailureClass::HttpOther), 210);
    assert_eq!(p(&r, 50.0), 197_000);
    assert!(notes(&r).contains("without telling 4xx from 5xx"));
}

/// Real wrk2 output (built from giltene/wrk2's source; see the fixtures README): a 13 s run at
/// 100 req/s, of which it measured only what came after its ~10 s calibration.
#[test]
fn wrk2_spectrum_and_calibration() {
    let r = load(PeerTool::Wrk2, Mode::Open, &["wrk2/healthy.txt"]);
    assert_valid(&r);
    let h = &r.histograms.response;
    assert_eq!(h.count, 300, "the histogram's total, not the 1301 requests");
    assert_eq!(r.counts.completed, 1301);
    assert_eq!(h.min, 10_375_000);
    assert_eq!(
        p(&r, 50.0),
        11_127_000,
        "from the spectrum, to the microsecond"
    );
    assert_eq!(
        h.max, 12_184_000,
        "#[Max], not the spectrum's bucket edge (12.191 ms)"
    );
    let n = notes(&r);
    assert!(n.contains("intended send time"), "{n}");
    assert!(n.contains("300 of the 1301"), "{n}");
    assert!(!n.contains("after the fact"), "{n}");
}

/// A wrk2 run that ended as its calibration did measured nothing: one line says so.
#[test]
fn wrk2_that_measured_nothing_says_why() {
    let err = import(
        PeerTool::Wrk2,
        &[fixture("wrk2/calibrating.txt")],
        &ctx(Mode::Open),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("calibrating.txt"), "{err}");
    assert!(
        err.contains("wrk2 measured nothing") && err.contains("calibration"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

// ---- ab ---------------------------------------------------------------------------------------

#[test]
fn ab_csv_and_text() {
    let r = load(
        PeerTool::Ab,
        Mode::Closed,
        &["ab/healthy.csv", "ab/healthy.txt"],
    );
    assert_eq!(detail(&r), Detail::Summary);
    assert_eq!(r.counts.completed, 300);
    assert_eq!(r.histograms.response.percentiles.0.len(), 101);
    assert_eq!(p(&r, 50.0), 10_498_000);
    assert_eq!(p(&r, 99.0), 18_386_000);
    assert_eq!(r.histograms.response.min, 10_261_000);
    assert_eq!(r.histograms.response.max, 20_066_000);
    assert_eq!(r.elapsed_ns, 1_688_000_000);
    assert!(
        notes(&r).contains("opens a connection per request"),
        "run without -k"
    );
}

#[test]
fn ab_text_alone_has_whole_milliseconds() {
    let r = load(PeerTool::Ab, Mode::Closed, &["ab/healthy.txt"]);
    assert_eq!(r.counts.completed, 300);
    assert_eq!(p(&r, 50.0), 10 * MS);
    assert_eq!(p(&r, 100.0), 20 * MS);
    assert_eq!(r.histograms.response.stdev, 1_500_000.0);
}

#[test]
fn ab_csv_alone_says_it_has_no_counts() {
    let r = load(PeerTool::Ab, Mode::Closed, &["ab/healthy.csv"]);
    assert_eq!(r.counts.completed, 0);
    assert!(notes(&r).contains("no counts"));
}

// ---- hey --------------------------------------------------------------------------------------

#[test]
fn hey_csv_per_request() {
    let r = load(PeerTool::Hey, Mode::Closed, &["hey/healthy.csv"]);
    assert_eq!(detail(&r), Detail::PerRequest);
    assert_eq!(r.counts.completed, 198);
    assert_eq!(r.histograms.response.count, 198);
    assert!(!r.histograms.response.hdr.is_empty());
    // Fastest row: 0.0103 s; the histogram keeps 3 significant digits.
    let min = r.histograms.response.min;
    assert!((10_290_000..=10_300_000).contains(&min), "{min}");
    assert!(!r.intervals.is_empty(), "the timeline is rebuilt");
}

#[test]
fn hey_csv_shows_the_stall() {
    let r = load(PeerTool::Hey, Mode::Closed, &["hey/hiccup.csv"]);
    assert_eq!(r.counts.completed, 248);
    // Slowest row: 0.5117 s; the histogram keeps 3 significant digits.
    let max = r.histograms.response.max;
    assert!((511 * MS..=512 * MS).contains(&max), "{max}");
}

#[test]
fn hey_404s_are_4xx() {
    let r = load(PeerTool::Hey, Mode::Closed, &["hey/not-found.csv"]);
    assert_eq!(r.counts.completed, 0);
    assert_eq!(r.counts.failed.get(FailureClass::Http4xx), 20);
}

#[test]
fn hey_text_summary() {
    let r = load(PeerTool::Hey, Mode::Closed, &["hey/healthy.txt"]);
    assert_eq!(detail(&r), Detail::Summary);
    assert_eq!(r.counts.completed, 198);
    assert_eq!(p(&r, 10.0), 10_400_000);
    assert_eq!(p(&r, 99.0), 29_300_000);
    assert_eq!(r.histograms.response.max, 29_300_000);
    assert_eq!(r.elapsed_ns, 2_017_700_000);
}

#[test]
fn hey_transport_errors_come_from_the_text() {
    let r = load(
        PeerTool::Hey,
        Mode::Closed,
        &["hey/refused.csv", "hey/refused.txt"],
    );
    assert_eq!(detail(&r), Detail::PerRequest);
    assert_eq!(r.counts.failed.get(FailureClass::Connect), 10);
    assert_eq!(r.counts.scheduled, 10);
    assert!(notes(&r).contains("leaves out the 10 requests"));
    let alone = load(PeerTool::Hey, Mode::Closed, &["hey/refused.csv"]);
    assert_eq!(alone.counts.scheduled, 0);
    assert!(notes(&alone).contains("cannot be counted"));
}

// ---- vegeta -----------------------------------------------------------------------------------

#[test]
fn vegeta_csv_per_request() {
    let r = load(PeerTool::Vegeta, Mode::Open, &["vegeta/hiccup.csv"]);
    assert_eq!(detail(&r), Detail::PerRequest);
    assert_eq!(r.counts.completed, 200);
    // From the CSV: max 502.420812 ms; p99 by nearest rank (198th of 200) 482.396357 ms.
    // (vegeta's own report says 487.8 ms: its percentiles are t-digest estimates.)
    let h = &r.histograms.response;
    assert!((502 * MS..=503 * MS).contains(&h.max), "{}", h.max);
    let p99 = p(&r, 99.0);
    assert!((482_300_000..=482_900_000).contains(&p99), "{p99}");
    assert!(r.intervals.len() >= 2);
}

#[test]
fn vegeta_outcome_classes() {
    let r = load(PeerTool::Vegeta, Mode::Open, &["vegeta/mixed.csv"]);
    assert_eq!(r.counts.completed, 10);
    assert_eq!(r.counts.failed.get(FailureClass::Http4xx), 10);
    assert_eq!(r.counts.failed.get(FailureClass::Connect), 10);
}

#[test]
fn vegeta_json_report() {
    let r = load(PeerTool::Vegeta, Mode::Open, &["vegeta/hiccup.json"]);
    assert_eq!(detail(&r), Detail::Summary);
    assert_eq!(r.counts.completed, 200);
    assert_eq!(p(&r, 99.0), 487_827_066);
    assert_eq!(r.histograms.response.max, 502_420_812);
    assert_eq!(r.histograms.response.min, 10_224_168);
    assert_eq!(r.elapsed_ns, 1_989_809_875 + 10_912_864);
    let mixed = load(PeerTool::Vegeta, Mode::Open, &["vegeta/mixed.json"]);
    assert_eq!(mixed.counts.failed.get(FailureClass::Connect), 10);
    assert_eq!(mixed.counts.failed.get(FailureClass::Http4xx), 10);
}

// ---- k6 ---------------------------------------------------------------------------------------

#[test]
fn k6_constant_vus_csv() {
    let r = load(PeerTool::K6, Mode::Closed, &["k6/constant-vus.csv"]);
    assert_eq!(detail(&r), Detail::PerRequest);
    assert_eq!(r.counts.completed, 61);
    assert!(notes(&r).contains("whole seconds"));
}

#[test]
fn k6_dropped_iterations_are_never_sent() {
    let r = load(PeerTool::K6, Mode::Open, &["k6/dropped.csv"]);
    assert_eq!(r.counts.completed, 61);
    assert_eq!(r.counts.never_sent, 20);
    assert_eq!(r.counts.scheduled, 81);
    assert!(
        notes(&r).contains("k6 dropped 20 iterations"),
        "{}",
        notes(&r)
    );
    // The stalled request: 501.323 ms in the summary export of the same run.
    let max = r.histograms.response.max;
    assert!(max >= 501 * MS, "{max}");
    let s = load(PeerTool::K6, Mode::Open, &["k6/dropped.summary.json"]);
    assert_eq!(s.counts.never_sent, 20);
    assert_eq!(s.counts.scheduled, 81);
    assert!(notes(&s).contains("k6 dropped 20 iterations"));
}

#[test]
fn k6_millisecond_timestamps() {
    let r = load(PeerTool::K6, Mode::Open, &["k6/arrival-rate-ms.csv"]);
    assert_eq!(r.counts.completed, 61);
    assert!(
        notes(&r).contains("(1.00 ms resolution)"),
        "the stamps' resolution is read from the file: {}",
        notes(&r)
    );
    // 61 requests at 30/s: about two seconds from first start to last end.
    assert!(
        (1_900 * MS..2_200 * MS).contains(&r.elapsed_ns),
        "{}",
        r.elapsed_ns
    );
}

#[test]
fn k6_summary_export() {
    let r = load(PeerTool::K6, Mode::Open, &["k6/arrival-rate.summary.json"]);
    assert_eq!(detail(&r), Detail::Summary);
    assert_eq!(r.counts.completed, 61);
    assert_eq!(p(&r, 50.0), 10_821_955);
    assert_eq!(p(&r, 90.0), 14_036_469);
    assert_eq!(p(&r, 95.0), 15_132_768);
    assert_eq!(r.histograms.response.max, 23_036_250);
    assert_eq!(r.counts.never_sent, 0);
}

// ---- oha --------------------------------------------------------------------------------------

#[test]
fn oha_closed_csv() {
    let r = load(PeerTool::Oha, Mode::Closed, &["oha/closed.csv"]);
    assert_eq!(detail(&r), Detail::PerRequest);
    assert_eq!(r.counts.completed, 378);
    // Slowest row: 17.163113 ms.
    let max = r.histograms.response.max;
    assert!((17_150_000..=17_180_000).contains(&max), "{max}");
    assert_eq!(r.counts.waited_for_connection, 0);
    assert!(notes(&r).contains("actual send"));
}

#[test]
fn oha_latency_correction_shows_as_send_lag() {
    let r = load(
        PeerTool::Oha,
        Mode::Open,
        &["oha/rate-corrected.csv", "oha/rate-corrected.json"],
    );
    assert_eq!(r.counts.completed, 200);
    assert_eq!(
        r.counts.censored, 2,
        "the JSON's \"aborted due to deadline\""
    );
    assert_eq!(r.counts.scheduled, 202);
    // 45 rows have a duration more than 1 ms beyond their first byte: queued for a connection.
    assert_eq!(r.counts.waited_for_connection, 45);
    let lag = r.histograms.send_lag.max;
    assert!((400 * MS..=402 * MS).contains(&lag), "{lag}");
    let max = r.histograms.response.max;
    assert!((501 * MS..=502 * MS).contains(&max), "{max}");
    assert!(notes(&r).contains("--latency-correction"));
    let plain = load(PeerTool::Oha, Mode::Open, &["oha/rate.csv"]);
    assert_eq!(plain.counts.completed, 199);
    assert_eq!(plain.counts.waited_for_connection, 0);
}

#[test]
fn oha_json_summary() {
    let r = load(PeerTool::Oha, Mode::Open, &["oha/rate-corrected.json"]);
    assert_eq!(detail(&r), Detail::Summary);
    assert_eq!(r.counts.completed, 200);
    assert_eq!(r.counts.censored, 2);
    assert_eq!(p(&r, 99.0), 491_555_384);
    assert_eq!(p(&r, 75.0), 53_373_488);
    assert_eq!(r.histograms.response.max, 501_540_046);
    assert!(notes(&r).contains("--latency-correction"));
    let plain = load(PeerTool::Oha, Mode::Open, &["oha/rate.json"]);
    assert_eq!(
        p(&plain, 75.0),
        10_952_989,
        "from the send, the queueing is invisible"
    );
    assert!(notes(&plain).contains("actual send"));
}

// ---- fortio -----------------------------------------------------------------------------------

#[test]
fn fortio_access_log_per_request() {
    let r = load(
        PeerTool::Fortio,
        Mode::Closed,
        &["fortio/healthy.access.jsonl", "fortio/healthy.json"],
    );
    assert_eq!(detail(&r), Detail::PerRequest);
    assert_eq!(r.counts.completed, 200);
    assert_eq!(r.histograms.response.count, 200);
}

#[test]
fn fortio_json_histogram() {
    let r = load(PeerTool::Fortio, Mode::Closed, &["fortio/hiccup.json"]);
    assert_eq!(detail(&r), Detail::Summary);
    assert_eq!(r.counts.completed, 196);
    assert_eq!(p(&r, 99.0), 450_952_428);
    assert_eq!(p(&r, 99.9), 492_954_514);
    assert_eq!(r.histograms.response.max, 497_621_412);
    assert_eq!(r.elapsed_ns, 2_005_380_110);
}

// ---- locust -----------------------------------------------------------------------------------

#[test]
fn locust_stats_csv() {
    let r = load(
        PeerTool::Locust,
        Mode::Closed,
        &["locust/healthy_stats.csv"],
    );
    assert_eq!(detail(&r), Detail::Summary);
    assert_eq!(r.counts.completed, 100);
    assert_eq!(p(&r, 50.0), 13 * MS);
    assert_eq!(p(&r, 99.0), 23 * MS);
    assert!(notes(&r).contains("on a timer"));
}

#[test]
fn locust_printout_has_the_final_counts() {
    let r = load(
        PeerTool::Locust,
        Mode::Closed,
        &[
            "locust/healthy_stats.csv",
            "locust/healthy.txt",
            "locust/healthy_stats_history.csv",
        ],
    );
    assert_eq!(r.counts.completed, 188);
    assert_eq!(p(&r, 99.0), 19 * MS);
    assert_eq!(r.histograms.response.max, 22 * MS, "the printout's Max");
    // The printout's 188 requests at 100.07 req/s.
    assert!(
        (1_878 * MS..1_880 * MS).contains(&r.elapsed_ns),
        "{}",
        r.elapsed_ns
    );
    assert!(notes(&r).contains("CSV counts 100 requests, its final printout 188"));
}

#[test]
fn locust_failures_by_class() {
    let r = load(
        PeerTool::Locust,
        Mode::Closed,
        &[
            "locust/not-found_stats.csv",
            "locust/not-found_failures.csv",
        ],
    );
    assert_eq!(r.counts.completed, 0);
    assert_eq!(r.counts.failed.get(FailureClass::Http4xx), 100);
}

/// The shop journey's requests log (`locust/journey.jsonl`, from `shop_journey.py`'s
/// `events.request` listener): 33 requests, 11 per step, one login answered 500, the list and
/// the open each holding a 500 ms stall (506.43 and 486.03 ms in the file).
#[test]
fn locust_requests_log_per_step() {
    let r = load(PeerTool::Locust, Mode::Closed, &["locust/journey.jsonl"]);
    assert_eq!(detail(&r), Detail::PerRequest);
    assert_eq!(r.counts.scheduled, 33, "one per line");
    assert_eq!(r.counts.completed, 32);
    assert_eq!(r.counts.failed.get(FailureClass::Http5xx), 1);
    let labels: Vec<&str> = r.steps.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(
        labels,
        ["shop/login", "shop/list", "shop/open"],
        "in journey order"
    );
    let counts: Vec<(u64, u64)> = r
        .steps
        .iter()
        .map(|s| (s.counts.completed, s.counts.failed.total()))
        .collect();
    assert_eq!(counts, [(10, 1), (11, 0), (11, 0)]);
    // Due at the send: response and service are the same, and send lag is nothing.
    let list = &r.steps[1];
    assert!(
        (505 * MS..=508 * MS).contains(&list.response.max),
        "{}",
        list.response.max
    );
    assert_eq!(list.response.max, list.service.max);
    assert_eq!(list.send_lag.max, 0);
    assert!(
        r.steps[0].response.max < 15 * MS,
        "the login missed the stall"
    );
    // From the first send (…237.0377) to the last answer (…238.9062).
    assert!(
        (1_868 * MS..1_869 * MS).contains(&r.elapsed_ns),
        "{}",
        r.elapsed_ns
    );
    assert!(notes(&r).contains("from its send"), "{}", notes(&r));
    let again =
        sojourn_peers::import_locust_requests(&fixture("locust/journey.jsonl"), &ctx(Mode::Closed))
            .unwrap();
    assert_eq!(again, r, "the library function reads it the same way");
}

/// A line that is not a request record, and a record with no name: the error names the line.
#[test]
fn locust_requests_log_bad_lines_name_their_line() {
    let mut lines: Vec<String> = fixture_text("locust/journey.jsonl")
        .lines()
        .map(String::from)
        .collect();
    lines[4] = lines[4].replace("\"response_time\"", "\"latency\"");
    let m = broken(PeerTool::Locust, "requests.jsonl", &lines.join("\n"));
    assert!(
        m.contains("requests.jsonl:5: not a locust request record"),
        "{m}"
    );
    assert!(m.contains("response_time"), "{m}");
    let mut lines: Vec<String> = fixture_text("locust/journey.jsonl")
        .lines()
        .map(String::from)
        .collect();
    lines[2] = lines[2].replace("\"shop/list\"", "\"\"");
    let m = broken(PeerTool::Locust, "requests.jsonl", &lines.join("\n"));
    assert!(m.contains("requests.jsonl:3: name is empty"), "{m}");
    let path = scratch("locust-mixed").join("requests.jsonl");
    std::fs::write(&path, fixture_text("locust/journey.jsonl")).unwrap();
    let both = [path, fixture("locust/healthy_stats.csv")];
    let m = import(PeerTool::Locust, &both, &ctx(Mode::Closed))
        .unwrap_err()
        .to_string();
    assert!(m.contains("read alone"), "{m}");
}

// ---- h2load -----------------------------------------------------------------------------------

fn failed(r: &RunResult, class: FailureClass) -> u64 {
    r.counts.failed.get(class)
}

/// `h2load -D 2 -c 2 -m 1` through nginx (h2c) to the healthy server: 368 done and 2 still in
/// flight when -D ended ("370 started"), which h2load leaves out of its totals.
#[test]
fn h2load_log_per_request() {
    let r = load(
        PeerTool::H2load,
        Mode::Closed,
        &["h2load/healthy.log", "h2load/healthy.txt"],
    );
    assert_eq!(detail(&r), Detail::PerRequest);
    assert_eq!(r.counts.completed, 368);
    assert_eq!(r.counts.censored, 2, "started 370 - done 368");
    assert_eq!(r.counts.scheduled, 370);
    let h = &r.histograms.response;
    assert_eq!(h.count, 368);
    assert!(!h.hdr.is_empty());
    // The log's fastest and slowest rows: 10234 µs and 14673 µs (3 significant digits kept).
    assert!((10_225_000..=10_235_000).contains(&h.min), "{}", h.min);
    assert!((14_660_000..=14_690_000).contains(&h.max), "{}", h.max);
    assert!(
        (1_980 * MS..2_000 * MS).contains(&r.elapsed_ns),
        "{}",
        r.elapsed_ns
    );
    assert!(r.intervals.len() >= 2, "the timeline is rebuilt");
    let n = notes(&r);
    assert!(n.contains("HEADERS frame"), "{n}");
    assert!(
        n.contains("2 requests were in flight when h2load's -D"),
        "{n}"
    );
}

#[test]
fn h2load_text_summary_has_no_percentiles() {
    let r = load(PeerTool::H2load, Mode::Closed, &["h2load/healthy.txt"]);
    assert_eq!(detail(&r), Detail::Summary);
    assert_eq!(r.counts.completed, 368);
    assert_eq!(r.counts.censored, 2);
    let h = &r.histograms.response;
    assert!(h.percentiles.0.is_empty(), "{:?}", h.percentiles);
    assert_eq!(h.hdr, "");
    assert_eq!(h.count, 368);
    assert_eq!(h.min, 10_230_000);
    assert_eq!(h.max, 14_670_000);
    assert_eq!(h.mean, 10_750_000.0);
    assert_eq!(h.stdev, 560_000.0);
    assert_eq!(r.elapsed_ns, 2_000_000_000);
    // "finished in 2.00s, 184.00 req/s": every answer was a 2xx, so the rates agree.
    assert!((r.rate.achieved - 184.0).abs() < 1e-9, "{:?}", r.rate);
    let n = notes(&r);
    assert!(n.contains("no percentiles"), "{n}");
    assert!(n.contains("184.00 req/s"), "{n}");
}

/// The same stall through the same h2load pacing (`--rps 50` on 2 connections): with one stream
/// per connection the requests due in the stall wait unmeasured; with 64 they go out on time.
#[test]
fn h2load_streams_decide_whether_the_stall_shows() {
    let paced = load(
        PeerTool::H2load,
        Mode::Paced,
        &["h2load/hiccup-paced.log", "h2load/hiccup-paced.txt"],
    );
    let streams = load(
        PeerTool::H2load,
        Mode::Open,
        &["h2load/hiccup-streams.log", "h2load/hiccup-streams.txt"],
    );
    for r in [&paced, &streams] {
        assert_eq!(r.counts.completed, 300);
        assert_eq!(r.counts.censored, 2);
        // The stalled request: 500.74 ms and 500.72 ms in the logs.
        let max = r.histograms.response.max;
        assert!((500 * MS..=501 * MS).contains(&max), "{max}");
    }
    // The 297th of 300 sorted rows: 15513 µs with -m 1, 481366 µs with -m 64.
    let (a, b) = (p(&paced, 99.0), p(&streams, 99.0));
    assert!((15_490_000..=15_530_000).contains(&a), "{a}");
    assert!((481_000_000..=481_800_000).contains(&b), "{b}");
    // 42 of the 300 rows with -m 64 took over 100 ms; 2 with -m 1.
    assert!(p(&streams, 90.0) > 100 * MS);
    assert!(p(&paced, 99.0) < 100 * MS);
}

/// Each client took /api (200), /nope (404), /down (502) and /reset (nginx resets the stream)
/// in turn: 20 of each.
#[test]
fn h2load_outcomes_by_class() {
    for files in [
        &["h2load/mixed.log", "h2load/mixed.txt"][..],
        &["h2load/mixed.txt"],
    ] {
        let r = load(PeerTool::H2load, Mode::Closed, files);
        assert_eq!(r.counts.completed, 20, "{files:?}");
        assert_eq!(failed(&r, FailureClass::Http4xx), 20, "{files:?}");
        assert_eq!(failed(&r, FailureClass::Http5xx), 20, "{files:?}");
        assert_eq!(failed(&r, FailureClass::Io), 20, "resets: {files:?}");
        assert_eq!(r.counts.failed.total(), 60, "{files:?}");
        assert_eq!(r.counts.scheduled, 80, "{files:?}");
        assert!(notes(&r).contains("20 streams closed without a response"));
    }
    let text = load(PeerTool::H2load, Mode::Closed, &["h2load/mixed.txt"]);
    let h = &text.histograms.response;
    assert_eq!(
        h.count, 60,
        "h2load times answered streams, resets excluded"
    );
    assert_eq!(h.mean, 3_640_000.0);
    assert_eq!(h.min, 112_000);
    assert_eq!(h.max, 10_730_000);
}

/// nginx killed 0.5 s into `-n 400`: 336 done, 8 lost in flight, 56 never sent.
#[test]
fn h2load_lost_connection_counts_every_request() {
    let r = load(
        PeerTool::H2load,
        Mode::Closed,
        &["h2load/lost.log", "h2load/lost.txt"],
    );
    assert_eq!(r.counts.completed, 336);
    assert_eq!(
        failed(&r, FailureClass::Connect),
        56,
        "400 total - 344 started"
    );
    assert_eq!(failed(&r, FailureClass::Io), 8, "344 started - 336 done");
    assert_eq!(r.counts.scheduled, 400);
    assert_eq!(r.counts.censored, 0);
    let n = notes(&r);
    assert!(n.contains("never sent 56 requests"), "{n}");
    assert!(n.contains("8 requests were in flight"), "{n}");
    let alone = load(PeerTool::H2load, Mode::Closed, &["h2load/lost.log"]);
    assert_eq!(alone.counts.scheduled, 336);
    assert!(notes(&alone).contains("cannot be counted"));
}

/// Nothing answered: an empty log beside the summary, or the summary alone.
#[test]
fn h2load_failed_connections() {
    // h2c to an HTTP/1.1 server: 2 requests sent, 8 never sent, none answered.
    let r = load(
        PeerTool::H2load,
        Mode::Closed,
        &["h2load/not-h2.log", "h2load/not-h2.txt"],
    );
    assert_eq!(detail(&r), Detail::PerRequest);
    assert_eq!(r.counts.completed, 0);
    assert_eq!(failed(&r, FailureClass::Connect), 8);
    assert_eq!(failed(&r, FailureClass::Io), 2);
    assert_eq!(r.counts.scheduled, 10);
    let refused = load(PeerTool::H2load, Mode::Closed, &["h2load/refused.txt"]);
    assert_eq!(failed(&refused, FailureClass::Connect), 10);
    assert_eq!(refused.histograms.response.count, 0);
    let err = import(
        PeerTool::H2load,
        &[fixture("h2load/refused.log")],
        &ctx(Mode::Closed),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("refused.log") && err.contains("empty"),
        "{err}"
    );
}

#[test]
fn h2load_connection_rate_and_http1() {
    let r = load(PeerTool::H2load, Mode::Closed, &["h2load/conn-rate.txt"]);
    assert_eq!(r.counts.completed, 40);
    assert_eq!(r.histograms.response.mean, 10_770_000.0);
    assert_eq!(r.elapsed_ns, 1_110_000_000);
    assert!(
        notes(&r).contains("up to 2 connections every 1s"),
        "{}",
        notes(&r)
    );
    // --h1, as `sojourn suite` runs it against its HTTP/1.1 server.
    let h1 = load(
        PeerTool::H2load,
        Mode::Closed,
        &["h2load/h1.log", "h2load/h1.txt"],
    );
    assert_eq!(h1.counts.completed, 370);
    assert_eq!(h1.counts.censored, 2);
}

#[test]
fn h2load_damage_is_named() {
    let m = broken(
        PeerTool::H2load,
        "h2load.txt",
        &truncated("h2load/healthy.txt", 0.75),
    );
    assert!(m.contains("time for request"), "{m}");
    let text = fixture_text("h2load/mixed.txt").replace("20 4xx", "20 4XX");
    let m = broken(PeerTool::H2load, "h2load.txt", &text);
    assert!(
        m.contains("h2load.txt:") && m.contains("no 4xx count"),
        "{m}"
    );
    let m = broken(
        PeerTool::H2load,
        "h2load.log",
        &cut_mid_line("h2load/healthy.log", 0.47),
    );
    assert!(m.contains("h2load.log:") && m.contains("cut short"), "{m}");
    let log = fixture_text("h2load/healthy.log").replacen("\t200\t", "\t", 1);
    let m = broken(PeerTool::H2load, "h2load.log", &log);
    assert!(m.contains("h2load.log:1: 2 field(s)"), "{m}");
    let log = fixture_text("h2load/mixed.log").replacen("\t404\t", "\t-2\t", 1);
    let m = broken(PeerTool::H2load, "h2load.log", &log);
    assert!(m.contains("status: -2"), "{m}");
    // A log and a summary of different runs.
    let m = import(
        PeerTool::H2load,
        &[fixture("h2load/healthy.log"), fixture("h2load/mixed.txt")],
        &ctx(Mode::Closed),
    )
    .unwrap_err()
    .to_string();
    assert!(
        m.contains("healthy.log has 368 requests") && m.contains("mixed.txt says 80 done"),
        "{m}"
    );
    let m = import(
        PeerTool::H2load,
        &[fixture("h2load/healthy.log"), fixture("h2load/lost.log")],
        &ctx(Mode::Closed),
    )
    .unwrap_err()
    .to_string();
    assert!(m.contains("at most one --log-file"), "{m}");
}

// ---- broken input -----------------------------------------------------------------------------

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sojourn-peers-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `text` as `file_name` and imports it; the error must name the file.
fn broken(tool: PeerTool, file_name: &str, text: &str) -> String {
    let dir = scratch(&format!("{tool}-broken"));
    let path = dir.join(file_name);
    std::fs::write(&path, text).unwrap();
    let err: ImportError = import(tool, std::slice::from_ref(&path), &ctx(Mode::Open))
        .expect_err(&format!("{tool} must reject {file_name}"));
    let message = err.to_string();
    assert!(
        message.contains(&path.display().to_string()),
        "{tool}: {message:?} does not name the file"
    );
    message
}

fn fixture_text(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

/// The first `fraction` of a fixture, cut at a line boundary.
fn truncated(name: &str, fraction: f64) -> String {
    let text = fixture_text(name);
    let cut = (text.len() as f64 * fraction) as usize;
    let end = text[..cut].rfind('\n').map_or(0, |i| i + 1);
    text[..end].to_string()
}

/// The first `fraction` of a fixture, cut mid-line.
fn cut_mid_line(name: &str, fraction: f64) -> String {
    let text = fixture_text(name);
    let mut cut = (text.len() as f64 * fraction) as usize;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text[..cut].to_string()
}

const GARBAGE: &str = "\u{1f980} this is not a load tool's output, 42, {]\n<html>\n";

#[test]
fn every_importer_rejects_empty_and_garbage() {
    for tool in PeerTool::ALL {
        let m = broken(tool, "empty.txt", "");
        assert!(m.contains("empty"), "{tool}: {m}");
        broken(tool, "blank.txt", "\n  \n");
        broken(tool, "garbage.txt", GARBAGE);
    }
    let missing = import(PeerTool::Wrk, &[fixture("nope/none.txt")], &ctx(Mode::Open))
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("none.txt") && missing.contains("cannot read"),
        "{missing}"
    );
}

#[test]
fn binary_input_is_not_text() {
    // vegeta's own binary results (not `vegeta encode --to csv` output) are one field per line.
    let m = broken(PeerTool::Vegeta, "results.bin", "\u{0}\u{1}ok");
    assert!(
        m.contains("1 fields, vegeta's CSV has 12") && m.contains("vegeta encode --to csv"),
        "{m}"
    );
    let dir = scratch("binary");
    let path = dir.join("bad-utf8.csv");
    std::fs::write(&path, [0xff, 0xfe, 0x00, 0x41]).unwrap();
    let m = import(PeerTool::Hey, &[path], &ctx(Mode::Open))
        .unwrap_err()
        .to_string();
    assert!(m.contains("bad-utf8.csv") && m.contains("UTF-8"), "{m}");
}

#[test]
fn truncated_text_outputs_are_rejected() {
    // wrk cut before its totals line.
    let m = broken(PeerTool::Wrk, "wrk.txt", &truncated("wrk/healthy.txt", 0.6));
    assert!(m.contains("requests in"), "{m}");
    // wrk cut inside a percentile value.
    let text = fixture_text("wrk/healthy.txt").replace("15.95ms", "15.");
    let m = broken(PeerTool::Wrk, "wrk-cut.txt", &text);
    assert!(m.contains(":10:"), "names the line: {m}");
    broken(PeerTool::Ab, "ab.txt", &truncated("ab/healthy.txt", 0.3));
    broken(
        PeerTool::Hey,
        "hey.txt",
        &truncated("hey/healthy.txt", 0.05),
    );
    broken(
        PeerTool::Locust,
        "locust_stats.csv",
        &truncated("locust/healthy_stats.csv", 0.5),
    );
}

#[test]
fn truncated_csvs_name_the_line() {
    let m = broken(
        PeerTool::Vegeta,
        "v.csv",
        &cut_mid_line("vegeta/mixed.csv", 0.5),
    );
    assert!(m.contains("fields"), "{m}");
    let m = broken(
        PeerTool::Hey,
        "h.csv",
        &cut_mid_line("hey/healthy.csv", 0.5),
    );
    assert!(m.contains("h.csv:"), "{m}");
    let m = broken(PeerTool::K6, "k.csv", &cut_mid_line("k6/dropped.csv", 0.5));
    assert!(m.contains("k.csv:"), "{m}");
    let m = broken(PeerTool::Oha, "o.csv", &cut_mid_line("oha/closed.csv", 0.5));
    assert!(m.contains("o.csv:"), "{m}");
    let m = broken(PeerTool::Ab, "a.csv", &truncated("ab/healthy.csv", 0.5));
    assert!(m.contains("101 percentiles"), "{m}");
}

#[test]
fn truncated_json_is_rejected() {
    for (tool, name) in [
        (PeerTool::Vegeta, "vegeta/hiccup.json"),
        (PeerTool::K6, "k6/dropped.summary.json"),
        (PeerTool::Fortio, "fortio/hiccup.json"),
        (PeerTool::Oha, "oha/rate.json"),
    ] {
        let m = broken(tool, "cut.json", &cut_mid_line(name, 0.5));
        assert!(m.contains("JSON"), "{tool}: {m}");
    }
    let m = broken(
        PeerTool::Fortio,
        "log.jsonl",
        &cut_mid_line("fortio/healthy.access.jsonl", 0.5),
    );
    assert!(m.contains("access log"), "{m}");
}

#[test]
fn wrong_columns_are_named() {
    let hey = fixture_text("hey/healthy.csv").replacen("status-code", "status", 1);
    let m = broken(PeerTool::Hey, "hey.csv", &hey);
    assert!(m.contains("status-code"), "{m}");
    let k6 = fixture_text("k6/constant-vus.csv").replacen("metric_value", "value", 1);
    let m = broken(PeerTool::K6, "k6.csv", &k6);
    assert!(m.contains("metric_value"), "{m}");
    let vegeta = "1795271908965161422,200,35857235\n";
    let m = broken(PeerTool::Vegeta, "vegeta.csv", vegeta);
    assert!(m.contains("vegeta.csv:1"), "{m}");
    let m = broken(
        PeerTool::Vegeta,
        "vegeta2.csv",
        &fixture_text("hey/healthy.csv"),
    );
    assert!(m.contains("vegeta2.csv:1"), "{m}");
}

#[test]
fn bad_numbers_name_the_field() {
    let vegeta = fixture_text("vegeta/mixed.csv").replacen(",200,", ",2OO,", 1);
    let m = broken(PeerTool::Vegeta, "v.csv", &vegeta);
    assert!(m.contains("v.csv:1") && m.contains("code"), "{m}");
    let k6 = fixture_text("k6/constant-vus.csv").replacen(",10.", ",ten", 1);
    let m = broken(PeerTool::K6, "k.csv", &k6);
    assert!(m.contains("metric_value"), "{m}");
}

#[test]
fn wrong_file_counts_are_refused() {
    let two = [fixture("wrk/healthy.txt"), fixture("wrk/hiccup.txt")];
    let m = import(PeerTool::Wrk, &two, &ctx(Mode::Closed))
        .unwrap_err()
        .to_string();
    assert!(m.contains("one text output"), "{m}");
    let m = import(PeerTool::K6, &[], &ctx(Mode::Closed))
        .unwrap_err()
        .to_string();
    assert!(m.contains("no files"), "{m}");
    let m = import(
        PeerTool::Locust,
        &[fixture("locust/healthy_failures.csv")],
        &ctx(Mode::Closed),
    )
    .unwrap_err()
    .to_string();
    assert!(m.contains("_stats.csv"), "{m}");
}

#[test]
fn a_summary_import_is_judged_on_the_tools_own_counts() {
    // vegeta's JSON report of 200 requests at 100/s over 2 s: the verdict's rate test reads
    // the counts and rate the summary gave, not the empty recording the result starts from.
    let mut c = ctx(Mode::Open);
    c.config.rate = Some(100.0);
    c.config.duration_ns = Some(2_000_000_000);
    let files = [fixture("vegeta/hiccup.json")];
    let r = import(PeerTool::Vegeta, &files, &c).unwrap();
    assert_valid(&r);
    let v = r.statistics.validity.as_ref().expect("judged");
    let rate = v
        .tests
        .iter()
        .find(|t| t.name == sojourn_core::validity::TestName::Rate)
        .unwrap();
    assert_eq!(
        rate.outcome,
        sojourn_core::validity::TestOutcome::Pass,
        "{rate:?}"
    );
    assert!(rate.statistic.unwrap().abs() < 0.01, "{rate:?}");
}

// ghz: the `-O json` report against the gRPC project's greeter, per call from `details`.

#[test]
fn ghz_per_call_with_calls_cut_off_at_the_end() {
    let r = load(PeerTool::Ghz, Mode::Paced, &["ghz/ok.json"]);
    assert_eq!(r.import.as_ref().unwrap().detail, Detail::PerRequest);
    // count 102: 99 OK, and 3 CANCELLED "the client connection is closing" after -z ran out.
    assert_eq!(r.counts.scheduled, 102);
    assert_eq!(r.counts.completed, 99);
    assert_eq!(r.counts.censored, 3);
    assert_eq!(r.counts.failed.total(), 0);
    // The slowest OK call: latency 4901947 ns (HDR keeps 3 significant digits).
    let max = r.histograms.response.max;
    assert!((4_895_000..=4_906_000).contains(&max), "{max}");
    assert!(notes(&r).contains("counted as censored"), "{}", notes(&r));
}

#[test]
fn ghz_deadline_exceeded_calls_fail() {
    let r = load(PeerTool::Ghz, Mode::Paced, &["ghz/deadline.json"]);
    // The greeter frozen half a second under a 200 ms deadline: 119 OK, 30 DeadlineExceeded.
    assert_eq!(r.counts.scheduled, 149);
    assert_eq!(r.counts.completed, 119);
    // TODO(grpc classes): grpc:DEADLINE_EXCEEDED once sojourn_core has the gRPC classes.
    assert_eq!(r.counts.failed.get(FailureClass::GrpcDeadlineExceeded), 30);
    assert_eq!(r.counts.failed.total(), 30);
    assert!(
        notes(&r).contains("by gRPC status: DEADLINE_EXCEEDED 30"),
        "{}",
        notes(&r)
    );
    // The failed calls are timed too: the slowest is a deadline, 200937289 ns.
    let max = r.histograms.response.max;
    assert!((200_000_000..=201_500_000).contains(&max), "{max}");
}

#[test]
fn ghz_refused_connection_is_unavailable() {
    let r = load(PeerTool::Ghz, Mode::Paced, &["ghz/refused.json"]);
    assert_eq!(r.counts.scheduled, 5);
    assert_eq!(r.counts.completed, 0);
    assert_eq!(r.counts.failed.get(FailureClass::GrpcUnavailable), 5);
    assert!(notes(&r).contains("UNAVAILABLE 5"), "{}", notes(&r));
}

#[test]
fn ghz_damaged_reports_are_rejected() {
    let m = broken(PeerTool::Ghz, "cut.json", &cut_mid_line("ghz/ok.json", 0.7));
    assert!(m.contains("invalid JSON"), "{m}");
    let text = fixture_text("ghz/deadline.json");
    let m = broken(
        PeerTool::Ghz,
        "status.json",
        &text.replacen(r#""status":"DeadlineExceeded""#, r#""status":"Sleepy""#, 1),
    );
    assert!(
        m.contains("].status: \"Sleepy\" is not a gRPC status code"),
        "{m}"
    );
    let m = broken(
        PeerTool::Ghz,
        "timestamp.json",
        &text.replacen(
            r#""timestamp":"2026-11-27T"#,
            r#""timestamp":"2026-11-27 "#,
            1,
        ),
    );
    assert!(
        m.contains("details[0].timestamp") && m.contains("RFC 3339"),
        "{m}"
    );
    let m = broken(
        PeerTool::Ghz,
        "count.json",
        &text.replacen(r#""count":149"#, r#""count":150"#, 1),
    );
    assert!(m.contains("count is 150 but `details` lists 149"), "{m}");
    let m = broken(
        PeerTool::Ghz,
        "no-details.json",
        r#"{"count":0,"statusCodeDistribution":{}}"#,
    );
    assert!(m.contains("no `details` array found"), "{m}");
}
