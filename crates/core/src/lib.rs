//! The measurement model of sojourn: schedules, recorders, statistics and the result schema.
//! Pure code: no async runtime, no network, no clock. Everything here is deterministic given its
//! inputs, so the engine (real time) and the simulator (virtual time) share it.
#![forbid(unsafe_code)]

pub mod batches;
pub mod by_stage;
pub mod check;
pub mod confidence;
pub mod conformance;
pub mod diff;
pub mod evidence;
pub mod gate;
pub mod journey;
pub mod merge;
pub mod outcome;
pub mod placement;
pub mod record;
pub mod repeat;
pub mod result;
pub mod schedule;
pub mod serial;
pub mod shard;
mod spill;
pub mod stages;
pub mod stats;
pub mod steady;
pub mod sweep;
pub mod targets;
pub mod units;
pub mod validity;
pub mod verdict;

pub use check::{Checks, GeneratorVerdict};
pub use outcome::{FailureClass, FailureCounts, Outcome};
pub use record::{Bound, LabelRecord, Measurements, Recorder, RequestSample, Stamps, StatusCounts};
pub use result::{
    JourneysConfig, LabelCounts, LabelInterval, Mode, RunConfig, RunFacts, RunResult,
    StreamSummary, TargetResult, TargetsConfig,
};
pub use schedule::{Arrival, Due, End, Schedule};
pub use shard::Shard;
pub use stages::{Stage, Stages};
pub use targets::{Target, Targets, TargetsError};
pub use units::{format_ns, nanos, Rate};
