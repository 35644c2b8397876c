//! Live counters for the progress line and the metrics endpoint. Each worker owns its own
//! cache-padded block and only adds to it, so the recording path never contends; the reader
//! sums the blocks. Per-interval histograms ([`Live`]) come on top only when asked for.
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use sojourn_core::{FailureClass, FailureCounts, Outcome};

use crate::live::Live;
use crate::live_labels::LiveLabels;

#[derive(Debug, Default)]
#[repr(align(128))]
pub struct WorkerCounters {
    pub sent: AtomicU64,
    pub answered: AtomicU64,
    pub in_flight: AtomicU64,
    /// Failures by class, indexed as `FailureClass::ALL`.
    failed: [AtomicU64; FailureClass::ALL.len()],
    /// What each of the worker's connections (or stream slots) carries: the due time of its
    /// request, in nanoseconds from the run's start plus one, or 0 when it carries none. Set
    /// once per run when the worker knows its pool's size, written as requests are taken up
    /// and finished, and scanned by whoever watches the run for the oldest.
    carried: OnceLock<Box<[AtomicU64]>>,
}

/// One block of counters per worker, and the live histograms when asked for.
#[derive(Debug, Default)]
pub struct Progress {
    workers: Vec<WorkerCounters>,
    live: Option<Live>,
    /// A watched journey run's rows per step label and per journey, once asked for.
    labels: OnceLock<LiveLabels>,
    /// The run's time zero, once the engine has set it.
    t0: OnceLock<std::time::Instant>,
    /// What the run's control meter reports while it runs, once it has started.
    floor: OnceLock<sojourn_timer::FloorWatch>,
}

/// A snapshot summed over workers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProgressSnapshot {
    pub sent: u64,
    /// Requests finished, answered or failed.
    pub answered: u64,
    /// Of those, the failed ones.
    pub failed: u64,
    pub failures: FailureCounts,
    pub in_flight: u64,
    /// How long the oldest request a connection carries has been due: the response time it
    /// has at least, and so, while the target stalls, how long the stall has lasted so far.
    /// (Requests waiting for a connection became due after every one a connection took, as
    /// the line is first come first served, so this is the oldest unfinished request.)
    /// `None` with nothing in flight.
    pub oldest_in_flight: Option<Duration>,
}

impl Progress {
    pub fn new(workers: usize) -> Arc<Progress> {
        Arc::new(Progress::blocks(workers, None))
    }

    /// Counters plus per-interval response-time and send-lag histograms of `interval` (the
    /// run's `Plan::interval`), published once per interval as [`Live::last_interval`].
    pub fn with_live(workers: usize, interval: Duration) -> Arc<Progress> {
        Arc::new(Progress::blocks(
            workers,
            Some(Live::new(workers, interval)),
        ))
    }

    fn blocks(workers: usize, live: Option<Live>) -> Progress {
        Progress {
            workers: (0..workers.max(1))
                .map(|_| WorkerCounters::default())
                .collect(),
            live,
            labels: OnceLock::new(),
            t0: OnceLock::new(),
            floor: OnceLock::new(),
        }
    }

    pub fn worker(&self, i: usize) -> &WorkerCounters {
        &self.workers[i % self.workers.len()]
    }

    /// The per-interval histograms, if asked for.
    pub fn live(&self) -> Option<&Live> {
        self.live.as_ref()
    }

    /// Keeps a row per step label and per journey (their names, in the file's order) for
    /// whoever watches a journey run; before the run starts, and only once. Only a journey
    /// run records into them: a plain run never pays for them.
    pub fn watch_journeys(&self, steps: Vec<String>, journeys: Vec<String>) {
        let _ = self
            .labels
            .set(LiveLabels::new(self.workers.len(), steps, journeys));
    }

    /// Keeps a row per label of a targets file (in the file's order) for whoever watches the
    /// run; before the run starts, and only once.
    pub fn watch_targets(&self, labels: Vec<String>) {
        let _ = self
            .labels
            .set(LiveLabels::of_targets(self.workers.len(), labels));
    }

    /// The journey run's rows, if asked for.
    pub fn labels(&self) -> Option<&LiveLabels> {
        self.labels.get()
    }

    /// Keeps the control meter's reports for whoever watches (the engine does, once).
    pub(crate) fn watch_floor(&self, floor: sojourn_timer::FloorWatch) {
        let _ = self.floor.set(floor);
    }

    /// The machine's floor as the control meter has reported it so far; `None` when no
    /// control meter runs, or before its first report.
    pub fn floor(&self) -> Option<sojourn_timer::FloorSnapshot> {
        self.floor.get()?.snapshot()
    }

    /// Marks the run's time zero (the engine does, once).
    pub(crate) fn start(&self, t0: std::time::Instant) {
        let _ = self.t0.set(t0);
    }

    /// Time since the run's time zero; `None` before the engine has started it.
    pub fn elapsed(&self) -> Option<Duration> {
        self.t0.get().map(|t0| t0.elapsed())
    }

    pub fn snapshot(&self) -> ProgressSnapshot {
        let mut s = ProgressSnapshot::default();
        for w in &self.workers {
            s.sent += w.sent.load(Relaxed);
            s.answered += w.answered.load(Relaxed);
            s.in_flight += w.in_flight.load(Relaxed);
            for (class, n) in FailureClass::ALL.iter().zip(&w.failed) {
                s.failures.add_n(*class, n.load(Relaxed));
            }
        }
        s.failed = s.failures.total();
        s.oldest_in_flight = self.oldest_in_flight();
        s
    }

