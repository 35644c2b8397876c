//! What someone watching a run sees at one moment, for the metrics endpoint and the panel:
//! the engine's live counters and last completed interval, set against the plan.
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sojourn_core::schedule::Slice;
use sojourn_core::{End, Schedule};
use sojourn_engine::{
    FloorSnapshot, IntervalSnapshot, LabelsSnapshot, Load, Plan, Progress, ProgressSnapshot,
};

/// A run being watched: its plan, its live counters, and the count of what has fallen due.
#[derive(Clone)]
pub struct Watched {
    plan: Arc<Plan>,
    progress: Arc<Progress>,
    due: Option<Arc<Mutex<DueCounter>>>,
}

/// Counts the requests (or journeys) that have fallen due by walking the senders' own
/// schedule, as far as the clock has gone: exact for every arrival law, and its cost is the
/// schedule's length once over the whole run, spread over the looks.
struct DueCounter {
    slices: Vec<std::iter::Peekable<Slice>>,
    count: u64,
}

impl DueCounter {
    fn until(&mut self, now: Duration) -> u64 {
        for slice in &mut self.slices {
            while slice.next_if(|d| d.at <= now).is_some() {
                self.count += 1;
            }
        }
        self.count
    }
}

/// One look at the run.
#[derive(Debug, Clone)]
pub struct View {
    /// `open`, `closed` or `paced`.
    pub mode: &'static str,
    /// Since the schedule started.
    pub elapsed: Duration,
    /// How long the schedule runs, when known.
    pub planned: Option<Duration>,
    /// Requests per second the schedule asks for now; `None` for an unpaced closed loop.
    pub target_rate: Option<f64>,
    /// The engine's live counters.
    pub counters: ProgressSnapshot,
    /// The last completed interval, once there is one.
    pub last: Option<IntervalSnapshot>,
    /// A journey run's rows so far: one per step label, one per journey.
    pub labels: Option<LabelsSnapshot>,
    /// Requests (journeys, for a journey run) due by `elapsed` on the schedule; `None` for
    /// an unpaced closed loop, which has none.
    pub due: Option<u64>,
    /// The machine's floor as the control meter has reported it so far; `None` when no
    /// control meter runs (or before its first report).
    pub floor: Option<FloorSnapshot>,
}

impl View {
    /// Of what was taken up, what has not failed: answered, or under way (a journey run: its
    /// journeys). What a rate objective counts as kept so far.
    pub fn kept(&self) -> u64 {
        match &self.labels {
            Some(l) if !l.journeys.is_empty() => {
                l.journeys.iter().map(|j| j.completed + j.in_flight).sum()
            }
            _ => self.counters.sent.saturating_sub(self.counters.failed),
        }
    }

    /// Due by now and not yet taken up by a connection (a journey not yet begun): waiting for
    /// a connection or a place, or for the generator. At the end, these are the never sent.
    pub fn waiting(&self) -> Option<u64> {
        let due = self.due?;
        let started = match &self.labels {
            Some(l) if !l.journeys.is_empty() => l
                .journeys
                .iter()
                .map(|j| j.completed + j.failures.total() + j.in_flight)
                .sum(),
            _ => self.counters.sent,
        };
        Some(due.saturating_sub(started))
    }
}

impl Watched {
    /// Watches `progress`, a run of `plan`.
    pub fn new(plan: &Plan, progress: Arc<Progress>) -> Watched {
        // The plan without its sample channel: a watcher must not keep the sample file open.
        let mut plan = plan.clone();
        plan.samples = None;
        let due = plan.due_slices().map(|slices| {
            let slices = slices.into_iter().map(Iterator::peekable).collect();
            Arc::new(Mutex::new(DueCounter { slices, count: 0 }))
        });
        Watched {
            plan: Arc::new(plan),
            progress,
            due,
        }
    }

    /// The last completed interval's index and response times (compact bytes), when the run
    /// keeps live intervals.
    pub fn last_response(&self) -> Option<(u64, Arc<[u8]>)> {
        self.progress.live()?.last_response()
    }

    /// How long each request in flight now has been due (lower bounds on their response
    /// times).
    pub fn in_flight_ages(&self) -> Vec<Duration> {
        self.progress.in_flight_ages()
    }

