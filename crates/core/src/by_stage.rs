//! A shaped run, stage by stage: which part of the timeline belongs to each stage, and the
//! response times and counts in it.
//!
//! The timeline's intervals are keyed by when requests *finished*, so a stage's share is the
//! intervals that start inside its window. The last stage also takes every interval after the
//! schedule's end: the drain holds the answers to its last requests.
use hdrhistogram::Histogram;

use crate::result::{HdrDecodeError, IntervalSummary, RunResult, StageConfig};

/// One stage's part of a run.
#[derive(Debug, Clone)]
pub struct StageSlice<'a> {
    /// Its place in the plan, from 0.
    pub index: usize,
    pub config: &'a StageConfig,
    pub intervals: Vec<&'a IntervalSummary>,
}

impl StageSlice<'_> {
    /// How tables and objectives name it: its name, or its number from 1.
    pub fn title(&self) -> String {
        self.config.title(self.index)
    }

    pub fn completed(&self) -> u64 {
        self.intervals.iter().map(|i| i.completed).sum()
    }

    pub fn failed(&self) -> u64 {
        self.intervals.iter().map(|i| i.failed).sum()
    }

    /// Response times of the requests that finished in the stage.
    pub fn response(&self) -> Result<Histogram<u64>, HdrDecodeError> {
        IntervalSummary::merged_response(&self.intervals)
    }
}

/// Every stage of `r` with its intervals; empty for a run without stages.
pub fn stages(r: &RunResult) -> Vec<StageSlice<'_>> {
    let Some(configs) = &r.config.stages else {
        return Vec::new();
    };
    let last = configs.len().saturating_sub(1);
    configs
        .iter()
        .enumerate()
        .map(|(index, config)| {
            let end = if index == last {
                u64::MAX
            } else {
                config.end_ns()
            };
            StageSlice {
                index,
                config,
                intervals: r
                    .intervals
                    .iter()
                    .filter(|i| (config.start_ns..end).contains(&i.start_ns))
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Recorder, Stamps};
    use crate::result::{RunConfig, RunFacts};
    use crate::{Mode, Outcome, Stages};
    use std::time::Duration;

    /// 2 s at 100/s answered in 1 ms, then 2 s at 100/s answered in 50 ms, drained 1 s.
    fn two_stage_run() -> RunResult {
        let mut rec = Recorder::new(Duration::from_secs(1));
        for i in 0..400u64 {
            let at = Duration::from_millis(i * 10);
            let took = if i < 200 { 1 } else { 50 };
            rec.record(
                &Stamps::on_time(at),
                at + Duration::from_millis(took),
                Outcome::Ok,
            );
        }
        let m = Recorder::merge_all([rec]);
        let stages = Stages::parse("fast=2s@100,2s@100").unwrap();
        let facts = RunFacts {
            label: "open".into(),
            mode: Mode::Open,
            config: RunConfig {
                rate: Some(100.0),
                arrival: Some("constant".into()),
                duration_ns: Some(4_000_000_000),
                connections: 8,
                interval_ns: 1_000_000_000,
                stages: Some(stages.configs()),
                ..Default::default()
            },
            scheduled: 400,
            elapsed: Duration::from_secs(5),
            interrupted: false,
            checks: crate::Checks::not_applicable(Vec::new()),
            backfill_interval: None,
        };
        RunResult::build(&m, facts)
    }

    #[test]
    fn each_stage_gets_the_intervals_that_start_in_it() {
        let r = two_stage_run();
        let s = stages(&r);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].title(), "fast");
        assert_eq!(s[1].title(), "2");
        let starts = |k: usize| {
            s[k].intervals
                .iter()
                .map(|i| i.start_ns / 1_000_000_000)
                .collect::<Vec<_>>()
        };
        assert_eq!(starts(0), vec![0, 1]);
        // The last answer (due at 3.99 s, 50 ms) lands in the drain interval 4: still stage 2.
        assert_eq!(starts(1), vec![2, 3, 4]);
        assert_eq!(s[0].completed() + s[1].completed(), 400);
        assert_eq!(
            s[0].response().unwrap().value_at_quantile(0.99) / 1_000_000,
            1
        );
        assert!(s[1].response().unwrap().value_at_quantile(0.5) >= 49_000_000);
    }

    #[test]
    fn a_run_without_stages_has_no_slices() {
        let mut flat = two_stage_run();
        flat.config.stages = None;
        assert!(stages(&flat).is_empty());
    }
}
