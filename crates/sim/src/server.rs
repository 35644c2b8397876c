//! The simulated server: the same decisions `sojourn serve` makes, in virtual time.
//!
//! It mirrors `crates/server` step by step. A request is numbered in order of arrival (index 0
//! first); the first arrival starts the scenario clock unless it starts at server start. With a
//! worker limit or a cap it waits in one FIFO queue, and a slot freed by a departure passes
//! straight to the oldest waiter, whose service starts at that instant. A request that finds the
//! queue at its bound is answered 503 at once and never holds a slot. In service it takes
//! `service_time(index, start)`, then reaches the gate and leaves at `gate_open_at(reach)`,
//! holding its slot all the while. Its answer is `status(index)`, or a dropped connection if
//! `resets(index)`. A request whose client has given up is still served to the end, as the real
//! server does: it keeps its place and its slot.
use std::collections::VecDeque;
use std::time::Duration;

use sojourn_core::nanos;
use sojourn_scenario::{Admission, ClockOrigin, Fault, Scenario};

use crate::event::{Key, Kind, Queue, Reply};
use crate::table::Served;

#[derive(Debug, Clone, Copy)]
struct Waiting {
    req: Key,
    attempt: u8,
    index: u64,
}

/// An attempt that has just started service, and what it will do there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Started {
    pub req: Key,
    pub attempt: u8,
    pub served: Served,
}

/// What the server did over the whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Requests that reached the server (retries included): the next index it would give.
    pub arrivals: u64,
    /// Answered 503 at once because the cap's queue was full.
    pub rejected: u64,
    /// Requests an every-nth or slow-fraction fault slowed.
    pub slow: u64,
    /// The most requests ever waiting in the admission queue at once.
    pub peak_queue: u64,
}

pub(crate) struct Server<'a> {
    scenario: &'a Scenario,
    /// The scenario without every-nth and slow-fraction faults: a request whose service time
    /// differs from this one's was picked by one of them.
    plain: Option<Scenario>,
    admission: Option<Admission>,
    /// The run-clock instant (ns, may be negative) at which the scenario clock reads zero.
    zero: Option<i128>,
    busy: u32,
    queue: VecDeque<Waiting>,
    pub stats: ServerStats,
}

