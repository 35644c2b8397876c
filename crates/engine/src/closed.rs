//! The closed loop: N connections, each looping send → wait → record. It exists to show what
//! closed-loop tools report and for truly closed workloads; every output labels it.
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use sojourn_core::{End, FailureClass, Outcome};
use tokio::time::Instant;

use crate::lane::{Lane, Track};
use crate::open::WorkerReport;
use crate::transport::Transport;

/// After a failed connect, wait this long before the loop tries again, so a refused port does
/// not turn into a busy loop of failures.
const CONNECT_BACKOFF: Duration = Duration::from_millis(10);

pub struct ClosedWorker<T: Transport> {
    pub lane: Rc<Lane<T>>,
    pub connections: usize,
    /// This worker's share: a duration, or a count of requests.
    pub end: End,
    pub timeout: Duration,
}

/// Requests started so far, and the index of the next one.
struct Tickets {
    started: Cell<u64>,
    end: End,
    t0: Instant,
}

impl Tickets {
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

impl<T: Transport> ClosedWorker<T> {
    pub async fn run(self) -> WorkerReport {
        self.lane.measure_from_send();
        let tickets = Rc::new(Tickets {
            started: Cell::new(0),
            end: self.end,
            t0: self.lane.t0(),
        });
        let mut loops = tokio::task::JoinSet::new();
        for _ in 0..self.connections.max(1) {
            loops.spawn_local(connection_loop(self.lane.clone(), tickets.clone()));
        }
        let all_done = async { while loops.join_next().await.is_some() {} };
        tokio::select! {
            _ = all_done => {}
            _ = self.lane.cancel().cancelled() => {}
            _ = tokio::time::sleep_until(self.hard_stop()) => {}
        }
        let end = self.lane.now();
        WorkerReport {
            lane: self.lane.close(end),
            scheduled: tickets.started.get(),
        }
    }

    /// A duration-bounded loop stops starting requests at its end and waits at most one
    /// timeout for the last answers; a count-bounded loop has no clock bound of its own.
    fn hard_stop(&self) -> Instant {
        match self.end {
            End::After(d) => self.lane.t0() + d + self.timeout,
            End::Count(_) => Instant::now() + Duration::from_secs(365 * 24 * 3600),
        }
    }
}

async fn connection_loop<T: Transport>(lane: Rc<Lane<T>>, tickets: Rc<Tickets>) {
    while !lane.cancel().is_cancelled() {
        let Some(index) = tickets.take() else { return };
        let start = lane.now();
        let track = Track::new(start, start);
        lane.track(index, track.clone());
        let outcome = lane.attempt(&track).await;
        lane.finish(index, &track, outcome);
        if outcome == Outcome::Failed(FailureClass::Connect) {
            tokio::time::sleep(CONNECT_BACKOFF).await;
        }
    }
}
