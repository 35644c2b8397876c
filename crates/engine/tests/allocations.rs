//! What a request costs in memory. Each case runs 1,000 requests, then 10,000 in the same
//! second (the unpaced closed loop: as fast as it goes), and compares what the whole process
//! allocated, in blocks (dhat counts a `realloc` as one) and in bytes (a `realloc` adds its new
//! size, so a vector that grows per request shows there even when its blocks barely move). The
//! servers run in a child process, so what is counted is the generator alone.
//!
//! Over plain HTTP/1.1 a request allocates nothing: the waiting line is a range of the
//! schedule's indices, a request in flight is a few words in its connection's slot, and
//! sending, receiving and recording reuse what each connection and recorder already hold.
//! Over TLS (rustls's records) and HTTP/2 (the header maps `h2` takes and makes) a request
//! allocates; those figures were measured and are written below, and a run that allocates more
//! fails.
//!
//! One thing grows without growing per request: an HdrHistogram's counts cover the range up to
//! the largest value it has recorded, so a run with one 40 ms hiccup holds larger histograms
//! (by hundreds of KiB in all) than one without, whatever its number of requests. dhat's
//! profile tells the histograms' own allocations apart; their bytes are reported and left out of
//! the comparison, their blocks are held to a bound of their own (a resize is a block; a
//! histogram made per request would be thousands).
//!
//! Each case also checks that what is held at once (outside the histograms) does not grow:
//! what TLS and HTTP/2 allocate per request is freed with it.
mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use common::{assert_nothing_lost, open_plan, run};
use sojourn_core::targets::{Order, Targets};
use sojourn_core::{Arrival, End, Rate, Recorder, Schedule};
use sojourn_engine::sleeper::TokioSleeper;
use sojourn_engine::worker::WorkerConfig;
use sojourn_engine::{
    FnTransport, Http2Transport, HttpRequest, HttpTransport, Load, Plan, Progress, Slack,
    Transport, Trust,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// dhat's statistics are process-wide and one profiler runs at a time, so each test holds this
/// for its whole length: another test setting up meanwhile would be counted too.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The two runs of each case, over the same second.
const FEW: u64 = 1_000;
const MANY: u64 = 10_000;
const SPAN: Duration = Duration::from_secs(1);

/// What 9,000 more requests may add outside the histograms where nothing is allocated per
/// request: under one block per 250 requests and two bytes per request. None was seen over
/// plain HTTP/1.1 (two blocks at times, where the timeline merged one more interval); over TLS
/// the second run resumes the first one's session, about 12 blocks and 4 KiB once.
const FLAT: Count = Count {
    blocks: 32,
    bytes: 16 * 1024,
};

/// How many more blocks the histograms may take: a histogram's counts are resized (a block each
/// time) as larger values arrive, so a run that met a hiccup holds more resizes. Seen: up to 20
/// more, in runs of 40 to 120 histogram blocks. A histogram made per request would add 9,000.
const HISTOGRAM_BLOCKS: i64 = 128;

/// Blocks and bytes allocated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Count {
    blocks: u64,
    bytes: u64,
}

impl std::ops::AddAssign for Count {
    fn add_assign(&mut self, other: Count) {
        self.blocks += other.blocks;
        self.bytes += other.bytes;
    }
}

/// What one place allocated over a run, and the most it held at once.
#[derive(Debug, Clone, Copy, Default)]
struct Site {
    total: Count,
    peak: u64,
}

/// One run's allocations, by the place that made them: the first frame of its backtrace
/// outside the allocator and the standard library (a `realloc` is charged to the place that
/// made the block).
struct Profile {
    sites: HashMap<String, Site>,
}

/// The crates whose frames only pass an allocation on: the allocator and the standard library.
const PLUMBING: [&str; 5] = ["alloc", "core", "std", "dhat", "__rustc"];
/// Where the standard library's own frames say they are (`<u8 as <[_]>::to_vec_in::ConvertVec>`
/// names no crate, but its place is `alloc/src/slice.rs`).
const STD_SOURCES: [&str; 3] = ["alloc/src/", "core/src/", "std/src/"];

/// Enough frames to get past the allocator, `RawVec` and `Vec` to the code that allocated.
const FRAMES: usize = 16;

