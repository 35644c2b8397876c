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
use tokio::time::Instant;

use crate::backlog::Backlog;
use crate::pool;
use crate::run::Slack;
use crate::sleeper::Sleeper;
use crate::transport::Transport;
use crate::worker::{Job, Source, Worker, WorkerConfig, WorkerReport};

/// Runs one worker's slice of the schedule to its end, drains, and accounts for what is left.
/// Must run inside a `LocalSet`.
pub async fn run<T: Transport>(
    transport: T,
    cfg: WorkerConfig,
    slice: Slice,
    schedule_end: Duration,
    sleeper: &mut impl Sleeper,
) -> WorkerReport {
    let source = Source::Open {
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
async fn pace<T: Transport>(worker: &Rc<Worker<T>>, sleeper: &mut impl Sleeper) {
    let mut last_wake = worker.t0();
    loop {
        let Some(oldest) = backlog(worker).borrow_mut().oldest() else {
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
fn dispatch<T: Transport>(worker: &Rc<Worker<T>>) -> bool {
    let Source::Open {
        backlog,
        full_since,
    } = &worker.source
    else {
        unreachable!("only an open loop is paced")
    };
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
            target: worker.target_of(due.index),
        };
        worker.assign(&slot, job);
        if woken {
            slot.wake.notify_one();
        }
    }
    false
}

/// Waits until no request is in flight.
async fn settle<T: Transport>(worker: &Worker<T>) {
    while worker.is_busy() {
        worker.quiet.notified().await;
    }
}

fn backlog<T: Transport>(worker: &Worker<T>) -> &RefCell<Backlog> {
    match &worker.source {
        Source::Open { backlog, .. } => backlog,
        Source::Closed(_) | Source::Paced(_) => {
            unreachable!("only an open loop has a waiting line")
        }
    }
}