    /// How long each request a connection carries now has been due: a lower bound on its
    /// response time (what a live judgement adds for the requests not yet finished).
    pub fn in_flight_ages(&self) -> Vec<Duration> {
        let Some(now) = self.elapsed() else {
            return Vec::new();
        };
        self.workers
            .iter()
            .filter_map(|w| w.carried.get())
            .flat_map(|cells| cells.iter().map(|c| c.load(Relaxed)))
            .filter(|&v| v > 0)
            .map(|v| now.saturating_sub(Duration::from_nanos(v - 1)))
            .collect()
    }

    /// Time since the oldest request that a connection carries was due.
    fn oldest_in_flight(&self) -> Option<Duration> {
        let now = self.elapsed()?;
        let oldest = self
            .workers
            .iter()
            .filter_map(|w| w.oldest_carried())
            .min()?;
        Some(now.saturating_sub(oldest))
    }
}

impl WorkerCounters {
    /// Makes room to track what each of `connections` connections carries (once per run).
    pub(crate) fn track(&self, connections: usize) {
        let _ = self
            .carried
            .set((0..connections.max(1)).map(|_| AtomicU64::new(0)).collect());
    }

    /// Connection `lane` has taken up a request due at `intended` (from the run's start).
    pub(crate) fn on_carry(&self, lane: usize, intended: Duration) {
        if let Some(cell) = self.cell(lane) {
            let ns = u64::try_from(intended.as_nanos()).unwrap_or(u64::MAX - 1);
            cell.store(ns + 1, Relaxed);
        }
    }

    /// Connection `lane` has finished its request.
    pub(crate) fn on_free(&self, lane: usize) {
        if let Some(cell) = self.cell(lane) {
            cell.store(0, Relaxed);
        }
    }

    fn cell(&self, lane: usize) -> Option<&AtomicU64> {
        self.carried.get()?.get(lane)
    }

    /// The earliest due time among the requests this worker's connections carry.
    fn oldest_carried(&self) -> Option<Duration> {
        let cells = self.carried.get()?;
        let oldest = cells
            .iter()
            .map(|c| c.load(Relaxed))
            .filter(|&v| v > 0)
            .min()?;
        Some(Duration::from_nanos(oldest - 1))
    }

    pub fn on_sent(&self) {
        self.sent.fetch_add(1, Relaxed);
        self.in_flight.fetch_add(1, Relaxed);
    }

    pub fn on_answer(&self, outcome: Outcome) {
        self.answered.fetch_add(1, Relaxed);
        self.in_flight.fetch_sub(1, Relaxed);
        if let Outcome::Failed(class) = outcome {
            self.failed[class.slot()].fetch_add(1, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_counted_by_class_and_summed() {
        let p = Progress::new(2);
        p.worker(0).on_sent();
        p.worker(1).on_sent();
        p.worker(1).on_sent();
        p.worker(0).on_answer(Outcome::Ok);
        p.worker(1)
            .on_answer(Outcome::Failed(FailureClass::Timeout));
        let s = p.snapshot();
        assert_eq!((s.sent, s.answered, s.in_flight, s.failed), (3, 2, 1, 1));
        assert_eq!(s.failures.get(FailureClass::Timeout), 1);
        assert_eq!(s.failures.get(FailureClass::Http5xx), 0);
        assert!(p.live().is_none() && p.elapsed().is_none());
        assert_eq!(s.oldest_in_flight, None, "no clock yet");
    }

    #[test]
    fn the_oldest_in_flight_is_the_earliest_due_time_any_connection_carries() {
        let ms = Duration::from_millis;
        let p = Progress::new(2);
        p.worker(0).track(3);
        p.worker(1).track(2);
        p.start(std::time::Instant::now() - ms(5_000));
        assert_eq!(p.snapshot().oldest_in_flight, None, "nothing carried");
        p.worker(0).on_carry(0, ms(4_000));
        p.worker(0).on_carry(2, ms(600));
        p.worker(1).on_carry(1, ms(4_500));
        // Due at 600 ms, 5 s into the run: 4.4 s old (and a little more by now).
        let age = p.snapshot().oldest_in_flight.expect("in flight");
        assert!(age >= ms(4_400) && age < ms(4_900), "{age:?}");
        p.worker(0).on_free(2);
        let age = p.snapshot().oldest_in_flight.unwrap();
        assert!(
            age >= ms(1_000) && age < ms(1_500),
            "next oldest, due at 4 s: {age:?}"
        );
        // Due at the run's very start is still in flight, not "none".
        p.worker(1).on_carry(0, Duration::ZERO);
        let age = p.snapshot().oldest_in_flight.unwrap();
        assert!(age >= ms(5_000), "{age:?}");
        // A lane beyond the pool is ignored rather than a panic.
        p.worker(1).on_carry(9, Duration::ZERO);
        for (w, lane) in [(0, 0), (1, 0), (1, 1)] {
            p.worker(w).on_free(lane);
        }
        assert_eq!(p.snapshot().oldest_in_flight, None, "all finished");
    }
}