impl Profile {
    /// Profiles `f` (the caller holds [`serial`]).
    fn of<R>(name: &str, f: impl FnOnce() -> R) -> (R, Profile) {
        let file = std::env::temp_dir().join(format!(
            "sojourn-allocations-{}-{}.json",
            std::process::id(),
            name.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
        ));
        let profiler = dhat::Profiler::builder()
            .file_name(&file)
            .trim_backtraces(Some(FRAMES))
            .build();
        let out = f();
        // Dropping the profiler writes the profile.
        drop(profiler);
        let profile = Profile::read(&file);
        let _ = std::fs::remove_file(&file);
        (out, profile)
    }

    fn read(file: &Path) -> Profile {
        let text = std::fs::read_to_string(file).expect("dhat wrote its profile");
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let frames: Vec<&str> = json["ftbl"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        let mut sites: HashMap<String, Site> = HashMap::new();
        for pp in json["pps"].as_array().unwrap() {
            let site = pp["fs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| symbol(frames[i.as_u64().unwrap() as usize]))
                .find(|s| !is_plumbing(s))
                .unwrap_or("(no frame outside the allocator)");
            let entry = sites.entry(site.to_string()).or_default();
            entry.total += Count {
                blocks: pp["tbk"].as_u64().unwrap(),
                bytes: pp["tb"].as_u64().unwrap(),
            };
            // The most this backtrace held at once: a bound on what the site held at once.
            entry.peak += pp["mb"].as_u64().unwrap();
        }
        Profile { sites }
    }

    /// What the histograms allocated (`true`), or everything else (`false`).
    fn counted(&self, histograms: bool) -> Count {
        let mut all = Count::default();
        for (site, n) in &self.sites {
            if is_histogram(site) == histograms {
                all += n.total;
            }
        }
        all
    }

    /// The most held at once outside the histograms, place by place, added up.
    fn peak(&self) -> u64 {
        let sites = self.sites.iter().filter(|(site, _)| !is_histogram(site));
        sites.map(|(_, n)| n.peak).sum()
    }
}

/// `0x55d0c1a2b3c4: hdrhistogram::Histogram<T>::resize (src/lib.rs:1668:21)` -> the symbol and
/// its place.
fn symbol(frame: &str) -> &str {
    frame.split_once(": ").map_or(frame, |(_, s)| s)
}

/// The crate a frame's code belongs to: its type's (`<bytes::Bytes as core::clone::Clone>` is
/// `bytes`), or its trait's when the type is a bare parameter or primitive (`<T as
/// alloc::slice::ConvertVec>` is `alloc`).
fn crate_of(symbol: &str) -> &str {
    let path = match bare(symbol).split_once(" as ") {
        Some((ty, tr)) if !ty.contains("::") => bare(tr),
        _ => bare(symbol),
    };
    path.split("::").next().unwrap_or(path)
}

/// A path without what may come before its first segment: `<`, `&`, `&mut `, `dyn `.
fn bare(path: &str) -> &str {
    let path = path.trim_start_matches(['<', '&']);
    let path = path.strip_prefix("mut ").unwrap_or(path);
    path.strip_prefix("dyn ").unwrap_or(path)
}

/// `symbol (place)`: whether the frame only passes an allocation on.
fn is_plumbing(frame: &str) -> bool {
    let place = frame.rsplit_once(" (").map_or("", |(_, place)| place);
    frame == "[root]"
        || frame.starts_with("__rust")
        || PLUMBING.contains(&crate_of(frame))
        || STD_SOURCES.iter().any(|s| place.starts_with(s))
}

fn is_histogram(site: &str) -> bool {
    crate_of(site) == "hdrhistogram"
}

/// What 9,000 more requests allocated outside the histograms (negative when the larger run
/// allocated less), the histograms' blocks, and where most of it was.
struct Growth {
    blocks: i64,
    bytes: i64,
    histogram_blocks: i64,
    /// How much more was held at once, outside the histograms.
    peak: i64,
    /// The places that grew most, in bytes, with their growth in blocks and bytes.
    top: Vec<(String, i64, i64)>,
}

impl std::fmt::Display for Growth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} more blocks and {} more bytes outside the histograms ({} more held at once), {} \
             more histogram blocks",
            self.blocks, self.bytes, self.peak, self.histogram_blocks
        )?;
        for (site, blocks, bytes) in &self.top {
            write!(f, "\n    {blocks:+} blocks, {bytes:+} bytes at {site}")?;
        }
        Ok(())
    }
}

