//! The open loop's waiting line, as a cursor over the schedule.
//!
//! Request *i*'s due time is a pure function of the schedule, so the requests that are due but
//! not yet sent are simply the index range `[next unsent, due by now)`. Nothing is stored per
//! waiting request: a black-hole target, a long stall and a tenfold overload all cost the same
//! few bytes, and the requests never sent at the end are counted from the range.
use std::iter::Peekable;
use std::time::Duration;

use sojourn_core::schedule::Slice;
use sojourn_core::Due;

/// One sender's schedule, consumed front to back.
#[derive(Debug, Clone)]
pub struct Backlog {
    slice: Peekable<Slice>,
    taken: u64,
}

impl Backlog {
    pub fn new(slice: Slice) -> Backlog {
        Backlog {
            slice: slice.peekable(),
            taken: 0,
        }
    }

    /// The oldest request not yet taken, due or not; `None` once the schedule is used up.
    pub fn oldest(&mut self) -> Option<Due> {
        self.slice.peek().copied()
    }

    /// Whether the oldest request is due by `now` (an offset from the start of the run).
    pub fn has_due(&mut self, now: Duration) -> bool {
        self.slice.peek().is_some_and(|d| d.at <= now)
    }

    /// Takes the oldest request if it is due by `now`: FIFO, always.
    pub fn take_due(&mut self, now: Duration) -> Option<Due> {
        let due = self.slice.next_if(|d| d.at <= now)?;
        self.taken += 1;
        Some(due)
    }

    /// How many requests have been taken so far.
    pub fn taken(&self) -> u64 {
        self.taken
    }

    /// Takes every request due by `end` that was never taken, in order. The run is over: these
    /// were scheduled and never sent.
    pub fn take_all_due(&mut self, end: Duration) -> impl Iterator<Item = Due> + '_ {
        std::iter::from_fn(move || self.take_due(end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sojourn_core::{Arrival, End, Rate, Schedule};

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn every_10ms(end: End) -> Backlog {
        let s = Schedule::new(Arrival::Constant, Rate::per_second(100.0).unwrap(), end).unwrap();
        Backlog::new(s.iter())
    }

    #[test]
    fn only_due_requests_leave_and_in_order() {
        let mut b = every_10ms(End::After(ms(100)));
        assert_eq!(b.take_due(ms(0)).map(|d| d.index), Some(0), "due at 0");
        assert_eq!(b.take_due(ms(9)), None, "request 1 is due at 10 ms");
        assert!(!b.has_due(ms(9)));
        assert!(b.has_due(ms(35)));
        let taken: Vec<u64> = std::iter::from_fn(|| b.take_due(ms(35)))
            .map(|d| d.index)
            .collect();
        assert_eq!(
            taken,
            vec![1, 2, 3],
            "the range [1, 4) at 35 ms, oldest first"
        );
        assert_eq!(b.oldest().map(|d| d.at), Some(ms(40)));
        assert_eq!(b.taken(), 4);
    }

    #[test]
    fn the_rest_is_counted_from_the_range() {
        let mut b = every_10ms(End::After(ms(1_000)));
        b.take_due(ms(0));
        // Stopped at 250 ms: requests 1..=25 were due and never sent; 26.. were never due.
        let never: Vec<u64> = b.take_all_due(ms(250)).map(|d| d.index).collect();
        assert_eq!(never, (1..=25).collect::<Vec<_>>());
        assert!(
            b.oldest().is_some(),
            "the requests due later are not scheduled"
        );
        // Drained past the end: the whole schedule is taken.
        assert_eq!(b.take_all_due(ms(5_000)).count(), 74);
        assert_eq!(b.oldest(), None);
        assert_eq!(b.taken(), 100);
    }
}
