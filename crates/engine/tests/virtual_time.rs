//! The open loop's pacer and pool, and the closed loop, driven in tokio's paused (virtual) time through the
//! in-process transport: deterministic, instant, and independent of machine load.
use std::sync::Arc;
use std::time::Duration;

use sojourn_core::conformance::poisson_fit;
use sojourn_core::{Arrival, End, FailureClass, Measurements, Rate, Recorder, Schedule};
use sojourn_engine::sleeper::TokioSleeper;
use sojourn_engine::worker::{Arrivals, WorkerConfig, WorkerReport};
use sojourn_engine::{FnTransport, Progress, Transport};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// A server with a 1 ms baseline whose gate is closed from 1 s to 2 s after `base`: a request
/// reaching the gate during the stall waits for its end (DESIGN §3 `hiccup`).
fn hiccup(base: Instant) -> impl Transport {
    FnTransport::new(move || async move {
        tokio::time::sleep(ms(1)).await;
        let reach = Instant::now() - base;
        if reach >= ms(1000) && reach < ms(2000) {
            tokio::time::sleep_until(base + ms(2000)).await;
        }
        Ok(200)
    })
}

fn config(t0: Instant, cancel: CancellationToken, connections: usize) -> WorkerConfig {
    config_testing(t0, cancel, connections, None)
}

/// A worker's settings, testing its sends against `arrivals` (when given).
fn config_testing(
    t0: Instant,
    cancel: CancellationToken,
    connections: usize,
    arrivals: Option<Arrivals>,
) -> WorkerConfig {
    WorkerConfig {
        t0,
        timeout: ms(5000),
        interval: Duration::from_secs(1),
        progress: Progress::new(1),
        worker: 0,
        cancel,
        samples: None,
        arrivals,
        connections,
        slack: sojourn_engine::Slack::Fixed(Duration::ZERO),
        targets: None,
    }
}

fn measurements(report: &mut WorkerReport) -> Measurements {
    Recorder::merge_all([std::mem::replace(
        &mut report.recorder,
        Recorder::new(Duration::from_secs(1)),
    )])
}

fn constant(rate: f64, end: End) -> Schedule {
    Schedule::new(Arrival::Constant, Rate::per_second(rate).unwrap(), end).unwrap()
}

async fn open_run<T: Transport>(
    transport: T,
    t0: Instant,
    rate: f64,
    secs: u64,
    connections: usize,
    cancel: CancellationToken,
) -> (WorkerReport, Measurements) {
    let schedule = constant(rate, End::After(Duration::from_secs(secs)));
    let cfg = config(t0, cancel, connections);
    let mut report = sojourn_engine::open::run(
        transport,
        cfg,
        schedule.iter(),
        Duration::from_secs(secs),
        &mut TokioSleeper,
    )
    .await;
    let m = measurements(&mut report);
    (report, m)
}