fn diff(a: u64, b: u64) -> i64 {
    b as i64 - a as i64
}

/// Runs a case at 1,000 and at 10,000 requests (`run` returns how many were answered) and
/// returns what the second allocated beyond the first.
fn growth(what: &str, run: impl Fn(u64) -> u64) -> Growth {
    let (few, a) = Profile::of(&format!("{what} {FEW}"), || run(FEW));
    let (many, b) = Profile::of(&format!("{what} {MANY}"), || run(MANY));
    assert_eq!((few, many), (FEW, MANY), "{what}: every request answered");
    for p in [&a, &b] {
        assert!(
            p.counted(true).bytes > 0,
            "{what}: no allocation was traced to the histograms; without symbols in the \
             backtraces (debug info) their bytes cannot be told apart"
        );
    }
    let (ca, cb) = (a.counted(false), b.counted(false));
    let (ha, hb) = (a.counted(true), b.counted(true));
    let more = Growth {
        blocks: diff(ca.blocks, cb.blocks),
        bytes: diff(ca.bytes, cb.bytes),
        histogram_blocks: diff(ha.blocks, hb.blocks),
        peak: diff(a.peak(), b.peak()),
        top: grew_most(&a, &b),
    };
    let extra = (MANY - FEW) as f64;
    println!(
        "{what}: {} blocks, {} bytes ({} at once; histograms: {} blocks, {} bytes) for {FEW} \
         requests; {} blocks, {} bytes ({} at once; histograms: {} blocks, {} bytes) for \
         {MANY}: {:.3} blocks, {:.1} bytes per request more",
        ca.blocks,
        ca.bytes,
        a.peak(),
        ha.blocks,
        ha.bytes,
        cb.blocks,
        cb.bytes,
        b.peak(),
        hb.blocks,
        hb.bytes,
        more.blocks as f64 / extra,
        more.bytes as f64 / extra,
    );
    more
}

/// The places that grew most from `a` to `b`: three by bytes outside the histograms, and
/// three by blocks, the histograms' included (many small blocks are many bytes by no one place).
fn grew_most(a: &Profile, b: &Profile) -> Vec<(String, i64, i64)> {
    let mut grew: Vec<(String, i64, i64)> = b
        .sites
        .iter()
        .map(|(site, n)| {
            let before = a.sites.get(site).copied().unwrap_or_default().total;
            let blocks = diff(before.blocks, n.total.blocks);
            (site.clone(), blocks, diff(before.bytes, n.total.bytes))
        })
        .collect();
    grew.sort_by_key(|&(_, blocks, bytes)| std::cmp::Reverse((bytes, blocks)));
    let (mut top, mut rest): (Vec<_>, Vec<_>) = grew
        .into_iter()
        .partition(|(site, _, _)| !is_histogram(site));
    rest.extend(top.drain(top.len().min(3)..));
    rest.sort_by_key(|&(_, blocks, bytes)| std::cmp::Reverse((blocks, bytes)));
    top.extend(rest.into_iter().take(3));
    top
}

/// 9,000 more requests allocated no more than [`FLAT`] outside the histograms, in blocks and in
/// bytes.
fn assert_flat(what: &str, more: Growth) {
    assert!(
        more.blocks <= FLAT.blocks as i64 && more.bytes <= FLAT.bytes as i64,
        "{what}: {more} for {} more requests; at most {} blocks and {} bytes allowed: nothing \
         per request",
        MANY - FEW,
        FLAT.blocks,
        FLAT.bytes
    );
    assert_no_creep(what, &more);
}

/// The histograms took no more than their resizes, and what was held at once did not grow
/// with the number of requests: nothing outlives its request.
fn assert_no_creep(what: &str, more: &Growth) {
    assert!(
        more.histogram_blocks <= HISTOGRAM_BLOCKS && more.peak <= FLAT.bytes as i64,
        "{what}: {more} for {} more requests; at most {HISTOGRAM_BLOCKS} more histogram blocks \
         and {} more bytes held at once allowed",
        MANY - FEW,
        FLAT.bytes
    );
}

/// What a protocol library allocates per request, as measured.
#[derive(Debug, Clone, Copy)]
struct PerRequest {
    blocks: f64,
    bytes: f64,
}

