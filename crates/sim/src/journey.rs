//! What the simulator asks of a journey description, whatever file it came from.
use std::time::Duration;

/// The journeys a run models: which journey each index of the schedule runs, and its steps.
/// Every answer is a pure function of its arguments, so a simulation stays a pure function of
/// its inputs (think times are draws seeded from the index, as in a real run).
pub trait JourneyModel: Send + Sync + std::fmt::Debug {
    /// (step labels over all journeys, journeys)
    fn labels(&self) -> (usize, usize);
    /// Which journey journey `index` of the schedule runs (pure).
    fn journey_of(&self, index: u64) -> usize;
    /// Journey `index`'s steps in order, into `out` (cleared first): each step's label, the think
    /// time before it (zero for the first), and whether the journey goes on if it fails
    /// (`on_error = "continue"`). Pure: a function of the index (think times are seeded draws).
    fn steps(&self, index: u64, out: &mut Vec<ModelStep>);
}

/// One step of a journey as the simulator needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelStep {
    pub label: usize,
    /// How long the user thinks after the previous answer before this step is due.
    pub think: Duration,
    /// A failure of this step does not end its journey.
    pub continue_on_error: bool,
}

/// Models compare by identity: two plans are the same only if they ask the same model.
impl PartialEq for dyn JourneyModel {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::addr_eq(self, other)
    }
}
