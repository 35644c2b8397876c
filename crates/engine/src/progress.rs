//! Live counters for the progress line. Each worker owns its own cache-padded block and only
//! adds to it, so the recording path never contends; the reader sums the blocks.
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

#[derive(Debug, Default)]
#[repr(align(128))]
pub struct WorkerCounters {
    pub sent: AtomicU64,
    pub answered: AtomicU64,
    pub failed: AtomicU64,
    pub in_flight: AtomicU64,
}

/// One block of counters per worker.
#[derive(Debug, Default)]
pub struct Progress {
    workers: Vec<WorkerCounters>,
}

/// A snapshot summed over workers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProgressSnapshot {
    pub sent: u64,
    pub answered: u64,
    pub failed: u64,
    pub in_flight: u64,
}

impl Progress {
    pub fn new(workers: usize) -> Arc<Progress> {
        Arc::new(Progress {
            workers: (0..workers.max(1))
                .map(|_| WorkerCounters::default())
                .collect(),
        })
    }

    pub fn worker(&self, i: usize) -> &WorkerCounters {
        &self.workers[i % self.workers.len()]
    }

    pub fn snapshot(&self) -> ProgressSnapshot {
        let mut s = ProgressSnapshot::default();
        for w in &self.workers {
            s.sent += w.sent.load(Relaxed);
            s.answered += w.answered.load(Relaxed);
            s.failed += w.failed.load(Relaxed);
            s.in_flight += w.in_flight.load(Relaxed);
        }
        s
    }
}

impl WorkerCounters {
    pub fn on_sent(&self) {
        self.sent.fetch_add(1, Relaxed);
        self.in_flight.fetch_add(1, Relaxed);
    }

    pub fn on_answer(&self, failed: bool) {
        self.answered.fetch_add(1, Relaxed);
        self.in_flight.fetch_sub(1, Relaxed);
        if failed {
            self.failed.fetch_add(1, Relaxed);
        }
    }
}
