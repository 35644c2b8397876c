//! The `--slo` objectives judged while the run goes, for the dashboard: each completed interval
//! joins the whole run's window and the window of the stage it starts in (as the result's
//! stages cut them: the last stage keeps the drain), and, in a journey run, each step's and
//! journey's window (what finished of it since the last interval), and each objective is
//! judged on its window by the gate's own rules ([`sojourn_core::gate::judge_live`]). The
//! verdicts are "so far"; the run's end decides.
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use sojourn_core::gate::{judge_live, Arrivals, LabelRef, LiveWindow, Measure, Objective, Verdict};
use sojourn_core::result::StageConfig;
use sojourn_engine::LabelsSnapshot;

/// The most intervals a window keeps: past it, neighbours are merged two by two (a coarser
/// timeline, which the batch-means interval reads as fewer, longer stretches). Keeps a 24-hour
/// run's memory and each judgement's work bounded: a judgement reads every interval of its
/// window once a second.
pub const WINDOW_CAP: usize = 256;

/// One window so far: its intervals' response times (compact bytes, oldest first), counts.
#[derive(Default, Clone)]
struct Window {
    intervals: Vec<Arc<[u8]>>,
    completed: u64,
    failed: u64,
    /// The window's last interval ends here (from the run's start).
    reached: Option<Duration>,
}

impl Window {
    fn push(&mut self, interval: &Interval) {
        if self.intervals.len() >= WINDOW_CAP {
            self.halve();
        }
        self.intervals.push(compact(&interval.response));
        self.completed += interval.answers.saturating_sub(interval.failed);
        self.failed += interval.failed;
        self.reached = Some(interval.end);
    }

    fn halve(&mut self) {
        let merged = self
            .intervals
            .chunks(2)
            .map(|pair| {
                let mut sum = sojourn_core::record::decode(&pair[0]);
                for more in &pair[1..] {
                    let _ = sum.add(sojourn_core::record::decode(more));
                }
                sojourn_core::record::encode(&sum).into()
            })
            .collect();
        self.intervals = merged;
    }

    fn live(
        &self,
        censored: &Histogram<u64>,
        expected: Option<(f64, Arrivals)>,
        timeout_ns: Option<u64>,
    ) -> LiveWindow {
        LiveWindow {
            timeline: self
                .intervals
                .iter()
                .map(|b| sojourn_core::record::decode(b))
                .collect(),
            censored: censored.clone(),
            completed: self.completed,
            failed: self.failed,
            expected,
            timeout_ns,
        }
    }

    /// Windows pushed together (every journey's), as one: interval by interval, summed.
    fn merged<'a>(windows: impl Iterator<Item = &'a Window>) -> Window {
        let mut out = Window::default();
        for w in windows {
            out.completed += w.completed;
            out.failed += w.failed;
            out.reached = out.reached.max(w.reached);
            if out.intervals.is_empty() {
                out.intervals = w.intervals.clone();
                continue;
            }
            for (sum, more) in out.intervals.iter_mut().zip(&w.intervals) {
                let mut h = sojourn_core::record::decode(sum);
                let _ = h.add(sojourn_core::record::decode(more));
                *sum = sojourn_core::record::encode(&h).into();
            }
        }
        out
    }
}

/// An interval's times kept as small as they are: the engine's live histograms span an hour
/// whatever they hold, and one decoded as written would take that span's memory at every
/// judgement; re-recorded into a histogram that grows only to its largest value, it decodes to
/// that.
fn compact(bytes: &[u8]) -> Arc<[u8]> {
    let mut small = sojourn_core::record::new_histogram();
    let _ = small.add(sojourn_core::record::decode(bytes));
    sojourn_core::record::encode(&small).into()
}

/// A completed interval as the objectives need it.
pub struct Interval {
    /// Where it starts and ends, from the run's start.
    pub start: Duration,
    /// Where it ends.
    pub end: Duration,
    /// Requests that finished in it, answered or failed.
    pub answers: u64,
    /// Of those, the failed ones.
    pub failed: u64,
    /// Its response times, as [`sojourn_core::record::encode`] wrote them.
    pub response: Arc<[u8]>,
}

