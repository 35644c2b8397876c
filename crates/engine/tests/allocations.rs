//! What a request costs in memory: nothing. The waiting line is a range of the schedule's
//! indices, a request in flight is a few words in its connection's slot, and sending,
//! receiving and recording reuse what each connection and recorder already hold. Counted with
//! dhat's heap statistics, for the whole process.
mod common;

use std::sync::Mutex;
use std::time::Duration;

use common::{assert_nothing_lost, open_plan, run, transport, Behaviour, TestServer};
use sojourn_core::{Arrival, End, Rate, Recorder, Schedule};
use sojourn_engine::sleeper::TokioSleeper;
use sojourn_engine::worker::WorkerConfig;
use sojourn_engine::{FnTransport, Progress};
use tokio_util::sync::CancellationToken;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// One profiler at a time: dhat's statistics are process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

/// The process's heap statistics over `f`.
fn heap_over<R>(f: impl FnOnce() -> R) -> (R, dhat::HeapStats) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _profiler = dhat::Profiler::builder().testing().build();
    let out = f();
    (out, dhat::HeapStats::get())
}

#[test]
fn a_request_allocates_nothing_in_steady_state() {
    let server = TestServer::start(Behaviour::Answer);
    // One connection in both runs, so the pool's own (per-connection) allocations are equal;
    // the second run sends three times as many requests in the same second.
    let count = |rate: f64| {
        let t = transport(&server.url());
        heap_over(|| {
            let report = run(&open_plan(rate, Duration::from_secs(1), 1), t, None);
            assert_nothing_lost(&report);
            report.measurements.tally.completed
        })
    };
    assert_flat("allocations", count(1_000.0), count(3_000.0));
}

/// A run of 1,000 requests against one of 3,000 (each `(answered, heap statistics)`): every
/// request answered, and at most 64 more allocations for the 2,000 more requests.
fn assert_flat(what: &str, (few, a): (u64, dhat::HeapStats), (many, b): (u64, dhat::HeapStats)) {
    assert_eq!((few, many), (1_000, 3_000), "every request answered");
    let extra = b.total_blocks.saturating_sub(a.total_blocks);
    println!(
        "{what}: {} for {few} requests, {} for {many}",
        a.total_blocks, b.total_blocks
    );
    assert!(
        extra <= 64,
        "{what}: {extra} more for {} more requests ({} vs {} in all)",
        many - few,
        b.total_blocks,
        a.total_blocks
    );
}

/// Watching the run (per-interval histograms, swapped out by a collector ten times a second)
/// costs a fixed set of histograms, not a thing per request.
#[test]
fn watching_a_run_allocates_nothing_per_request() {
    let server = TestServer::start(Behaviour::Answer);
    let interval = Duration::from_millis(100);
    let count = |rate: f64| {
        let t = transport(&server.url());
        let plan = open_plan(rate, Duration::from_secs(1), 1);
        heap_over(|| {
            let progress = Progress::with_live(plan.worker_count(), interval);
            let cancel = CancellationToken::new();
            let report = sojourn_engine::execute(&plan, t, cancel, progress.clone()).unwrap();
            assert_nothing_lost(&report);
            let last = progress
                .live()
                .unwrap()
                .last_interval()
                .expect("an interval closed");
            assert!(last.index >= 8, "ten intervals in a second: {last:?}");
            let expected = rate * interval.as_secs_f64();
            assert!(
                (last.answers as f64 - expected).abs() <= expected * 0.5,
                "{last:?}"
            );
            report.measurements.tally.completed
        })
    };
    assert_flat("allocations while watched", count(1_000.0), count(3_000.0));
}

/// Against a target that never answers, the waiting line grows by a million requests in a
/// second of virtual time, and the peak heap does not move.
#[test]
fn a_black_hole_costs_the_same_bytes_however_long_the_line() {
    let peak = |rate: f64| {
        heap_over(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .start_paused(true)
                .build()
                .unwrap();
            let local = tokio::task::LocalSet::new();
            local.block_on(&rt, black_hole(rate))
        })
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
        slack: sojourn_engine::Slack::Fixed(Duration::ZERO),
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