/// 9,000 more requests allocated no more than `per` each, plus [`FLAT`]; and at least half of
/// `per` each, or the figure (and the README's) is out of date. None of it outlives its request.
fn assert_per_request(what: &str, more: Growth, per: PerRequest) {
    let extra = (MANY - FEW) as f64;
    let most = |per: f64, flat: u64| (per * extra) as i64 + flat as i64;
    let (blocks, bytes) = (most(per.blocks, FLAT.blocks), most(per.bytes, FLAT.bytes));
    assert!(
        more.blocks <= blocks && more.bytes <= bytes,
        "{what}: {more} for {} more requests; at most {blocks} blocks and {bytes} bytes \
         allowed ({} blocks and {} bytes per request as measured, plus {} and {})",
        MANY - FEW,
        per.blocks,
        per.bytes,
        FLAT.blocks,
        FLAT.bytes
    );
    let least = |per: f64| (per * extra / 2.0) as i64;
    assert!(
        more.blocks >= least(per.blocks) && more.bytes >= least(per.bytes),
        "{what}: {more} for {} more requests, under half of the {} blocks and {} bytes per \
         request measured: the library allocates less than it did; measure again and update \
         the figure here and in the README",
        MANY - FEW,
        per.blocks,
        per.bytes
    );
    assert_no_creep(what, &more);
}

/// `n` requests over [`SPAN`], evenly spaced, on one connection. A run that falls behind (a
/// busy machine) has ten seconds after the schedule's end to catch up.
fn open(n: u64) -> Plan {
    Plan {
        timeout: Duration::from_secs(10),
        ..open_plan(n as f64 / SPAN.as_secs_f64(), SPAN, 1)
    }
}

/// Runs `plan` on `transport` and returns how many requests were answered.
fn answered<T: Transport>(plan: &Plan, transport: T) -> u64 {
    let report = run(plan, transport, None);
    assert_nothing_lost(&report).tally.completed
}

#[test]
fn a_request_allocates_nothing_in_steady_state() {
    let _serial = serial();
    let server = ServerProcess::start(Serve::Http1);
    let t = http1(&server.url(""), &Trust::PublicRoots);
    let more = growth("open loop, no slack", |n| answered(&open(n), t.clone()));
    assert_flat("open loop, no slack", more);
}

/// As `sojourn run` runs by default: the slack the pacer learns, the spin before each due
/// time, the hiccup meter, one-second intervals.
#[test]
fn the_defaults_allocate_nothing_per_request() {
    let _serial = serial();
    let server = ServerProcess::start(Serve::Http1);
    let t = http1(&server.url(""), &Trust::PublicRoots);
    let defaults = |n| Plan {
        slack: Slack::Auto,
        spin: sojourn_engine::DEFAULT_MAX_SPIN,
        hiccup: Some(sojourn_engine::HICCUP_TICK),
        interval: Duration::from_secs(1),
        ..open(n)
    };
    let more = growth("open loop, defaults", |n| answered(&defaults(n), t.clone()));
    assert_flat("open loop, defaults", more);
}

#[test]
fn the_closed_and_paced_loops_allocate_nothing_per_request() {
    let _serial = serial();
    let server = ServerProcess::start(Serve::Http1);
    let t = http1(&server.url(""), &Trust::PublicRoots);
    let closed = |n| Plan {
        load: Load::Closed(End::Count(n)),
        ..open(n)
    };
    let more = growth("closed loop", |n| answered(&closed(n), t.clone()));
    assert_flat("closed loop", more);
    // Each connection of a paced loop keeps to its own share of the slots: four keep up with
    // 10,000 a second where one could not.
    let paced = |n| Plan {
        load: Load::Paced(schedule(n)),
        connections: 4,
        ..open(n)
    };
    let more = growth("paced loop", |n| answered(&paced(n), t.clone()));
    assert_flat("paced loop", more);
}

/// `n` requests evenly spaced over [`SPAN`]. Bounded by their count: a paced connection that
/// gets round to a slot after a duration's end leaves it unsent, and every slot must be sent.
fn schedule(n: u64) -> Schedule {
    let rate = Rate::per_second(n as f64 / SPAN.as_secs_f64()).unwrap();
    Schedule::new(Arrival::Constant, rate, End::Count(n)).unwrap()
}

