//! The front door of `/api`: request numbering, the scenario clock's origin, and the FIFO
//! admission queue that the worker limit and the cap share.
//!
//! One mutex covers all three so that index order, arrival order and queue order are the same
//! order — every-nth counts requests, and a one-worker FIFO must serve them in that count.
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};

use sojourn_scenario::Admission;
use tokio::sync::oneshot;
use tokio::time::Instant;

#[derive(Default)]
struct Door {
    next_index: u64,
    busy: u32,
    /// Each waiter is handed the instant its service starts.
    queue: VecDeque<oneshot::Sender<Instant>>,
}

pub(crate) struct Front {
    limit: Option<Admission>,
    door: Mutex<Door>,
}

/// How a request got past (or not past) the door.
pub(crate) enum Admit {
    /// A slot was free (or there is no limit).
    Now(Permit),
    /// Waiting in the FIFO queue; the receiver yields the instant a slot was handed over.
    Queued(oneshot::Receiver<Instant>, Arc<Front>),
    /// The queue was at its bound: answer 503.
    Rejected,
}

pub(crate) struct Arrival {
    pub index: u64,
    pub at: Instant,
    pub admit: Admit,
}

/// A slot in service; dropping it hands the slot to the next in the queue.
pub(crate) struct Permit(Option<Arc<Front>>);

impl Front {
    pub(crate) fn new(limit: Option<Admission>) -> Arc<Front> {
        Arc::new(Front {
            limit,
            door: Mutex::new(Door::default()),
        })
    }

    /// Numbers the request, stamps its arrival (starting the scenario clock if this is the
    /// first request and the clock starts then) and queues it if no slot is free.
    pub(crate) fn arrive(self: &Arc<Self>, origin: &OnceLock<Instant>) -> Arrival {
        let mut door = self.door.lock().expect("admission lock");
        let at = Instant::now();
        origin.get_or_init(|| at);
        let index = door.next_index;
        door.next_index += 1;
        let admit = match self.limit {
            None => Admit::Now(Permit(None)),
            Some(a) if door.busy < a.limit => {
                door.busy += 1;
                Admit::Now(Permit(Some(self.clone())))
            }
            Some(a) if a.queue.is_some_and(|q| door.queue.len() >= q as usize) => Admit::Rejected,
            Some(_) => {
                let (tx, rx) = oneshot::channel();
                door.queue.push_back(tx);
                Admit::Queued(rx, self.clone())
            }
        };
        Arrival { index, at, admit }
    }

    /// Hands the slot straight to the oldest waiter still waiting, or frees it. The start of
    /// service is stamped here, under the lock, so start order is queue order even when the
    /// woken tasks run in another order.
    fn release(&self) {
        let mut door = self.door.lock().expect("admission lock");
        while let Some(next) = door.queue.pop_front() {
            if next.send(Instant::now()).is_ok() {
                return;
            }
        }
        door.busy -= 1;
    }
}

impl Permit {
    /// The permit for a queued request whose slot has been handed over.
    pub(crate) fn handed_over(front: Arc<Front>) -> Permit {
        Permit(Some(front))
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(front) = self.0.take() {
            front.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limited(limit: u32, queue: Option<u32>) -> Arc<Front> {
        Front::new(Some(Admission { limit, queue }))
    }

    #[test]
    fn numbers_in_arrival_order_and_starts_the_clock_once() {
        let origin = OnceLock::new();
        let front = Front::new(None);
        let a = front.arrive(&origin);
        let b = front.arrive(&origin);
        assert_eq!((a.index, b.index), (0, 1));
        assert_eq!(*origin.get().unwrap(), a.at);
    }

    #[tokio::test]
    async fn queue_is_fifo_and_bounded() {
        let origin = OnceLock::new();
        let front = limited(1, Some(2));
        let Admit::Now(first) = front.arrive(&origin).admit else {
            panic!("slot was free")
        };
        let Admit::Queued(second, _) = front.arrive(&origin).admit else {
            panic!("should queue")
        };
        let Admit::Queued(mut third, _) = front.arrive(&origin).admit else {
            panic!("should queue")
        };
        assert!(matches!(front.arrive(&origin).admit, Admit::Rejected));
        drop(first);
        second.await.unwrap();
        assert!(third.try_recv().is_err(), "only one slot was freed");
    }

    #[tokio::test]
    async fn a_waiter_that_left_is_skipped() {
        let origin = OnceLock::new();
        let front = limited(1, None);
        let Admit::Now(first) = front.arrive(&origin).admit else {
            panic!()
        };
        let Admit::Queued(gone, _) = front.arrive(&origin).admit else {
            panic!()
        };
        let Admit::Queued(next, _) = front.arrive(&origin).admit else {
            panic!()
        };
        drop(gone);
        drop(first);
        next.await.unwrap();
    }
}