    /// The requests (journeys) this process's schedule expects by `t` from its start (up to
    /// the schedule's end), and whether that count is exact (a fixed schedule) or the
    /// expectation of a Poisson one; `None` for an unpaced closed loop.
    pub fn expected_by(&self, t: Duration) -> Option<(f64, sojourn_core::gate::Arrivals)> {
        let (Load::Open(s) | Load::Paced(s)) = &self.plan.load else {
            return None;
        };
        let t = planned(&self.plan).map_or(t, |end| t.min(end));
        let arrivals = match s.arrival {
            sojourn_core::Arrival::Poisson { .. } => sojourn_core::gate::Arrivals::Poisson,
            _ => sojourn_core::gate::Arrivals::Exact,
        };
        Some((
            s.expected_by(t) / f64::from(self.plan.shard.count),
            arrivals,
        ))
    }

    /// The run's timeout: a time at or above it may be a timeout's lower bound.
    pub fn timeout(&self) -> Duration {
        self.plan.timeout
    }

    /// A journey run's rows with their times so far (steps', journeys'), taken together, when
    /// it keeps rows.
    pub fn label_times(&self) -> Option<sojourn_engine::live_labels::RowsWithTimes> {
        Some(self.progress.labels()?.snapshot_with_times())
    }

    /// The width of the run's intervals.
    pub fn interval(&self) -> Duration {
        self.plan.interval
    }

    /// The schedule's stages, named and placed as the result will have them; empty for a run
    /// without stages.
    pub fn stages(&self) -> Vec<sojourn_core::result::StageConfig> {
        match &self.plan.load {
            Load::Open(s) | Load::Paced(s) => s.stages.as_ref().map(|st| st.configs()),
            Load::Closed(_) => None,
        }
        .unwrap_or_default()
    }

    /// The run as it stands now.
    pub fn view(&self) -> View {
        let elapsed = self.progress.elapsed().unwrap_or_default();
        let due = self.due.as_ref().map(|d| {
            // Before the run's clock starts nothing is due (`elapsed` is then zero, and the
            // first request may be due at zero).
            match self.progress.elapsed() {
                Some(t) => d.lock().unwrap_or_else(|e| e.into_inner()).until(t),
                None => 0,
            }
        });
        View {
            due,
            mode: mode(&self.plan.load),
            elapsed,
            planned: planned(&self.plan),
            target_rate: target_rate_at(&self.plan, elapsed),
            counters: self.progress.snapshot(),
            last: self.progress.live().and_then(|l| l.last_interval()),
            labels: self.progress.labels().map(|l| l.snapshot()),
            floor: self.progress.floor(),
        }
    }
}

/// The loop's name as every output shows it.
pub fn mode(load: &Load) -> &'static str {
    match load {
        Load::Open(_) => "open",
        Load::Closed(_) => "closed",
        Load::Paced(_) => "paced",
    }
}

/// The rate this process is asked for at `t` into the run, requests per second: the
/// schedule's rate there (along its ramp or stages), its share of it for a shard, and zero
/// once a timed schedule is over. `None` for an unpaced closed loop, which has no rate.
pub fn target_rate_at(plan: &Plan, t: Duration) -> Option<f64> {
    let (Load::Open(s) | Load::Paced(s)) = &plan.load else {
        return None;
    };
    Some(match s.end {
        End::After(d) if t >= d => 0.0,
        _ => s.rate_at(t) / f64::from(plan.shard.count),
    })
}

/// How long the plan runs, when that is known before running it.
fn planned(plan: &Plan) -> Option<Duration> {
    match &plan.load {
        Load::Open(s) | Load::Paced(s) => Some(schedule_span(s)),
        Load::Closed(End::After(d)) => Some(*d),
        Load::Closed(End::Count(_)) => None,
    }
}

/// A timed schedule's duration; a counted one's expected span (count over rate, without
/// walking a possibly huge schedule).
fn schedule_span(s: &Schedule) -> Duration {
    match s.end {
        End::After(d) => d,
        End::Count(n) => Duration::from_secs_f64(n as f64 / s.rate.get()),
    }
}