/// One objective's state so far.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Status {
    /// As written (`hold:p99<200ms`).
    pub objective: String,
    /// `whole run`, `stage NAME`, `step LABEL`, `journeys` or `journey NAME`.
    pub window: String,
    /// `met so far`, `breached so far`, `too few samples yet`, `not begun`, or `judged at the
    /// end` (a rate objective on one journey or a step, a step's or journey's objective in a
    /// run without journey rows, a stage the run has not: what the live figures cannot say).
    pub verdict: &'static str,
    /// The measured value so far and its interval, when there is one.
    pub value: Option<String>,
    /// Its 95% interval, as the gate prints it.
    pub interval: Option<String>,
    /// Why there are too few samples yet, or why it waits for the end.
    pub why: Option<String>,
}

/// A journey run's rows as one interval ends, with the steps' and journeys' times so far.
pub type RowTimes<'a> = (
    &'a LabelsSnapshot,
    &'a [Histogram<u64>],
    &'a [Histogram<u64>],
);

/// What a run has kept of its schedule so far, counted exactly: the requests (a journey run:
/// journeys) due by now, and of those, the ones taken up and not failed: answered, or still
/// under way, which the end decides. A rate objective on the whole run is judged on these.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pace {
    /// Due by now, counted on the schedule.
    pub due: u64,
    /// Of those, taken up and not failed.
    pub kept: u64,
}

/// How many requests the schedule expected by a time from the start (up to its end), and how
/// they were drawn: a rate objective's denominator.
pub type Expected = Box<dyn Fn(Duration) -> Option<(f64, Arrivals)> + Send>;

/// A step's or journey's window, and its cumulative figures at the last interval (what the
/// next interval takes apart).
struct Row {
    name: String,
    window: Window,
    times: Option<Histogram<u64>>,
    completed: u64,
    failed: u64,
}

impl Row {
    fn new(name: &str) -> Row {
        Row {
            name: name.to_string(),
            window: Window::default(),
            times: None,
            completed: 0,
            failed: 0,
        }
    }

    /// What finished of it since the last interval joins its window as one interval.
    fn push(
        &mut self,
        at: (Duration, Duration),
        times: &Histogram<u64>,
        row: &sojourn_engine::LabelSnapshot,
    ) {
        let mut delta = times.clone();
        if let Some(before) = &self.times {
            let _ = delta.subtract(before);
        }
        let failed = row.failures.total();
        let (dc, df) = (
            row.completed.saturating_sub(self.completed),
            failed.saturating_sub(self.failed),
        );
        self.window.push(&Interval {
            start: at.0,
            end: at.1,
            answers: dc + df,
            failed: df,
            response: sojourn_core::record::encode(&delta).into(),
        });
        (self.times, self.completed, self.failed) = (Some(times.clone()), row.completed, failed);
    }
}

/// The objectives and their windows.
pub struct LiveObjectives {
    objectives: Vec<Objective>,
    stages: Vec<StageConfig>,
    expected: Expected,
    timeout_ns: Option<u64>,
    whole: Window,
    stage_windows: Vec<Window>,
    steps: Vec<Row>,
    journeys: Vec<Row>,
}

impl LiveObjectives {
    /// The objectives of a run whose schedule has `stages` (empty for none), expects
    /// `expected`, and times requests out after `timeout`.
    pub fn new(
        objectives: Vec<Objective>,
        stages: Vec<StageConfig>,
        expected: Expected,
        timeout: Duration,
    ) -> LiveObjectives {
        let stage_windows = stages.iter().map(|_| Window::default()).collect();
        LiveObjectives {
            objectives,
            stages,
            expected,
            timeout_ns: Some(timeout.as_nanos() as u64),
            whole: Window::default(),
            stage_windows,
            steps: Vec::new(),
            journeys: Vec::new(),
        }
    }

    /// Whether an objective judges a step or journey (the rows' times are then asked for).
    pub fn judges_labels(&self) -> bool {
        self.objectives.iter().any(|o| o.label.is_some())
    }

    /// Whether there is nothing to judge.
    pub fn is_empty(&self) -> bool {
        self.objectives.is_empty()
    }

    /// A completed interval joins the whole run and the stage it starts in; with a journey
    /// run's rows (their counts and their times so far), each step and journey its own.
    pub fn push(&mut self, interval: &Interval, rows: Option<RowTimes<'_>>) {
        self.whole.push(interval);
        if let Some(i) = self.stage_of(interval.start) {
            self.stage_windows[i].push(interval);
        }
        let Some((snapshot, steps, journeys)) = rows else {
            return;
        };
        let at = (interval.start, interval.end);
        for (list, rows, times) in [
            (&mut self.steps, &snapshot.steps, steps),
            (&mut self.journeys, &snapshot.journeys, journeys),
        ] {
            if list.is_empty() {
                list.extend(rows.iter().map(|r| Row::new(&r.name)));
            }
            for ((row, snap), times) in list.iter_mut().zip(rows).zip(times) {
                row.push(at, times, snap);
            }
        }
    }

