//! A journey run's live rows: for every step label (`JOURNEY/STEP`) and every journey, its
//! counts so far and its histograms so far, for the panel's rows and the metrics endpoint's
//! series. Only a watched journey run has them ([`crate::Progress::watch_journeys`]); a plain
//! run never reaches this code.
//!
//! Kept as the run-wide live histograms are ([`crate::live`]): each worker adds into its own
//! block behind its own lock, and a reader swaps that block for an empty one (the lock is held
//! for the swap only) and adds it into the totals it keeps. One entry per label of the file,
//! never per journey instance, so memory is bounded by the file, not by the run.
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use hdrhistogram::Histogram;
use sojourn_core::{nanos, FailureCounts, Outcome};

use crate::live::{lock, LIVE_MAX};

/// Two significant digits (1%) from one microsecond: about 28 KiB a histogram, where the
/// run-wide live pair's three digits from a nanosecond would be ten times that per label and
/// per worker; a row's p50 and p99 need no more.
const SIGFIG: u8 = 2;
const LOWEST: Duration = Duration::from_micros(1);

/// One label's figures as a worker adds them, and as the totals sum them.
#[derive(Debug, Clone)]
struct Tally {
    /// Steps taken up (due and in the generator's hand); journeys started.
    started: u64,
    completed: u64,
    failed: FailureCounts,
    /// A step's response time (from its due time); a journey's time.
    time: Histogram<u64>,
    /// A step's service time (from its send); none for a journey.
    service: Option<Histogram<u64>>,
}

impl Tally {
    fn new(with_service: bool) -> Tally {
        let h = || {
            Histogram::new_with_bounds(nanos(LOWEST), nanos(LIVE_MAX), SIGFIG)
                .expect("fixed bounds are valid")
        };
        Tally {
            started: 0,
            completed: 0,
            failed: FailureCounts::default(),
            time: h(),
            service: with_service.then(h),
        }
    }

    fn finish(&mut self, time: Duration, service: Option<Duration>, outcome: Outcome) {
        match outcome {
            Outcome::Ok => self.completed += 1,
            Outcome::Failed(class) => self.failed.add(class),
        }
        self.time.saturating_record(nanos(time));
        if let (Some(h), Some(s)) = (self.service.as_mut(), service) {
            h.saturating_record(nanos(s));
        }
    }

    fn add(&mut self, other: &Tally) {
        self.started += other.started;
        self.completed += other.completed;
        self.failed.merge(&other.failed);
        // Equal bounds: adding cannot fail or resize. A label nothing finished in since the
        // last look is skipped: adding or clearing walks the whole histogram.
        if !other.time.is_empty() {
            let _ = self.time.add(&other.time);
        }
        if let (Some(h), Some(o)) = (self.service.as_mut(), other.service.as_ref()) {
            if !o.is_empty() {
                let _ = h.add(o);
            }
        }
    }

    fn reset(&mut self) {
        (self.started, self.completed) = (0, 0);
        self.failed = FailureCounts::default();
        for h in std::iter::once(&mut self.time).chain(self.service.as_mut()) {
            if !h.is_empty() {
                h.reset();
            }
        }
    }

    fn snapshot(&self, name: &str) -> LabelSnapshot {
        let finished = self.completed + self.failed.total();
        LabelSnapshot {
            name: name.to_string(),
            completed: self.completed,
            failures: self.failed,
            in_flight: self.started.saturating_sub(finished),
            time: Percentiles::of(&self.time),
            service: self.service.as_ref().and_then(Percentiles::of),
        }
    }
}

/// Every label's tally: one worker's since a reader last took it, or the run's so far.
#[derive(Debug, Clone)]
struct Block {
    steps: Vec<Tally>,
    journeys: Vec<Tally>,
}

impl Block {
    fn new(steps: usize, journeys: usize) -> Block {
        Block {
            steps: (0..steps).map(|_| Tally::new(true)).collect(),
            journeys: (0..journeys).map(|_| Tally::new(false)).collect(),
        }
    }

    fn add(&mut self, other: &Block) {
        for (t, o) in self.steps.iter_mut().zip(&other.steps) {
            t.add(o);
        }
        for (t, o) in self.journeys.iter_mut().zip(&other.journeys) {
            t.add(o);
        }
    }

    fn reset(&mut self) {
        self.steps.iter_mut().for_each(Tally::reset);
        self.journeys.iter_mut().for_each(Tally::reset);
    }
}

/// One worker's block, padded so two workers never share a cache line.
#[derive(Debug)]
#[repr(align(128))]
struct WorkerBlock {
    current: Mutex<Block>,
}

/// The run's totals so far, and the reader's spare block to swap a worker's out with.
#[derive(Debug)]
struct Totals {
    sum: Block,
    spare: Block,
}