/// Many requests from a targets file, each counted under its label as well.
#[test]
fn a_targets_file_allocates_nothing_per_request() {
    let _serial = serial();
    let server = ServerProcess::start(Serve::Http1);
    let file = TempFile::new(
        "targets",
        &format!(
            "# label: items\n# weight: 3\nGET {}\n\n\
             # label: items\nGET {}\nAccept: application/json\n\n\
             # label: create\nPOST {}\nContent-Type: text/plain\n\n\
             HEAD {}\n",
            server.url("items/1"),
            server.url("items/2"),
            server.url("items"),
            server.url("health"),
        ),
    );
    let targets = Arc::new(Targets::load(&file.0, Order::Random { seed: 7 }).unwrap());
    assert_eq!(targets.labels().len(), 3, "{:?}", targets.labels());
    let requests: Vec<HttpRequest> = targets.targets().iter().map(HttpRequest::from).collect();
    let t = block_on(HttpTransport::many(&requests, &Trust::PublicRoots)).unwrap();
    let plan = |n| Plan {
        targets: Some(targets.clone()),
        ..open(n)
    };
    let more = growth("targets file", |n| answered(&plan(n), t.clone()));
    assert_flat("targets file", more);
}

/// Watching the run (per-interval histograms, swapped out by a collector ten times a second)
/// costs a fixed set of histograms, not a thing per request.
#[test]
fn watching_a_run_allocates_nothing_per_request() {
    let _serial = serial();
    let server = ServerProcess::start(Serve::Http1);
    let t = http1(&server.url(""), &Trust::PublicRoots);
    let interval = Duration::from_millis(100);
    let watched = |n| {
        let plan = open(n);
        let progress = Progress::with_live(plan.worker_count(), interval);
        let report =
            sojourn_engine::execute(&plan, t.clone(), CancellationToken::new(), progress.clone())
                .unwrap();
        assert_nothing_lost(&report);
        let last = progress
            .live()
            .unwrap()
            .last_interval()
            .expect("an interval closed");
        assert!(last.index >= 8, "ten intervals in a second: {last:?}");
        assert_eq!(last.width, interval);
        assert!(last.answers > 0, "{last:?}");
        // At 1,000 a second the generator keeps pace, so the last interval holds about its
        // share; at 10,000 a busy machine may still be catching up in it.
        let expected = n as f64 * interval.as_secs_f64() / SPAN.as_secs_f64();
        assert!(
            n > FEW || (last.answers as f64 - expected).abs() <= expected * 0.5,
            "{last:?}"
        );
        report.measurements.tally.completed
    };
    let more = growth("watched", watched);
    assert_flat("watched", more);
}

/// rustls allocates a block per TLS record: the request's ciphertext as it is sealed (90
/// bytes), the answer's plaintext as it is opened (38 bytes). Measured on 2026-11-26 (rustls
/// 0.23.46, TLS 1.3): +18,011 blocks, +1,151,853 bytes for 9,000 more requests on one
/// connection, a 68-byte GET and a 38-byte answer.
const TLS_PER_REQUEST: PerRequest = PerRequest {
    blocks: 2.0,
    bytes: 128.0,
};

#[test]
fn tls_allocates_what_rustls_does_per_request_and_no_more() {
    let _serial = serial();
    let server = ServerProcess::start(Serve::Https1);
    let t = http1(&server.url(""), &Trust::AnyCertificate);
    let what = Serve::Https1.name();
    let more = growth(what, |n| answered(&open(n), t.clone()));
    assert_per_request(what, more, TLS_PER_REQUEST);
}

/// HTTP/2 allocates six blocks per request: the request's header map, which `h2` takes by value
/// (2 blocks, 136 bytes); `h2`'s copies of its `:path` and `:authority` (2, 16); the answer's
/// header map as `h2` decodes it (2, 656, with one header field). Measured on 2026-11-26 (h2
/// 0.4.20, http 1.5.0): +53,999 blocks, +7,272,000 bytes for 9,000 more requests on one stream.
const H2C_PER_REQUEST: PerRequest = PerRequest {
    blocks: 6.0,
    bytes: 808.0,
};

/// HTTP/2 over TLS: the six above, and a block per TLS record as over HTTP/1.1 (smaller
/// records: HPACK compresses the headers). Measured on 2026-11-26: +72,011 blocks, +7,793,855
/// bytes for 9,000 more requests.
const H2_TLS_PER_REQUEST: PerRequest = PerRequest {
    blocks: 8.0,
    bytes: 866.0,
};