    /// The stage whose window holds an interval starting at `start`: the one it starts in,
    /// the last for everything after the schedule (the drain).
    fn stage_of(&self, start: Duration) -> Option<usize> {
        let at = start.as_nanos() as u64;
        let last = self.stages.len().checked_sub(1)?;
        self.stages
            .iter()
            .position(|s| (s.start_ns..s.end_ns()).contains(&at))
            .or((at >= self.stages[last].start_ns).then_some(last))
    }

    /// Every objective judged so far. `in_flight` is how long each request in flight at
    /// `now` has been due (lower bounds on their response times, as the result counts those
    /// in flight at the end); `pace` what the run has kept of its schedule (none without one).
    pub fn statuses(
        &self,
        now: Duration,
        in_flight: &[Duration],
        pace: Option<Pace>,
    ) -> Vec<Status> {
        let mut censored = sojourn_core::record::new_histogram();
        for age in in_flight {
            // The histogram grows to fit: recording cannot fail.
            let _ = censored.record((age.as_nanos() as u64).max(1));
        }
        let none = sojourn_core::record::new_histogram();
        self.objectives
            .iter()
            .map(|o| match o.measure {
                Measure::Rate { .. } => self.rate_status(o, now, pace),
                _ => self.status(o, now, &censored, &none),
            })
            .collect()
    }

    fn status(
        &self,
        o: &Objective,
        now: Duration,
        censored: &Histogram<u64>,
        none: &Histogram<u64>,
    ) -> Status {
        let mut status = Status {
            objective: o.text.clone(),
            window: "whole run".into(),
            verdict: "judged at the end",
            value: None,
            interval: None,
            why: None,
        };
        if let Some(label) = &o.label {
            return self.label_status(o, label, status);
        }
        let (window, censored) = match &o.stage {
            None => (&self.whole, censored),
            Some(r) => {
                let Some(i) = sojourn_core::gate::resolve_stage(o, r, Some(&self.stages)).ok()
                else {
                    return status;
                };
                status.window = format!("stage {}", self.stages[i].title(i));
                let s = &self.stages[i];
                if (now.as_nanos() as u64) < s.start_ns {
                    status.verdict = "not begun";
                    return status;
                }
                // Only the stage under way holds the requests still in flight.
                let current = self.stage_of(now) == Some(i);
                (
                    &self.stage_windows[i],
                    if current { censored } else { none },
                )
            }
        };
        if window.reached.is_none() && censored.is_empty() {
            status.verdict = "too few samples yet";
            status.why = Some("no interval of it has completed yet".into());
            return status;
        }
        self.judged(status, window, censored, None, o.measure)
    }

    /// A rate objective so far. On the whole run (or every journey): what the run has kept of
    /// what fell due, exactly. On a stage: once it has ended (and its requests' timeout has
    /// passed), its intervals' answers against the stage's whole schedule, as the gate counts
    /// them at the end; under way, not yet. On one journey: at the end, against the journeys
    /// the result counts scheduled.
    fn rate_status(&self, o: &Objective, now: Duration, pace: Option<Pace>) -> Status {
        let mut status = Status {
            objective: o.text.clone(),
            window: "whole run".into(),
            verdict: "judged at the end",
            value: None,
            interval: None,
            why: None,
        };
        let on_pace = |mut status: Status, window: String| {
            status.window = window;
            let Some(p) = pace.filter(|p| p.due > 0) else {
                status.verdict = "too few samples yet";
                status.why = Some("nothing has fallen due yet".into());
                return status;
            };
            let w = Window {
                completed: p.kept,
                reached: Some(now),
                ..Window::default()
            };
            let none = sojourn_core::record::new_histogram();
            self.judged(
                status,
                &w,
                &none,
                Some((p.due as f64, Arrivals::Exact)),
                o.measure,
            )
        };
        match (&o.stage, &o.label) {
            (None, None) => on_pace(status, "whole run".into()),
            (_, Some(LabelRef::Journey(None))) => on_pace(status, "journeys".into()),
            (_, Some(label)) => {
                status.window = label.to_string();
                status.why = Some("a step's or one journey's rate is judged at the end, against what the result counts scheduled".into());
                status
            }
            (Some(r), None) => {
                let Some(i) = sojourn_core::gate::resolve_stage(o, r, Some(&self.stages)).ok()
                else {
                    return status;
                };
                let s = &self.stages[i];
                status.window = format!("stage {}", s.title(i));
                let (from, to) = (
                    Duration::from_nanos(s.start_ns),
                    Duration::from_nanos(s.end_ns()),
                );
                if now < from {
                    status.verdict = "not begun";
                    return status;
                }
                // Its window is whole once an interval reaching its end has closed; the last
                // stage keeps the drain, so only the end closes it.
                let last = i + 1 == self.stages.len();
                let whole = !last && self.stage_windows[i].reached.is_some_and(|r| r >= to);
                if !whole {
                    status.verdict = "too few samples yet";
                    status.why =
                        Some(match last {
                            true => "the last stage keeps the drain: its rate is judged at the end"
                                .into(),
                            false => "the stage is under way: its rate is judged once it has ended"
                                .into(),
                        });
                    return status;
                }
                let expected = self.expected_between(from, Some(to));
                self.judged(
                    status,
                    &self.stage_windows[i],
                    &sojourn_core::record::new_histogram(),
                    expected,
                    o.measure,
                )
            }
        }
    }