/// Percentiles so far, and how many finished they rest on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Percentiles {
    pub count: u64,
    pub p50: Duration,
    pub p90: Duration,
    pub p99: Duration,
    pub p999: Duration,
}

impl Percentiles {
    /// `None` while nothing has finished: a row without answers has no percentile, not zero.
    fn of(h: &Histogram<u64>) -> Option<Percentiles> {
        if h.is_empty() {
            return None;
        }
        let at = |q: f64| Duration::from_nanos(h.value_at_quantile(q));
        Some(Percentiles {
            count: h.len(),
            p50: at(0.50),
            p90: at(0.90),
            p99: at(0.99),
            p999: at(0.999),
        })
    }
}

/// One row: a step label or a journey, so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelSnapshot {
    /// `JOURNEY/STEP` for a step, the journey's name for a journey.
    pub name: String,
    pub completed: u64,
    pub failures: FailureCounts,
    /// A step: due, taken up and not yet finished. A journey: running.
    pub in_flight: u64,
    /// A step's response time (from its due time); a journey's time (from its due time to the
    /// end of its last step).
    pub time: Option<Percentiles>,
    /// A step's service time (from its send); `None` for a journey.
    pub service: Option<Percentiles>,
}

/// Every row, in the file's order: steps, then journeys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelsSnapshot {
    pub steps: Vec<LabelSnapshot>,
    pub journeys: Vec<LabelSnapshot>,
    /// A targets file's labels (`--targets`), in the file's order; empty for a journey run.
    pub targets: Vec<LabelSnapshot>,
}

/// Every row with its times so far: the rows, then the steps' times and the journeys' times in
/// the rows' order.
pub type RowsWithTimes = (LabelsSnapshot, Vec<Histogram<u64>>, Vec<Histogram<u64>>);

/// The live rows of a journey run.
#[derive(Debug)]
pub struct LiveLabels {
    steps: Vec<String>,
    journeys: Vec<String>,
    /// The rows are a targets file's labels, kept as steps without journeys.
    of_targets: bool,
    workers: Vec<WorkerBlock>,
    totals: Mutex<Totals>,
}

impl LiveLabels {
    pub(crate) fn new(workers: usize, steps: Vec<String>, journeys: Vec<String>) -> LiveLabels {
        let block = || Block::new(steps.len(), journeys.len());
        LiveLabels {
            workers: (0..workers.max(1))
                .map(|_| WorkerBlock {
                    current: Mutex::new(block()),
                })
                .collect(),
            totals: Mutex::new(Totals {
                sum: block(),
                spare: block(),
            }),
            steps,
            journeys,
            of_targets: false,
        }
    }

    /// A row per label of a targets file: each request is counted as a step of its label.
    pub(crate) fn of_targets(workers: usize, labels: Vec<String>) -> LiveLabels {
        LiveLabels {
            of_targets: true,
            ..LiveLabels::new(workers, labels, Vec::new())
        }
    }

    fn with_block(&self, w: usize, f: impl FnOnce(&mut Block)) {
        f(&mut lock(&self.workers[w % self.workers.len()].current));
    }

    /// Worker `w` has taken up a step of `label`: it is due and in the generator's hand.
    pub(crate) fn step_started(&self, w: usize, label: usize) {
        self.with_block(w, |b| {
            if let Some(t) = b.steps.get_mut(label) {
                t.started += 1;
            }
        });
    }

    /// A step of `label` ended: its response time, its service time if it was sent.
    pub(crate) fn step_done(
        &self,
        w: usize,
        label: usize,
        response: Duration,
        service: Option<Duration>,
        outcome: Outcome,
    ) {
        self.with_block(w, |b| {
            if let Some(t) = b.steps.get_mut(label) {
                t.finish(response, service, outcome);
            }
        });
    }

    /// A journey of kind `journey` has started (it has a place).
    pub(crate) fn journey_started(&self, w: usize, journey: usize) {
        self.with_block(w, |b| {
            if let Some(t) = b.journeys.get_mut(journey) {
                t.started += 1;
            }
        });
    }

    /// A journey of kind `journey` ended after `time`.
    pub(crate) fn journey_done(&self, w: usize, journey: usize, time: Duration, outcome: Outcome) {
        self.with_block(w, |b| {
            if let Some(t) = b.journeys.get_mut(journey) {
                t.finish(time, None, outcome);
            }
        });
    }

