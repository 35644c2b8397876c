//! Which stall delayed which request: the count behind "the closed loop omitted N".
//!
//! A request is *delayed* when its response time exceeds its own service time (plus the round
//! trip): it waited for a connection, in the server's queue, or at a closed gate. The delay is
//! blamed on
//! - the gate window that held it, if it reached the gate while a stall or pause held it shut;
//! - otherwise the latest stall — a gate window or a request an every-nth or slow-fraction fault
//!   slowed — that began before it was due: it queued in the backlog that stall left behind;
//! - otherwise nothing: queueing under load alone ("unattributed").
//!
//! A request slowed by a fault counts for the slow requests even if nothing delayed it: the
//! closed loop sees those too, and seed 000's "the closed loop sees 27 bad requests" counts them.
use std::time::Duration;

use sojourn_core::nanos;
use sojourn_scenario::{Scenario, Window, WindowKind};

use crate::table::Served;

/// How one gate window (a stall or a pause) affected the simulated client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StallImpact {
    pub kind: WindowKind,
    /// When the gate closed and reopened, on the run's clock.
    pub start: Duration,
    pub end: Duration,
    /// The client's requests it delayed: held at the gate, or queued behind the backlog.
    pub delayed: u64,
}

/// How the requests slowed by every-nth or slow-fraction faults affected the client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SlowImpact {
    /// Slowed requests the server served.
    pub requests: u64,
    /// The client's requests that were slowed, or delayed behind a slowed one.
    pub affected: u64,
}

/// Every stall's toll on one simulated client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Impact {
    /// One entry per gate window that began before the run ended, in time order.
    pub stalls: Vec<StallImpact>,
    pub slow: SlowImpact,
    /// Delayed requests with no stall before them: queueing under load alone.
    pub unattributed: u64,
}

impl Impact {
    /// Requests delayed by any stall or slowed request.
    pub fn total(&self) -> u64 {
        self.stalls.iter().map(|s| s.delayed).sum::<u64>() + self.slow.affected
    }
}

/// What the tracker needs to know about one answered request, on the scenario clock.
pub(crate) struct Answered {
    pub intended: u64,
    pub response: u64,
    pub rtt: u64,
    pub served: Served,
}

/// Collects the blame as requests finish. Windows are read from the scenario lazily, so a
/// count-bounded run of unknown length still finds every window it meets.
pub(crate) struct Tracker<'a> {
    scenario: &'a Scenario,
    horizon: u64,
    windows: Vec<Window>,
    delayed: Vec<u64>,
    /// Service starts of slowed requests, in time order (service starts in event order).
    slow_starts: Vec<u64>,
    slow_affected: u64,
    unattributed: u64,
}

enum Blame {
    Window(usize),
    Slow,
}

