//! The closed loop: N connections, each looping send → wait → record. It exists to show what
//! closed-loop tools report and for truly closed workloads; every output labels it.
use std::cell::Cell;
use std::time::Duration;

use sojourn_core::{End, Recorder};
use tokio::time::Instant;

use crate::pool;
use crate::transport::Transport;
use crate::worker::{Job, Next, Picks, Source, Worker, WorkerConfig, WorkerReport};

/// Requests started so far, and where the loop stops starting them.
struct Tickets {
    started: Cell<u64>,
    end: End,
    /// The run's time zero, which a duration counts from.
    t0: Instant,
}

impl Tickets {
    /// The index of the next request, while the loop's end is not reached.
    fn take(&self) -> Option<u64> {
        let n = self.started.get();
        let open = match self.end {
            End::Count(total) => n < total,
            End::After(d) => Instant::now() < self.t0 + d,
        };
        open.then(|| {
            self.started.set(n + 1);
            n
        })
    }
}

impl Source for Tickets {
    const CLOSED_LOOP: bool = true;

    /// A free connection sends at once: the closed loop has no schedule to wait for.
    fn next(&self, _lane: usize, now: Duration, _woke: bool, picks: Picks) -> Next {
        match self.take() {
            Some(n) => Next::Job(Job {
                intended: now,
                dispatched: now,
                waited: false,
                target: picks.target_of(n),
            }),
            None => Next::Stop,
        }
    }

    /// Nothing is due unsent in a closed loop: a request exists once a connection starts it.
    fn close(&self, _recorder: &mut Recorder, _end: Duration, _picks: Picks) -> u64 {
        self.started.get()
    }
}

/// Runs `cfg.connections` looping connections until `end` (this worker's share), and accounts
/// for what is left. Must run inside a `LocalSet`.
pub async fn run<T: Transport>(transport: T, cfg: WorkerConfig, end: End) -> WorkerReport {
    let tickets = Tickets {
        started: Cell::new(0),
        end,
        t0: cfg.t0,
    };
    let worker = Worker::new(transport, cfg, tickets);
    pool::run_all(&worker, end).await
}
