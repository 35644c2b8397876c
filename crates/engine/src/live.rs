//! Per-interval response-time, service-time and send-lag histograms for watching a run while
//! it goes: a metrics endpoint, a live panel, a dashboard. Off unless asked for
//! (`Progress::with_live`).
//!
//! A request joins the interval it finished in, as the result's timeline keys it, so a live
//! interval is the same requests as the result's interval of that index. Each worker keeps the
//! interval in progress and the next one, behind its own lock; the only other party that ever
//! takes that lock is the collector, once per interval, a little after the interval's end (the
//! grace lets a worker that read its clock just before the boundary record what it stamped),
//! and only to swap the full histograms for empty ones. The lock is uncontended in practice.
//! The histograms have fixed bounds, so recording never allocates.
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hdrhistogram::Histogram;
use sojourn_core::nanos;

/// The longest time the live histograms tell apart; longer ones count as this long. (The
/// run's result keeps exact values: its recorders resize.)
pub const LIVE_MAX: Duration = Duration::from_secs(3600);

/// One worker's histograms of one interval.
#[derive(Debug, Clone)]
pub(crate) struct IntervalHistograms {
    response: Histogram<u64>,
    /// Of the requests that were sent: from the send to the end.
    service: Histogram<u64>,
    send_lag: Histogram<u64>,
    /// Of the requests, those that failed.
    failed: u64,
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
            service: h(),
            send_lag: h(),
            failed: 0,
        }
    }

    fn add(&mut self, other: &IntervalHistograms) {
        // Equal bounds: adding cannot fail or resize.
        let _ = self.response.add(&other.response);
        let _ = self.service.add(&other.service);
        let _ = self.send_lag.add(&other.send_lag);
        self.failed += other.failed;
    }

    fn reset(&mut self) {
        self.response.reset();
        self.service.reset();
        self.send_lag.reset();
        self.failed = 0;
    }
}

/// One interval a worker records into: which one, and its histograms.
#[derive(Debug)]
struct Slot {
    index: u64,
    histograms: IntervalHistograms,
}

/// A worker's two live intervals (the one in progress and the next, at `index % 2`) and the
/// requests it could not place in either.
#[derive(Debug)]
struct Slots {
    slots: [Slot; 2],
    /// Requests whose interval was already collected, or whose slot still held an interval the
    /// collector had not reached (it fell a whole interval behind): counted here, in no live
    /// interval. The result has them.
    missed: u64,
}

/// One worker's live block, padded so two workers never share a cache line.
#[derive(Debug)]
#[repr(align(128))]
struct WorkerLive {
    current: Mutex<Slots>,
}

impl WorkerLive {
    fn new() -> Self {
        let slot = |index| Slot {
            index,
            histograms: IntervalHistograms::new(),
        };
        WorkerLive {
            current: Mutex::new(Slots {
                slots: [slot(0), slot(1)],
                missed: 0,
            }),
        }
    }
}

/// Percentiles of one histogram of an interval, and how many values they rest on.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Figures {
    pub count: u64,
    pub p50: Duration,
    pub p90: Duration,
    pub p99: Duration,
    pub p999: Duration,
    pub max: Duration,
}

impl Figures {
    fn of(h: &Histogram<u64>) -> Figures {
        let at = |q: f64| Duration::from_nanos(h.value_at_quantile(q));
        Figures {
            count: h.len(),
            p50: at(0.50),
            p90: at(0.90),
            p99: at(0.99),
            p999: at(0.999),
            max: Duration::from_nanos(h.max()),
        }
    }
}

/// What the last completed interval looked like, all workers together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalSnapshot {
    /// Which interval of the run: it covers `[index·width, (index+1)·width)` from the start,
    /// and holds the requests that finished in it.
    pub index: u64,
    pub width: Duration,
    /// Requests that finished in it (answered or failed).
    pub answers: u64,
    /// Of the answers, those that failed.
    pub failed: u64,
    pub response_p50: Duration,
    pub response_p90: Duration,
    pub response_p99: Duration,
    pub response_p999: Duration,
    pub send_lag_p99: Duration,
    /// Of the answers, those that were sent (a request that failed before it left has no send
    /// lag): the count the send-lag percentile rests on.
    pub sent_answers: u64,
    /// Response time from the due time, every percentile shown, and the maximum.
    pub response: Figures,
    /// Service time, from the send, of the answers that were sent.
    pub service: Figures,
    /// Send lag, from the due time to the send, of the same answers.
    pub send_lag: Figures,
    /// Requests that finished in this interval or an earlier one but reached no live interval
    /// (see [`Live`]), over the run so far: 0 unless a worker or the collector was held up for
    /// about an interval.
    pub missed: u64,
}