fn slow_count(m: &Measurements, above: Duration) -> u64 {
    m.hist
        .response
        .count_between(above.as_nanos() as u64, u64::MAX)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn open_loop_measures_every_request_delayed_by_the_stall() {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let t0 = Instant::now();
            let (report, m) =
                open_run(hiccup(t0), t0, 1000.0, 3, 2000, CancellationToken::new()).await;
            assert_eq!(report.scheduled, 3000);
            assert_eq!(m.tally.accounted(), 3000, "nothing lost");
            assert_eq!(m.tally.completed, 3000);
            // Requests due from ≈0.999 s to 2 s all wait for the gate: ≈1,000 of them, taking
            // between ≈1 ms and ≈1 s.
            let late = slow_count(&m, ms(5));
            assert!((990..=1010).contains(&late), "late requests: {late}");
            let p99 = m.response_at(99.0).value;
            assert!(p99 > 700_000_000, "p99 reflects the wedge: {p99} ns");
            let max = m.hist.response.max();
            assert!(
                max > 990_000_000 && max < 1_010_000_000,
                "the first request in the stall waits ≈1 s: {max}"
            );
            assert_eq!(
                m.hist.dispatch_lag.max(),
                0,
                "in virtual time the pacer is never late"
            );
            assert_eq!(
                m.tally.waited_for_connection, 0,
                "2000 connections absorb the 1000-request queue"
            );
        })
        .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn closed_loop_hides_the_stall() {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let t0 = Instant::now();
            let cfg = config(t0, CancellationToken::new(), 10);
            let mut report =
                sojourn_engine::closed::run(hiccup(t0), cfg, End::After(ms(3000))).await;
            let m = measurements(&mut report);
            assert_eq!(m.tally.accounted(), report.scheduled, "nothing lost");
            // Each of the 10 connections meets the stall once; nothing else is slow.
            let late = slow_count(&m, ms(5));
            assert_eq!(late, 10, "one slow sample per connection");
            let p99 = m.response_at(99.0).value;
            assert!(
                p99 < 2_000_000,
                "closed-loop p99 stays at the baseline: {p99} ns"
            );
            assert!(
                m.hist.response.max() > 990_000_000,
                "…while the max shows the stall"
            );
        })
        .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_full_pool_is_counted_as_waiting_for_a_connection_not_generator_lag() {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let t0 = Instant::now();
            // 10 ms per request at 1000 req/s needs ≈10 connections; give it 5.
            let slow = FnTransport::new(|| async {
                tokio::time::sleep(ms(10)).await;
                Ok(200)
            });
            let (_, m) = open_run(slow, t0, 1000.0, 1, 5, CancellationToken::new()).await;
            assert_eq!(m.tally.accounted(), 1000);
            assert!(
                m.tally.waited_for_connection > 900,
                "waited: {}",
                m.tally.waited_for_connection
            );
            assert_eq!(
                m.hist.dispatch_lag.max(),
                0,
                "the generator itself was on time"
            );
            assert!(
                m.hist.send_lag.max() > 500_000_000,
                "the queue grows: capacity is 500 req/s"
            );
            let checks = sojourn_core::check::assess_open(&m, 5);
            assert!(checks.passed(), "a small pool is not the generator's fault");
            assert!(checks
                .notes
                .iter()
                .any(|n| n.contains("waited for a free connection")));
        })
        .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn timeouts_are_classified_and_censored_at_the_timeout() {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let t0 = Instant::now();
            let n = Arc::new(std::sync::atomic::AtomicU64::new(0));
            let hangs_every_tenth = FnTransport::new(move || {
                let i = n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                async move {
                    if i % 10 == 9 {
                        std::future::pending::<()>().await;
                    }
                    tokio::time::sleep(ms(1)).await;
                    Ok(if i % 10 == 4 { 503 } else { 200 })
                }
            });
            let (_, m) = open_run(
                hangs_every_tenth,
                t0,
                100.0,
                1,
                1000,
                CancellationToken::new(),
            )
            .await;
            assert_eq!(m.tally.accounted(), 100);
            assert_eq!(m.tally.failed.get(FailureClass::Timeout), 10);
            assert_eq!(m.tally.failed.get(FailureClass::Http5xx), 10);
            assert_eq!(m.tally.completed, 80);
            assert_eq!(m.censored.len(), 10, "each timeout is a lower bound");
            assert!(m.response_at(100.0).lower_bound);
            assert!(!m.response_at(50.0).lower_bound);
        })
        .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn cancelling_mid_stall_accounts_for_every_due_request() {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let t0 = Instant::now();
            let cancel = CancellationToken::new();
            let stopper = cancel.clone();
            tokio::task::spawn_local(async move {
                tokio::time::sleep_until(t0 + ms(1500)).await;
                stopper.cancel();
            });
            let (report, m) = open_run(hiccup(t0), t0, 1000.0, 3, 2000, cancel).await;
            let end = report.end;
            assert!(
                end >= ms(1500) && end < ms(1510),
                "stopped at the cancel: {end:?}"
            );
            assert!(
                (1499..=1502).contains(&report.scheduled),
                "only what was due: {}",
                report.scheduled
            );
            assert_eq!(m.tally.accounted(), report.scheduled, "nothing lost");
            // Everything sent into the stall is still out: censored, at least end − intended.
            assert!(m.tally.censored > 490, "censored: {}", m.tally.censored);
            assert!(m.response_at(100.0).lower_bound);
        })
        .await;
}