#[test]
fn http2_allocates_what_h2_does_per_request_and_no_more() {
    let _serial = serial();
    for (kind, per) in [
        (Serve::H2c, H2C_PER_REQUEST),
        (Serve::H2Tls, H2_TLS_PER_REQUEST),
    ] {
        let server = ServerProcess::start(kind);
        let request = get(&server.url(""));
        let t = block_on(Http2Transport::many(&[request], &Trust::AnyCertificate, 1)).unwrap();
        let plan = |n| Plan {
            streams: Some(1),
            ..open(n)
        };
        let more = growth(kind.name(), |n| answered(&plan(n), t.clone()));
        assert_per_request(kind.name(), more, per);
    }
}

/// Against a target that never answers, the waiting line grows by a million requests in a
/// second of virtual time, and the peak heap does not move.
#[test]
fn a_black_hole_costs_the_same_bytes_however_long_the_line() {
    let _serial = serial();
    let peak = |rate: f64| {
        let _profiler = dhat::Profiler::builder().testing().build();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        let never_sent = local.block_on(&rt, black_hole(rate));
        (never_sent, dhat::HeapStats::get())
    };
    let (short, small) = peak(100_000.0);
    let (long, large) = peak(1_000_000.0);
    // 64 time out at the timeout, 64 more are in flight at the end, and the rest never left.
    assert_eq!(short, 100_000 - 128);
    assert_eq!(long, 1_000_000 - 128);
    assert!(
        large.max_bytes <= small.max_bytes + 16 * 1024,
        "peak heap {} B for a line of {long} vs {} B for {short}",
        large.max_bytes,
        small.max_bytes
    );
}

/// One second at `rate` against 64 connections that never answer; returns how many requests
/// were never sent.
async fn black_hole(rate: f64) -> u64 {
    let t0 = tokio::time::Instant::now();
    let never = FnTransport::new(std::future::pending::<Result<u16, _>>);
    let schedule = Schedule::new(
        Arrival::Constant,
        Rate::per_second(rate).unwrap(),
        End::After(Duration::from_secs(1)),
    )
    .unwrap();
    let cfg = WorkerConfig {
        t0,
        timeout: Duration::from_secs(3600),
        interval: Duration::from_secs(3600),
        progress: Progress::new(1),
        worker: 0,
        cancel: CancellationToken::new(),
        samples: None,
        arrivals: None,
        connections: 64,
        slack: Slack::Fixed(Duration::ZERO),
        targets: None,
    };
    let report = sojourn_engine::open::run(
        never,
        cfg,
        schedule.iter(),
        Duration::from_secs(1),
        &mut TokioSleeper,
    )
    .await;
    let m = Recorder::merge_all([report.recorder]);
    assert_eq!(m.tally.accounted(), report.scheduled);
    assert_eq!(m.tally.censored, 64);
    assert_eq!(m.tally.failed.get(sojourn_core::FailureClass::Timeout), 64);
    m.tally.never_sent
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn get(url: &str) -> HttpRequest {
    HttpRequest {
        url: url.parse().unwrap(),
        method: "GET".into(),
        headers: Vec::new(),
        body: Vec::new(),
    }
}

/// An HTTP/1.1 transport for `url` (resolved and encoded, not yet connected).
fn http1(url: &str, trust: &Trust) -> HttpTransport {
    block_on(HttpTransport::new(&get(url), trust)).unwrap()
}

/// A file in the temporary directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> TempFile {
        let path =
            std::env::temp_dir().join(format!("sojourn-allocations-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

// --- The servers' process ----------------------------------------------------------------------

/// What the server process speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Serve {
    Http1,
    Https1,
    H2c,
    H2Tls,
}

impl Serve {
    const ALL: [Serve; 4] = [Serve::Http1, Serve::Https1, Serve::H2c, Serve::H2Tls];

    fn name(self) -> &'static str {
        match self {
            Serve::Http1 => "HTTP/1.1",
            Serve::Https1 => "HTTP/1.1 over TLS",
            Serve::H2c => "HTTP/2 (h2c)",
            Serve::H2Tls => "HTTP/2 over TLS",
        }
    }

    fn tls(self) -> bool {
        matches!(self, Serve::Https1 | Serve::H2Tls)
    }

    fn http2(self) -> bool {
        matches!(self, Serve::H2c | Serve::H2Tls)
    }
}

/// Tells this test binary, started again, to be the server process (of the kind named).
const SERVE_ENV: &str = "SOJOURN_ALLOCATIONS_SERVE";
/// The line the server process prints once it listens, followed by its address.
const LISTENING: &str = "listening on ";

/// A server in a child process: this test binary run again as [`server_process`]. It answers
/// every request `200` at once (over HTTP/1.1 with no body, so a HEAD's answer is the same;
/// over HTTP/2 with a content type and `ok`), and dies with this handle (or when its stdin
/// closes).
struct ServerProcess {
    child: Child,
    addr: SocketAddr,
    kind: Serve,
}

impl ServerProcess {
    fn start(kind: Serve) -> ServerProcess {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["server_process", "--exact", "--ignored", "--nocapture"])
            .env(SERVE_ENV, kind.name())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting the server process");
        let out = BufReader::new(child.stdout.take().unwrap());
        let addr = out
            .lines()
            .map_while(Result::ok)
            .find_map(|line| line.strip_prefix(LISTENING).map(|a| a.parse().unwrap()))
            .expect("the server process exited before it listened");
        ServerProcess { child, addr, kind }
    }

    fn url(&self, path: &str) -> String {
        let scheme = if self.kind.tls() { "https" } else { "http" };
        format!("{scheme}://{}/{path}", self.addr)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Not a test: the server process that the tests above start (see [`ServerProcess`]). Run
/// without [`SERVE_ENV`], it returns at once.
#[test]
#[ignore = "not a test: the tests above start it as their server process"]
fn server_process() {
    let Ok(name) = std::env::var(SERVE_ENV) else {
        return;
    };
    let kind = Serve::ALL
        .into_iter()
        .find(|k| k.name() == name)
        .expect("a known kind of server");
    // The parent closes its end of stdin when done with the server, or when it dies.
    std::thread::spawn(|| {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        std::process::exit(0);
    });
    block_on(serve_forever(kind));
}

async fn serve_forever(kind: Serve) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("{LISTENING}{}", listener.local_addr().unwrap());
    let tls = kind.tls().then(|| acceptor(kind.http2()));
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let _ = socket.set_nodelay(true);
                let tls = tls.clone();
                tokio::task::spawn_local(async move {
                    match tls {
                        None => answer(kind, socket).await,
                        Some(tls) => {
                            if let Ok(s) = tls.accept(socket).await {
                                answer(kind, s).await
                            }
                        }
                    }
                });
            }
        })
        .await;
}