impl<'a> Server<'a> {
    /// `lead`: with a server-start clock, how long the server was up before the run began.
    pub(crate) fn new(scenario: &'a Scenario, lead: Duration) -> Server<'a> {
        let zero = match scenario.clock() {
            ClockOrigin::ServerStart => Some(-i128::from(nanos(lead))),
            ClockOrigin::FirstRequest => None,
        };
        Server {
            scenario,
            plain: without_slowdowns(scenario),
            admission: scenario.admission(),
            zero,
            busy: 0,
            queue: VecDeque::new(),
            stats: ServerStats::default(),
        }
    }

    /// The scenario clock's reading at run time `t` (zero before the clock started).
    pub(crate) fn scenario_time(&self, t: u64) -> u64 {
        let zero = self.zero.unwrap_or(0);
        (i128::from(t) - zero).clamp(0, i128::from(u64::MAX)) as u64
    }

    /// The run time at which the scenario clock reads `s`.
    pub(crate) fn run_time(&self, s: u64) -> u64 {
        let zero = self.zero.unwrap_or(0);
        (i128::from(s) + zero).clamp(0, i128::from(u64::MAX)) as u64
    }

    /// An attempt arrives at `at`. Returns it if it started service at once.
    pub(crate) fn arrive(
        &mut self,
        req: Key,
        attempt: u8,
        at: u64,
        events: &mut Queue,
    ) -> Option<Started> {
        self.zero.get_or_insert(i128::from(at));
        let index = self.stats.arrivals;
        self.stats.arrivals += 1;
        let w = Waiting {
            req,
            attempt,
            index,
        };
        let Some(limit) = self.admission else {
            return Some(self.start(w, at, false, events));
        };
        if self.busy < limit.limit {
            self.busy += 1;
            return Some(self.start(w, at, true, events));
        }
        if limit.queue.is_some_and(|q| self.queue.len() >= q as usize) {
            self.stats.rejected += 1;
            let kind = Kind::Leave {
                req,
                attempt,
                index,
                slot: false,
                rejected: true,
            };
            events.push(at, kind);
            return None;
        }
        self.queue.push_back(w);
        self.stats.peak_queue = self.stats.peak_queue.max(self.queue.len() as u64);
        None
    }

    fn start(&mut self, w: Waiting, at: u64, slot: bool, events: &mut Queue) -> Started {
        let start = Duration::from_nanos(self.scenario_time(at));
        let own = self.scenario.service_time(w.index, start);
        let reach = start + own;
        let departure = self.scenario.gate_open_at(reach);
        let slow = self
            .plain
            .as_ref()
            .is_some_and(|p| p.service_time(w.index, start) != own);
        self.stats.slow += u64::from(slow);
        let leave = Kind::Leave {
            req: w.req,
            attempt: w.attempt,
            index: w.index,
            slot,
            rejected: false,
        };
        events.push(self.run_time(nanos(departure)), leave);
        Started {
            req: w.req,
            attempt: w.attempt,
            served: Served {
                own: nanos(own),
                reach: nanos(reach),
                departure: nanos(departure),
                slow,
            },
        }
    }

    /// An attempt leaves at `at`: its slot passes to the oldest waiter, whose service starts now
    /// (returned), and the answer is decided by its index.
    pub(crate) fn leave(
        &mut self,
        index: u64,
        slot: bool,
        rejected: bool,
        at: u64,
        events: &mut Queue,
    ) -> (Reply, Option<Started>) {
        let next = if slot {
            match self.queue.pop_front() {
                Some(w) => Some(self.start(w, at, true, events)),
                None => {
                    self.busy -= 1;
                    None
                }
            }
        } else {
            None
        };
        (self.reply(index, rejected), next)
    }

    fn reply(&self, index: u64, rejected: bool) -> Reply {
        if rejected {
            Reply::Status(503)
        } else if self.scenario.resets(index) {
            Reply::Reset
        } else {
            Reply::Status(self.scenario.status(index))
        }
    }
}

fn without_slowdowns(s: &Scenario) -> Option<Scenario> {
    let mut parts = s.parts();
    let before = parts.faults.len();
    parts
        .faults
        .retain(|f| !matches!(f, Fault::EveryNth { .. } | Fault::SlowFraction { .. }));
    if parts.faults.len() == before {
        return None;
    }
    Scenario::new(parts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sojourn_scenario::Override;

    const MS: u64 = 1_000_000;

    fn builtin(name: &str, sets: &[&str]) -> Scenario {
        let o: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
        Scenario::builtin(name, &o).unwrap()
    }

    fn leave_times(q: &mut Queue) -> Vec<(u64, u64)> {
        std::iter::from_fn(|| q.pop())
            .filter_map(|(at, k)| match k {
                Kind::Leave { index, .. } => Some((index, at)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_clock_starts_at_the_first_arrival() {
        let s = builtin("hiccup", &["hiccup.at=100ms", "hiccup.duration=50ms"]);
        let mut server = Server::new(&s, Duration::ZERO);
        let mut q = Queue::default();
        // The first request arrives 1 s into the run: the stall is at 1.1 s on the run clock.
        let a = server.arrive(0, 0, 1_000 * MS, &mut q).unwrap();
        assert_eq!(
            a.served.departure,
            10 * MS,
            "scenario clock: 10 ms, gate open"
        );
        let b = server.arrive(1, 0, 1_095 * MS, &mut q).unwrap();
        assert_eq!(
            b.served.reach,
            105 * MS,
            "reaches the gate 5 ms into the stall"
        );
        assert_eq!(b.served.departure, 150 * MS, "and waits for its end");
        assert_eq!(leave_times(&mut q), vec![(0, 1_010 * MS), (1, 1_150 * MS)]);
    }

    #[test]
    fn server_start_clock_counts_the_lead() {
        let s = builtin("hiccup", &["hiccup.at=600ms", "hiccup.clock=server-start"]);
        let mut server = Server::new(&s, Duration::from_millis(500));
        let mut q = Queue::default();
        // 100 ms into the run is 600 ms on the server's clock: the stall has begun.
        let a = server.arrive(0, 0, 95 * MS, &mut q).unwrap();
        assert_eq!(a.served.departure, 1_600 * MS);
        assert_eq!(server.run_time(a.served.departure), 1_100 * MS);
    }

    #[test]
    fn one_worker_is_fifo_and_a_freed_slot_starts_the_next_at_once() {
        let s = builtin("every-nth", &["every-nth.n=2", "every-nth.slow=10ms"]);
        let mut server = Server::new(&s, Duration::ZERO);
        let mut q = Queue::default();
        assert!(server.arrive(0, 0, 0, &mut q).is_some());
        assert!(server.arrive(1, 0, 0, &mut q).is_none(), "queued");
        assert!(server.arrive(2, 0, MS / 2, &mut q).is_none(), "queued");
        let (reply, next) = server.leave(0, true, false, MS, &mut q);
        assert_eq!(reply, Reply::Status(200));
        let next = next.expect("the slot passes to index 1");
        assert_eq!(next.req, 1);
        assert!(
            next.served.slow,
            "index 1 is the 2nd request: every-nth picks it"
        );
        assert_eq!(next.served.departure, 11 * MS);
        assert_eq!(server.stats.slow, 1);
        assert_eq!(server.stats.peak_queue, 2);
    }

    #[test]
    fn a_full_queue_answers_503_at_once_without_a_slot() {
        let s = builtin("saturation", &["saturation.cap=1", "saturation.queue=1"]);
        let mut server = Server::new(&s, Duration::ZERO);
        let mut q = Queue::default();
        server.arrive(0, 0, 0, &mut q);
        server.arrive(1, 0, 0, &mut q);
        assert!(server.arrive(2, 0, 0, &mut q).is_none());
        assert_eq!(server.stats.rejected, 1);
        let rejected = std::iter::from_fn(|| q.pop()).find(|(_, k)| {
            matches!(
                k,
                Kind::Leave {
                    rejected: true,
                    slot: false,
                    index: 2,
                    ..
                }
            )
        });
        assert_eq!(
            rejected.map(|(at, _)| at),
            Some(0),
            "answered at its arrival"
        );
        assert_eq!(server.reply(2, true), Reply::Status(503));
    }
}