impl IntervalSnapshot {
    /// Finished requests per second in the interval.
    pub fn rate(&self) -> f64 {
        self.answers as f64 / self.width.as_secs_f64()
    }

    fn of(index: u64, width: Duration, h: &IntervalHistograms, missed: u64) -> Self {
        let (response, service, send_lag) = (
            Figures::of(&h.response),
            Figures::of(&h.service),
            Figures::of(&h.send_lag),
        );
        IntervalSnapshot {
            index,
            width,
            answers: response.count,
            failed: h.failed,
            response_p50: response.p50,
            response_p90: response.p90,
            response_p99: response.p99,
            response_p999: response.p999,
            send_lag_p99: send_lag.p99,
            sent_answers: send_lag.count,
            response,
            service,
            send_lag,
            missed,
        }
    }
}

/// The live histograms of every worker and the snapshot of the last completed interval.
#[derive(Debug)]
pub struct Live {
    interval: Duration,
    workers: Vec<WorkerLive>,
    last: Mutex<Option<IntervalSnapshot>>,
    /// The last completed interval's response times, as compact bytes
    /// ([`sojourn_core::record::encode`]): what a sink that judges objectives as the run goes
    /// adds up, interval by interval, as the gate does with the result's timeline.
    last_response: Mutex<Option<(u64, Arc<[u8]>)>>,
}

