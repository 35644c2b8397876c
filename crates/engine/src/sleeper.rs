//! How the dispatcher waits for the next due time. A seam so tests can run the dispatcher in
//! tokio's paused (virtual) time, where a timerfd would sleep in real time.
use std::future::Future;

use tokio::time::Instant;

pub trait Sleeper {
    fn sleep_until(&mut self, deadline: Instant) -> impl Future<Output = ()>;
}

/// Microsecond-accurate sleeping (timerfd); the default for real runs.
impl Sleeper for sojourn_timer::Timer {
    async fn sleep_until(&mut self, deadline: Instant) {
        sojourn_timer::Timer::sleep_until(self, deadline).await
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