/// A Poisson run at 10 req/s for 60 s against a server stalled from 20 s to 30 s, with the worker
/// testing its sends.
async fn poisson_sends(connections: usize) -> Measurements {
    let t0 = Instant::now();
    let schedule = Schedule::new(
        Arrival::Poisson { seed: 7 },
        Rate::per_second(10.0).unwrap(),
        End::After(ms(60_000)),
    )
    .unwrap();
    let stalled = FnTransport::new(move || async move {
        tokio::time::sleep(ms(5)).await;
        let reach = Instant::now() - t0;
        if reach >= ms(20_000) && reach < ms(30_000) {
            tokio::time::sleep_until(t0 + ms(30_000)).await;
        }
        Ok(200)
    });
    let arrivals = Arrivals {
        schedule: schedule.clone(),
        senders: 1,
    };
    let cfg = config_testing(t0, CancellationToken::new(), connections, Some(arrivals));
    let mut report =
        sojourn_engine::open::run(stalled, cfg, schedule.iter(), ms(60_000), &mut TokioSleeper)
            .await;
    measurements(&mut report)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn sends_conform_to_poisson_until_a_small_pool_bunches_them() {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            // Enough connections: every request leaves when due, stall or not.
            let ample = poisson_sends(2000).await;
            let fit = poisson_fit(&ample.gaps).expect("hundreds of gaps");
            assert_eq!(
                fit.n,
                ample.tally.accounted() - 1,
                "one gap per send but the first"
            );
            assert!(fit.conforms, "sent as scheduled: {fit:?}");
            // One connection: during the stall the ~100 due requests wait for it and then leave
            // back to back, so the server sees a burst, not Poisson arrivals.
            let small = poisson_sends(1).await;
            assert_eq!(
                small.tally.accounted(),
                ample.tally.accounted(),
                "nothing lost"
            );
            let fit = poisson_fit(&small.gaps).expect("hundreds of gaps");
            assert!(!fit.conforms, "a burst of ~100 sends: {fit:?}");
            assert!(fit.d > 0.1, "a sixth of the gaps are tiny: {fit:?}");
        })
        .await;
}