impl Live {
    pub(crate) fn new(workers: usize, interval: Duration) -> Live {
        Live {
            interval: interval.max(Duration::from_millis(1)),
            workers: (0..workers.max(1)).map(|_| WorkerLive::new()).collect(),
            last: Mutex::new(None),
            last_response: Mutex::new(None),
        }
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The last completed interval, once one has completed.
    pub fn last_interval(&self) -> Option<IntervalSnapshot> {
        *lock(&self.last)
    }

    /// The last completed interval's index and response times (compact bytes; decode with
    /// [`sojourn_core::record::decode`]).
    pub fn last_response(&self) -> Option<(u64, Arc<[u8]>)> {
        lock(&self.last_response).clone()
    }

    /// How long after an interval's end the collector closes it: long enough for a worker
    /// that stamped a finish just before the boundary to record it, short against the
    /// interval.
    pub fn grace(&self) -> Duration {
        (self.interval / 4).min(GRACE)
    }

    /// Records one request of worker `w` that finished at `done` (from the run's start),
    /// failed or not: `sent` (its service time and send lag) is `None` if it was never sent.
    pub(crate) fn record(
        &self,
        w: usize,
        done: Duration,
        response: Duration,
        sent: Option<(Duration, Duration)>,
        failed: bool,
    ) {
        let index = (done.as_nanos() / self.interval.as_nanos()) as u64;
        let mut slots = lock(&self.workers[w % self.workers.len()].current);
        let slot = &mut slots.slots[(index % 2) as usize];
        if slot.index != index {
            slots.missed += 1;
            return;
        }
        let h = &mut slot.histograms;
        h.failed += u64::from(failed);
        h.response.saturating_record(nanos(response));
        if let Some((service, send_lag)) = sent {
            h.service.saturating_record(nanos(service));
            h.send_lag.saturating_record(nanos(send_lag));
        }
    }

    /// Closes interval `index`: takes every worker's histograms of it (leaving empty ones in
    /// their place, for interval `index + 2`) and publishes their sum. `scratch` is the
    /// collector's own spare histograms.
    pub(crate) fn collect(&self, index: u64, scratch: &mut Collector) {
        scratch.sum.reset();
        let mut missed = 0;
        for w in &self.workers {
            let mut slots = lock(&w.current);
            let slot = &mut slots.slots[(index % 2) as usize];
            if slot.index == index {
                std::mem::swap(&mut slot.histograms, &mut scratch.spare);
                slot.index = index + 2;
            }
            missed += slots.missed;
            drop(slots);
            scratch.sum.add(&scratch.spare);
            scratch.spare.reset();
        }
        let encoded: Arc<[u8]> = sojourn_core::record::encode(&scratch.sum.response).into();
        *lock(&self.last_response) = Some((index, encoded));
        *lock(&self.last) = Some(IntervalSnapshot::of(
            index,
            self.interval,
            &scratch.sum,
            missed,
        ));
    }
}

/// The most the collector waits past an interval's end before closing it.
const GRACE: Duration = Duration::from_millis(100);

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

/// Collects `live` a grace after the end of every interval after `t0` until `stop` says the
/// run is over (a message or a hung-up sender). The interval in progress at the end is not
/// published: it is incomplete.
pub(crate) fn collect_until(
    live: &Live,
    t0: std::time::Instant,
    stop: std::sync::mpsc::Receiver<()>,
) {
    let mut scratch = Collector::new();
    for index in 0.. {
        let boundary = t0 + live.interval * (index as u32 + 1) + live.grace();
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
        let lag = Duration::from_micros(5);
        for i in 0..99 {
            live.record(i % 2, ms(500), ms(10), Some((ms(9), lag)), false);
        }
        live.record(1, ms(900), ms(2_000), None, true);
        let mut scratch = Collector::new();
        live.collect(0, &mut scratch);
        let s = live.last_interval().expect("published");
        assert_eq!((s.index, s.answers, s.sent_answers), (0, 100, 99));
        assert_eq!((s.response.count, s.service.count, s.missed), (100, 99, 0));
        assert_eq!(s.failed, 1, "the unsent one failed");
        assert!((s.rate() - 100.0).abs() < 1e-9);
        assert!(s.response_p50.abs_diff(ms(10)) < ms(1), "{s:?}");
        assert!(s.response_p999.abs_diff(ms(2_000)) < ms(5), "{s:?}");
        assert!(s.response.max.abs_diff(ms(2_000)) < ms(5), "{s:?}");
        assert!(s.service.p99.abs_diff(ms(9)) < ms(1), "{s:?}");
        assert!(s.send_lag_p99 < Duration::from_micros(6), "{s:?}");
        assert_eq!(s.send_lag.p99, s.send_lag_p99);
        let (index, bytes) = live.last_response().expect("published with it");
        let h = sojourn_core::record::decode(&bytes);
        assert_eq!(
            (index, h.len(), h.max()),
            (0, 100, s.response.max.as_nanos() as u64)
        );
        live.collect(1, &mut scratch);
        let s = live.last_interval().unwrap();
        assert_eq!(
            (s.index, s.answers),
            (1, 0),
            "the next interval starts empty"
        );
    }

    /// A request joins the interval it finished in, whenever it is recorded: one that finished
    /// after the boundary waits for the next interval even while this one is open, and one
    /// that cannot reach its own (closed already, or its slot not yet collected) is counted
    /// as missed, never put in another.
    #[test]
    fn the_finish_time_decides_the_interval() {
        let live = Live::new(1, Duration::from_secs(1));
        let mut scratch = Collector::new();
        live.record(0, ms(999), ms(10), None, false);
        live.record(0, ms(1_000), ms(20), None, false);
        live.record(0, ms(1_001), ms(30), None, false);
        live.collect(0, &mut scratch);
        let s = live.last_interval().unwrap();
        assert_eq!((s.answers, s.missed), (1, 0), "{s:?}");
        assert!(s.response.max.abs_diff(ms(10)) < ms(1), "{s:?}");
        live.record(0, ms(998), ms(40), None, false);
        live.record(0, ms(2_500), ms(50), None, false);
        live.collect(1, &mut scratch);
        let s = live.last_interval().unwrap();
        assert_eq!((s.index, s.answers, s.missed), (1, 2, 1), "{s:?}");
        assert!(s.response.max.abs_diff(ms(30)) < ms(1), "{s:?}");
        // The collector a whole interval behind: interval 4's request finds interval 2 still
        // in its slot.
        live.record(0, ms(4_100), ms(60), None, false);
        live.collect(2, &mut scratch);
        let s = live.last_interval().unwrap();
        assert_eq!((s.index, s.answers, s.missed), (2, 1, 2), "{s:?}");
    }

    #[test]
    fn beyond_the_bound_saturates() {
        let live = Live::new(1, Duration::from_secs(1));
        live.record(0, ms(1), LIVE_MAX * 2, None, false);
        live.collect(0, &mut Collector::new());
        let p99 = live.last_interval().unwrap().response_p99;
        assert!(p99 >= LIVE_MAX - Duration::from_secs(5), "{p99:?}");
    }
}
