//! Every default of a run, stated once: the flags' help shows these, and `RunSettings`,
//! `RunSpec::of` and the library's loops start from them.
use std::time::Duration;

/// How long a run lasts when neither a duration nor a count is given.
pub const DURATION: Duration = Duration::from_secs(10);
/// The open loop's pool (HTTP/1.1): room for a stall's worth of requests in flight.
pub const OPEN_CONNECTIONS: usize = 2048;
/// HTTP/2: 16 connections of up to 128 streams (nginx's limit) hold as many requests at
/// once as the HTTP/1.1 default pool.
pub const HTTP2_CONNECTIONS: usize = 16;
/// The closed loop's callers.
pub const CLOSED_CONNECTIONS: usize = 10;
/// Journeys running at once (`--max-journeys`), each on a connection of its own: room for a
/// stall's worth of journeys at hundreds per second, and a bound on the generator's memory.
pub const MAX_JOURNEYS: usize = 1000;
/// The seed of a journey file's choices when `--seed` is not given: fixed, so that two runs of
/// one file (and its shards, and `sim`) make the same choices.
pub const JOURNEY_SEED: u64 = 1;
/// `demo`'s and `suite`'s open loops against the pathology server: every request due during
/// the longest built-in stall at their rates can be in flight at once, so the pool never
/// decides what the stall looks like.
pub const STALL_CONNECTIONS: usize = 4096;
/// The library's async calls in flight at once (`OpenLoop::concurrency`): in-process calls
/// need no socket each, so the pool is a bound on tasks, not connections.
pub const IN_PROCESS_CALLS: usize = 1024;
/// A sweep step's wait for one answer, and its drain: shorter than a run's, because requests
/// still unanswered then mark the step saturated, and a sweep has many steps.
pub const SWEEP_TIMEOUT: Duration = Duration::from_secs(5);
/// `SWEEP_TIMEOUT` as the flag's help shows it.
pub const SWEEP_TIMEOUT_TEXT: &str = "5s";
/// How long one request may take before it counts as timed out.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// `TIMEOUT` as the flag's help shows it.
pub const TIMEOUT_TEXT: &str = "10s";
/// The interval of the timeline.
pub const INTERVAL: Duration = Duration::from_secs(1);
/// `INTERVAL` as the flag's help shows it.
pub const INTERVAL_TEXT: &str = "1s";
/// `run --repeat`: the pause between two repetitions, so that the target's queues and pools
/// drain and the next repetition starts from the state the first did. (`sim` runs in virtual
/// time and needs none.)
pub const REPEAT_PAUSE: Duration = Duration::from_secs(1);
/// `REPEAT_PAUSE` as the flag's help shows it.
pub const REPEAT_PAUSE_TEXT: &str = "1s";
/// How long the pacer may spin before a due time rather than sleep.
pub const TIMER_SPIN: Duration = sojourn_engine::DEFAULT_MAX_SPIN;
/// `TIMER_SPIN` as the flag's help shows it.
pub const TIMER_SPIN_TEXT: &str = "100us";
/// One open-loop worker thread paces this many requests a second on one core (measured in
/// docs/benchmarks.md); more threads only add wake-ups, and wake-ups are what an open loop
/// pays for.
pub const OPEN_RATE_PER_THREAD: f64 = 50_000.0;

#[cfg(test)]
mod tests {
    use super::*;

    /// What the help shows is the default the code uses.
    #[test]
    fn each_default_as_shown_is_the_default_used() {
        let parse = |text| crate::parse::duration(text).unwrap();
        assert_eq!(parse(TIMEOUT_TEXT), TIMEOUT);
        assert_eq!(parse(INTERVAL_TEXT), INTERVAL);
        assert_eq!(parse(TIMER_SPIN_TEXT), TIMER_SPIN);
        assert_eq!(parse(SWEEP_TIMEOUT_TEXT), SWEEP_TIMEOUT);
        assert_eq!(parse(REPEAT_PAUSE_TEXT), REPEAT_PAUSE);
    }
}