    /// The run's tallies so far: every worker's block added to them (each worker's lock held
    /// only to swap its block for the reader's empty spare).
    fn totals(&self) -> MutexGuard<'_, Totals> {
        let mut guard = lock(&self.totals);
        let totals = &mut *guard;
        for w in &self.workers {
            std::mem::swap(&mut *lock(&w.current), &mut totals.spare);
            totals.sum.add(&totals.spare);
            totals.spare.reset();
        }
        guard
    }

    /// Every row so far with each row's times so far (a step's response times, a journey's
    /// times), taken at the same moment, in the rows' order, at two significant digits: what a
    /// live judgement of a step's or journey's objective takes apart interval by interval.
    pub fn snapshot_with_times(&self) -> RowsWithTimes {
        let totals = self.totals();
        let times = |tallies: &[Tally]| tallies.iter().map(|t| t.time.clone()).collect();
        let (steps, journeys) = (times(&totals.sum.steps), times(&totals.sum.journeys));
        (self.rows(&totals), steps, journeys)
    }

    /// Every row so far. The run goes on meanwhile: each worker's lock is held only to swap
    /// its block for the reader's empty spare.
    pub fn snapshot(&self) -> LabelsSnapshot {
        self.rows(&self.totals())
    }

    fn rows(&self, totals: &Totals) -> LabelsSnapshot {
        let rows = |names: &[String], tallies: &[Tally]| {
            names
                .iter()
                .zip(tallies)
                .map(|(name, t)| t.snapshot(name))
                .collect()
        };
        let steps = rows(&self.steps, &totals.sum.steps);
        let journeys = rows(&self.journeys, &totals.sum.journeys);
        match self.of_targets {
            true => LabelsSnapshot {
                steps: Vec::new(),
                journeys: Vec::new(),
                targets: steps,
            },
            false => LabelsSnapshot {
                steps,
                journeys,
                targets: Vec::new(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sojourn_core::FailureClass;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn labels(workers: usize) -> LiveLabels {
        LiveLabels::new(
            workers,
            vec!["shop/login".into(), "shop/buy".into()],
            vec!["shop".into()],
        )
    }

    /// Two workers' steps and journeys, read twice: the second snapshot keeps what the first
    /// took (totals so far, not an interval), and in flight is taken up less finished.
    #[test]
    fn a_snapshot_sums_every_worker_and_keeps_what_it_took() {
        let live = labels(2);
        for w in 0..2 {
            live.journey_started(w, 0);
            for _ in 0..50 {
                live.step_started(w, 0);
                live.step_done(w, 0, ms(10), Some(ms(9)), Outcome::Ok);
            }
            live.step_started(w, 1);
        }
        live.step_done(1, 1, ms(900), None, Outcome::Failed(FailureClass::Check));
        live.journey_done(1, 0, ms(1_200), Outcome::Failed(FailureClass::Check));
        let s = live.snapshot();
        let (login, buy, shop) = (&s.steps[0], &s.steps[1], &s.journeys[0]);
        assert_eq!(
            (login.name.as_str(), login.completed, login.in_flight),
            ("shop/login", 100, 0)
        );
        let p = login.time.expect("answers");
        assert_eq!(p.count, 100);
        assert!(p.p99.abs_diff(ms(10)) <= ms(10) / 100, "{p:?}");
        assert!(login.service.unwrap().p50.abs_diff(ms(9)) <= ms(9) / 100);
        assert_eq!((buy.completed, buy.in_flight), (0, 1));
        assert_eq!(buy.failures.get(FailureClass::Check), 1);
        assert_eq!(buy.service, None, "the failed step was never sent");
        assert_eq!((shop.name.as_str(), shop.in_flight), ("shop", 1));
        assert_eq!(shop.failures.total(), 1);
        assert!(shop.time.unwrap().p50.abs_diff(ms(1_200)) <= ms(12));
        assert_eq!(shop.service, None);

        live.step_done(0, 1, ms(20), Some(ms(5)), Outcome::Ok);
        let again = live.snapshot();
        assert_eq!(again.steps[0], s.steps[0], "nothing new: the same row");
        assert_eq!((again.steps[1].completed, again.steps[1].in_flight), (1, 0));
        assert_eq!(again.steps[1].time.unwrap().count, 2);
    }

    #[test]
    fn nothing_finished_has_no_percentiles_and_unknown_labels_are_ignored() {
        let live = labels(1);
        live.step_started(0, 0);
        live.step_started(0, 7);
        live.journey_done(0, 3, ms(1), Outcome::Ok);
        let s = live.snapshot();
        assert_eq!((s.steps[0].in_flight, s.steps[0].time), (1, None));
        assert_eq!((s.steps.len(), s.journeys.len()), (2, 1));
        assert_eq!(s.journeys[0].completed, 0);
    }

    #[test]
    fn beyond_the_bound_saturates() {
        let live = labels(1);
        live.step_done(0, 0, LIVE_MAX * 2, None, Outcome::Ok);
        let p99 = live.snapshot().steps[0].time.unwrap().p99;
        assert!(p99 >= LIVE_MAX - LIVE_MAX / 50, "{p99:?}");
    }
}
