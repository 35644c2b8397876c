//! How the pacer waits for the next due time, and how far apart its wake-ups may be ([`Slack`]).
//! A seam so tests can run the dispatcher in tokio's paused (virtual) time, where a timerfd
//! would sleep in real time.
use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

/// The least time between two wake-ups of the pacer. Requests due closer together than this
/// leave together, in one wake-up, each up to this late: fewer wake-ups, at the price of send
/// lag (which is measured and counted in response time, like any other).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slack {
    /// As late as the pacer's own wake-ups have been coming: a request due sooner after a
    /// wake-up than a wake-up takes could not leave earlier on a wake-up of its own. Requests
    /// due further apart each get their own, on time.
    Auto,
    /// At least this long between wake-ups; zero wakes for every due time.
    Fixed(Duration),
}

pub trait Sleeper {
    fn sleep_until(&mut self, deadline: Instant) -> impl Future<Output = ()>;

    /// Returns after `deadline`, without spending CPU to meet it exactly.
    fn sleep_until_loosely(&mut self, deadline: Instant) -> impl Future<Output = ()> {
        self.sleep_until(deadline)
    }

    /// How late this sleeper's wake-ups have been coming: the pacer's automatic slack.
    fn wake_lateness(&self) -> Duration {
        Duration::ZERO
    }
}

/// Microsecond-accurate sleeping (timerfd); the default for real runs.
impl Sleeper for sojourn_timer::Timer {
    async fn sleep_until(&mut self, deadline: Instant) {
        sojourn_timer::Timer::sleep_until(self, deadline).await
    }

    async fn sleep_until_loosely(&mut self, deadline: Instant) {
        sojourn_timer::Timer::sleep_until_loosely(self, deadline).await
    }

    fn wake_lateness(&self) -> Duration {
        self.learned_lateness()
    }
}

/// tokio's own timer: 1 ms resolution, but it follows paused time in tests.
#[derive(Debug, Default, Clone, Copy)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    async fn sleep_until(&mut self, deadline: Instant) {
        tokio::time::sleep_until(deadline).await
    }
}
