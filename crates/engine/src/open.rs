//! The open loop: requests are due on the schedule whatever the responses do.
//!
//! The dispatcher sleeps until the next due time, then hands every request that is due to its
//! own task, stamped with its exact intended time. Each task waits its turn for a connection
//! (a FIFO semaphore of the pool's size, so due requests queue in order) and exchanges. The
//! dispatcher never waits for a connection or an answer, so a stalled server cannot slow the
//! schedule down: that is the whole point.
use std::rc::Rc;
use std::time::Duration;

use sojourn_core::schedule::Slice;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::lane::{Lane, LaneReport, Track};
use crate::sleeper::Sleeper;
use crate::transport::Transport;

/// One worker's open loop over its slice of the schedule.
pub struct OpenWorker<T: Transport> {
    pub lane: Rc<Lane<T>>,
    pub connections: usize,
    /// When the schedule ends (its duration, or the last due time for a count).
    pub schedule_end: Duration,
    pub timeout: Duration,
}

/// What the worker did.
pub struct WorkerReport {
    pub lane: LaneReport,
    pub scheduled: u64,
}

impl<T: Transport> OpenWorker<T> {
    /// Runs the slice to its end, drains, and censors what is left. Must run inside a
    /// `LocalSet`.
    pub async fn run(self, slice: Slice, sleeper: &mut impl Sleeper) -> WorkerReport {
        let permits = Rc::new(Semaphore::new(self.connections.max(1)));
        let mut slice = slice.peekable();
        let mut scheduled = 0u64;
        let t0 = self.lane.t0();
        while let Some(next) = slice.peek() {
            let deadline = t0 + next.at;
            if Instant::now() < deadline {
                tokio::select! {
                    biased;
                    _ = self.lane.cancel().cancelled() => {}
                    _ = sleeper.sleep_until(deadline) => {}
                }
            }
            if self.lane.cancel().is_cancelled() {
                break;
            }
            // Everything due by now goes out in this batch, each with its own intended time.
            let now = Instant::now();
            let dispatched = self.lane.offset(now);
            while let Some(due) = slice.next_if(|d| t0 + d.at <= now) {
                scheduled += 1;
                let track = Track::new(due.at, dispatched);
                self.lane.track(due.index, track.clone());
                tokio::task::spawn_local(serve(
                    self.lane.clone(),
                    permits.clone(),
                    due.index,
                    track,
                ));
            }
        }
        if self.lane.cancel().is_cancelled() {
            return self.stop_now(slice, scheduled);
        }
        let drain_until = t0 + self.schedule_end.max(self.lane.now()) + self.timeout;
        self.lane.drain(drain_until).await;
        let end = self.lane.now();
        WorkerReport {
            lane: self.lane.close(end),
            scheduled,
        }
    }

    /// Ctrl-C: whatever was due by now but not dispatched is scheduled and never sent.
    fn stop_now(
        &self,
        slice: impl Iterator<Item = sojourn_core::Due>,
        mut scheduled: u64,
    ) -> WorkerReport {
        let end = self.lane.now();
        for due in slice.take_while(|d| d.at <= end) {
            scheduled += 1;
            self.lane.never_sent(due.at, end);
        }
        WorkerReport {
            lane: self.lane.close(end),
            scheduled,
        }
    }
}

async fn serve<T: Transport>(
    lane: Rc<Lane<T>>,
    permits: Rc<Semaphore>,
    index: u64,
    track: Rc<Track>,
) {
    let _permit = match permits.try_acquire() {
        Ok(p) => p,
        Err(_) => {
            track.waited_for_connection.set(true);
            permits
                .acquire()
                .await
                .expect("the semaphore is never closed")
        }
    };
    let outcome = lane.attempt(&track).await;
    lane.finish(index, &track, outcome);
}
