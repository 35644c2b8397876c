//! The machine's own hiccups, measured beside a run (in the manner of jHiccup).
//!
//! A thread that does nothing but sleep to a fixed tick and note how late it woke sees exactly
//! what the machine does to a sleeping thread: the kernel's wake-up latency, VM steal, a
//! neighbour holding the core. Whatever send lag a generator shows beyond this floor is its own
//! doing; up to it, no sleeping generator on this machine could have done better.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use timerfd::{ClockId, SetTimeFlags, TimerFd, TimerState};

/// The meter's findings: one oversleep per tick, in nanoseconds.
#[derive(Debug, Clone)]
pub struct Oversleeps {
    /// How late each tick's wake-up came. A stall that swallowed ticks is filled in the way
    /// jHiccup does: each swallowed tick is recorded with the lateness it would have seen.
    pub histogram: Histogram<u64>,
    /// The tick.
    pub period: Duration,
}

/// A running meter. [`HiccupMeter::stop`] ends it and hands back what it measured.
pub struct HiccupMeter {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Histogram<u64>>,
    period: Duration,
}

impl HiccupMeter {
    /// Starts the meter on its own thread, waking every `period`. `None` if the kernel refuses
    /// a timerfd or a thread.
    pub fn start(period: Duration) -> Option<HiccupMeter> {
        HiccupMeter::start_reporting(period, None)
    }

    /// Starts the meter as [`HiccupMeter::start`] does; with `report`, it also sends the
    /// oversleeps of each `every` on their own (the whole run's are still what `stop` returns),
    /// so that whoever watches sees the floor as it forms.
    pub fn start_reporting(
        period: Duration,
        report: Option<(Duration, mpsc::Sender<Histogram<u64>>)>,
    ) -> Option<HiccupMeter> {
        let period = period.max(Duration::from_micros(100));
        let mut fd = TimerFd::new_custom(ClockId::Monotonic, false, true).ok()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("sojourn-hiccup".into())
            .spawn(move || {
                fd.set_state(
                    TimerState::Periodic {
                        current: period,
                        interval: period,
                    },
                    SetTimeFlags::Default,
                );
                measure(&fd, period, &flag, report)
            })
            .ok()?;
        Some(HiccupMeter {
            stop,
            thread,
            period,
        })
    }

    /// Stops the meter (within one tick) and returns its oversleeps.
    pub fn stop(self) -> Oversleeps {
        self.stop.store(true, Ordering::Relaxed);
        let histogram = self.thread.join().unwrap_or_else(|_| new_histogram());
        Oversleeps {
            histogram,
            period: self.period,
        }
    }
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant digits is a valid precision")
}

/// Ticks until told to stop, sending each `report` period's oversleeps on the way.
fn measure(
    fd: &TimerFd,
    period: Duration,
    stop: &AtomicBool,
    report: Option<(Duration, mpsc::Sender<Histogram<u64>>)>,
) -> Histogram<u64> {
    let start = Instant::now();
    let mut ticks = Ticks::new(start, period);
    let mut recent = report.map(|(every, to)| Recent {
        every: every.max(period),
        next: start + every.max(period),
        ticks: Ticks::new(start, period),
        to,
    });
    while !stop.load(Ordering::Relaxed) {
        let expired = fd.read();
        let at = Instant::now();
        ticks.woke(expired, at);
        if let Some(r) = &mut recent {
            r.woke(expired, at);
        }
    }
    ticks.histogram
}

/// One period's ticks, sent at its end and begun afresh.
struct Recent {
    every: Duration,
    next: Instant,
    ticks: Ticks,
    to: mpsc::Sender<Histogram<u64>>,
}

impl Recent {
    fn woke(&mut self, expired: u64, at: Instant) {
        // Recorded by the same rule as the whole run's, so a period's ticks sum to the run's.
        self.ticks.woke(expired, at);
        if at < self.next {
            return;
        }
        let full = std::mem::replace(&mut self.ticks.histogram, new_histogram());
        // A receiver gone is a watcher gone; the run's own figures do not need it.
        let _ = self.to.send(full);
        while self.next <= at {
            self.next += self.every;
        }
    }
}

/// The tick count and what the wake-ups showed. The timerfd counts expirations, so a tick that
/// comes late is measured against when it was due, not against when the previous one was read.
struct Ticks {
    start: Instant,
    period: Duration,
    seen: u32,
    histogram: Histogram<u64>,
}

impl Ticks {
    fn new(start: Instant, period: Duration) -> Ticks {
        Ticks {
            start,
            period,
            seen: 0,
            histogram: new_histogram(),
        }
    }

    /// The thread woke at `at` and found `expired` ticks since it last looked.
    fn woke(&mut self, expired: u64, at: Instant) {
        // The oldest unread tick waited longest; the ones after it are filled in from the
        // expected interval, as jHiccup does, so a stall counts once per swallowed tick.
        let due = self.start + self.period * (self.seen + 1);
        self.seen = self
            .seen
            .saturating_add(expired.min(u64::from(u32::MAX)) as u32);
        let late = at.saturating_duration_since(due).as_nanos() as u64;
        let _ = self
            .histogram
            .record_correct(late, self.period.as_nanos() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_machine_has_a_floor_and_a_stall_shows_up() {
        let meter = HiccupMeter::start(Duration::from_millis(1)).expect("a timerfd");
        std::thread::sleep(Duration::from_millis(300));
        let quiet = meter.stop();
        let n = quiet.histogram.len();
        // ≈300 ticks; a busy machine may swallow some, which the correction fills back in.
        assert!((250..=400).contains(&n), "{n} ticks in 300 ms");
        assert_eq!(quiet.period, Duration::from_millis(1));
        // Lateness cannot be negative, and the median tick is not late by a whole tick.
        assert!(quiet.histogram.value_at_quantile(0.5) < 1_000_000);
    }

    /// A tick read 9.5 periods late stands for the ticks it swallowed, from 9.5 periods late
    /// down (jHiccup's expected-interval fill); the next tick is measured from its own due
    /// time, not from the late read.
    #[test]
    fn a_stall_counts_once_per_swallowed_tick() {
        let ms = Duration::from_millis;
        let us = Duration::from_micros;
        let start = Instant::now();
        let mut t = Ticks::new(start, ms(1));
        t.woke(1, start + ms(1) + us(20));
        // A stall: tick 2 was due at 2 ms and read at 11.5 ms, with ticks 2..=11 expired.
        t.woke(10, start + ms(11) + us(500));
        t.woke(1, start + ms(12) + us(30));
        let h = &t.histogram;
        assert_eq!(h.len(), 1 + 9 + 1, "9.5, 8.5, …, 1.5 ms for the stall");
        assert!(h.equivalent(h.max(), 9_500_000), "max {}", h.max());
        assert_eq!(h.count_between(1_000_000, 10_000_000), 9);
        assert!(h.equivalent(h.min(), 20_000), "min {}", h.min());
        assert_eq!(
            h.count_between(25_000, 35_000),
            1,
            "the tick after the stall"
        );
    }
}