    /// The schedule's expected count between `from` and `to` (a window's last interval end),
    /// nothing when no interval of it has completed.
    fn expected_between(&self, from: Duration, to: Option<Duration>) -> Option<(f64, Arrivals)> {
        let to = to?;
        let (end, arrivals) = (self.expected)(to)?;
        let (start, _) = (self.expected)(from)?;
        Some(((end - start).max(0.0), arrivals))
    }

    /// A step's or journey's objective, judged on its own window (no lower bounds for the
    /// requests in flight: a live row does not say which of them are its own).
    fn label_status(&self, o: &Objective, label: &LabelRef, mut status: Status) -> Status {
        status.window = label.to_string();
        if self.steps.is_empty() && self.journeys.is_empty() {
            status.why = Some("a step's or journey's objective needs a journey run's rows".into());
            return status;
        }
        let window = match label {
            LabelRef::Step(name) => {
                let own = |r: &&Row| {
                    r.name
                        .strip_suffix(name.as_str())
                        .is_some_and(|j| j.ends_with('/'))
                };
                let found = self.steps.iter().find(|r| r.name == *name).or_else(|| {
                    let mut matches = self.steps.iter().filter(own);
                    matches.next().filter(|_| matches.next().is_none())
                });
                match found {
                    Some(r) => {
                        status.window = format!("step {}", r.name);
                        r.window.clone()
                    }
                    None if self.steps.is_empty() => Window::default(),
                    None => {
                        status.why = Some(format!("no step {name} (the end names the choices)"));
                        return status;
                    }
                }
            }
            LabelRef::Journey(None) => Window::merged(self.journeys.iter().map(|r| &r.window)),
            LabelRef::Journey(Some(name)) => match self.journeys.iter().find(|r| r.name == *name) {
                Some(r) => r.window.clone(),
                None if self.journeys.is_empty() => Window::default(),
                None => {
                    status.why = Some(format!("no journey {name} (the end names the choices)"));
                    return status;
                }
            },
        };
        if window.reached.is_none() {
            status.verdict = "too few samples yet";
            status.why = Some("no interval of it has completed yet".into());
            return status;
        }
        let none = sojourn_core::record::new_histogram();
        self.judged(status, &window, &none, None, o.measure)
    }

