//! Per-interval response-time and send-lag histograms for watching a run while it goes: a
//! metrics endpoint, a live panel. Off unless asked for (`Progress::with_live`).
//!
//! Each worker records into its own pair of histograms behind its own lock. The only other
//! party that ever takes that lock is the collector, once per interval, and only to swap the
//! full pair for an empty one: the lock is uncontended in practice and held for a pointer
//! swap. The histograms have fixed bounds, so recording never allocates.
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use hdrhistogram::Histogram;
use sojourn_core::nanos;

/// The longest time the live histograms tell apart; longer ones count as this long. (The
/// run's result keeps exact values: its recorders resize.)
pub const LIVE_MAX: Duration = Duration::from_secs(3600);

/// One worker's histograms of the interval in progress.
#[derive(Debug, Clone)]
pub(crate) struct IntervalHistograms {
    response: Histogram<u64>,
    send_lag: Histogram<u64>,
}

impl IntervalHistograms {
    fn new() -> Self {
        let max = LIVE_MAX.as_nanos() as u64;
        let h = || {
            Histogram::new_with_bounds(1, max, sojourn_core::record::SIGFIG)
                .expect("fixed bounds are valid")
        };
        IntervalHistograms {
            response: h(),
            send_lag: h(),
        }
    }

    fn add(&mut self, other: &IntervalHistograms) {
        // Equal bounds: adding cannot fail or resize.
        let _ = self.response.add(&other.response);
        let _ = self.send_lag.add(&other.send_lag);
    }

    fn reset(&mut self) {
        self.response.reset();
        self.send_lag.reset();
    }
}

/// One worker's live block, padded so two workers never share a cache line.
#[derive(Debug)]
#[repr(align(128))]
struct WorkerLive {
    current: Mutex<IntervalHistograms>,
}

/// What the last completed interval looked like, all workers together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalSnapshot {
    /// Which interval of the run: it covers `[index·width, (index+1)·width)` from the start.
    pub index: u64,
    pub width: Duration,
    /// Requests that finished in it (answered or failed).
    pub answers: u64,
    pub response_p50: Duration,
    pub response_p90: Duration,
    pub response_p99: Duration,
    pub response_p999: Duration,
    pub send_lag_p99: Duration,
    /// Of the answers, those that were sent (a request that failed before it left has no send
    /// lag): the count the send-lag percentile rests on.
    pub sent_answers: u64,
}

impl IntervalSnapshot {
    /// Finished requests per second in the interval.
    pub fn rate(&self) -> f64 {
        self.answers as f64 / self.width.as_secs_f64()
    }

    fn of(index: u64, width: Duration, h: &IntervalHistograms) -> Self {
        let at = |h: &Histogram<u64>, q: f64| Duration::from_nanos(h.value_at_quantile(q));
        IntervalSnapshot {
            index,
            width,
            answers: h.response.len(),
            response_p50: at(&h.response, 0.50),
            response_p90: at(&h.response, 0.90),
            response_p99: at(&h.response, 0.99),
            response_p999: at(&h.response, 0.999),
            send_lag_p99: at(&h.send_lag, 0.99),
            sent_answers: h.send_lag.len(),
        }
    }
}

/// The live histograms of every worker and the snapshot of the last completed interval.
#[derive(Debug)]
pub struct Live {
    interval: Duration,
    workers: Vec<WorkerLive>,
    last: Mutex<Option<IntervalSnapshot>>,
}

impl Live {
    pub(crate) fn new(workers: usize, interval: Duration) -> Live {
        Live {
            interval: interval.max(Duration::from_millis(1)),
            workers: (0..workers.max(1))
                .map(|_| WorkerLive {
                    current: Mutex::new(IntervalHistograms::new()),
                })
                .collect(),
            last: Mutex::new(None),
        }
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The last completed interval, once one has completed.
    pub fn last_interval(&self) -> Option<IntervalSnapshot> {
        *lock(&self.last)
    }

    /// Records one finished request of worker `w` (`send_lag` is `None` if it was never sent).
    pub(crate) fn record(&self, w: usize, response: Duration, send_lag: Option<Duration>) {
        let mut h = lock(&self.workers[w % self.workers.len()].current);
        h.response.saturating_record(nanos(response));
        if let Some(lag) = send_lag {
            h.send_lag.saturating_record(nanos(lag));
        }
    }

    /// Closes interval `index`: takes every worker's histograms (leaving empty ones in their
    /// place) and publishes their sum. `scratch` is the collector's own spare pair.
    pub(crate) fn collect(&self, index: u64, scratch: &mut Collector) {
        scratch.sum.reset();
        for w in &self.workers {
            std::mem::swap(&mut *lock(&w.current), &mut scratch.spare);
            scratch.sum.add(&scratch.spare);
            scratch.spare.reset();
        }
        *lock(&self.last) = Some(IntervalSnapshot::of(index, self.interval, &scratch.sum));
    }
}

/// The collector's spare histograms, allocated once per run.
#[derive(Debug)]
pub(crate) struct Collector {
    spare: IntervalHistograms,
    sum: IntervalHistograms,
}

impl Collector {
    pub(crate) fn new() -> Self {
        Collector {
            spare: IntervalHistograms::new(),
            sum: IntervalHistograms::new(),
        }
    }
}

/// Collects `live` at the end of every interval after `t0` until `stop` says the run is over
/// (a message or a hung-up sender). The interval in progress at the end is not published: it
/// is incomplete.
pub(crate) fn collect_until(
    live: &Live,
    t0: std::time::Instant,
    stop: std::sync::mpsc::Receiver<()>,
) {
    let mut scratch = Collector::new();
    for index in 0.. {
        let boundary = t0 + live.interval * (index as u32 + 1);
        let wait = boundary.saturating_duration_since(std::time::Instant::now());
        match stop.recv_timeout(wait) {
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => live.collect(index, &mut scratch),
            _ => return,
        }
    }
}

/// A poisoned lock only means a worker panicked mid-record; its histograms and tallies are
/// still counts.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn an_interval_sums_every_worker_and_starts_the_next_empty() {
        let live = Live::new(2, Duration::from_secs(1));
        assert_eq!(live.last_interval(), None, "nothing completed yet");
        for i in 0..99 {
            live.record(i % 2, ms(10), Some(Duration::from_micros(5)));
        }
        live.record(1, ms(2_000), None);
        let mut scratch = Collector::new();
        live.collect(0, &mut scratch);
        let s = live.last_interval().expect("published");
        assert_eq!((s.index, s.answers, s.sent_answers), (0, 100, 99));
        assert!((s.rate() - 100.0).abs() < 1e-9);
        assert!(s.response_p50.abs_diff(ms(10)) < ms(1), "{s:?}");
        assert!(s.response_p999.abs_diff(ms(2_000)) < ms(5), "{s:?}");
        assert!(s.send_lag_p99 < Duration::from_micros(6), "{s:?}");
        live.collect(1, &mut scratch);
        let s = live.last_interval().unwrap();
        assert_eq!(
            (s.index, s.answers),
            (1, 0),
            "the next interval starts empty"
        );
    }

    #[test]
    fn beyond_the_bound_saturates() {
        let live = Live::new(1, Duration::from_secs(1));
        live.record(0, LIVE_MAX * 2, None);
        live.collect(0, &mut Collector::new());
        let p99 = live.last_interval().unwrap().response_p99;
        assert!(p99 >= LIVE_MAX - Duration::from_secs(5), "{p99:?}");
    }
}
