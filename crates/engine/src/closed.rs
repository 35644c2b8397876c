//! The closed loop: N connections, each looping send → wait → record. It exists to show what
//! closed-loop tools report and for truly closed workloads; every output labels it.
use std::cell::Cell;

use sojourn_core::End;
use tokio::time::Instant;

use crate::pool;
use crate::transport::Transport;
use crate::worker::{Source, Worker, WorkerConfig, WorkerReport};

/// Requests started so far, and where the loop stops starting them.
pub(crate) struct Tickets {
    started: Cell<u64>,
    end: End,
}

impl Tickets {
    /// The index of the next request, while the loop's end is not reached.
    pub(crate) fn take(&self, t0: Instant) -> Option<u64> {
        let n = self.started.get();
        let open = match self.end {
            End::Count(total) => n < total,
            End::After(d) => Instant::now() < t0 + d,
        };
        open.then(|| {
            self.started.set(n + 1);
            n
        })
    }

    pub(crate) fn started(&self) -> u64 {
        self.started.get()
    }
}

/// Runs `cfg.connections` looping connections until `end` (this worker's share), and accounts
/// for what is left. Must run inside a `LocalSet`.
pub async fn run<T: Transport>(transport: T, cfg: WorkerConfig, end: End) -> WorkerReport {
    let tickets = Tickets {
        started: Cell::new(0),
        end,
    };
    let worker = Worker::new(transport, cfg, Source::Closed(tickets));
    pool::run_all(&worker, end).await
}
