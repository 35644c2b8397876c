//! The open loop: requests are due on the schedule whatever the responses do.
//!
//! The pacer sleeps until the oldest request of the waiting line is due, then hands every due
//! request to an idle connection, opening new ones up to the pool's size. When every connection
//! is busy it stops: the requests wait in the line (an index range, not a collection), and each
//! connection that finishes takes the oldest of them itself. Nothing the target does slows the
//! schedule down, and nothing it does grows the generator's memory.
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use sojourn_core::schedule::Slice;
use sojourn_core::Recorder;
use tokio::time::Instant;

use crate::backlog::Backlog;
use crate::pool;
use crate::sleeper::{Slack, Sleeper};
use crate::transport::Transport;
use crate::worker::{Job, Next, Picks, Source, Worker, WorkerConfig, WorkerReport};

/// The open loop's waiting line: the requests due and not yet sent, as a range of the
/// schedule.
struct Line {
    backlog: RefCell<Backlog>,
    /// Since when (on the schedule's clock) every connection has been busy with requests
    /// still due: requests due from then on waited for a connection. Cleared when a
    /// connection goes idle.
    full_since: Cell<Option<Duration>>,
}

impl Line {
    /// Whether a request due at `at` waited for a connection rather than for the generator.
    fn waited(&self, at: Duration) -> bool {
        self.full_since.get().is_some_and(|since| at >= since)
    }
}

impl Source for Line {
    /// A free connection takes the oldest due request itself, or parks until the pacer hands
    /// it one.
    fn next(&self, _lane: usize, now: Duration, _woke: bool, picks: Picks) -> Next {
        let Some(due) = self.backlog.borrow_mut().take_due(now) else {
            return Next::Park;
        };
        // Due while every connection was busy: it waited for this one. The generator had it
        // in hand from its due time, so none of the wait is the generator's.
        let waited = self.waited(due.at);
        Next::Job(Job {
            intended: due.at,
            dispatched: if waited { due.at } else { now },
            waited,
            target: picks.target_of(due.index),
        })
    }

    fn on_idle(&self) {
        self.full_since.set(None);
    }

    /// What is due and unsent at the end was never sent, counted from the line's range.
    fn close(&self, recorder: &mut Recorder, end: Duration, picks: Picks) -> u64 {
        let mut backlog = self.backlog.borrow_mut();
        for due in backlog.take_all_due(end) {
            // Waiting for a connection, the generator had it in hand on time; otherwise it
            // never got to it before the end.
            let dispatched = if self.waited(due.at) { due.at } else { end };
            recorder.record_never_sent(due.at, dispatched, end);
            if let Some(l) = recorder.label(picks.label_of_index(due.index)) {
                l.record_unfinished(due.at, None, end);
            }
        }
        backlog.taken()
    }
}

/// Runs one worker's slice of the schedule to its end, drains, and accounts for what is left.
/// Must run inside a `LocalSet`.
pub async fn run<T: Transport>(
    transport: T,
    cfg: WorkerConfig,
    slice: Slice,
    schedule_end: Duration,
    sleeper: &mut impl Sleeper,
) -> WorkerReport {
    let source = Line {
        backlog: RefCell::new(Backlog::new(slice)),
        full_since: Cell::new(None),
    };
    let worker = Worker::new(transport, cfg, source);
    // The drain: at most one timeout past the schedule's end for the last answers.
    let stop = worker.t0() + schedule_end + worker.cfg.timeout;
    tokio::select! {
        biased;
        _ = worker.cancel().cancelled() => {}
        _ = tokio::time::sleep_until(stop) => {}
        _ = async {
            pace(&worker, sleeper).await;
            settle(&worker).await;
        } => {}
    }
    worker.close(worker.now())
}

/// Hands out requests as they fall due, until the schedule is used up or the run is cancelled.
async fn pace<T: Transport>(worker: &Rc<Worker<T, Line>>, sleeper: &mut impl Sleeper) {
    let mut last_wake = worker.t0();
    loop {
        let Some(oldest) = worker.source.backlog.borrow_mut().oldest() else {
            return;
        };
        // Requests due within the slack of the last wake-up wait for the next one.
        let slack = match worker.cfg.slack {
            Slack::Auto => sleeper.wake_lateness(),
            Slack::Fixed(d) => d,
        };
        let due = worker.t0() + oldest.at;
        let batched = last_wake + slack;
        if Instant::now() < due.max(batched) {
            // A request held back for a batch is late on purpose: no CPU is spent to wake up
            // to the microsecond for it.
            let wait = async {
                if due >= batched {
                    sleeper.sleep_until(due).await
                } else {
                    sleeper.sleep_until_loosely(batched).await
                }
            };
            tokio::select! {
                biased;
                _ = worker.cancel().cancelled() => return,
                _ = wait => {}
            }
            last_wake = Instant::now();
        }
        if dispatch(worker) {
            // Every connection is busy: each takes the oldest waiting request as it finishes.
            // Wake again when one goes idle, i.e. when the line is empty.
            tokio::select! {
                biased;
                _ = worker.cancel().cancelled() => return,
                _ = worker.quiet.notified() => {}
            }
        }
    }
}

/// Gives every due request to an idle connection, or to a new one while the pool has room.
/// Returns whether requests are left waiting because every connection is busy.
fn dispatch<T: Transport>(worker: &Rc<Worker<T, Line>>) -> bool {
    let Line {
        backlog,
        full_since,
    } = &worker.source;
    let now = worker.now();
    while backlog.borrow_mut().has_due(now) {
        let idle = worker.idle.borrow_mut().pop();
        let (slot, woken) = match idle {
            Some(slot) => (slot, true),
            None if worker.slots.borrow().len() < worker.cfg.connections.max(1) => {
                (pool::open(worker), false)
            }
            None => {
                if full_since.get().is_none() {
                    full_since.set(backlog.borrow_mut().oldest().map(|d| d.at));
                }
                return true;
            }
        };
        let due = backlog
            .borrow_mut()
            .take_due(now)
            .expect("checked due above");
        let job = Job {
            intended: due.at,
            dispatched: now,
            waited: false,
            target: worker.picks().target_of(due.index),
        };
        worker.assign(&slot, job);
        if woken {
            slot.wake.notify_one();
        }
    }
    false
}

/// Waits until no request is in flight.
async fn settle<T: Transport>(worker: &Worker<T, Line>) {
    while worker.is_busy() {
        worker.quiet.notified().await;
    }
}
