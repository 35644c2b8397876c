//! Which tools hide the stall: a run's p99 against the model's (the simulator's exact answer for
//! the same schedule and server), and what that ratio says about the tool that measured it.
use serde::Serialize;

use crate::result::{HistogramSummary, Mode, RunResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The reference itself.
    Model,
    /// p99 within 3x of the model's either way.
    Honest,
    /// p99 under a third of the model's: the slow requests were never sent.
    HidesTheStall,
    /// p99 over 3x the model's: the client added its own delay.
    Overstates,
    /// The tool rebuilt the missing samples after the run (wrk's back-fill, oha's
    /// --latency-correction): an estimate, whatever its number.
    CorrectedAfterTheFact,
    /// The tool ran but reported nothing to compare.
    NoData,
}

impl Verdict {
    /// Where a verdict sorts on a board: the reference, then the honest, then the rest, the
    /// tools that hide the stall last but one.
    pub fn rank(self) -> u8 {
        match self {
            Verdict::Model => 0,
            Verdict::Honest => 1,
            Verdict::CorrectedAfterTheFact => 2,
            Verdict::Overstates => 3,
            Verdict::HidesTheStall => 4,
            Verdict::NoData => 5,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Verdict::Model => "reference (simulated truth)",
            Verdict::Honest => "honest",
            Verdict::HidesTheStall => "HIDES THE STALL",
            Verdict::Overstates => "overstates",
            Verdict::CorrectedAfterTheFact => "corrected after the fact",
            Verdict::NoData => "no data",
        }
    }
}

/// The label the simulator's reference run carries in `demo` and `suite`.
pub const MODEL_LABEL: &str = "model";

/// Whether `r` is the model: the simulator's exact answer the other runs are judged against.
pub fn is_model(r: &RunResult) -> bool {
    r.label == MODEL_LABEL
}

/// The model's p99 over its p50 above this: the scenario has a tail for a closed loop to hide.
const TAIL_OVER_BODY: f64 = 3.0;

/// p99 of `r` against the model's, and what that says about the tool.
///
/// A closed loop sends one request per connection into a stall and nothing more until it ends,
/// so it cannot have measured the stall's tail. When the model has a tail to hide and a closed
/// loop's p99 lands on it all the same, the tool rebuilt the missing samples after the run
/// (wrk's back-fill): an estimate, however close. Decided from the data, whatever the tool is
/// called; open loops (oha --latency-correction and wrk2 time real requests from their
/// scheduled send) are judged by the ratio alone.
pub fn verdict(r: &RunResult, model: &RunResult) -> (Option<f64>, Verdict) {
    if is_model(r) {
        return (Some(1.0), Verdict::Model);
    }
    judge(&r.histograms.response, r.mode, model)
}

/// [`verdict`] of one of a run's clocks: `times` is what the view reports (a paced closed
/// loop's times from the send are judged apart from its times from the slot, as the tools that
/// report each view are), `mode` the loop that made them.
pub fn judge(times: &HistogramSummary, mode: Mode, model: &RunResult) -> (Option<f64>, Verdict) {
    let at = |h: &HistogramSummary, p: f64| h.percentiles.get(p);
    let model_times = &model.histograms.response;
    let ratio = at(times, 99.0)
        .zip(at(model_times, 99.0))
        .filter(|(_, m)| *m > 0)
        .map(|(t, m)| t as f64 / m as f64);
    let model_has_tail = at(model_times, 99.0)
        .zip(at(model_times, 50.0))
        .is_some_and(|(p99, p50)| p99 as f64 > TAIL_OVER_BODY * p50 as f64);
    let verdict = match ratio {
        None => Verdict::NoData,
        Some(x) if x < 1.0 / 3.0 => Verdict::HidesTheStall,
        Some(x) if x > 3.0 => Verdict::Overstates,
        Some(_) if mode == Mode::Closed && model_has_tail => Verdict::CorrectedAfterTheFact,
        Some(_) => Verdict::Honest,
    };
    (ratio, verdict)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Recorder, Stamps};
    use crate::{check, Outcome, RunConfig, RunFacts};
    use std::time::Duration;

    /// A run whose p50 is `body` ms and whose slowest 2% took `tail` ms.
    fn run(label: &str, mode: Mode, body: u64, tail: u64) -> RunResult {
        let mut rec = Recorder::new(Duration::from_secs(1));
        for i in 0..1000u64 {
            let at = Duration::from_millis(i);
            let took = if i % 50 == 0 { tail } else { body };
            rec.record(
                &Stamps::on_time(at),
                at + Duration::from_millis(took),
                Outcome::Ok,
            );
        }
        let m = Recorder::merge_all([rec]);
        let facts = RunFacts {
            label: label.into(),
            mode,
            config: RunConfig::default(),
            scheduled: 1000,
            elapsed: Duration::from_secs(1),
            interrupted: false,
            checks: check::assess_closed(),
            backfill_interval: None,
        };
        RunResult::build(&m, facts)
    }

    #[test]
    fn the_verdict_comes_from_the_data_not_the_tool_name() {
        let stall = run("model", Mode::Open, 10, 800);
        let healthy = run("model", Mode::Open, 10, 12);
        let v = |r: &RunResult, model: &RunResult| verdict(r, model).1;
        // A closed loop that shows the stall's tail can only have rebuilt it.
        let backfilled = run("any closed tool", Mode::Closed, 10, 790);
        assert_eq!(v(&backfilled, &stall), Verdict::CorrectedAfterTheFact);
        // The same numbers from an open loop are a measurement.
        let open = run("any open tool", Mode::Open, 10, 790);
        assert_eq!(v(&open, &stall), Verdict::Honest);
        // A closed loop without the tail hides the stall, whatever it is called.
        let mut hiding = run("wrk", Mode::Closed, 10, 12);
        hiding.tool.name = "wrk".into();
        assert_eq!(v(&hiding, &stall), Verdict::HidesTheStall);
        // With no tail to hide, a closed loop that agrees is simply honest.
        assert_eq!(v(&hiding, &healthy), Verdict::Honest);
        assert_eq!(v(&open, &healthy), Verdict::Overstates);
        assert_eq!(v(&stall, &stall), Verdict::Model);
    }
}
