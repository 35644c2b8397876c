//! Live counters for the progress line and the metrics endpoint. Each worker owns its own
//! cache-padded block and only adds to it, so the recording path never contends; the reader
//! sums the blocks. Per-interval histograms ([`Live`]) come on top only when asked for.
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use sojourn_core::{FailureClass, FailureCounts, Outcome};

use crate::live::Live;

#[derive(Debug, Default)]
#[repr(align(128))]
pub struct WorkerCounters {
    pub sent: AtomicU64,
    pub answered: AtomicU64,
    pub in_flight: AtomicU64,
    /// Failures by class, indexed as `FailureClass::ALL`.
    failed: [AtomicU64; FailureClass::ALL.len()],
}

/// One block of counters per worker, and the live histograms when asked for.
#[derive(Debug, Default)]
pub struct Progress {
    workers: Vec<WorkerCounters>,
    live: Option<Live>,
    /// The run's time zero, once the engine has set it.
    t0: OnceLock<std::time::Instant>,
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
            t0: OnceLock::new(),
        }
    }

    pub fn worker(&self, i: usize) -> &WorkerCounters {
        &self.workers[i % self.workers.len()]
    }

    /// The per-interval histograms, if asked for.
    pub fn live(&self) -> Option<&Live> {
        self.live.as_ref()
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
        s
    }
}

impl WorkerCounters {
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
    }
}