/// Views for renderers' tests (the terminal's panel, the metrics endpoint, a dashboard): one
/// fixed moment of a run, so that each renders the same figures.
#[doc(hidden)]
pub mod fixtures {
    use super::*;

    /// One value of `us` microseconds, as an interval's figures.
    fn one(us: u64) -> sojourn_engine::Figures {
        let d = Duration::from_micros(us);
        sojourn_engine::Figures {
            count: 1,
            p50: d,
            p90: d,
            p99: d,
            p999: d,
            max: d,
        }
    }

    /// A control meter's `ticks` late by `p99_us` at p99 and `max_us` at most.
    fn floor(ticks: u64, p99_us: u64, max_us: u64) -> sojourn_engine::FloorFigures {
        sojourn_engine::FloorFigures {
            ticks,
            p99: Duration::from_micros(p99_us),
            max: Duration::from_micros(max_us),
        }
    }

    /// 4.4 s into a stall: one answer in the last interval, 391 in flight, two failures.
    pub fn stalled_view() -> View {
        let mut counters = sojourn_engine::ProgressSnapshot {
            sent: 10_391,
            answered: 10_000,
            failed: 2,
            in_flight: 391,
            oldest_in_flight: Some(Duration::from_millis(4_400)),
            ..Default::default()
        };
        counters
            .failures
            .add_n(sojourn_core::outcome::FailureClass::Timeout, 1);
        counters
            .failures
            .add_n(sojourn_core::outcome::FailureClass::Io, 1);
        View {
            mode: "open",
            elapsed: Duration::from_millis(14_400),
            planned: Some(Duration::from_secs(60)),
            target_rate: Some(1000.0),
            counters,
            last: Some(sojourn_engine::IntervalSnapshot {
                index: 13,
                width: Duration::from_secs(1),
                answers: 1,
                failed: 0,
                response_p50: Duration::from_micros(10_200),
                response_p90: Duration::from_micros(10_200),
                response_p99: Duration::from_micros(10_200),
                response_p999: Duration::from_micros(10_200),
                send_lag_p99: Duration::from_micros(52),
                sent_answers: 1,
                response: one(10_200),
                service: one(10_148),
                send_lag: one(52),
                missed: 0,
            }),
            labels: None,
            due: Some(10_400),
            // The machine was calm: the stall is the target's.
            floor: Some(sojourn_engine::FloorSnapshot {
                period: floor(1_000, 61, 180),
                so_far: floor(14_000, 72, 2_100),
                periods: 14,
            }),
        }
    }

