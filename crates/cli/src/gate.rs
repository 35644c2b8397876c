//! `--slo` and `--junit`, as typed on `run`, `report` and `merge`; judged by `sojourn::gate`.
use std::path::PathBuf;

/// The flags, as typed.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct GateArgs {
    /// A service-level objective to gate on; repeatable. `p99<200ms` (a response-time
    /// percentile), `errors<0.1%` (failed / answered), `rate>=99%` (answered / scheduled);
    /// `3:p99<200ms` or `hold:errors<0.1%` for one stage of a shaped run;
    /// `step:checkout:p99<300ms` or `journey:p99<2s` for one step or the journeys of a journey
    /// run. Each gets a verdict with its 95% interval; any breach, or any objective with too
    /// few samples to judge, exits 4.
    #[arg(long = "slo", value_name = "OBJECTIVE")]
    pub slo: Vec<String>,
    /// Write the verdicts as JUnit XML here: a test case per objective, a failure for each
    /// breached or unjudged one.
    #[arg(long, value_name = "FILE", requires = "slo")]
    pub junit: Option<PathBuf>,
}

impl From<GateArgs> for sojourn::gate::GateSettings {
    fn from(a: GateArgs) -> Self {
        sojourn::gate::GateSettings {
            slo: a.slo,
            junit: a.junit,
            from_plan: None,
        }
    }
}