impl<'a> Tracker<'a> {
    pub(crate) fn new(scenario: &'a Scenario, horizon: Duration) -> Tracker<'a> {
        let mut t = Tracker {
            scenario,
            horizon: 0,
            windows: Vec::new(),
            delayed: Vec::new(),
            slow_starts: Vec::new(),
            slow_affected: 0,
            unattributed: 0,
        };
        t.extend_to(nanos(horizon).max(1));
        t
    }

    /// Makes sure every window that begins before `at` is known.
    pub(crate) fn extend_to(&mut self, at: u64) {
        if at < self.horizon {
            return;
        }
        self.horizon = at.saturating_mul(2).max(1_000_000_000);
        self.windows = self
            .scenario
            .windows(Duration::from_nanos(self.horizon))
            .into_iter()
            .filter(|w| matches!(w.kind, WindowKind::Stall | WindowKind::Pause))
            .collect();
        self.delayed.resize(self.windows.len(), 0);
    }

    /// A slowed request started service at `start` (scenario clock).
    pub(crate) fn slow_started(&mut self, start: u64) {
        self.slow_starts.push(start);
    }

    pub(crate) fn answered(&mut self, a: &Answered) {
        let expected = a.served.own + a.rtt;
        if a.response <= expected {
            if a.served.slow {
                self.slow_affected += 1;
            }
            return;
        }
        let held = a.served.departure > a.served.reach;
        let blame = if held {
            self.holding(a.served.reach)
        } else {
            self.latest_before(a.intended)
        };
        match blame {
            Some(Blame::Window(i)) => self.delayed[i] += 1,
            Some(Blame::Slow) => self.slow_affected += 1,
            None if a.served.slow => self.slow_affected += 1,
            None => self.unattributed += 1,
        }
    }

    /// The window whose closure held a request that reached the gate at `reach`.
    fn holding(&mut self, reach: u64) -> Option<Blame> {
        self.extend_to(reach);
        let n = self.windows.partition_point(|w| nanos(w.start) <= reach);
        (0..n)
            .rev()
            .find(|&i| reach < nanos(self.windows[i].end))
            .or(n.checked_sub(1))
            .map(Blame::Window)
    }

    /// The latest stall of either kind that began at or before `at`.
    fn latest_before(&mut self, at: u64) -> Option<Blame> {
        self.extend_to(at);
        let w = self.windows.partition_point(|w| nanos(w.start) <= at);
        let s = self.slow_starts.partition_point(|&s| s <= at);
        let window = w.checked_sub(1).map(|i| (nanos(self.windows[i].start), i));
        let slow = s.checked_sub(1).map(|i| self.slow_starts[i]);
        match (window, slow) {
            (Some((ws, i)), Some(ss)) if ws >= ss => Some(Blame::Window(i)),
            (Some((_, i)), None) => Some(Blame::Window(i)),
            (_, Some(_)) => Some(Blame::Slow),
            (None, None) => None,
        }
    }

    /// The impact, keeping the windows that began before `end` (scenario clock); `to_run`
    /// converts scenario-clock instants to the run's clock.
    pub(crate) fn finish(mut self, end: u64, slowed: u64, to_run: impl Fn(u64) -> u64) -> Impact {
        self.extend_to(end);
        let stalls = self
            .windows
            .iter()
            .zip(&self.delayed)
            .filter(|(w, _)| nanos(w.start) < end)
            .map(|(w, &delayed)| StallImpact {
                kind: w.kind,
                start: Duration::from_nanos(to_run(nanos(w.start))),
                end: Duration::from_nanos(to_run(nanos(w.end))),
                delayed,
            })
            .collect();
        Impact {
            stalls,
            slow: SlowImpact {
                requests: slowed,
                affected: self.slow_affected,
            },
            unattributed: self.unattributed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sojourn_scenario::Override;

    const MS: u64 = 1_000_000;

    fn gc() -> Scenario {
        let o: Vec<Override> = ["gc-pauses.every=1s", "gc-pauses.first=1s"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        Scenario::builtin("gc-pauses", &o).unwrap()
    }

    fn answered(intended: u64, response: u64, reach: u64, departure: u64) -> Answered {
        Answered {
            intended,
            response,
            rtt: 0,
            served: Served {
                own: 10 * MS,
                reach,
                departure,
                slow: false,
            },
        }
    }

    #[test]
    fn blame_goes_to_the_holding_window_then_the_latest_stall() {
        let s = gc();
        let mut t = Tracker::new(&s, Duration::from_secs(1));
        // Held by the second pause (2.0–2.2 s).
        t.answered(&answered(1_995 * MS, 205 * MS, 2_005 * MS, 2_200 * MS));
        // On time: not delayed.
        t.answered(&answered(2_500 * MS, 10 * MS, 2_510 * MS, 2_510 * MS));
        // Queued after the third pause began (3.0 s), not held itself.
        t.answered(&answered(3_300 * MS, 50 * MS, 3_350 * MS, 3_350 * MS));
        // Queued before any stall: load.
        t.answered(&answered(500 * MS, 30 * MS, 530 * MS, 530 * MS));
        // A slowed request before the fourth pause, and one delayed behind it.
        t.slow_started(3_900 * MS);
        t.answered(&answered(3_950 * MS, 40 * MS, 3_990 * MS, 3_990 * MS));
        let impact = t.finish(5_000 * MS, 1, |s| s);
        let delayed: Vec<u64> = impact.stalls.iter().map(|s| s.delayed).collect();
        assert_eq!(delayed, vec![0, 1, 1, 0], "pauses at 1, 2, 3 and 4 s");
        assert_eq!(impact.unattributed, 1);
        assert_eq!(
            impact.slow,
            SlowImpact {
                requests: 1,
                affected: 1
            }
        );
        assert_eq!(impact.total(), 3);
    }

    #[test]
    fn windows_are_found_far_beyond_the_first_horizon() {
        let s = gc();
        let mut t = Tracker::new(&s, Duration::from_secs(1));
        t.answered(&answered(99_995 * MS, 205 * MS, 100_005 * MS, 100_200 * MS));
        let impact = t.finish(101_000 * MS, 0, |s| s);
        let last = impact.stalls.last().unwrap();
        assert_eq!((last.start, last.delayed), (Duration::from_secs(100), 1));
        assert_eq!(impact.stalls.len(), 100);
        // Windows nobody met are listed too, up to the end of the run.
        let quiet = Tracker::new(&s, Duration::from_secs(1)).finish(50_500 * MS, 0, |s| s);
        assert_eq!(quiet.stalls.len(), 50, "pauses at 1, 2, …, 50 s");
        assert!(quiet.stalls.iter().all(|s| s.delayed == 0));
    }
}