    /// The stalled view of a journey run: a step with a quote and a backslash in its name,
    /// one that failed its check, one nobody has answered yet, and their journey.
    pub fn journey_view() -> View {
        use sojourn_engine::live_labels::{LabelSnapshot, Percentiles};
        let ms = Duration::from_millis;
        let p = |p50, p99, count| Percentiles {
            count,
            p50: ms(p50),
            p90: ms(p99),
            p99: ms(p99),
            p999: ms(p99),
        };
        let row = |name: &str, completed, in_flight, time| LabelSnapshot {
            name: name.into(),
            completed,
            failures: sojourn_core::FailureCounts::default(),
            in_flight,
            time,
            service: time,
        };
        let mut checked = row("shop/pay", 40, 3, Some(p(12, 900, 42)));
        checked
            .failures
            .add_n(sojourn_core::outcome::FailureClass::Check, 2);
        let mut shop = row("shop", 38, 5, Some(p(1_250, 4_400, 40)));
        (shop.service, shop.failures) = (None, checked.failures);
        View {
            labels: Some(LabelsSnapshot {
                steps: vec![
                    row("shop/log \"in\" \\ now", 45, 2, Some(p(10, 4_400, 45))),
                    checked,
                    row("shop/leave", 0, 0, None),
                ],
                journeys: vec![shop],
                targets: Vec::new(),
            }),
            ..stalled_view()
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use sojourn_core::{Arrival, Rate};

    /// A plan of `load` with one connection and the engine's quiet defaults (no hiccup meter,
    /// no spinning), for tests here and in `metrics`.
    pub(crate) fn plan(load: Load) -> Plan {
        crate::RunSpec {
            connections: 1,
            timeout: Duration::from_secs(1),
            timer: crate::spec::TimerPolicy {
                spin: Duration::ZERO,
                slack: sojourn_engine::Slack::Auto,
                meters: false,
            },
            ..crate::RunSpec::of(load)
        }
        .plan()
    }

    fn open(arrival: Arrival, rate: f64, end: End) -> Load {
        Load::Open(Schedule::new(arrival, Rate::per_second(rate).unwrap(), end).unwrap())
    }

    #[test]
    fn target_rate_follows_the_schedule_and_its_ramp() {
        let secs = Duration::from_secs;
        let constant = plan(open(Arrival::Constant, 100.0, End::After(secs(10))));
        assert_eq!(target_rate_at(&constant, secs(3)), Some(100.0));
        assert_eq!(target_rate_at(&constant, secs(10)), Some(0.0), "over");
        let to = Rate::per_second(300.0).unwrap();
        let ramp = plan(open(Arrival::Ramp { to }, 100.0, End::After(secs(10))));
        assert_eq!(target_rate_at(&ramp, secs(5)), Some(200.0));
        let counted = plan(open(Arrival::Constant, 50.0, End::Count(500)));
        assert_eq!(target_rate_at(&counted, secs(60)), Some(50.0));
        assert_eq!(planned(&counted), Some(secs(10)));
        let closed = plan(Load::Closed(End::Count(5)));
        assert_eq!(
            (target_rate_at(&closed, secs(1)), planned(&closed)),
            (None, None)
        );
    }

    #[test]
    fn target_rate_follows_stages_and_a_shard_asks_for_its_share() {
        let secs = Duration::from_secs;
        let stages = sojourn_core::Stages::parse("10s@0..1000,10s@1000").unwrap();
        let staged = Schedule::staged(Arrival::Constant, stages).unwrap();
        let mut p = plan(Load::Open(staged));
        assert_eq!(
            target_rate_at(&p, secs(5)),
            Some(500.0),
            "half-way up the ramp"
        );
        assert_eq!(target_rate_at(&p, secs(15)), Some(1000.0));
        assert_eq!(target_rate_at(&p, secs(20)), Some(0.0), "over");
        assert_eq!(planned(&p), Some(secs(20)));
        p.shard = sojourn_core::Shard::new(1, 4).unwrap();
        assert_eq!(target_rate_at(&p, secs(15)), Some(250.0));
    }

    /// The due count walks the senders' schedule as far as the clock: a constant 100/s has
    /// 101 requests due by 1 s (one at zero), and by the end exactly what the plan schedules,
    /// on any number of threads; what is due and not taken up is waiting.
    #[test]
    fn what_fell_due_is_counted_from_the_schedule() {
        let secs = Duration::from_secs;
        let mut p = plan(open(Arrival::Constant, 100.0, End::After(secs(10))));
        p.threads = 3;
        p.connections = 3;
        let mut due = DueCounter {
            slices: p
                .due_slices()
                .unwrap()
                .into_iter()
                .map(Iterator::peekable)
                .collect(),
            count: 0,
        };
        assert_eq!(due.until(Duration::from_millis(1_000)), 101);
        assert_eq!(
            due.until(Duration::from_millis(1_000)),
            101,
            "no double count"
        );
        assert_eq!(Some(due.until(secs(60))), p.due());
        let mut v = fixtures::stalled_view();
        v.due = Some(10_400);
        assert_eq!(v.waiting(), Some(9), "10,400 due, 10,391 sent");
        v.counters.sent = 10_500;
        assert_eq!(
            v.waiting(),
            Some(0),
            "sent after the look counted what was due"
        );
        let mut j = fixtures::journey_view();
        assert_eq!(j.kept(), 38 + 5, "the journeys finished well and under way");
        assert_eq!(
            fixtures::stalled_view().kept(),
            10_391 - 2,
            "sent, less the failed"
        );
        j.due = Some(50);
        assert_eq!(
            j.waiting(),
            Some(5),
            "38 finished, 2 failed and 5 under way of 50"
        );
        assert!(plan(Load::Closed(End::Count(5))).due_slices().is_none());
    }
}
