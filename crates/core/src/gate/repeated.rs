//! A whole-run percentile objective on a repeated run (`--repeat N`): judged on the between-run
//! interval (see [`crate::repeat`]) instead of one run's interval.
//! The rule is the gate's own: significant only when the interval lies wholly on one side of
//! the limit.
use super::{against, too_few, Estimate, Unit, Verdict};
use crate::repeat::Repetitions;
use crate::sweep::Slo;
use crate::units::nanos;

/// The estimate and verdict from the between-run interval at the objective's percentile, and
/// the repetitions it rests on; `None` with fewer than two complete repetitions (the caller
/// then judges the merged run as it judges any run).
pub(super) fn judge(slo: Slo, reps: &Repetitions) -> Option<(Estimate, Verdict, u32)> {
    let b = reps.response_at(slo.percentile)?;
    let runs = reps.runs.iter().filter(|r| !r.interrupted).count() as u32;
    let limit = nanos(slo.limit) as f64;
    let e = Estimate {
        unit: Unit::Nanos,
        value: b.estimate,
        lower_bound: b.lower_bound,
        lo: b.lo.max(0.0),
        hi: Some(b.hi),
        hi_reached: None,
        exact: false,
    };
    // A lower bound below the limit cannot vouch for "below": what was cut off could lie
    // beyond it. At or above the limit, it is a breach (the truth is at least as high).
    if e.lower_bound && e.value < limit {
        let reason = format!(
            "some repetition's p{} is only a lower bound (requests unanswered at its end or timed out could lie beyond it)",
            slo.percentile
        );
        return Some((e, too_few(reason), runs));
    }
    Some((e, against(limit, &e, false), runs))
}
