//! Sleeping to a deadline with microsecond accuracy on tokio.
//!
//! tokio's timer wheel has a 1 ms tick: a `sleep_until` can fire up to a millisecond late, which
//! is too coarse for a load schedule at 10k+ req/s or for a server that must hold a request for
//! exactly 10 ms. We let tokio carry the long part of a wait (cheap, no file descriptor) and
//! finish the last stretch on a Linux `timerfd`, which the kernel wakes with microsecond
//! resolution through the same epoll loop tokio already runs. No thread spins.
#![forbid(unsafe_code)]

use std::io;
use std::time::Duration;

use timerfd::{ClockId, SetTimeFlags, TimerFd, TimerState};
use tokio::io::unix::AsyncFd;
use tokio::time::Instant;

/// How far ahead of the deadline tokio's coarse timer hands over to the timerfd. tokio may fire
/// up to one tick (1 ms) late and rounds up to the next tick, so two ticks of margin keeps the
/// coarse part from ever overshooting the deadline.
const COARSE_MARGIN: Duration = Duration::from_millis(2);

/// A yield shorter than this is counted as idle spinning.
const IDLE_YIELD: Duration = Duration::from_micros(5);

/// A reusable precise sleeper. Keep one per task that sleeps often (a dispatcher); use
/// [`sleep_until`] for one-off waits.
pub struct Timer {
    fd: Option<AsyncFd<TimerFd>>,
    spin: Duration,
    /// Time spent spinning so far: CPU burnt on purpose, not work.
    spun: Duration,
}

impl Timer {
    /// Creates a sleeper; call it inside a tokio runtime. If the kernel refuses a timerfd the sleeper still works, with tokio's
    /// 1 ms resolution; [`Timer::is_precise`] tells which.
    pub fn new() -> Self {
        // `AsyncFd::new` is deprecated because a caller could close the descriptor behind the
        // registration's back. `TimerFd` owns its descriptor and keeps it open until it is
        // dropped together with the `AsyncFd`, so that cannot happen here; the replacement,
        // `AsyncFd::register`, is `unsafe`, which this crate forbids.
        #[allow(deprecated)]
        let fd = TimerFd::new_custom(ClockId::Monotonic, true, true)
            .and_then(AsyncFd::new)
            .ok();
        Timer {
            fd,
            spin: Duration::ZERO,
            spun: Duration::ZERO,
        }
    }

    /// A sleeper that wakes `spin` early and yields to the runtime in a loop until the
    /// deadline. A wake-up from the kernel costs tens of microseconds on a virtual machine, and
    /// more under load; spinning the last stretch trades CPU for hitting the deadline within a
    /// few microseconds. Other tasks (and I/O) keep running while it spins.
    pub fn with_spin(spin: Duration) -> Self {
        Timer {
            spin,
            ..Timer::new()
        }
    }

    /// Whether this sleeper has microsecond resolution.
    pub fn is_precise(&self) -> bool {
        self.fd.is_some()
    }

    /// Returns at or shortly after `deadline`, never before it.
    pub async fn sleep_until(&mut self, deadline: Instant) {
        let now = Instant::now();
        if deadline <= now {
            return;
        }
        let Some(fd) = self.fd.as_mut() else {
            tokio::time::sleep_until(deadline).await;
            return;
        };
        if deadline - now > COARSE_MARGIN {
            tokio::time::sleep_until(deadline - COARSE_MARGIN).await;
        }
        let wake = deadline.checked_sub(self.spin).unwrap_or(deadline);
        if wait_on_timerfd(fd, wake).await.is_err() {
            tokio::time::sleep_until(deadline).await;
        }
        let mut now = Instant::now();
        while now < deadline {
            tokio::task::yield_now().await;
            let after = Instant::now();
            // A yield that comes straight back found nothing else to run: idle spinning. A
            // longer one ran other tasks, which is work, not spin.
            if after - now < IDLE_YIELD {
                self.spun += after - now;
            }
            now = after;
        }
    }

    /// Total time this sleeper has spent spinning idly (yields that found nothing else to run).
    pub fn spun(&self) -> Duration {
        self.spun
    }
}

impl Default for Timer {
    fn default() -> Self {
        Timer::new()
    }
}

async fn wait_on_timerfd(fd: &mut AsyncFd<TimerFd>, deadline: Instant) -> io::Result<()> {
    loop {
        let now = Instant::now();
        if deadline <= now {
            return Ok(());
        }
        fd.get_mut()
            .set_state(TimerState::Oneshot(deadline - now), SetTimeFlags::Default);
        let mut guard = fd.readable_mut().await?;
        // The expiry count is irrelevant; reading clears readiness for the next wait.
        let _ = guard.get_inner_mut().read();
        guard.clear_ready();
        if Instant::now() >= deadline {
            return Ok(());
        }
    }
}

/// One-off precise sleep. Creates a timerfd only when the wait is short enough to need one.
pub async fn sleep_until(deadline: Instant) {
    let now = Instant::now();
    if deadline <= now {
        return;
    }
    if deadline - now > COARSE_MARGIN {
        tokio::time::sleep_until(deadline - COARSE_MARGIN).await;
    }
    Timer::new().sleep_until(deadline).await;
}

/// Precise sleep for a duration from now.
pub async fn sleep(duration: Duration) {
    sleep_until(Instant::now() + duration).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn median_overshoot(precise: bool) -> Duration {
        let mut timer = Timer::new();
        let mut late = Vec::new();
        for i in 0..40u64 {
            let deadline = Instant::now() + Duration::from_micros(300 + 97 * i);
            if precise {
                timer.sleep_until(deadline).await;
            } else {
                tokio::time::sleep_until(deadline).await;
            }
            late.push(Instant::now() - deadline);
        }
        late.sort();
        late[late.len() / 2]
    }

    /// The point of the crate: against the same deadlines, in the same run, the precise sleeper
    /// overshoots far less than tokio's own timer (a ratio, so a slow machine cannot fail it).
    #[tokio::test(flavor = "current_thread")]
    async fn overshoots_far_less_than_tokio() {
        assert!(
            Timer::new().is_precise(),
            "timerfd unavailable on this machine"
        );
        let coarse = median_overshoot(false).await;
        let precise = median_overshoot(true).await;
        assert!(
            precise * 3 < coarse,
            "precise {precise:?} vs tokio {coarse:?}"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn never_returns_early() {
        for ms in [0u64, 1, 3] {
            let deadline = Instant::now() + Duration::from_millis(ms);
            sleep_until(deadline).await;
            assert!(Instant::now() >= deadline);
        }
    }
}