async fn answer<S: AsyncRead + AsyncWrite + Unpin>(kind: Serve, s: S) {
    if kind.http2() {
        answer_h2(s).await
    } else {
        answer_http1(s).await
    }
}

/// Answers each request head (up to its blank line) with `200`.
async fn answer_http1<S: AsyncRead + AsyncWrite + Unpin>(mut s: S) {
    // No body, so the answer to a HEAD request is the same.
    const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    let mut buf = [0u8; 4096];
    // How much of "\r\n\r\n" has been seen so far.
    let mut matched = 0;
    loop {
        let n = match s.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let mut heads = 0;
        for &b in &buf[..n] {
            matched = match (matched, b) {
                (0 | 2, b'\r') => matched + 1,
                (1 | 3, b'\n') => matched + 1,
                (_, b'\r') => 1,
                _ => 0,
            };
            if matched == 4 {
                matched = 0;
                heads += 1;
            }
        }
        for _ in 0..heads {
            if s.write_all(ANSWER).await.is_err() {
                return;
            }
        }
        if s.flush().await.is_err() {
            return;
        }
    }
}

async fn answer_h2<S: AsyncRead + AsyncWrite + Unpin>(s: S) {
    let Ok(mut conn) = h2::server::handshake(s).await else {
        return;
    };
    while let Some(Ok((_, mut respond))) = conn.accept().await {
        let ok = http::Response::builder()
            .header("content-type", "text/plain")
            .body(())
            .unwrap();
        if let Ok(mut body) = respond.send_response(ok, false) {
            let _ = body.send_data(Bytes::from_static(b"ok"), true);
        }
    }
}

/// A TLS acceptor with a fresh self-signed certificate, offering `h2` or `http/1.1`.
fn acceptor(http2: bool) -> tokio_rustls::TlsAcceptor {
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap();
    let alpn: &[u8] = if http2 { b"h2" } else { b"http/1.1" };
    config.alpn_protocols = vec![alpn.to_vec()];
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}
