//! The paced closed loop: what hey `-q`, bombardier `-r`, fortio `-qps` and JMeter's
//! constant-throughput timer run. Each connection owns a share of the schedule's slots, as those
//! tools give each connection rate/N. It sends at its next slot, or when its previous answer
//! arrives if that is later, so a stalled answer holds back every slot of its connection.
//!
//! Every request carries both clocks: from its slot (the response time, as wrk2 and the open
//! loop measure) and from its send (the service time, what the paced tools report). Slots a
//! connection never got round to before the end are counted as never sent: the requests a
//! paced closed loop omits.
use std::cell::RefCell;
use std::time::Duration;

use sojourn_core::{End, Recorder, Schedule, Shard};

use crate::backlog::Backlog;
use crate::pool;
use crate::transport::Transport;
use crate::worker::{Job, Next, Picks, Source, Worker, WorkerConfig, WorkerReport};

/// Every connection's own slots, by the connection's number in its worker.
struct Lanes {
    lanes: Vec<RefCell<Backlog>>,
    /// A connection that gets round to a slot at or after this stops: the run's duration.
    stop: Option<Duration>,
}

impl Lanes {
    /// Connection `first + k` of `total` in the whole run gets the schedule's share `first + k`
    /// of `total` (of this process's shard): the same slots whichever worker thread it runs on.
    fn new(schedule: &Schedule, shard: Shard, first: usize, count: usize, total: usize) -> Lanes {
        Lanes {
            lanes: (first..first + count)
                .map(|c| {
                    let (slice, slices) = shard.slot(c, total);
                    RefCell::new(Backlog::new(schedule.slice(slice, slices)))
                })
                .collect(),
            stop: match schedule.end {
                End::After(d) => Some(d),
                End::Count(_) => None,
            },
        }
    }
}

impl Source for Lanes {
    const OWN_SLOTS: bool = true;

    /// Connection `lane`'s next request at `now`. A slot already past is sent at once: the
    /// connection was busy with the previous one, so the wait is the connection's (`waited`),
    /// not the generator's. A slot still ahead is slept to; once woken for it, any lateness
    /// is the timer's, the generator's own.
    fn next(&self, lane: usize, now: Duration, woke: bool, picks: Picks) -> Next {
        if self.stop.is_some_and(|d| now >= d) {
            return Next::Stop;
        }
        let mut backlog = self.lanes[lane].borrow_mut();
        let Some(slot) = backlog.oldest() else {
            return Next::Stop;
        };
        if slot.at > now {
            return Next::WaitUntil(slot.at);
        }
        backlog.take_due(now);
        let waited = !woke;
        Next::Job(Job {
            intended: slot.at,
            dispatched: if waited { slot.at } else { now },
            waited,
            target: picks.target_of(slot.index),
        })
    }

    /// The run is over at `end`: every slot due by then that no connection got round to was
    /// never sent. Returns how many slots the connections took or owed.
    fn close(&self, recorder: &mut Recorder, end: Duration, picks: Picks) -> u64 {
        let mut scheduled = 0;
        for lane in &self.lanes {
            let mut backlog = lane.borrow_mut();
            for slot in backlog.take_all_due(end) {
                recorder.record_never_sent(slot.at, slot.at, end);
                if let Some(l) = recorder.label(picks.label_of_index(slot.index)) {
                    l.record_unfinished(slot.at, None, end);
                }
            }
            scheduled += backlog.taken();
        }
        scheduled
    }
}

/// Runs this worker's connections (numbers `first..first + cfg.connections` of `total`) on
/// their slots until the schedule's end, drains at most one timeout, and accounts for what is
/// left. Must run inside a `LocalSet`.
pub async fn run<T: Transport>(
    transport: T,
    cfg: WorkerConfig,
    schedule: &Schedule,
    shard: Shard,
    first: usize,
    total: usize,
) -> WorkerReport {
    let connections = cfg.connections.max(1);
    let lanes = Lanes::new(schedule, shard, first, connections, total);
    let worker = Worker::new(transport, cfg, lanes);
    pool::run_all(&worker, schedule.end).await
}