/// Every finished request's sample, from a run whose worker streamed them.
fn sent_order(
    rx: std::sync::mpsc::Receiver<sojourn_core::RequestSample>,
) -> Vec<(Duration, Duration)> {
    let mut sends: Vec<(Duration, Duration)> = rx
        .try_iter()
        .map(|s| (s.intended, s.intended + s.response - s.service))
        .collect();
    sends.sort();
    sends
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn requests_waiting_for_a_connection_leave_oldest_first() {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let t0 = Instant::now();
            let (tx, rx) = std::sync::mpsc::channel();
            // Ten connections against a 1 s stall at 1000 req/s: ~990 requests wait in line.
            let cfg = WorkerConfig {
                samples: Some(tx),
                ..config(t0, CancellationToken::new(), 10)
            };
            let schedule = constant(1000.0, End::After(ms(3000)));
            let mut report = sojourn_engine::open::run(
                hiccup(t0),
                cfg,
                schedule.iter(),
                ms(3000),
                &mut TokioSleeper,
            )
            .await;
            let m = measurements(&mut report);
            assert_eq!(m.tally.accounted(), 3000, "nothing lost");
            assert!(m.tally.waited_for_connection > 900, "a real line formed");
            let sends = sent_order(rx);
            assert_eq!(sends.len(), 3000, "one sample per request");
            // FIFO: in due order, the send times never go backwards.
            let out_of_order = sends.windows(2).filter(|w| w[1].1 < w[0].1).count();
            assert_eq!(out_of_order, 0, "requests overtook older ones");
            // The first request caught by the stall waited for it whole; the line then drains
            // at the rate 10 connections of 1 ms allow, so the send lag falls back to zero.
            assert!(m.hist.send_lag.max() > 900_000_000);
            let last = sends.last().unwrap();
            assert_eq!(last.0, last.1, "the last request left on time");
        })
        .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn overloaded_open_loop_completes_what_a_closed_loop_does_on_the_same_connections() {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let one_ms = || {
                FnTransport::new(|| async {
                    tokio::time::sleep(ms(1)).await;
                    Ok(200)
                })
            };
            // 10 connections of 1 ms serve 10k req/s; offer ten times that.
            let t0 = Instant::now();
            let (open, m_open) =
                open_run(one_ms(), t0, 100_000.0, 1, 10, CancellationToken::new()).await;
            let t0 = Instant::now();
            let cfg = config(t0, CancellationToken::new(), 10);
            let mut closed = sojourn_engine::closed::run(one_ms(), cfg, End::After(ms(1000))).await;
            let m_closed = measurements(&mut closed);
            let rate =
                |m: &Measurements, end: Duration| m.tally.completed as f64 / end.as_secs_f64();
            let (r_open, r_closed) = (rate(&m_open, open.end), rate(&m_closed, closed.end));
            assert!(
                r_open >= 0.95 * r_closed,
                "open {r_open:.0}/s vs closed {r_closed:.0}/s"
            );
            // The rest waited in line: counted, never lost, and the line cost no memory.
            assert_eq!(open.scheduled, 100_000);
            assert_eq!(m_open.tally.accounted(), 100_000);
            assert!(m_open.tally.never_sent > 30_000, "{:?}", m_open.tally);
            // The pool held them, not the pacer: seconds of send lag, but the pacer was never
            // later than the virtual clock's 1 ms tick.
            assert!(m_open.hist.send_lag.max() > 4_000_000_000);
            assert!(m_open.hist.dispatch_lag.max() <= 1_000_000);
        })
        .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn slack_batches_wake_ups_and_counts_the_lateness_as_send_lag() {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let t0 = Instant::now();
            let fast = FnTransport::new(|| async { Ok(200) });
            // 10k req/s with the pacer waking at most every 5 ms: fifty requests per wake-up, the
            // first of each up to 4.9 ms late. (Without slack, the virtual clock's 1 ms tick
            // would batch them by ten.)
            let cfg = WorkerConfig {
                slack: sojourn_engine::Slack::Fixed(ms(5)),
                ..config(t0, CancellationToken::new(), 64)
            };
            let schedule = constant(10_000.0, End::After(ms(500)));
            let mut report =
                sojourn_engine::open::run(fast, cfg, schedule.iter(), ms(500), &mut TokioSleeper)
                    .await;
            let m = measurements(&mut report);
            assert_eq!(m.tally.completed, 5000);
            let lag = &m.hist.dispatch_lag;
            let q = |p: f64| lag.value_at_quantile(p);
            // Uniform over each batch: from on time to one slack late.
            assert!(
                (4_800_000..=5_100_000).contains(&lag.max()),
                "max {}",
                lag.max()
            );
            assert!((2_200_000..=2_800_000).contains(&q(0.5)), "p50 {}", q(0.5));
            assert!(q(0.1) <= 600_000, "p10 {}", q(0.1));
            assert_eq!(
                m.hist.send_lag.max(),
                lag.max(),
                "all of the send lag is the pacer's"
            );
        })
        .await;
}
