//! The `--slo` objectives judged while the run goes, for the dashboard: each completed interval
//! joins the whole run's window and the window of the stage it starts in (as the result's
//! stages cut them: the last stage keeps the drain), and each objective is judged on its
//! window by the gate's own rules ([`sojourn_core::gate::judge_live`]). The verdicts are "so
//! far"; the run's end decides.
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use sojourn_core::gate::{judge_live, LiveWindow, Measure, Objective, Verdict};
use sojourn_core::result::StageConfig;

/// The most intervals a window keeps: past it, neighbours are merged two by two (a coarser
/// timeline, which the batch-means interval reads as fewer, longer stretches). Keeps a 24-hour
/// run's memory and each judgement's work bounded.
pub const WINDOW_CAP: usize = 512;

/// One window so far: its intervals' response times (compact bytes, oldest first), counts.
#[derive(Default)]
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
        self.intervals.push(interval.response.clone());
        self.completed += interval.answers - interval.failed;
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

    fn live(&self, censored: &Histogram<u64>, expected: Option<u64>) -> LiveWindow {
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
        }
    }
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
    /// `whole run`, or `stage NAME`.
    pub window: String,
    /// `met so far`, `breached so far`, `too few samples yet`, `not begun`, or `judged at the
    /// end` (a step's or journey's objective, or a stage's rate: the live intervals do not
    /// carry what they need).
    pub verdict: &'static str,
    /// The measured value so far and its interval, when there is one.
    pub value: Option<String>,
    /// Its 95% interval, as the gate prints it.
    pub interval: Option<String>,
    /// Why there are too few samples yet, or why it waits for the end.
    pub why: Option<String>,
}

/// The objectives and their windows.
pub struct LiveObjectives {
    objectives: Vec<Objective>,
    stages: Vec<StageConfig>,
    whole: Window,
    stage_windows: Vec<Window>,
}

impl LiveObjectives {
    /// The objectives of a run whose schedule has `stages` (empty for none).
    pub fn new(objectives: Vec<Objective>, stages: Vec<StageConfig>) -> LiveObjectives {
        let stage_windows = stages.iter().map(|_| Window::default()).collect();
        LiveObjectives {
            objectives,
            stages,
            whole: Window::default(),
            stage_windows,
        }
    }

    /// Whether there is nothing to judge.
    pub fn is_empty(&self) -> bool {
        self.objectives.is_empty()
    }

    /// A completed interval joins the whole run and the stage it starts in.
    pub fn push(&mut self, interval: &Interval) {
        self.whole.push(interval);
        if let Some(i) = self.stage_of(interval.start) {
            self.stage_windows[i].push(interval);
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
    /// in flight at the end); `due` what the schedule has made due by now.
    pub fn statuses(&self, now: Duration, in_flight: &[Duration], due: Option<u64>) -> Vec<Status> {
        let mut censored = sojourn_core::record::new_histogram();
        for age in in_flight {
            // The histogram grows to fit: recording cannot fail.
            let _ = censored.record((age.as_nanos() as u64).max(1));
        }
        let none = sojourn_core::record::new_histogram();
        self.objectives
            .iter()
            .map(|o| self.status(o, now, &censored, &none, due))
            .collect()
    }

    fn status(
        &self,
        o: &Objective,
        now: Duration,
        censored: &Histogram<u64>,
        none: &Histogram<u64>,
        due: Option<u64>,
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
            status.window = label.to_string();
            status.why = Some(
                "a step's or journey's objective needs its own timeline, which the result has"
                    .into(),
            );
            return status;
        }
        let (window, expected, censored) = match &o.stage {
            None => (&self.whole, due, censored),
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
                if let Measure::Rate { .. } = o.measure {
                    status.why = Some("a stage's rate is judged against its whole schedule".into());
                    return status;
                }
                // Only the stage under way holds the requests still in flight.
                let current = self.stage_of(now) == Some(i);
                let c = if current { censored } else { none };
                (&self.stage_windows[i], None, c)
            }
        };
        if window.reached.is_none() && censored.is_empty() {
            status.verdict = "too few samples yet";
            status.why = Some("no interval of it has completed yet".into());
            return status;
        }
        let (estimate, verdict) = judge_live(&window.live(censored, expected), o.measure);
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
        LiveObjectives::new(objectives, stages)
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
            live.push(&interval(i, 100, 0, 10));
        }
        live.push(&interval(5, 100, 50, 900));
        for i in 6..10 {
            live.push(&interval(i, 100, 0, 10));
        }
        let now = Duration::from_secs(10);
        let got: Vec<(String, &str)> = live
            .statuses(now - Duration::from_millis(1), &[], Some(1000))
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
        live.push(&interval(0, 100, 0, 10));
        live.push(&interval(1, 25, 0, 10));
        let held = [1250, 1200, 1150, 1100, 1050].map(Duration::from_millis);
        let s = live.statuses(Duration::from_millis(2_500), &held, Some(250));
        assert_eq!(s[0].value.as_deref(), Some("≥1.251 s"), "{s:?}");
        assert_eq!(s[0].verdict, "too few samples yet", "{s:?}");
        assert!(
            s[0].why
                .as_deref()
                .unwrap()
                .contains("independent stretches"),
            "{s:?}"
        );
        let quiet = live.statuses(Duration::from_millis(2_500), &[], Some(250));
        assert_eq!(quiet[0].value.as_deref(), Some("10.00 ms"), "{quiet:?}");
    }

    #[test]
    fn a_long_run_keeps_a_bounded_timeline() {
        let mut live = objectives(&["p99<50ms"], "10s@100");
        for i in 0..(WINDOW_CAP as u64 * 3) {
            live.push(&interval(i, 10, 0, 10));
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