    /// The gate's verdict on `window`, in the words of a verdict so far.
    fn judged(
        &self,
        mut status: Status,
        window: &Window,
        censored: &Histogram<u64>,
        expected: Option<(f64, Arrivals)>,
        measure: Measure,
    ) -> Status {
        let live = window.live(censored, expected, self.timeout_ns);
        let (estimate, verdict) = judge_live(&live, measure);
        status.value = estimate.as_ref().map(|e| e.value_text());
        status.interval = estimate.as_ref().map(|e| e.interval_text());
        (status.verdict, status.why) = match verdict {
            Verdict::Met { .. } => ("met so far", None),
            Verdict::Breached { .. } => ("breached so far", None),
            Verdict::TooFew { reason } => ("too few samples yet", Some(reason)),
        };
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(index: u64, answers: u64, failed: u64, ms: u64) -> Interval {
        let mut h = sojourn_core::record::new_histogram();
        for _ in 0..answers {
            h.record(ms * 1_000_000).unwrap();
        }
        let s = Duration::from_secs(index);
        Interval {
            start: s,
            end: s + Duration::from_secs(1),
            answers,
            failed,
            response: sojourn_core::record::encode(&h).into(),
        }
    }

    fn objectives(texts: &[&str], stages: &str) -> LiveObjectives {
        let stages = sojourn_core::Stages::parse(stages).unwrap().configs();
        let objectives = texts.iter().map(|t| t.parse().unwrap()).collect();
        // 100 a second, a fixed schedule.
        let expected: Expected =
            Box::new(|t: Duration| Some((t.as_secs_f64() * 100.0, Arrivals::Exact)));
        LiveObjectives::new(objectives, stages, expected, Duration::from_secs(60))
    }

    /// Ten seconds of 10 ms answers meet p99<50ms in stage 1; a stall's interval of 900 ms
    /// answers (half of them failed) in stage 2 breaches it there and on the whole run; stage
    /// 3 has not begun; the error objective counts the failures; a step's objective waits for
    /// the end.
    #[test]
    fn each_objective_is_judged_on_its_window_by_the_gates_rules() {
        let mut live = objectives(
            &[
                "p99<50ms",
                "1:p99<50ms",
                "2:p99<50ms",
                "3:p99<50ms",
                "errors<1%",
                "step:x:p99<1s",
            ],
            "5s@100,5s@100,5s@100",
        );
        for i in 0..5 {
            live.push(&interval(i, 100, 0, 10), None);
        }
        live.push(&interval(5, 100, 50, 900), None);
        for i in 6..10 {
            live.push(&interval(i, 100, 0, 10), None);
        }
        let now = Duration::from_secs(10);
        let got: Vec<(String, &str)> = live
            .statuses(now - Duration::from_millis(1), &[], None)
            .into_iter()
            .map(|s| (s.window, s.verdict))
            .collect();
        assert_eq!(got[1], ("stage 1".to_string(), "met so far"));
        assert_eq!(got[2], ("stage 2".to_string(), "breached so far"));
        assert_eq!(got[3], ("stage 3".to_string(), "not begun"));
        assert_eq!(got[4].1, "breached so far", "50 failed of 1,000");
        assert_eq!(got[5].1, "judged at the end");
        // The whole run: 100 of 1,000 at 900 ms put p99 at 900 ms.
        assert_eq!(got[0], ("whole run".to_string(), "breached so far"));
    }

    /// A stall under way in stage 2, 1.5 s after it began: 25 answers of 10 ms finished in
    /// the stage before it, and five requests are held, due 1.05 to 1.25 s before now. Their
    /// ages are lower bounds, and they put the stage's p99 at ≥1.25 s before any of them
    /// finishes. One stall is one stretch, too few for an interval that allows for requests
    /// that move together: by the gate's rules there are too few samples to call it yet, on
    /// either side of the limit. Without them the stage's p99 so far is its answers' 10 ms.
    #[test]
    fn a_stall_under_way_counts_before_anything_finishes() {
        let mut live = objectives(&["2:p99<50ms"], "1s@100,5s@100");
        live.push(&interval(0, 100, 0, 10), None);
        live.push(&interval(1, 25, 0, 10), None);
        let held = [1250, 1200, 1150, 1100, 1050].map(Duration::from_millis);
        let s = live.statuses(Duration::from_millis(2_500), &held, None);
        assert_eq!(s[0].value.as_deref(), Some("≥1.251 s"), "{s:?}");
        assert_eq!(s[0].verdict, "too few samples yet", "{s:?}");
        assert!(
            s[0].why
                .as_deref()
                .unwrap()
                .contains("independent stretches"),
            "{s:?}"
        );
        let quiet = live.statuses(Duration::from_millis(2_500), &[], None);
        assert_eq!(quiet[0].value.as_deref(), Some("10.00 ms"), "{quiet:?}");
    }

    /// A rate so far: on the whole run, what the run kept of what fell due, exactly; on a
    /// stage once its window is whole, its answers against its whole schedule; the last stage
    /// (which keeps the drain) and one not begun wait.
    #[test]
    fn a_rate_objective_counts_what_was_kept_of_what_fell_due() {
        let mut live = objectives(
            &["rate>=99%", "1:rate>=99%", "2:rate>=99%", "3:rate>=99%"],
            "5s@100,5s@100,5s@100",
        );
        for i in 0..5 {
            live.push(&interval(i, 100, 0, 10), None);
        }
        for i in 5..10 {
            live.push(&interval(i, 50, 0, 10), None);
        }
        let pace = Pace {
            due: 1_000,
            kept: 750,
        };
        let s = live.statuses(Duration::from_millis(9_990), &[], Some(pace));
        let got: Vec<(&str, Option<&str>)> =
            s.iter().map(|s| (s.verdict, s.value.as_deref())).collect();
        assert_eq!(
            got,
            [
                ("breached so far", Some("75.00%")),
                ("met so far", Some("100.00%")),
                ("breached so far", Some("50.00%")),
                ("not begun", None)
            ],
            "{s:?}"
        );
        let s = live.statuses(Duration::from_millis(10_100), &[], Some(pace));
        assert_eq!(s[3].verdict, "too few samples yet", "{s:?}");
        assert!(s[3].why.as_deref().unwrap().contains("drain"), "{s:?}");
    }

    /// A journey run's rows: each interval takes apart what finished of each step and
    /// journey since the last (twenty intervals of 50 steps hold 1,000 times, not the 10,500 a
    /// sum of the cumulative figures would), and an objective on a step (by its own name) or
    /// on every journey is judged on that window alone; a step the rows do not have is said.
    #[test]
    fn step_and_journey_objectives_are_judged_on_their_own_rows() {
        use sojourn_engine::live_labels::{LabelSnapshot, Percentiles};
        let mut live = objectives(
            &[
                "step:login:p50<50ms",
                "journey:p50<100ms",
                "step:nope:p99<1s",
            ],
            "20s@100",
        );
        let (mut step, mut journey) = (
            sojourn_core::record::new_histogram(),
            sojourn_core::record::new_histogram(),
        );
        let row = |name: &str, h: &Histogram<u64>| LabelSnapshot {
            name: name.into(),
            completed: h.len(),
            failures: sojourn_core::FailureCounts::default(),
            in_flight: 0,
            time: Some(Percentiles {
                count: h.len(),
                p50: Duration::ZERO,
                p90: Duration::ZERO,
                p99: Duration::ZERO,
                p999: Duration::ZERO,
            }),
            service: None,
        };
        for i in 0..20 {
            step.record_n(10_000_000, 50).unwrap();
            journey.record_n(250_000_000, 25).unwrap();
            let rows = LabelsSnapshot {
                steps: vec![row("shop/login", &step)],
                journeys: vec![row("shop", &journey)],
                targets: Vec::new(),
            };
            let times = (vec![step.clone()], vec![journey.clone()]);
            live.push(&interval(i, 75, 0, 10), Some((&rows, &times.0, &times.1)));
        }
        let held: u64 = live.steps[0]
            .window
            .intervals
            .iter()
            .map(|b| sojourn_core::record::decode(b).len())
            .sum();
        assert_eq!((held, live.steps[0].window.completed), (1_000, 1_000));
        let s = live.statuses(Duration::from_secs(20), &[], None);
        assert_eq!(
            (s[0].window.as_str(), s[0].verdict, s[0].value.as_deref()),
            ("step shop/login", "met so far", Some("10.00 ms")),
            "{s:?}"
        );
        assert_eq!(
            (s[1].window.as_str(), s[1].verdict, s[1].value.as_deref()),
            ("journeys", "breached so far", Some("250.09 ms")),
            "{s:?}"
        );
        assert_eq!(s[2].verdict, "judged at the end", "{s:?}");
        assert!(
            s[2].why.as_deref().unwrap().contains("no step nope"),
            "{s:?}"
        );
    }

    #[test]
    fn a_long_run_keeps_a_bounded_timeline() {
        let mut live = objectives(&["p99<50ms"], "10s@100");
        for i in 0..(WINDOW_CAP as u64 * 3) {
            live.push(&interval(i, 10, 0, 10), None);
        }
        assert!(live.whole.intervals.len() <= WINDOW_CAP);
        assert_eq!(
            live.whole.completed,
            WINDOW_CAP as u64 * 30,
            "no request lost in merging"
        );
        let merged: u64 = live
            .whole
            .intervals
            .iter()
            .map(|b| sojourn_core::record::decode(b).len())
            .sum();
        assert_eq!(merged, WINDOW_CAP as u64 * 30);
    }
}
