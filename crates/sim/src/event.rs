//! The event queue: events keyed by (virtual time, sequence number), earliest first.
//!
//! Times are integer nanoseconds from the start of the run. Events due at the same instant run in
//! the order they were scheduled (the sequence number breaks the tie), so a simulation is a pure
//! function of its inputs: same scenario and plan, same events, same result, bit for bit.
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A client request's handle in the request table (see `table.rs`).
pub(crate) type Key = u64;

/// What the server answered one attempt with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Reply {
    /// An HTTP status (200, an `errors` fault's status, or 503 from a full queue).
    Status(u16),
    /// The connection was dropped instead (a `reset` fault).
    Reset,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// The next request of a lane's schedule is due.
    Due { lane: u32 },
    /// An attempt reaches the server (only scheduled when the round trip is not zero).
    Arrive { req: Key, attempt: u8 },
    /// An attempt leaves the server: its slot (if it held one) passes to the next in line.
    Leave {
        req: Key,
        attempt: u8,
        index: u64,
        slot: bool,
        rejected: bool,
    },
    /// The answer reaches the client.
    Answer { req: Key, attempt: u8, reply: Reply },
    /// The client gives up on a request.
    Timeout { req: Key },
    /// A running journey's next step is due (its think time after the last answer is over).
    Step { journey: u32 },
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    at: u64,
    seq: u64,
    kind: Kind,
}

#[derive(Debug, Default)]
pub(crate) struct Queue {
    heap: BinaryHeap<Reverse<Event>>,
    /// Events pushed in (time, sequence) order, kept out of the heap. Every request's timeout
    /// is its send plus the run's one timeout, and sends never go back in time, so timeouts come
    /// sorted; in the heap they sat for the whole timeout, one per request sent in it (30,000 at
    /// 1,000 req/s and 30 s), and made every other push and pop pay for that depth.
    sorted: VecDeque<Event>,
    seq: u64,
}

impl Queue {
    pub(crate) fn push(&mut self, at: u64, kind: Kind) {
        self.seq += 1;
        self.heap.push(Reverse(self.event(at, kind)));
    }

    /// Pushes an event no earlier than every one pushed this way before: the run's timeouts. One
    /// that would be earlier (never, today) goes in the heap, so the order stays exact.
    pub(crate) fn push_in_order(&mut self, at: u64, kind: Kind) {
        self.seq += 1;
        let event = self.event(at, kind);
        if self.sorted.back().is_some_and(|last| last.at > at) {
            self.heap.push(Reverse(event));
        } else {
            self.sorted.push_back(event);
        }
    }

    fn event(&self, at: u64, kind: Kind) -> Event {
        Event {
            at,
            seq: self.seq,
            kind,
        }
    }

    /// The earliest event; among equal times, the first scheduled.
    pub(crate) fn pop(&mut self) -> Option<(u64, Kind)> {
        let from_heap = match (self.heap.peek(), self.sorted.front()) {
            (Some(Reverse(h)), Some(s)) => (h.at, h.seq) < (s.at, s.seq),
            (h, _) => h.is_some(),
        };
        let event = if from_heap {
            self.heap.pop().map(|Reverse(e)| e)
        } else {
            self.sorted.pop_front()
        };
        event.map(|e| (e.at, e.kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_and_ties_in_scheduling_order() {
        let mut q = Queue::default();
        q.push(20, Kind::Due { lane: 0 });
        q.push(10, Kind::Due { lane: 1 });
        q.push(10, Kind::Timeout { req: 7 });
        q.push(10, Kind::Due { lane: 2 });
        let order: Vec<(u64, Kind)> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (10, Kind::Due { lane: 1 }),
                (10, Kind::Timeout { req: 7 }),
                (10, Kind::Due { lane: 2 }),
                (20, Kind::Due { lane: 0 }),
            ],
            "a Timeout scheduled before a Due at the same instant runs first, whatever the kinds"
        );
    }

    /// Events pushed in order interleave with the heap's by (time, sequence), exactly as if
    /// all were in the heap; one pushed out of order still comes out in its place.
    #[test]
    fn in_order_events_interleave_with_the_heap_by_time_then_sequence() {
        let mut q = Queue::default();
        q.push_in_order(10, Kind::Timeout { req: 1 });
        q.push(10, Kind::Due { lane: 0 });
        q.push(5, Kind::Due { lane: 1 });
        q.push_in_order(30, Kind::Timeout { req: 2 });
        q.push_in_order(20, Kind::Timeout { req: 3 });
        q.push(20, Kind::Due { lane: 2 });
        let order: Vec<(u64, Kind)> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (5, Kind::Due { lane: 1 }),
                (10, Kind::Timeout { req: 1 }),
                (10, Kind::Due { lane: 0 }),
                (20, Kind::Timeout { req: 3 }),
                (20, Kind::Due { lane: 2 }),
                (30, Kind::Timeout { req: 2 }),
            ]
        );
    }
}
